"""WCAG contrast of the text on screen, measured in the page (issue 34).

``LOW_CONTRAST`` is a function for ``page.evaluate``: every visible element that shows
text of its own (a text node, or a form control's value) is measured against its
effective background, the ancestors' backgrounds composited from the first opaque one up;
the text colour's own alpha is blended over that. It returns the elements below
``min`` (WCAG AA, 4.5:1 for body text) with their colours, so a failure names them.

Skipped, as WCAG exempts them: disabled controls and what is inside them, text hidden
from view (display, visibility, zero size, off screen), and SVG text (painted by fill).
"""

from __future__ import annotations

LOW_CONTRAST = """(min) => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((k) => top[k] * a + under[k] * (1 - a)).concat(1);
  };
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)];
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) {
        layers.push(c);
        if (c[3] >= 1) break;
      }
    }
    let bg = [255, 255, 255, 1]; // the canvas under an all-transparent chain
    for (let k = layers.length - 1; k >= 0; k--) bg = over(layers[k], bg);
    return bg;
  };
  const ownText = (el) => {
    if (el instanceof HTMLInputElement) {
      return ['checkbox', 'radio', 'file', 'hidden', 'range'].includes(el.type) ? '' : el.value;
    }
    if (el instanceof HTMLSelectElement) return el.selectedOptions[0]?.textContent || '';
    if (el instanceof HTMLTextAreaElement) return el.value;
    let t = '';
    for (const n of el.childNodes) if (n.nodeType === 3) t += n.textContent;
    return t.trim();
  };
  const shown = (el) => {
    if (el.closest('svg, [aria-hidden=true], option, optgroup')) return false;
    if (el.closest(':disabled') || el.closest('[disabled]')) return false;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) return false;
    const s = getComputedStyle(el);
    if (s.visibility !== 'visible' || Number(s.opacity) === 0) return false;
    // Clipped away by a scrolling ancestor (a table row scrolled out of its box).
    for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
      const es = getComputedStyle(e);
      if (es.overflow === 'visible' && es.overflowY === 'visible') continue;
      const b = e.getBoundingClientRect();
      if (r.bottom <= b.top || r.top >= b.bottom) return false;
      if (r.right <= b.left || r.left >= b.right) return false;
    }
    return true;
  };
  const bad = [];
  let checked = 0;
  for (const el of document.querySelectorAll('body *')) {
    if (['SCRIPT', 'STYLE', 'CANVAS', 'OPTION', 'OPTGROUP'].includes(el.tagName)) continue;
    const text = ownText(el);
    if (!text || !shown(el)) continue;
    const bg = background(el);
    const fg = over(parse(getComputedStyle(el).color) || [0, 0, 0, 1], bg);
    const r = ratio(fg, bg);
    checked++;
    if (r < min) {
      bad.push({text: text.slice(0, 60), id: el.id, cls: String(el.className).slice(0, 60),
                tag: el.tagName, fg: fg.slice(0, 3).map(Math.round),
                bg: bg.slice(0, 3).map(Math.round),
                ratio: Math.round(r * 100) / 100});
    }
  }
  return {checked, bad};
}"""

# The labels drawn on canvases: each FlameCanvas rect records its fill and its ink.
CANVAS_LABELS = """(min) => {
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const probe = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
  const rgb = (c) => { probe.clearRect(0, 0, 1, 1); probe.fillStyle = c; probe.fillRect(0, 0, 1, 1);
                       return [...probe.getImageData(0, 0, 1, 1).data].slice(0, 3); };
  const lum = (c) => { const [r, g, b] = rgb(c).map(lin);
                       return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)];
                            return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const m = window.mcuprof;
  const canvases = {flame: m.flame, callers: m.sandwich?.callers, callees: m.sandwich?.callees,
                    diff: m.diffFlame};
  const bad = [];
  let checked = 0;
  for (const [name, fc] of Object.entries(canvases)) {
    for (const r of (fc && fc.rects) || []) {
      if (!r.text) continue;
      checked++;
      const q = ratio(r.ink, r.color);
      if (q < min) bad.push({canvas: name, text: r.text, fill: r.color, ink: r.ink, ratio: q});
    }
  }
  return {checked, bad};
}"""
