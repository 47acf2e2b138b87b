// Number and time formatting shared by every view.

// Three significant digits and a unit: 456 µs, 1.23 ms, 12.3 s.
const UNITS = [[1e6, "s"], [1e3, "ms"], [1, "µs"], [1e-3, "ns"]];
export function fmtTime(us) {
  if (us === null || us === undefined || Number.isNaN(us)) return "—";
  if (us === 0) return "0 µs";
  const a = Math.abs(us);
  for (let k = 0; k < UNITS.length; k++) {
    const [scale, unit] = UNITS[k];
    if (a < scale && k < UNITS.length - 1) continue;
    const v = us / scale;
    const text = sig3(v);
    // 999.6 µs rounds to "1000 µs": say 1.00 ms instead.
    if (Math.abs(Number(text)) >= 1000 && k > 0) return `${sig3(us / UNITS[k - 1][0])} ${UNITS[k - 1][1]}`;
    return `${text} ${unit}`;
  }
  return `${sig3(us)} µs`;
}

// A window's bounds "32.900 s – 32.950 s": both in the unit of the larger, with enough
// decimals that the window's width shows to two significant digits (fmtTime's three
// significant digits would read "32.9 s – 32.9 s" for a 50 ms window at 32.9 s).
export function fmtWindow(t0, t1) {
  if (![t0, t1].every(Number.isFinite)) return "—";
  const big = Math.max(Math.abs(t0), Math.abs(t1));
  const [scale, unit] = UNITS.find(([s]) => big >= s) || UNITS[UNITS.length - 1];
  const width = Math.abs(t1 - t0) / scale;
  const digits = width > 0 ? Math.ceil(1 - Math.log10(width)) : 0;
  const shown = Math.min(9, Math.max(digits, sig3(big / scale).split(".")[1]?.length ?? 0));
  return `${(t0 / scale).toFixed(shown)} – ${(t1 / scale).toFixed(shown)} ${unit}`;
}

function sig3(v) {
  const a = Math.abs(v);
  return v.toFixed(a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2);
}

export function fmtCalls(n) {
  if (n === null || n === undefined) return "—";
  return `${fmtInt(n)} ${Math.round(n) === 1 ? "call" : "calls"}`;
}

export function plural(n, word, many = `${word}s`) {
  return `${fmtInt(n)} ${Math.round(n) === 1 ? word : many}`;
}

// `text` cut in the middle to fit `room` px, keeping both ends ("TIMER1…ndler", as
// speedscope): the start names the module, the end tells handlers and variants apart.
// "" when not even one character of each end and the ellipsis fit.
export function fitLabel(text, room, measure) {
  if (measure(text) <= room) return text;
  const cut = (k) => `${text.slice(0, Math.ceil(k / 2))}…${text.slice(text.length - Math.floor(k / 2))}`;
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (measure(cut(mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo >= 2 ? cut(lo) : "";
}

// A colour of the page's theme (a CSS custom property), for canvases; the fallback
// where the page defines none (the standalone HTML export keeps the dark palette).
export function themeColor(name, fallback) {
  if (typeof getComputedStyle !== "function") return fallback;
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

// The label colour that reads best on a canvas fill: the theme's dark frame text or its
// light one, whichever has the higher WCAG contrast against it. Near-black and white
// between them give at least 4.5:1 on any fill (the crossover sits at a luminance of
// about 0.18), so no palette entry, warm hue or the diff's deep blue, is left unreadable.
// ``inks``: labelInks(), read once per draw (a style lookup per frame would cost more
// than the drawing).
const inkCache = new Map();
export function labelInks() {
  return [themeColor("--frame-text", "#000000"), themeColor("--frame-text-light", "#ffffff")];
}
export function readableOn(fill, inks = labelInks()) {
  const [dark, light] = inks;
  const key = `${fill}|${dark}|${light}`;
  let ink = inkCache.get(key);
  if (ink === undefined) {
    const l = luminance(fill);
    ink = l === null || contrast(l, luminance(dark) ?? 0) >= contrast(l, luminance(light) ?? 1) ? dark : light;
    if (inkCache.size > 4096) inkCache.clear();
    inkCache.set(key, ink);
  }
  return ink;
}

export function contrast(la, lb) {
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

// WCAG relative luminance of "#rgb", "#rrggbb", "rgb(r, g, b)" or "hsl(h, s%, l%)"; null
// for anything else.
export function luminance(colour) {
  const rgb = parseColour(String(colour).trim());
  if (!rgb) return null;
  const lin = (c) => { const v = c / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
}

function parseColour(c) {
  let m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(c);
  if (m) {
    const h = m[1].length === 3 ? [...m[1]].map((x) => x + x).join("") : m[1];
    return [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
  }
  m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/i.exec(c);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
  m = /^hsl\(\s*([\d.]+)[\s,]+([\d.]+)%[\s,]+([\d.]+)%/i.exec(c);
  if (!m) return null;
  const [h, s, l] = [Number(m[1]) / 360, Number(m[2]) / 100, Number(m[3]) / 100];
  const q = l < 0.5 ? l * (1 + s) : l + s - l * s;
  const p = 2 * l - q;
  const hue = (t) => {
    t = (t + 1) % 1;
    if (t < 1 / 6) return p + (q - p) * 6 * t;
    if (t < 1 / 2) return q;
    if (t < 2 / 3) return p + (q - p) * (2 / 3 - t) * 6;
    return p;
  };
  return [hue(h + 1 / 3), hue(h), hue(h - 1 / 3)].map((v) => Math.round(v * 255));
}

// A list of colours of the theme ("--series: #a, #b, ..."): a chart's series, the QS
// flow's states. The fallback where the page defines none.
export function themeList(name, fallback) {
  const text = themeColor(name, "");
  const list = text ? text.split(",").map((c) => c.trim()).filter(Boolean) : [];
  return list.length ? list : fallback;
}

// The i-th colour of the theme's chart series, round the list.
export function seriesColour(i) {
  const list = themeList("--series", ["#4c9aff"]);
  return list[i % list.length];
}

// Microseconds at full precision ("2,243,117 µs"; fractions to the ns), for details.
export function fmtUs(us) {
  if (us === null || us === undefined) return "—";
  return `${us.toLocaleString("en-US", { maximumFractionDigits: 3 })} µs`;
}

// Wall-clock seconds as local "YYYY-MM-DD HH:MM:SS".
export function fmtWhen(t) {
  if (!t) return "—";
  const d = new Date(t * 1000);
  const pad = (x) => String(x).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtInt(n) {
  if (n === null || n === undefined) return "—";
  return Math.round(n).toLocaleString("en-US");
}

export function fmtRate(n, unit) {
  if (n === null || n === undefined) return "—";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M${unit}/s`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k${unit}/s`;
  return `${n.toFixed(0)} ${unit}/s`;
}

export function fmtHz(hz) {
  if (!hz) return "—";
  if (hz >= 1e6) return `${+(hz / 1e6).toFixed(3)} MHz`;
  if (hz >= 1e3) return `${+(hz / 1e3).toFixed(3)} kHz`;
  return `${hz} Hz`;
}

export function fmtPct(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return "—";
  return `${p.toFixed(p >= 99.95 ? 0 : p >= 9.995 ? 1 : 2)}%`;
}

export function hex32(n) {
  if (n === null || n === undefined) return "—";
  return "0x" + (n >>> 0).toString(16).padStart(8, "0");
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ESC[c]);
}

// Flame-graph colours: warm hues, one per function name, stable across refreshes.
// backend/mcuprof/export/svg.py computes the same (FNV-1a over code points).
export function nameColor(name) {
  let h = 2166136261;
  for (const ch of name) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 16777619);
  }
  const u = (h >>> 0) / 4294967295;
  const hue = 8 + Math.round(u * 42);
  const light = 46 + Math.round((((h >>> 8) & 0xff) / 255) * 14);
  return `hsl(${hue}, 78%, ${light}%)`;
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

// At most one call per `ms`, and always a trailing call so the last change is shown.
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  return () => {
    const wait = last + ms - performance.now();
    if (wait <= 0) {
      last = performance.now();
      fn();
    } else if (!timer) {
      timer = setTimeout(() => { timer = null; last = performance.now(); fn(); }, wait);
    }
  };
}

// A short name for views: no parameter list (and its qualifiers), no return type;
// the display name of every view and export (tooltips carry the full signature).
// Mirrors mcuprof/names.py short_label.
export function shortName(name) {
  const text = String(name ?? "");
  const m = /\)\s*(const|volatile|const volatile|&|&&)?\s*$/.exec(text);
  if (!m) return text;
  let depth = 0;
  for (let i = m.index; i >= 0; i--) {
    if (text[i] === ")") depth++;
    else if (text[i] === "(") {
      depth--;
      if (depth === 0) {
        if (i === 0) return text;
        let head = text.slice(0, i);
        // A return type is what stands before the last top-level space; an operator's
        // name (`operator< <app::Key>`) holds brackets and spaces: looked for before it.
        const op = /(?:^|[\s:])(operator)\b(?!.*[\s:]operator\b)/.exec(head);
        const end = op ? op.index + op[0].length - "operator".length : head.length;
        let d = 0;
        for (let k = end - 1; k >= 0; k--) {
          const c = head[k];
          if (c === ">" || c === ")") d++;
          else if (c === "<" || c === "(") d--;
          else if (c === " " && d === 0 && !head.slice(0, k).endsWith("operator")) { head = head.slice(k + 1); break; }
        }
        return head;
      }
    }
  }
  return text;
}
