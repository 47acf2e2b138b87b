// Timeline: a flame chart over time on a canvas, in the manner of Perfetto. The server
// sends only what is visible at pixel resolution (narrow calls merge into one box named
// after the longest); zooming or panning asks for the new range, and the boxes on hand are
// stretched meanwhile so the view follows the hand at once. W/S zoom, A/D pan, the wheel
// zooms at the cursor (Shift+wheel pans); the strip on top is the whole capture.

import { ROW_PX } from "./flamecanvas.js"; // fixed, compact rows, as the flame graph's
import { esc, fitLabel, fmtInt, fmtTime, fmtUs, labelInks, nameColor, plural, readableOn, shortName, themeColor, throttle } from "./format.js";

const AXIS_PX = 24;
let DIM = "#2a3039"; // the theme's, read at each draw
const FONT = "12px system-ui, -apple-system, 'Segoe UI', sans-serif";

export function initTimeline(ctx) {
  const $ = (id) => document.getElementById(id);
  const area = $("timeline-area");
  const canvas = $("timeline-plot");
  const overview = $("timeline-overview");
  const details = $("timeline-details");
  const empty = $("timeline-empty");
  const info = $("timeline-info");
  const tip = $("timeline-tip");
  let mode = "zoom";
  let view = null; // [t0, t1] absolute µs, null = whole capture
  let data = null; // last /api/timeline answer
  let whole = null; // the overview's answer (whole capture)
  let range = null; // capture [t0, t1]
  let rects = [];
  let rowPx = 20;
  let selectedFid = null;
  let picked = null; // the clicked call {start, depth}: outlined while its details show
  let inflight = false;
  let again = false;
  let stale = true;
  let mouseX = null;
  const api = {
    picked: () => picked, rects: () => rects, view: () => current(), rowPx: () => rowPx };
  ctx.timeline = api;

  function current() {
    if (view) return view;
    if (range) return range;
    return data ? [data.t0_us, data.t1_us] : [0, 1];
  }

  function setView(a, b) {
    if (!range) return;
    const full = range[1] - range[0] || 1;
    let span = Math.max(1, Math.min(full, b - a));
    let lo = Math.max(range[0], Math.min(a, range[1] - span));
    if (!Number.isFinite(lo)) lo = range[0];
    view = span >= full ? null : [lo, lo + span];
    span = 0;
    draw();
    drawOverview();
    fetchSoon();
  }

  // ---------------------------------------------------------------- data

  async function fetchAndDraw() {
    if (inflight) { again = true; return; }
    inflight = true;
    stale = false;
    const width = Math.max(200, Math.round(area.clientWidth || 1000));
    const params = { width };
    if (view) { params.t0 = view[0]; params.t1 = view[1]; }
    try {
      const d = await ctx.run(() => ctx.api.getJSON("/api/timeline", params));
      if (d) {
        data = d;
        if (!d.empty) range = d.range;
        draw();
        revealPending();
      }
    } finally {
      inflight = false;
      if (again) { again = false; fetchAndDraw(); }
    }
  }
  const fetchSoon = throttle(fetchAndDraw, 60);

  async function fetchOverview() {
    const width = Math.max(200, Math.round(overview.clientWidth || 1000));
    const d = await ctx.run(() => ctx.api.getJSON("/api/timeline", { width }));
    if (d) { whole = d; if (!d.empty) range = d.range; drawOverview(); revealPending(); }
  }

  // ---------------------------------------------------------------- drawing

  // The canvas keeps its CSS width (it follows the panel); its pixels follow the size.
  function sizeCanvas(c, w, h) {
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.max(1, Math.round(w * dpr));
    c.height = Math.max(1, Math.round(h * dpr));
    c.style.height = `${h}px`;
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    return g;
  }

  function draw() {
    if (ctx.view !== "timeline") return;
    const W = area.clientWidth;
    const room = area.clientHeight;
    if (!data || data.empty) {
      empty.hidden = false;
      canvas.style.visibility = "hidden";
      overview.style.visibility = "hidden";
      info.textContent = "";
      rects = [];
      return;
    }
    empty.hidden = true;
    canvas.style.visibility = "visible";
    overview.style.visibility = "visible";
    const levels = Math.max(1, data.max_depth + 1);
    rowPx = ROW_PX;
    const H = Math.max(room, AXIS_PX + levels * rowPx);
    const g = sizeCanvas(canvas, W, H);
    g.clearRect(0, 0, W, H);
    const [a, b] = current();
    const scale = W / (b - a || 1);
    DIM = themeColor("--frame-dim", "#2a3039");
    const inks = labelInks();
    const dimInk = themeColor("--frame-pale-text", "#d6dbe2");
    drawAxis(g, W, H, a, b);
    if (ctx.window) {
      const x0 = (ctx.window[0] - a) * scale;
      const x1 = (ctx.window[1] - a) * scale;
      g.fillStyle = themeColor("--range-bg", "rgba(76,154,255,0.10)");
      g.fillRect(x0, AXIS_PX, x1 - x0, H - AXIS_PX);
      g.strokeStyle = themeColor("--accent", "#4c9aff");
      g.lineWidth = 1;
      g.strokeRect(x0 + 0.5, AXIS_PX + 0.5, x1 - x0 - 1, H - AXIS_PX - 1);
    }
    g.font = FONT;
    g.textBaseline = "middle";
    const charPx = g.measureText("abcdefghijklmnopqrstuvwxyz").width / 26;
    rects = [];
    const n = data.start_us.length;
    for (let i = 0; i < n; i++) {
      const x = (data.start_us[i] - a) * scale;
      const w = Math.max(1, data.dur_us[i] * scale);
      if (x > W || x + w < 0) continue;
      const y = AXIS_PX + data.depth[i] * rowPx;
      const name = data.names[data.frame[i]];
      const fid = data.fids ? data.fids[data.frame[i]] : -1;
      const merged = data.count[i] > 1;
      const fill = selectedFid !== null && fid !== selectedFid ? DIM : nameColor(name);
      g.fillStyle = fill;
      g.globalAlpha = merged ? 0.8 : 1;
      const cx = Math.max(0, x);
      const cw = Math.min(W, x + w) - cx;
      g.fillRect(cx, y, Math.max(1, cw - (cw > 3 ? 1 : 0)), rowPx - 1);
      g.globalAlpha = 1;
      let text = "";
      if (!merged && cw >= 3 * charPx + 8 && rowPx >= 14) {
        text = fitLabel(shortName(name), cw - 8, (s) => g.measureText(s).width);
        if (text) {
          g.fillStyle = fill === DIM ? dimInk : readableOn(fill, inks);
          g.fillText(text, cx + 4, y + rowPx / 2);
        }
      }
      if (picked && picked.depth === data.depth[i] && picked.start === data.start_us[i]) {
        g.strokeStyle = themeColor("--text", "#d6dbe2"); // light on dark, dark on light
        g.lineWidth = 2;
        g.strokeRect(cx + 1, y + 1, Math.max(1, cw - 3), rowPx - 3);
      }
      rects.push({ i, x: cx, y, w: cw, h: rowPx - 1, name, fid, text, count: data.count[i], depth: data.depth[i],
        start: data.start_us[i] });
    }
    const segments = drawSegments(g, W, H, a, scale);
    const shown = b - a;
    info.textContent = `${fmtInt(data.records)} calls in view · ${fmtTime(shown)} of ${fmtTime(range[1] - range[0])}` +
      (n < data.records ? ` · narrow calls merged into ${fmtInt(n)} boxes` : "") +
      (segments ? ` · ${fmtInt(segments)} target reset(s): each starts a new segment (dashed line); ` +
        "the time between runs is not counted" : "");
  }

  // Where the target's clock restarted (a QS target reset): a dashed line each; the
  // next segment follows the last one's end, without the time between the runs.
  function drawSegments(g, W, H, a, scale) {
    const all = data.segments || [];
    canvas.dataset.segments = String(all.length);
    if (!all.length) return 0;
    g.save();
    g.strokeStyle = themeColor("--red", "#f0605a");
    g.lineWidth = 2;
    g.setLineDash([6, 4]);
    for (const t of all) {
      const x = Math.round((t - a) * scale) + 0.5;
      if (x < 0 || x > W) continue;
      g.beginPath();
      g.moveTo(x, 0);
      g.lineTo(x, H);
      g.stroke();
    }
    g.restore();
    return all.length;
  }

  function niceStep(span, px) {
    const target = span / Math.max(2, px / 110);
    const p = 10 ** Math.floor(Math.log10(target));
    for (const m of [1, 2, 5, 10]) if (m * p >= target) return m * p;
    return 10 * p;
  }

  function axisLabel(t, step) {
    const [unit, div] = step >= 1e5 ? ["s", 1e6] : step >= 100 ? ["ms", 1e3] : ["µs", 1];
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / div) - 1e-9));
    return `${(t / div).toFixed(Math.min(decimals, 6))} ${unit}`;
  }

  function drawAxis(g, W, H, a, b) {
    g.fillStyle = themeColor("--axis-bg", "#12161b");
    g.fillRect(0, 0, W, AXIS_PX);
    const origin = range ? range[0] : a;
    const step = niceStep(b - a, W);
    const first = Math.ceil((a - origin) / step) * step;
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    g.strokeStyle = themeColor("--line", "#272e38");
    g.fillStyle = themeColor("--muted", "#8b95a3");
    g.lineWidth = 1;
    for (let t = first; t <= b - origin; t += step) {
      const x = Math.round((t + origin - a) * (W / (b - a))) + 0.5;
      g.beginPath();
      g.moveTo(x, AXIS_PX - 6);
      g.lineTo(x, H);
      g.stroke();
      // The last label would run off the right edge: it goes left of its tick there.
      const label = axisLabel(t, step);
      const lw = g.measureText(label).width;
      g.fillText(label, x + 3 + lw > W - 2 ? x - 3 - lw : x + 3, AXIS_PX / 2);
    }
    g.strokeStyle = themeColor("--line-2", "#323a46");
    g.beginPath();
    g.moveTo(0, AXIS_PX - 0.5);
    g.lineTo(W, AXIS_PX - 0.5);
    g.stroke();
  }

  function drawOverview() {
    if (ctx.view !== "timeline") return;
    const W = overview.clientWidth;
    const H = 40;
    const g = sizeCanvas(overview, W, H);
    g.fillStyle = themeColor("--axis-bg", "#12161b");
    g.fillRect(0, 0, W, H);
    if (!whole || whole.empty || !range) return;
    const levels = Math.max(1, whole.max_depth + 1);
    const row = (H - 4) / levels;
    const scale = W / (range[1] - range[0] || 1);
    for (let i = 0; i < whole.start_us.length; i++) {
      g.fillStyle = nameColor(whole.names[whole.frame[i]]);
      g.fillRect((whole.start_us[i] - range[0]) * scale, 2 + whole.depth[i] * row,
        Math.max(1, whole.dur_us[i] * scale), Math.max(1, row - 0.5));
    }
    const [a, b] = current();
    const x0 = (a - range[0]) * scale;
    const x1 = (b - range[0]) * scale;
    g.fillStyle = themeColor("--overview-mask", "rgba(15,18,22,0.62)");
    g.fillRect(0, 0, x0, H);
    g.fillRect(x1, 0, W - x1, H);
    g.strokeStyle = themeColor("--accent", "#4c9aff");
    g.lineWidth = 1.5;
    g.strokeRect(x0 + 0.75, 0.75, Math.max(2, x1 - x0 - 1.5), H - 1.5);
  }

  // ---------------------------------------------------------------- details panel

  function hit(x, y) {
    for (let k = rects.length - 1; k >= 0; k--) {
      const r = rects[k];
      if (x >= r.x - 1 && x < r.x + Math.max(r.w, 2) + 1 && y >= r.y && y < r.y + r.h + 1) return r;
    }
    return null;
  }

  async function showDetails(r) {
    const start = data.start_us[r.i];
    const dur = data.dur_us[r.i];
    const origin = range ? range[0] : 0;
    picked = { start, depth: r.depth };
    draw();
    if (r.count > 1) {
      details.hidden = false;
      details.innerHTML = `<header><b>${esc(plural(r.count, "call"))} merged</b>` +
        '<button type="button" class="x" aria-label="Close details">&times;</button></header>' +
        `<dl class="kv"><dt>Longest</dt><dd title="${esc(r.name)}">${esc(shortName(r.name))}</dd>` +
        `<dt>From</dt><dd>${esc(fmtTime(start - origin))}</dd><dt>Span</dt><dd>${esc(fmtTime(dur))}</dd>` +
        `<dt>Depth</dt><dd>${r.depth}</dd></dl>` +
        '<button type="button" class="btn small secondary" id="tl-zoom-merged">Zoom to these calls</button>';
      $("tl-zoom-merged").addEventListener("click", () => setView(start - dur * 0.1, start + dur * 1.1));
      api.details = { merged: r.count };
      return;
    }
    const d = await ctx.run(() => ctx.api.getJSON("/api/call", { depth: r.depth, t: start + dur / 2 }));
    if (!d) return;
    details.hidden = false;
    const where = d.file ? (d.line ? `${d.file}:${d.line}` : d.file) : "—";
    const path = [...d.path, d.name];
    details.innerHTML = `<header><b title="${esc(d.name)}">${esc(shortName(d.name))}</b>` +
      '<button type="button" class="x" aria-label="Close details">&times;</button></header>' +
      `<div class="full muted">${esc(d.name)}</div>` +
      `<dl class="kv"><dt>File</dt><dd title="${esc(where)}">${esc(where)}</dd>` +
      `<dt>Start</dt><dd title="${esc(fmtTime(d.since_start_us))} after the capture began">${esc(fmtUs(d.since_start_us))}</dd>` +
      `<dt>Duration</dt><dd title="${esc(fmtTime(d.dur_us))}">${esc(fmtUs(d.dur_us))}</dd>` +
      `<dt>Self</dt><dd title="${esc(fmtTime(d.self_us))}">${esc(fmtUs(d.self_us))}</dd>` +
      `<dt>Depth</dt><dd>${d.depth}</dd></dl>` +
      `<div class="path-title muted">Call path</div><ol class="callpath">` +
      path.map((p, k) => `<li style="padding-left:${k * 8}px" title="${esc(p)}">${esc(shortName(p))}</li>`).join("") +
      "</ol>";
    api.details = d;
  }
  function closeDetails() {
    details.hidden = true;
    api.details = null;
    picked = null;
    draw();
  }
  details.addEventListener("click", (ev) => {
    if (ev.target.closest("button.x")) closeDetails();
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && ctx.view === "timeline" && !details.hidden) closeDetails();
  });

  // ---------------------------------------------------------------- mouse and keys

  let drag = null;
  const band = $("timeline-band");
  canvas.addEventListener("mousedown", (ev) => {
    if (ev.button !== 0) return;
    const rect = canvas.getBoundingClientRect();
    drag = { x: ev.clientX - rect.left, y: ev.clientY - rect.top, moved: false, view: current() };
    ev.preventDefault();
  });
  window.addEventListener("mousemove", (ev) => {
    const rect = canvas.getBoundingClientRect();
    mouseX = ev.clientX - rect.left;
    if (!drag) return;
    const x = mouseX;
    if (Math.abs(x - drag.x) > 3) drag.moved = true;
    if (!drag.moved) return;
    const W = area.clientWidth;
    if (mode === "pan") {
      const [a, b] = drag.view;
      const dt = ((x - drag.x) / W) * (b - a);
      setView(a - dt, b - dt);
    } else {
      const lo = Math.max(0, Math.min(drag.x, x));
      const hi = Math.min(W, Math.max(drag.x, x));
      band.hidden = false;
      band.style.left = `${lo}px`;
      band.style.width = `${hi - lo}px`;
      band.classList.toggle("select", mode === "select");
    }
  });
  window.addEventListener("mouseup", (ev) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    band.hidden = true;
    const rect = canvas.getBoundingClientRect();
    const x = ev.clientX - rect.left;
    if (!d.moved) {
      const r = hit(x, ev.clientY - rect.top);
      if (r) showDetails(r);
      return;
    }
    if (mode === "pan") return;
    const [a, b] = d.view;
    const W = area.clientWidth;
    const t0 = a + (Math.max(0, Math.min(d.x, x)) / W) * (b - a);
    const t1 = a + (Math.min(W, Math.max(d.x, x)) / W) * (b - a);
    if (t1 - t0 <= 0) return;
    if (mode === "select") { ctx.setWindow([t0, t1]); draw(); } else setView(t0, t1);
  });
  canvas.addEventListener("wheel", (ev) => {
    if (!range) return;
    ev.preventDefault();
    const [a, b] = current();
    const W = area.clientWidth;
    const rect = canvas.getBoundingClientRect();
    const at = a + ((ev.clientX - rect.left) / W) * (b - a);
    const dx = ev.shiftKey ? ev.deltaY : ev.deltaX;
    if (Math.abs(dx) > Math.abs(ev.shiftKey ? 0 : ev.deltaY)) {
      const dt = (dx / W) * (b - a);
      setView(a + dt, b + dt);
      return;
    }
    // Perfetto-like: a notch (~100 px of delta) zooms by about a fifth.
    const f = Math.exp(Math.max(-2, Math.min(2, ev.deltaY * 0.0022)));
    setView(at - (at - a) * f, at + (b - at) * f);
  }, { passive: false });
  canvas.addEventListener("mousemove", (ev) => {
    const rect = canvas.getBoundingClientRect();
    const r = hit(ev.clientX - rect.left, ev.clientY - rect.top);
    canvas.style.cursor = mode === "pan" ? "grab" : r ? "pointer" : "crosshair";
    showTip(r, ev);
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("mousedown", () => { tip.hidden = true; });

  // The call under the pointer, in a tooltip like the flame graph's (a native title
  // shows late, in the system's colours, and only one line).
  function showTip(r, ev) {
    if (!r || ev.buttons) { tip.hidden = true; return; }
    const origin = range ? range[0] : 0;
    const start = data.start_us[r.i];
    const dur = data.dur_us[r.i];
    const short = shortName(r.name);
    const lines = r.count > 1
      ? [`<b>${esc(plural(r.count, "call"))} merged</b>`, `Longest: ${esc(short)}`,
        `From ${esc(fmtTime(start - origin))} · span ${esc(fmtTime(dur))}`,
        '<span class="muted">Click for details, or zoom in to tell them apart</span>']
      : [`<b>${esc(short)}</b>`, ...(short !== r.name ? [`<span class="muted">${esc(r.name)}</span>`] : []),
        `${esc(fmtTime(dur))} · from ${esc(fmtTime(start - origin))} · depth ${r.depth}`,
        '<span class="muted">Click for details</span>'];
    tip.innerHTML = lines.join("<br>");
    tip.hidden = false;
    const x = Math.min(window.innerWidth - tip.offsetWidth - 8, ev.clientX + 14);
    const y = ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16;
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${Math.max(4, y)}px`;
  }

  document.addEventListener("keydown", (ev) => {
    if (ctx.view !== "timeline" || !range) return;
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement || ev.ctrlKey || ev.metaKey) return;
    const key = ev.key.toLowerCase();
    if (!"wasd".includes(key) || key.length !== 1) return;
    ev.preventDefault();
    const [a, b] = current();
    const W = area.clientWidth;
    const at = mouseX !== null && mouseX >= 0 && mouseX <= W ? a + (mouseX / W) * (b - a) : (a + b) / 2;
    if (key === "w" || key === "s") {
      const f = key === "w" ? 0.8 : 1.25;
      setView(at - (at - a) * f, at + (b - at) * f);
    } else {
      const dt = (key === "a" ? -0.15 : 0.15) * (b - a);
      setView(a + dt, b + dt);
    }
  });

  // The overview strip: click or drag to move the visible range there.
  let ovDrag = false;
  function ovMove(ev) {
    if (!range) return;
    const rect = overview.getBoundingClientRect();
    const t = range[0] + ((ev.clientX - rect.left) / rect.width) * (range[1] - range[0]);
    const [a, b] = current();
    setView(t - (b - a) / 2, t + (b - a) / 2);
  }
  overview.addEventListener("mousedown", (ev) => { ovDrag = true; ovMove(ev); });
  window.addEventListener("mousemove", (ev) => { if (ovDrag) ovMove(ev); });
  window.addEventListener("mouseup", () => { ovDrag = false; });

  for (const btn of document.querySelectorAll("#view-timeline [data-mode]")) {
    btn.addEventListener("click", () => {
      mode = btn.dataset.mode;
      for (const b of document.querySelectorAll("#view-timeline [data-mode]")) b.classList.toggle("on", b === btn);
    });
  }
  $("timeline-fit").addEventListener("click", () => { view = null; draw(); drawOverview(); fetchAndDraw(); });
  $("timeline-filter").addEventListener("click", () => {
    const r = view || range;
    if (r) ctx.setWindow([r[0], r[1]]);
  });

  ctx.on("window", () => { if (ctx.view === "timeline") draw(); else stale = true; });
  ctx.on("select-function", (sel) => { selectedFid = sel ? sel.fid : null; draw(); });
  // Another view asks for a time span to be shown (a QS dispatch's RTC step): it, and as
  // much again on each side.
  // Asked before the timeline has loaded (a distribution bin clicked from Functions),
  // the span waits for the capture's range.
  let pendingReveal = null;
  const reveal = ([a, b]) => setView(a - (b - a), b + (b - a));
  ctx.on("reveal", (span) => { if (range) reveal(span); else pendingReveal = span; });
  function revealPending() {
    if (!range || !pendingReveal) return;
    const span = pendingReveal;
    pendingReveal = null;
    reveal(span);
  }
  ctx.on("theme", () => { draw(); drawOverview(); });
  // While live, follow the data at most twice a second.
  const follow = throttle(() => {
    if (ctx.view === "timeline") { fetchAndDraw(); fetchOverview(); }
  }, 500);
  ctx.on("version", () => {
    stale = true;
    if (ctx.view === "timeline") follow();
  });
  ctx.on("capture-start", () => { view = null; whole = null; details.hidden = true; picked = null; });

  let lastSize = "";
  new ResizeObserver(() => {
    const size = `${area.clientWidth}x${area.clientHeight}`;
    if (size === lastSize || ctx.view !== "timeline") return;
    const widthChanged = !lastSize.startsWith(`${area.clientWidth}x`);
    lastSize = size;
    draw();
    drawOverview();
    if (widthChanged) { fetchSoon(); fetchOverview(); }
  }).observe(area);

  return {
    show() {
      const widthNow = Math.max(200, Math.round(area.clientWidth || 1000));
      if (stale || !data || (data.width_px && data.width_px !== widthNow)) { fetchAndDraw(); fetchOverview(); }
      else { draw(); drawOverview(); }
    },
  };
}
