// One flame-graph component, drawn on a canvas: the page's flame graph, both halves of the
// sandwich view, the PNG export and the standalone HTML export all use it, so frames,
// labels and colours are the same everywhere. Input: the server's flame columns
// (backend profile/flame.py), drawn as they come: one row per frame, parents first, with
// its parent row, depth, left edge and width in units, self, calls, frame id, path key
// and an index into the name table.

import { fitLabel, fmtPct, labelInks, nameColor, readableOn, themeColor } from "./format.js";

let ROOT_COLOR = "#3b4350";
let OTHER_COLOR = "#4a525e";
let DIM_COLOR = "#2a3039";
let PALE_TEXT = "#d6dbe2"; // labels on the root, "other" and dimmed frames
const OTHER_FID = -3; // the frame id of "other" (profile/trees.py OTHER_ID)
const GAP = 1; // px between frames, as in speedscope
// The narrowest view, as a share of the zoomed frame: past it a frame of one unit would
// be wider than any screen, and float steps would show.
const MIN_SPAN = 1e-7;
// Flame row height in CSS px (speedscope: about 20): every flame graph of the page uses it.
export const ROW_PX = 20;

export class FlameCanvas {
  constructor(canvas, options = {}) {
    this.canvas = canvas;
    this.flip = !!options.flip; // root at the bottom (a classic flame graph)
    // Fixed rows unless a caller asks for a range (a click then stays on its frame).
    this.minRow = options.minRow || ROW_PX;
    this.maxRow = options.maxRow || ROW_PX;
    this.font = options.font || "12px system-ui, -apple-system, 'Segoe UI', sans-serif";
    this.data = null;
    this.focusId = null; // id of the zoomed frame; its ancestors stay drawn full width
    this.history = [];
    this.match = null; // RegExp or null: frames that do not match are dimmed
    this.selectedFid = null; // frames of this function get an outline
    this.currentI = -1; // the search match stepped to (next / previous): a thicker outline
    // Names of functions, and paths ("a;b;c" from the root: a QS step), with a broken
    // budget (budgets.js): their frames get a dashed outline and a ⚠.
    this.marked = null;
    this.rects = []; // what the last draw put on screen, for hit tests (and the tests)
    this.rowPx = this.minRow;
    this.onZoom = options.onZoom || null;
    this.paint = options.paint || null; // (i) => fill colour, in place of the name's colour
    this.lastDrawMs = 0;
    // The horizontal view inside the zoomed frame, as shares of its width: wheel, drag
    // and keys move it; a click zoom or a reset makes it whole again.
    this.vx0 = 0;
    this.vx1 = 1;
  }

  setData(d) {
    this.data = d && d.parent && d.parent.length ? columns(d) : null;
    if (this.focusId !== null && (!this.data || !this.data.index.has(this.focusId))) {
      this.focusId = null;
      this.history = [];
      this.vx0 = 0;
      this.vx1 = 1;
    }
  }

  get focus() {
    if (!this.data || this.focusId === null) return 0;
    return this.data.index.get(this.focusId) ?? 0;
  }

  zoom(i) {
    if (!this.data) return;
    const id = i <= 0 ? null : this.data.ids[i];
    if (id === this.focusId && this.vx0 === 0 && this.vx1 === 1) return;
    this.history.push([this.focusId, this.vx0, this.vx1]); // Esc comes back to this view
    this.focusId = id;
    this.vx0 = 0;
    this.vx1 = 1;
    if (this.onZoom) this.onZoom(i);
  }

  back() {
    if (!this.history.length) return false;
    [this.focusId, this.vx0, this.vx1] = this.history.pop();
    if (this.onZoom) this.onZoom(this.focus);
    return true;
  }

  reset() {
    this.history = [];
    this.focusId = null;
    this.vx0 = 0;
    this.vx1 = 1;
    if (this.onZoom) this.onZoom(0);
  }

  // Zoom the view by `factor` (< 1: in) keeping the point at share `at` (0..1) of the
  // screen where it is, as a wheel at the cursor does.
  zoomAt(at, factor) {
    const span = this.vx1 - this.vx0;
    const next = Math.min(1, Math.max(MIN_SPAN, span * factor));
    const anchor = this.vx0 + at * span;
    this.setView(anchor - at * next, next);
  }

  // Move the view by `by` screens (negative: left).
  panBy(by) {
    const span = this.vx1 - this.vx0;
    this.setView(this.vx0 + by * span, span);
  }

  setView(from, span) {
    const lo = Math.min(Math.max(0, from), 1 - span);
    this.vx0 = lo;
    this.vx1 = lo + span;
  }

  // The view in the graph's units from the root's left edge: [lo, hi, whole].
  visibleUnits() {
    const t = this.data;
    if (!t) return [0, 1, 1];
    const f = this.focus;
    const fw = t.values[f] || 1;
    return [t.x0[f] + this.vx0 * fw, t.x0[f] + this.vx1 * fw, t.values[0] || 1];
  }

  // Show [lo, hi] (units from the root's left edge): inside the zoomed frame the view
  // moves; past its edges the zoom opens to the root first (Esc comes back to it).
  showUnits(lo, hi) {
    const t = this.data;
    if (!t) return;
    let f = this.focus;
    if (lo < t.x0[f] - 1e-9 || hi > t.x0[f] + t.values[f] + 1e-9) {
      if (this.focusId !== null) this.history.push([this.focusId, this.vx0, this.vx1]);
      this.focusId = null;
      f = 0;
      if (this.onZoom) this.onZoom(0);
    }
    const fw = t.values[f] || 1;
    const span = Math.min(1, Math.max(MIN_SPAN, (hi - lo) / fw));
    this.setView((lo - t.x0[f]) / fw, span);
  }

  // Rows below (and including) the focus, plus the ancestors above it.
  levels() {
    const t = this.data;
    if (!t) return 1;
    const f = this.focus;
    const inSub = new Uint8Array(t.n);
    inSub[f] = 1;
    let deepest = t.depth[f];
    for (let i = f + 1; i < t.n; i++) {
      if (t.parent[i] >= 0 && inSub[t.parent[i]]) {
        inSub[i] = 1;
        if (t.depth[i] > deepest) deepest = t.depth[i];
      }
    }
    this._inSub = inSub;
    return deepest + 1;
  }

  // Height in CSS px the graph wants when it may use `room` px of panel.
  fit(room) {
    const levels = this.levels();
    this.rowPx = Math.max(this.minRow, Math.min(this.maxRow, Math.floor(room / levels)));
    return Math.max(room, levels * this.rowPx);
  }

  draw(width, height, dpr = window.devicePixelRatio || 1, target = null) {
    const started = performance.now();
    const canvas = target || this.canvas;
    canvas.width = Math.max(1, Math.round(width * dpr));
    canvas.height = Math.max(1, Math.round(height * dpr));
    if (!target) {
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    }
    const g = canvas.getContext("2d");
    // The light theme greys differ: read them at each draw (a toggle redraws).
    ROOT_COLOR = themeColor("--frame-root", "#3b4350");
    OTHER_COLOR = themeColor("--frame-other", "#4a525e");
    DIM_COLOR = themeColor("--frame-dim", "#2a3039");
    PALE_TEXT = themeColor("--frame-pale-text", "#d6dbe2");
    const hoverLine = themeColor("--frame-hover", "#4c9aff");
    const selectedLine = themeColor("--frame-selected", "#ffffff");
    const budgetLine = themeColor("--red", "#f0605a");
    const inks = labelInks();
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    this.rects = [];
    this.lastWidth = width;
    const t = this.data;
    if (!t) return;
    this.levels();
    const inSub = this._inSub;
    const f = this.focus;
    const ancestors = new Set();
    for (let p = t.parent[f]; p >= 0; p = t.parent[p]) ancestors.add(p);
    const span = this.vx1 - this.vx0;
    const fw = (t.values[f] || 1) * span;
    const fx = t.x0[f] + this.vx0 * (t.values[f] || 1);
    const row = this.rowPx;
    g.font = row >= 34 ? this.font.replace("12px", "13px") : this.font;
    g.textBaseline = "middle";
    const charPx = g.measureText("abcdefghijklmnopqrstuvwxyz").width / 26;
    const minText = 3 * charPx + 8; // room for three characters and the padding
    for (let i = 0; i < t.n; i++) {
      let x;
      let w;
      if (inSub[i]) {
        x = ((t.x0[i] - fx) / fw) * width;
        w = (t.values[i] / fw) * width;
        if (x + w <= 0 || x >= width) continue;
        if (x < 0) { w += x; x = 0; } // cut to the screen: the label stays in sight
        if (x + w > width) w = width - x;
      } else if (ancestors.has(i)) {
        x = 0;
        w = width;
      } else {
        continue;
      }
      if (w < 0.3) continue;
      const d = t.depth[i];
      const y = this.flip ? height - (d + 1) * row : d * row;
      const h = row - GAP;
      const fill = this.colorOf(i);
      g.fillStyle = fill;
      g.globalAlpha = ancestors.has(i) ? 0.72 : 1; // ancestors read as context
      g.fillRect(x, y, Math.max(0.5, w - (w > 2 ? GAP : 0)), h);
      g.globalAlpha = 1;
      if (i === this.currentI) {
        g.strokeStyle = hoverLine;
        g.lineWidth = 3;
        g.strokeRect(x + 1.5, y + 1.5, Math.max(1, w - GAP - 3), h - 3);
      } else if (this.selectedFid !== null && t.fids[i] === this.selectedFid && t.fids[i] >= 0) {
        g.strokeStyle = selectedLine;
        g.lineWidth = 2;
        g.strokeRect(x + 1, y + 1, Math.max(1, w - GAP - 2), h - 2);
      }
      const budget = this.marked !== null && i > 0 && (this.marked.has(t.names[i]) || this.marked.has(pathOf(t, i)));
      if (budget && i !== this.currentI) {
        g.strokeStyle = budgetLine;
        g.lineWidth = 2;
        g.setLineDash([4, 2]);
        g.strokeRect(x + 1, y + 1, Math.max(1, w - GAP - 2), h - 2);
        g.setLineDash([]);
      }
      let text = "";
      let ink = null;
      if (w >= minText) {
        text = fitLabel(budget ? `⚠ ${t.labels[i]}` : t.labels[i], w - 8, (s) => g.measureText(s).width);
        if (text) {
          ink = fill === ROOT_COLOR || fill === OTHER_COLOR || fill === DIM_COLOR ? PALE_TEXT : readableOn(fill, inks);
          g.fillStyle = ink;
          g.fillText(text, x + 4, y + h / 2 + 0.5);
        }
      }
      this.rects.push({ i, x, y, w, h, text, name: t.names[i], fid: t.fids[i], color: fill, ink, budget });
    }
    this.lastDrawMs = performance.now() - started;
  }

  colorOf(i) {
    const t = this.data;
    if (i === 0) return ROOT_COLOR;
    const name = t.names[i];
    if (t.fids[i] === OTHER_FID) return OTHER_COLOR;
    if (this.match && !this.match.test(name)) return DIM_COLOR;
    return this.paint ? this.paint(i) : nameColor(name);
  }

  hit(x, y) {
    for (let k = this.rects.length - 1; k >= 0; k--) {
      const r = this.rects[k];
      if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h + GAP) return r;
    }
    return null;
  }

  // Frames (and time, nested matches counted once) that match the search.
  matches() {
    const t = this.data;
    if (!t || !this.match) return null;
    let frames = 0;
    let units = 0;
    const hitUnder = new Uint8Array(t.n);
    for (let i = 1; i < t.n; i++) {
      const p = t.parent[i];
      const inherited = p >= 0 && hitUnder[p];
      const hit = t.fids[i] !== OTHER_FID && this.match.test(t.names[i]);
      if (hit) frames++;
      if (hit && !inherited) units += t.values[i];
      hitUnder[i] = inherited || hit ? 1 : 0;
    }
    return { frames, share: t.values[0] ? units / t.values[0] : 0 };
  }

  // Matching frames of the whole graph as the unzoomed view draws them, left to right
  // and root first: what next / previous step through (a frame too narrow to draw at
  // full view is not one), the same list whatever the zoom.
  hits() {
    const t = this.data;
    if (!t || !this.match) return [];
    const unit = (this.lastWidth || 1) / (t.values[0] || 1);
    const out = [];
    for (let i = 1; i < t.n; i++) {
      if (t.values[i] * unit < 0.3 || t.fids[i] === OTHER_FID) continue;
      if (this.match.test(t.names[i])) out.push(i);
    }
    return out.sort((a, b) => t.x0[a] - t.x0[b] || t.depth[a] - t.depth[b]);
  }

  // Make the next (by 1) or previous (by -1) match the current one; its index, or -1.
  step(by) {
    const list = this.hits();
    if (!list.length) return -1;
    const k = list.indexOf(this.currentI);
    const from = k < 0 ? (by > 0 ? -1 : list.length) : k;
    this.currentI = list[(from + by + list.length) % list.length];
    return this.currentI;
  }

  // What the search found, for the line beside the box: "match 2 of 7 · 7 frames, 12.3%
  // of profiled time", "no match", or "" with no search.
  matchSummary() {
    const m = this.matches();
    if (!m) return "";
    if (!m.frames) return "no match";
    const list = this.currentI > 0 ? this.hits() : [];
    const at = list.length ? `match ${list.indexOf(this.currentI) + 1} of ${list.length} · ` : "";
    return `${at}${m.frames} frames, ${fmtPct(100 * m.share)} of profiled time`;
  }

  // Ancestors of the focus, root first, for the path bar.
  path() {
    const t = this.data;
    if (!t) return [];
    const out = [];
    for (let p = this.focus; p >= 0; p = t.parent[p]) out.unshift(p);
    return out;
  }
}

// A frame's path from the root (the root left out), as a budget names a QS step; kept
// with the data once asked.
function pathOf(t, i) {
  if (!t.paths) t.paths = new Array(t.n);
  if (t.paths[i] === undefined) {
    const p = t.parent[i];
    t.paths[i] = p > 0 ? `${pathOf(t, p)};${t.names[i]}` : t.names[i];
  }
  return t.paths[i];
}

// The search box's text as a pattern: a case-insensitive regex, else the text itself when
// it does not parse as one (typing "foo(" never throws); null when empty.
export function searchPattern(q) {
  if (!q) return null;
  try { return new RegExp(q, "i"); } catch { return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i"); }
}

// The columns as the canvas reads them: rows are used as sent; only the name table is
// joined to the rows (labels and names per row) and the path keys indexed (a zoom is
// kept on its key across updates).
function columns(d) {
  const n = d.parent.length;
  const index = new Map();
  for (let i = 0; i < n; i++) index.set(d.key[i], i);
  return {
    n,
    ids: d.key,
    index,
    parent: d.parent,
    depth: d.depth,
    x0: d.x,
    values: d.total,
    labels: d.name.map((k) => d.labels[k]),
    names: d.name.map((k) => d.names[k]),
    fids: d.fid,
    raw: d,
  };
}

// A frame's figures for tooltips and the detail panel, in µs: calls and self are null
// for "other" (small frames merged).
export function frameInfo(t, i) {
  const d = t.raw;
  const per = d.units_per_us || 1;
  const other = t.fids[i] === OTHER_FID;
  return {
    name: t.names[i],
    where: d.where[d.name[i]],
    total_us: t.values[i] / per,
    self_us: other ? null : d.self[i] / per,
    calls: other ? null : d.calls[i],
  };
}
