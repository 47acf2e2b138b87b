// QS event flow: the "Sequence" view (QSPY -g's diagram drawn: one lifeline per chosen
// object, arrows for posts, publishes, dispatches and time events, time going down) and
// the "States" view (one lane per state machine, a coloured span per state). Both
// follow the timeline's window (ctx.window) and refresh with the QS tab. A click on a
// dispatch selects its RTC step, as a flame click selects a function. Every name comes
// from the target: it goes in as text (textContent, attributes), never as markup.

import { el, injectStyle } from "./dom.js";
import { fitLabel, fmtInt, fmtTime, fmtUs, plural, themeList } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 24; // px per diagram row
const LANE_MAX = 170; // px per lifeline, at most
const LANE_MIN = 112; // and at least (narrower windows scroll sideways)
const TIME_W = 92; // the time column
const HEAD = 34; // lifeline boxes
const LANE_H = 30; // px per state machine
const NAMES_W = 150; // the state machines' names
const AXIS_H = 22;
const MAX_LANES = 10; // QSPY's SEQ_ITEMS_MAX
const STYLE = `
.qsf { display: flex; flex-direction: column; flex: 1; min-height: 0; padding: 10px; gap: 8px; }
.qsf-tools { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; flex: none; font-size: 12px; }
.qsf-tools .muted { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; min-width: 0; }
.qsf-tools input[type=text] { width: 340px; height: 24px; font-family: var(--mono); font-size: 12px; }
.qsf-picker { display: flex; flex-wrap: wrap; gap: 4px; flex: none; max-height: 56px; overflow-y: auto; }
.qsf-pick { display: inline-flex; gap: 5px; align-items: center; height: 22px; padding: 0 8px; border-radius: 11px;
  border: 1px solid var(--line-2); background: var(--bg); color: var(--text); cursor: pointer; font-size: 11.5px; max-width: 220px; }
.qsf-pick.on { background: var(--select-bg); border-color: var(--accent); }
.qsf-pick span { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.qsf-pick .n { color: var(--muted); font-size: 10.5px; }
.qsf-box { position: relative; flex: 1; min-height: 0; overflow: auto; border: 1px solid var(--line); border-radius: 8px;
  background: var(--bg); }
.qsf-head { position: sticky; top: 0; z-index: 1; background: var(--panel-2); border-bottom: 1px solid var(--line); }
.qsf svg text { font: 11.5px var(--mono); fill: var(--text); }
.qsf svg .ts { fill: var(--muted); }
.qsf svg .headbg { fill: var(--panel-2); }
.qsf svg .life { stroke: var(--line-2); }
.qsf svg .sys { stroke: var(--line-2); stroke-dasharray: 4 3; }
.qsf svg .obox { fill: var(--panel); stroke: var(--muted); }
.qsf svg .post { stroke: var(--accent); fill: none; stroke-width: 1.4; }
.qsf svg .post-head { fill: var(--accent); }
.qsf svg .attempt { stroke: var(--amber); fill: none; stroke-dasharray: 5 3; stroke-width: 1.4; }
.qsf svg .attempt-head { fill: var(--amber); }
.qsf svg .lifo { stroke: var(--violet); fill: none; stroke-width: 1.4; }
.qsf svg .pub { stroke: var(--green); stroke-dasharray: 2 3; }
.qsf svg .star { fill: var(--green); }
.qsf svg .te { stroke: var(--violet); stroke-dasharray: 3 2; fill: none; stroke-width: 1.4; }
.qsf svg .te-head { fill: var(--violet); }
.qsf svg .state { fill: var(--amber-bg); stroke: var(--amber); }
.qsf svg .tick { stroke: var(--faint); stroke-dasharray: 1 3; }
.qsf svg .note { font-style: italic; fill: var(--muted); }
.qsf svg .disp { cursor: pointer; }
.qsf svg .disp rect.act { fill: var(--select-bg); stroke: var(--accent); }
.qsf svg .disp:hover rect.act, .qsf svg .disp.sel rect.act { fill: var(--accent); }
.qsf svg .disp.sel text { font-weight: 700; }
.qsf svg .row-hit { fill: transparent; }
.qsf svg .row-hit:hover { fill: var(--hover-bg); }
.qsf svg .span { stroke: var(--line-2); }
.qsf svg .span:hover { stroke: var(--text); stroke-width: 1.5; }
.qsf svg .span-label { font: 11px system-ui, sans-serif; fill: var(--frame-text); pointer-events: none; }
.qsf svg .sm-name { font: 12px system-ui, sans-serif; fill: var(--text); }
.qsf svg .axis { stroke: var(--line-2); }
.qsf svg .axis-label { font: 10.5px system-ui, sans-serif; fill: var(--muted); }
.qsf-empty { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center; padding: 20px;
  color: var(--muted); text-align: center; line-height: 1.5; pointer-events: none; }
.qsf-tip { position: fixed; z-index: 30; pointer-events: none; border: 1px solid var(--line-2);
  border-radius: 6px; padding: 6px 9px; font-size: 12px; line-height: 1.5; box-shadow: 0 4px 16px var(--shadow); color: var(--tip-text); background: var(--tip-bg);
  max-width: 420px; white-space: pre-line; }
`;

// States told apart by colour: a palette of distinct light hues (dark labels on them),
// handed out in the order states are first seen and kept for the page's life, so a
// state keeps its colour across refreshes and a machine's few states never share one.
// The palette is the theme's (--state-fills); a state keeps its place in it.
const STATE_FALLBACK = ["#e6d36a", "#f5a3c7", "#a8c97f", "#8fb3ff"];
const stateSlots = new Map();
function stateColor(name) {
  let k = stateSlots.get(name);
  if (k === undefined) {
    k = stateSlots.size;
    stateSlots.set(name, k);
  }
  const fills = themeList("--state-fills", STATE_FALLBACK);
  return fills[k % fills.length];
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  return node;
}

// Characters of 11.5px monospace: labels are cut to a lane in the middle, as the flame's are.
const CHAR = 6.9;
const measureMono = (text) => text.length * CHAR;
function label(text, room) {
  return fitLabel(String(text ?? ""), room, measureMono) || "…";
}

// Seconds to the µs ("4.640123 s"): rows a few µs apart must not read the same.
const secs = (us) => `${(us / 1e6).toFixed(6)} s`;

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, String(v));
  return q.toString();
}

export function createFlow(container, ctx, source) {
  const session = () => source().session ?? null;
  injectStyle("mcuprof-qsflow-style", STYLE);
  let mode = "sequence";
  let g = null; // the -g list, null: the server's default lanes
  let seq = null; // the last answers
  let states = null;
  let selected = null; // index of the selected dispatch
  let busy = false;
  let LANE = LANE_MAX; // px per lifeline in the diagram on screen

  const gInput = el("input", { type: "text", id: "qsf-g", "aria-label": "Lifelines, as QSPY's -g list",
    placeholder: "Table_inst,Philo_inst[0],?", maxlength: "1023", spellcheck: "false" });
  const picker = el("div", { class: "qsf-picker", id: "qsf-picker", role: "group", "aria-label": "Lifelines" });
  const note = el("span", { class: "muted", id: "qsf-note" });
  const saveSeq = el("a", { class: "btn small secondary", id: "qsf-save-seq", download: "",
    title: "QSPY's -g sequence diagram text of this window and these lifelines" }, "Save .seq");
  const saveSvg = el("a", { class: "btn small secondary", id: "qsf-save-svg", download: "",
    title: "The sequence diagram as SVG" }, "Save SVG");
  const seqTools = el("div", { class: "qsf-tools", id: "qsf-seq-tools" },
    el("label", { class: "inline" }, "Lifelines (-g)", gInput), saveSeq, saveSvg, note);
  const statesNote = el("span", { class: "muted", id: "qsf-states-note" });
  const statesTools = el("div", { class: "qsf-tools", id: "qsf-states-tools", hidden: true }, statesNote);
  const box = el("div", { class: "qsf-box", id: "qsf-box", tabindex: "0" });
  const empty = el("div", { class: "qsf-empty", id: "qsf-empty", hidden: true });
  const tip = el("div", { class: "qsf-tip", id: "qsf-tip", hidden: true, role: "tooltip" });
  const wrap = el("div", { class: "qsf", id: "qsf" }, seqTools, picker, statesTools,
    el("div", { style: "position: relative; flex: 1; min-height: 0; display: flex;" }, box, empty));
  container.replaceChildren(wrap);
  document.body.append(tip);

  gInput.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    g = gInput.value.trim() || null;
    ctx.run(() => refresh());
  });

  function params(extra = {}) {
    return { ...source(), ...ctx.windowParams(), ...extra };
  }
  // Times count from the timeline's zero (its range's start, as its window chip does)
  // when the profile shows this stream (live, or this session opened); else from the
  // stream's first record, as the QS tab's plots do.
  function base() {
    const first = (mode === "sequence" ? seq?.first : states?.first) ?? 0;
    const opened = ctx.state?.health?.opened?.id ?? null;
    const range = ctx.state?.range;
    return range && (session() === null ? opened === null : opened === session()) ? range[0] : first;
  }

  let again = false; // asked for while one runs: run once more after it (fresh wins)
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    again = false;
    try {
      const asked = mode;
      if (asked === "sequence") {
        const out = await ctx.api.getJSON("/api/qs/flow", params(g === null ? {} : { g }));
        if (mode === asked) { seq = out; drawSequence(); }
      } else {
        const out = await ctx.api.getJSON("/api/qs/flow/states", params());
        if (mode === asked) { states = out; drawStates(); }
      }
    } finally {
      busy = false;
      if (again) ctx.run(() => refresh());
    }
  }

  // ------------------------------------------------------------- the lane picker

  function drawPicker() {
    const on = new Set(seq.names);
    picker.replaceChildren(...seq.objects.map((o) => el("button", {
      type: "button", class: `qsf-pick${on.has(o.name) ? " on" : ""}`, "aria-pressed": String(on.has(o.name)),
      title: `${o.name}: ${plural(o.events, "event")}`, "data-name": o.name,
    }, el("span", {}, o.name), el("span", { class: "n" }, fmtInt(o.events)))),
    el("button", { type: "button", class: `qsf-pick${on.has("?") ? " on" : ""}`, "aria-pressed": String(on.has("?")),
      title: "The system border: posts from or to objects not on a lifeline", "data-name": "?" },
    el("span", {}, "? (others)")));
    if (seq.objects_more) picker.append(el("span", { class: "muted" }, `+${fmtInt(seq.objects_more)} more: type them`));
    if (document.activeElement !== gInput) gInput.value = seq.names.join(",");
  }
  picker.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-name]");
    if (!b) return;
    const names = seq.names.filter((n) => n !== b.dataset.name);
    if (names.length === seq.names.length) {
      if (names.length >= MAX_LANES) { ctx.notify(`at most ${MAX_LANES} lifelines (QSPY's -g limit)`, "info"); return; }
      names.push(b.dataset.name);
    }
    if (!names.length) return;
    g = names.join(",");
    ctx.run(() => refresh());
  });

  function exportLinks() {
    const q = query(params({ g: seq.names.join(",") }));
    saveSeq.href = `/api/qs/flow/export.seq?${q}`;
    saveSvg.href = `/api/qs/flow/export.svg?${q}`;
  }

  // ------------------------------------------------------------- the sequence diagram

  function drawSequence() {
    drawPicker();
    exportLinks();
    const rows = seq.rows;
    const parts = [`${plural(rows.length, "event")} on ${plural(seq.names.length, "lifeline")}`];
    if (seq.window) parts.push("in the timeline's window");
    if (seq.cut) parts.push(`the window's first ${fmtInt(seq.cut)} not shown (at most ${fmtInt(seq.rows_max)}): narrow the window`);
    if (seq.items_dropped) parts.push(`${fmtInt(seq.items_dropped)} older events no longer kept`);
    note.textContent = parts.join(" · ");
    empty.hidden = rows.length > 0;
    empty.textContent = seq.items ? "No events of these lifelines in this window. Pick other lifelines, or clear the window."
      : "No event flow yet: posts, publishes, dispatches and state changes appear here as the target sends them.";
    // Lifelines share the box's width, within LANE_MIN..LANE_MAX each.
    LANE = Math.max(LANE_MIN, Math.min(LANE_MAX, (box.clientWidth - TIME_W - 70) / seq.names.length));
    const width = TIME_W + LANE * seq.names.length + 60;
    const height = HEAD + ROW * rows.length + 10;
    const root = svg("svg", { width, height, id: "qsf-seq", role: "img", "aria-label": "Sequence diagram" });
    const x = (lane) => TIME_W + LANE * lane + LANE / 2;
    seq.names.forEach((name, i) => {
      root.append(svg("line", { x1: x(i), y1: HEAD, x2: x(i), y2: height, class: name === "?" ? "sys" : "life" }));
    });
    // Following the newest rows (live) while scrolled to the bottom, as the log does.
    const follow = session() === null && box.scrollTop + box.clientHeight >= box.scrollHeight - 2 * ROW;
    const rowsG = svg("g", { class: "qsf-rows" });
    const head = drawHeads(x, width);
    root.append(rowsG, head);
    box.replaceChildren(root);
    if (follow) box.scrollTop = box.scrollHeight;
    // Only the rows on screen (and a screen's worth around them) are in the DOM.
    const t0 = base();
    let shown = null;
    function visible() {
      const first = Math.max(0, Math.floor((box.scrollTop - HEAD) / ROW) - 30);
      const last = Math.min(rows.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW) + 30);
      head.setAttribute("transform", `translate(0 ${box.scrollTop})`);
      if (shown && shown[0] === first && shown[1] === last) return;
      shown = [first, last];
      const nodes = [];
      for (let k = first; k < last; k++) nodes.push(drawRow(rows[k], HEAD + ROW * k + ROW / 2, x, t0));
      rowsG.replaceChildren(...nodes);
    }
    box.onscroll = visible;
    visible();
  }

  function drawHeads(x, width) {
    const head = svg("g", { class: "qsf-heads" });
    head.append(svg("rect", { x: 0, y: 0, width, height: HEAD, class: "headbg" }));
    head.append(svg("text", { x: 6, y: 21, class: "ts" }, "time"));
    seq.names.forEach((name, i) => {
      const b = svg("g", {});
      b.append(svg("title", {}, name === "?" ? "? : objects not on a lifeline" : name));
      b.append(svg("rect", { x: x(i) - LANE / 2 + 8, y: 5, width: LANE - 16, height: 24, rx: 4, class: "obox" }));
      b.append(svg("text", { x: x(i), y: 21, "text-anchor": "middle" }, label(name === "?" ? "? (others)" : name, LANE - 26)));
      head.append(b);
    });
    return head; // kept at the top while the rows scroll (visible() moves it)
  }

  function arrowHead(tipX, y, dir, cls) {
    return svg("path", { d: `M${tipX - 7 * dir},${y - 4}L${tipX},${y}L${tipX - 7 * dir},${y + 4}Z`, class: cls });
  }

  function drawRow(r, y, x, t0) {
    const node = svg("g", { class: `qsf-row k-${r.k}`, "data-index": r.i });
    const time = r.t === null ? "" : secs(r.t - t0);
    node.append(svg("rect", { x: 0, y: y - ROW / 2, width: "100%", height: ROW, class: "row-hit" }));
    if (time) node.append(svg("text", { x: 6, y: y + 4, class: "ts" }, time));
    const a = x(r.a);
    const b = x(r.b);
    const room = LANE - 22;
    if (r.s === "arrow" && r.a !== r.b) {
      const cls = r.x ? "attempt" : "post";
      const dir = b > a ? 1 : -1;
      node.append(svg("line", { x1: a, y1: y, x2: b - dir * 2, y2: y, class: cls }), arrowHead(b, y, dir, `${cls}-head`));
      node.append(svg("text", { x: dir > 0 ? a + 6 : a - 6, y: y - 4, "text-anchor": dir > 0 ? "start" : "end" }, label(r.l, room)));
    } else if (r.s === "arrow" || r.s === "lifo") {
      const cls = r.s === "lifo" ? "lifo" : r.x ? "attempt" : "post";
      node.append(svg("path", { d: `M${a},${y - 6}h16v12h-14`, class: cls }), arrowHead(a + 1, y + 6, -1, `${cls === "lifo" ? "te" : cls}-head`));
      node.append(svg("text", { x: a + 22, y: y + 4 }, label(r.l, room - 20)));
    } else if (r.s === "publish") {
      const right = x(seq.names.length - 1) + LANE / 2;
      node.append(svg("line", { x1: TIME_W, y1: y, x2: right, y2: y, class: "pub" }), svg("circle", { cx: a, cy: y, r: 4.5, class: "star" }));
      node.append(svg("text", { x: a + 9, y: y - 4 }, `publish ${label(r.l, room - 56)}`));
    } else if (r.s === "tick") {
      const right = x(seq.names.length - 1) + LANE / 2;
      node.append(svg("line", { x1: 4, y1: y, x2: right, y2: y, class: "tick" }), svg("text", { x: TIME_W, y: y - 4, class: "ts" }, r.l));
    } else if (r.s === "state") {
      const text = label(r.l, room);
      const w = text.length * CHAR + 14;
      node.append(svg("rect", { x: a - w / 2, y: y - 9, width: w, height: 18, rx: 8, class: "state" }));
      node.append(svg("text", { x: a, y: y + 4, "text-anchor": "middle" }, text));
    } else if (r.s === "note") {
      node.append(svg("text", { x: a, y: y + 4, "text-anchor": "middle", class: "note" }, `(${r.l})`));
    } else if (r.s === "time_event") {
      // A clock face, then the time event's arrow into the lifeline.
      node.append(svg("circle", { cx: a - 40, cy: y, r: 5, class: "te" }),
        svg("path", { d: `M${a - 40},${y - 3}v3h2.5`, class: "te" }));
      node.append(svg("line", { x1: a - 34, y1: y, x2: a - 2, y2: y, class: "te" }), arrowHead(a, y, 1, "te-head"));
      node.append(svg("text", { x: a + 6, y: y + 4 }, label(r.l, room - 10)));
    } else if (r.s === "dispatch") {
      node.classList.add("disp");
      if (r.i === selected) node.classList.add("sel");
      node.append(svg("rect", { x: a - 5, y: y - 9, width: 10, height: 18, rx: 2, class: "act" }));
      node.append(arrowHead(a - 6, y, 1, "post-head"));
      node.append(svg("text", { x: a + 9, y: y + 4 }, `▸ ${label(r.l, room - 20)}`));
    }
    node.append(svg("title", {}, rowTitle(r, t0)));
    return node;
  }

  function rowTitle(r, t0) {
    const at = r.t === null ? "" : `\nat ${fmtUs(r.t - t0)} (target time ${r.ts})`;
    if (r.s === "dispatch") {
      const step = r.dur === null ? "step not finished" : `RTC step ${fmtUs(r.dur)}`;
      return `Dispatch ${r.l} to ${r.obj} in ${r.state}${at}\n${step}; click to select it in the flame graph and timeline`;
    }
    if (r.s === "time_event") return `Time event ${r.from} fired ${r.l} to ${r.obj}${at}`;
    const what = { arrow: r.x ? "Post attempt" : "Post", lifo: "Post LIFO", publish: "Publish", state: "Entered state",
      note: "", tick: "Clock tick" }[r.s] ?? r.k;
    return `${what} ${r.l}${at}`.trim();
  }

  box.addEventListener("click", (ev) => {
    const row = ev.target.closest?.(".disp");
    if (!row || !seq) return;
    const r = seq.rows.find((x) => String(x.i) === row.dataset.index);
    if (r) ctx.run(() => selectStep(r));
  });

  // The step is in the flame graph and timeline as object > state > signal; its signal
  // frame is the step's own cell. Selected as a flame click selects it, and the
  // timeline is asked to show the step's time.
  async function selectStep(r) {
    selected = r.i;
    for (const n of box.querySelectorAll(".disp")) n.classList.toggle("sel", n.dataset.index === String(r.i));
    const out = await ctx.api.getJSON("/api/functions");
    const fn = out.functions.find((f) => f.name === r.l && f.file === "signal")
      || out.functions.find((f) => f.name === r.l);
    if (!fn) {
      ctx.notify(`${r.l} is not in the flame graph: open this session (Sessions tab) to see its steps`, "info");
      return;
    }
    const span = r.dur === null ? null : [r.t, r.t + Math.max(r.dur, 1)];
    ctx.emit("select-function", { fid: fn.fid, name: fn.name, from: "qsflow", step: { index: r.i, span } });
    if (span) ctx.emit("reveal", span);
  }

  // ------------------------------------------------------------- the state timeline

  function statesRange() {
    if (ctx.window) return ctx.window;
    let lo = Infinity;
    for (const lane of states.lanes) if (lane.spans.length) lo = Math.min(lo, lane.spans[0][0]);
    const hi = states.end ?? lo + 1;
    return Number.isFinite(lo) ? [lo, Math.max(hi, lo + 1)] : [0, 1];
  }

  function drawStates() {
    const lanes = states.lanes;
    const parts = [plural(lanes.length, "state machine")];
    if (states.window) parts.push("in the timeline's window");
    if (states.cut) parts.push(`the window's first ${fmtInt(states.cut)} spans not shown (at most ${fmtInt(states.spans_max)})`);
    if (states.dropped) parts.push(`${fmtInt(states.dropped)} older spans no longer kept`);
    if (states.machines_dropped) parts.push(`${fmtInt(states.machines_dropped)} changes of machines past the limit`);
    statesNote.textContent = parts.join(" · ");
    empty.hidden = lanes.length > 0;
    empty.textContent = "No state changes yet: each state machine's transitions appear here as lanes.";
    const width = Math.max(480, box.clientWidth - 2);
    const plot = width - NAMES_W - 12;
    const [a, b] = statesRange();
    const sx = (t) => NAMES_W + ((t - a) / (b - a)) * plot;
    const root = svg("svg", { width, height: AXIS_H + LANE_H * lanes.length + 8, id: "qsf-states", role: "img",
      "aria-label": "State timeline" });
    root.append(drawAxis(a, b, sx, plot));
    const t0 = base();
    lanes.forEach((lane, k) => root.append(drawLane(lane, AXIS_H + k * LANE_H, sx, a, b, t0)));
    box.onscroll = null;
    tip.hidden = true; // its span may be elsewhere now
    box.replaceChildren(root);
  }

  function drawAxis(a, b, sx, plot) {
    const axis = svg("g", {});
    const t0 = base();
    const n = Math.max(2, Math.floor(plot / 110));
    for (let k = 0; k <= n; k++) {
      const t = a + ((b - a) * k) / n;
      axis.append(svg("line", { x1: sx(t), y1: AXIS_H - 5, x2: sx(t), y2: AXIS_H, class: "axis" }));
      axis.append(svg("text", { x: sx(t), y: AXIS_H - 8, "text-anchor": k === 0 ? "start" : k === n ? "end" : "middle",
        class: "axis-label" }, fmtTime(t - t0)));
    }
    return axis;
  }

  function drawLane(lane, top, sx, a, b, t0) {
    const node = svg("g", { class: "qsf-lane", "data-obj": lane.obj });
    node.append(svg("line", { x1: 0, y1: top + LANE_H, x2: "100%", y2: top + LANE_H, class: "axis" }));
    const name = svg("text", { x: 6, y: top + LANE_H / 2 + 4, class: "sm-name" }, fitLabel(lane.obj, NAMES_W - 12, measureSans) || "…");
    name.append(svg("title", {}, lane.obj));
    node.append(name);
    for (const [s0, s1, state, index, short] of lane.spans) {
      const end = s1 ?? states.end ?? b;
      const x0 = sx(Math.max(a, s0));
      const x1 = sx(Math.min(b, end));
      if (x1 < x0) continue;
      const w = Math.max(1, x1 - x0);
      const rect = svg("rect", { x: x0, y: top + 4, width: w, height: LANE_H - 8, rx: 2, class: "span",
        fill: stateColor(state), "data-state": state, "data-t0": s0, "data-t1": s1 ?? "", "data-index": index,
        "aria-label": `${state} from ${fmtUs(s0 - t0)}` });
      node.append(rect);
      const text = fitLabel(short, w - 8, measureSans);
      if (text) node.append(svg("text", { x: x0 + w / 2, y: top + LANE_H / 2 + 4, "text-anchor": "middle", class: "span-label" }, text));
    }
    return node;
  }
  let measureCtx = null;
  function measureSans(text) {
    measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
    measureCtx.font = "11px system-ui, sans-serif";
    return measureCtx.measureText(text).width;
  }

  box.addEventListener("mousemove", (ev) => {
    const rect = ev.target.closest?.("rect.span");
    if (!rect) { tip.hidden = true; return; }
    const t0 = base();
    const s0 = Number(rect.dataset.t0);
    const open = rect.dataset.t1 === "";
    const s1 = open ? states.end : Number(rect.dataset.t1);
    tip.textContent = `${rect.closest(".qsf-lane").dataset.obj}\n${rect.dataset.state}\n` +
      `entered at ${fmtUs(s0 - t0)}\n${open ? "still in it after" : "for"} ${fmtUs(s1 - s0)}`;
    tip.hidden = false;
    tip.style.left = `${Math.min(window.innerWidth - tip.offsetWidth - 8, ev.clientX + 14)}px`;
    tip.style.top = `${ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16}px`;
  });
  box.addEventListener("mouseleave", () => { tip.hidden = true; });

  function setMode(next) {
    mode = next;
    seqTools.hidden = mode !== "sequence";
    picker.hidden = mode !== "sequence";
    statesTools.hidden = mode !== "states";
    tip.hidden = true;
    box.replaceChildren();
    return refresh();
  }

  // Redrawn to the box's new width (the states' time axis fits it; lifelines share it).
  let lastWidth = 0;
  new ResizeObserver(() => {
    const w = box.clientWidth;
    if (!w || Math.abs(w - lastWidth) < 8) return;
    lastWidth = w;
    if (mode === "states" && states) drawStates();
    else if (mode === "sequence" && seq) drawSequence();
  }).observe(box);
  ctx.on("window", () => { if (!container.hidden && container.isConnected) ctx.run(() => refresh()); });
  return { setMode, refresh, get mode() { return mode; } };
}
