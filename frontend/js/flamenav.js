// What a flame graph is navigated with, beside its canvas: the axis (time, or share of
// the root) whose ticks follow the view, and the minimap of the whole graph with the
// visible region on it. Both draw from FlameCanvas's arrays; nothing is fetched.

import { themeColor } from "./format.js";

export const AXIS_PX = 20; // axis height in CSS px
const TICK_GAP_PX = 96; // at least this far apart, so the labels never touch

// Tick labels at round values: the unit and the decimals follow the step, so ticks a
// few µs apart deep into a long capture still read apart ("1.23456 s" is not needed:
// the axis counts from the root's left edge).
function nice(raw) {
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function decimals(step) {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

const TIME_UNITS = [[1e6, "s"], [1e3, "ms"], [1, "µs"], [1e-3, "ns"]];

// (value, step) => label, for values in µs.
export function timeLabel(us, step) {
  const [scale, unit] = TIME_UNITS.find(([s]) => step >= s) || TIME_UNITS[TIME_UNITS.length - 1];
  return `${(us / scale).toFixed(decimals(step / scale))} ${unit}`;
}

// (value, step) => label, for values in percent.
export function pctLabel(p, step) {
  return `${p.toFixed(decimals(step))}%`;
}

// Draw the axis for [lo, hi] (in the label's unit) over `width` px; returns the labels.
export function drawAxis(canvas, width, lo, hi, label) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(width * dpr));
  canvas.height = Math.round(AXIS_PX * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${AXIS_PX}px`;
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = themeColor("--axis-bg", "#12161b");
  g.fillRect(0, 0, width, AXIS_PX);
  g.fillStyle = themeColor("--line-2", "#323a46");
  g.fillRect(0, AXIS_PX - 1, width, 1);
  const labels = [];
  let first = null;
  if (!(hi > lo) || width < 2) return labels;
  const step = nice(((hi - lo) * TICK_GAP_PX) / width);
  g.font = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
  g.textBaseline = "middle";
  const text = themeColor("--muted", "#8b95a3");
  const tick = themeColor("--line-2", "#323a46");
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-6; v += step) {
    const x = Math.round(((v - lo) / (hi - lo)) * width) + 0.5;
    const s = label(Math.abs(v) < step * 1e-6 ? 0 : v, step);
    g.fillStyle = tick;
    g.fillRect(x - 0.5, 0, 1, AXIS_PX);
    g.fillStyle = text;
    if (x + 4 + g.measureText(s).width < width) g.fillText(s, x + 4, AXIS_PX / 2);
    labels.push(s);
    if (first === null) first = x;
  }
  // What the ticks read and where the first is: for the tests, and screen readers' title.
  canvas.dataset.ticks = labels.join("|");
  canvas.dataset.first = String(Math.round(first ?? 0));
  return labels;
}

// The whole graph in a strip, each row a few px, with the visible region outlined and
// the rest shaded. The graph is drawn once per data (and size, theme); a view change
// only repaints the strip from that picture.
export class Minimap {
  constructor(canvas, height = 44) {
    this.canvas = canvas;
    this.height = height;
    this.base = null;
    this.key = null;
    this.region = null; // the visible region in CSS px: {x, y, w, h}
  }

  draw(fc, width, rowsShown) {
    const dpr = window.devicePixelRatio || 1;
    const h = this.height;
    const t = fc.data;
    const key = t && this.keyOf(fc, width, dpr);
    if (t && (key !== this.key || this.baseData !== t)) this.paintBase(fc, width, dpr);
    const c = this.canvas;
    c.width = Math.max(1, Math.round(width * dpr));
    c.height = Math.round(h * dpr);
    c.style.width = `${width}px`;
    c.style.height = `${h}px`;
    const g = c.getContext("2d");
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, c.width, c.height);
    if (!t) { this.region = null; return; }
    g.drawImage(this.base, 0, 0);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const [lo, hi, whole] = fc.visibleUnits();
    const levels = this.levels;
    const [top, bottom] = rowsShown; // rows from the root: [first, last) on screen
    const rowH = h / levels;
    let y0 = Math.max(0, top) * rowH;
    let y1 = Math.min(levels, bottom) * rowH;
    if (fc.flip) [y0, y1] = [h - y1, h - y0];
    const x = (lo / whole) * width;
    const w = Math.max(2, ((hi - lo) / whole) * width);
    this.region = { x, y: y0, w, h: Math.max(2, y1 - y0) };
    g.fillStyle = themeColor("--overview-mask", "rgba(15, 18, 22, .62)");
    g.fillRect(0, 0, x, h);
    g.fillRect(x + w, 0, width - x - w, h);
    g.fillRect(x, 0, w, y0);
    g.fillRect(x, y1, w, h - y1);
    g.strokeStyle = themeColor("--accent", "#4c9aff");
    g.lineWidth = 1.5;
    g.strokeRect(x + 0.75, y0 + 0.75, Math.max(1, w - 1.5), Math.max(1, y1 - y0 - 1.5));
  }

  // What the picture depends on besides the data: a search dims frames in it too.
  keyOf(fc, width, dpr) {
    return [width, dpr, fc.flip, document.documentElement.dataset.theme, String(fc.match)].join();
  }

  paintBase(fc, width, dpr) {
    const t = fc.data;
    const h = this.height;
    let levels = 1;
    for (let i = 0; i < t.n; i++) if (t.depth[i] + 1 > levels) levels = t.depth[i] + 1;
    this.levels = levels;
    this.key = this.keyOf(fc, width, dpr);
    this.baseData = t;
    const base = this.base || document.createElement("canvas");
    base.width = Math.max(1, Math.round(width * dpr));
    base.height = Math.round(h * dpr);
    const g = base.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = themeColor("--axis-bg", "#12161b");
    g.fillRect(0, 0, width, h);
    const rowH = h / levels;
    const unit = width / (t.values[0] || 1);
    for (let i = 0; i < t.n; i++) {
      const w = t.values[i] * unit;
      if (w < 0.5) continue;
      const d = t.depth[i];
      const y = fc.flip ? h - (d + 1) * rowH : d * rowH;
      g.fillStyle = fc.colorOf(i);
      g.fillRect(t.x0[i] * unit, y, Math.max(0.5, w - (w > 3 ? 0.5 : 0)), Math.max(0.5, rowH - (rowH > 3 ? 0.5 : 0)));
    }
    this.base = base;
  }

  // Units and row (from the root) under a point of the strip, in CSS px.
  at(fc, x, y, width) {
    const levels = this.levels || 1;
    const row = (fc.flip ? this.height - y : y) / (this.height / levels);
    return { units: (x / width) * (fc.data?.values[0] || 1), row };
  }
}
