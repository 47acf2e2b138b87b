// The flame graph's detail panel, as speedscope's: the frame under the pointer (else the
// one last clicked or stepped to), this instance and every instance of its function, and
// the function's per-call durations (/api/distribution, asked once the pointer rests).

import { debounce, esc, fmtCalls, fmtPct, fmtTime, plural } from "./format.js";
import { frameInfo } from "./flamecanvas.js";

const REST_MS = 250; // the pointer rests this long on a function before its timings are asked
const HINT = "Hover or click a frame for its details · wheel: pan · Ctrl+wheel or pinch: zoom at the pointer · " +
  "drag: pan · W/S or +/−: zoom · A/D or ←/→: pan · 0: whole graph";

export function initFlameDetail(ctx, el, state) {
  let pinned = null; // id (path key) of the frame clicked or stepped to
  let hovered = null; // id of the frame under the pointer
  let shown = null; // [fc, i] on the panel
  const timings = new Map(); // fid -> /api/distribution answer, null while asked, or "none"
  const forget = () => timings.clear();
  ctx.on("version", forget);
  ctx.on("window", forget);

  const ask = debounce((fid) => {
    if (timings.has(fid)) return;
    timings.set(fid, null);
    ctx.api.getJSON("/api/distribution", { fid, ...ctx.windowParams() })
      .then((d) => timings.set(fid, d && d.calls ? d : "none"))
      .catch(() => timings.set(fid, "none"))
      .finally(() => { if (shown && shown[0].data?.fids[shown[1]] === fid) render(...shown); });
  }, REST_MS);

  function render(fc, i) {
    const t = fc?.data;
    if (!t || i < 0 || i >= t.n) {
      shown = null;
      el.innerHTML = `<div class="fd-hint muted">${esc(HINT)}</div>`;
      return;
    }
    shown = [fc, i];
    const { data, mode } = state();
    const c = frameInfo(t, i);
    const profiled = data?.profiled_us || t.raw.total_us;
    const fid = t.fids[i];
    const fn = fid >= 0 ? (data?.functions || {})[String(fid)] : null;
    const share = (us) => (profiled ? fmtPct((100 * us) / profiled) : "—");
    const what = mode === "bottom-up" ? "This path (self time along it)" : "This frame";
    const own = [`<h4>${esc(what)}</h4>`, `<span>total <b>${esc(fmtTime(c.total_us))}</b> · ${esc(share(c.total_us))}</span>`];
    if (mode !== "bottom-up" && c.self_us !== null) {
      own.push(`<span>self <b>${esc(fmtTime(c.self_us))}</b> · ${esc(share(c.self_us))}</span>`);
    }
    if (c.calls !== null) own.push(`<span>${esc(fmtCalls(c.calls))}</span>`);
    const all = [];
    if (fn) {
      all.push(`<h4>All ${esc(plural(instances(t, fid), "frame"))} of the function</h4>`,
        `<span>total <b>${esc(fmtTime(fn[3]))}</b> · ${esc(fmtPct(fn[0]))}</span>`,
        `<span>self <b>${esc(fmtTime(fn[4]))}</b> · ${esc(fmtPct(fn[1]))}</span>`,
        `<span>${esc(fmtCalls(fn[2]))}</span>`);
    }
    el.innerHTML =
      `<div class="fd-name"><span class="fd-chip" style="background:${esc(fc.colorOf(i))}"></span>` +
      `<b title="${esc(c.name)}">${esc(t.labels[i])}</b>` +
      (c.where ? ` <span class="muted">${esc(c.where)}</span>` : "") + "</div>" +
      `<div class="fd-cols"><div class="fd-col" data-part="instance">${own.join("")}</div>` +
      (all.length ? `<div class="fd-col" data-part="function">${all.join("")}</div>` : "") +
      (fid >= 0 ? `<div class="fd-col" data-part="timing">${timingHtml(fid)}</div>` : "") + "</div>";
    if (fid >= 0 && !timings.has(fid)) ask(fid);
  }

  function timingHtml(fid) {
    const d = timings.get(fid);
    const head = "<h4>Per call (inclusive)</h4>";
    if (d === undefined || d === null) return `${head}<span class="muted">…</span>`;
    if (d === "none") return `${head}<span class="muted">no timings</span>`;
    return head + [["p50", d.p50_us], ["p90", d.p90_us], ["p99", d.p99_us], ["max", d.max_us]]
      .map(([k, v]) => `<span>${k} <b>${esc(fmtTime(v))}</b></span>`).join("");
  }

  return {
    // The pointer is over frame i of fc (-1: over none: the pinned frame comes back).
    hover(fc, i) {
      hovered = i >= 0 && fc.data ? fc.data.ids[i] : null;
      if (i >= 0) { if (!shown || shown[0] !== fc || shown[1] !== i) render(fc, i); return; }
      const p = pinned === null ? -1 : fc.data?.index.get(pinned) ?? -1;
      if (!shown || shown[1] !== p) render(fc, p);
    },
    // Frame i of fc is the one the panel comes back to (-1: none).
    pin(fc, i) {
      pinned = i >= 0 && fc.data ? fc.data.ids[i] : null;
      render(fc, i);
    },
    // New data (live, up to 60 a second): the same frame (by its path key) if it is still drawn.
    refresh(fc) {
      const id = hovered ?? pinned;
      render(fc, id === null ? -1 : fc.data?.index.get(id) ?? -1);
    },
  };
}

// How many frames of the graph are the function's.
function instances(t, fid) {
  let n = 0;
  for (let i = 0; i < t.n; i++) if (t.fids[i] === fid) n++;
  return n;
}
