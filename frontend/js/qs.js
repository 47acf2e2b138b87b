// QS tab: what a QP target traces over QP/Spy, live or from a stored QS session. A
// summary strip, the trace log (qslog.js), queue and pool margins (qsmargins.js) and
// numeric application records (qsapp.js). RTC steps are in the flame graph, timeline
// and Functions views, which take QS sessions like any other.

import { el, injectStyle } from "./dom.js";
import { fmtInt } from "./format.js";
import { createAppPlot } from "./qsapp.js";
import { createControl } from "./qscontrol.js";
import { createFlow } from "./qsflow.js";
import { createLog } from "./qslog.js";
import { createMargins } from "./qsmargins.js";

const POLL_MS = 1000;
const STYLE = `
.qs { display: flex; flex-direction: column; flex: 1; min-height: 0; }
.qs .toolbar label.inline, .qs-log-tools label.inline { display: inline-flex; gap: 6px; align-items: center; color: var(--muted); }
.qs #qs-source { max-width: 320px; }
.qs-stats { display: flex; flex-wrap: wrap; gap: 6px 18px; font-size: 12px; min-width: 0; }
.qs-stats .k { color: var(--muted); margin-right: 5px; }
.qs-stats .v { font-weight: 600; font-variant-numeric: tabular-nums; }
.qs-stats .bad .v { color: var(--red); }
.qs-body { flex: 1; min-height: 0; padding: 10px; display: grid; gap: 10px; overflow: auto;
  grid-template-columns: minmax(0, 1.35fr) minmax(380px, 1fr); grid-template-rows: minmax(0, 1.2fr) minmax(0, 1fr); }
.qs-body > .qs-log-panel { grid-row: 1 / 3; }
/* Narrower: the log across the top, the two plots side by side under it. */
@media (max-width: 1500px) {
  .qs-body { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); grid-template-rows: none; grid-auto-rows: min-content; }
  .qs-body > .qs-log-panel { grid-row: auto; grid-column: 1 / -1; height: max(340px, calc(100vh - 260px)); }
  .qs-body > .qs-panel:not(.qs-log-panel) { height: 460px; }
}
.qs-flow { flex: 1; min-height: 0; display: flex; flex-direction: column; }
.qs-flow[hidden] { display: none; }
.qs-panel { background: var(--panel-2); border: 1px solid var(--line); border-radius: 8px; min-width: 0; min-height: 0;
  display: flex; flex-direction: column; overflow: hidden; }
.qs-panel h3 { margin: 0; padding: 8px 10px 6px; font-size: 12px; font-weight: 600; letter-spacing: .4px; flex: none;
  text-transform: uppercase; color: var(--muted); display: flex; gap: 8px; align-items: baseline; }
.qs-panel h3 .muted { text-transform: none; letter-spacing: 0; font-weight: 400; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; min-width: 0; }
.qs-panel h3 select { height: 24px; text-transform: none; letter-spacing: 0; font-weight: 400; color: var(--text); }
.qs-log-tools { display: flex; gap: 10px; align-items: center; padding: 0 10px 6px; flex: none; min-width: 0; }
.qs-log-tools input[type=search] { width: 240px; height: 26px; }
.qs-log-tools > .muted { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; min-width: 0; }
.qs-filter { display: flex; gap: 8px; align-items: flex-start; padding: 0 10px 5px; flex: none; min-width: 0; }
.qs-filter-k { flex: none; width: 46px; padding-top: 3px; font-size: 10.5px; text-transform: uppercase; letter-spacing: .5px;
  color: var(--muted); }
.qs-chips { display: flex; flex-wrap: wrap; gap: 4px; max-height: 50px; overflow-y: auto; min-width: 0; flex: 1; }
.qs-chip { display: inline-flex; gap: 5px; align-items: center; height: 21px; padding: 0 7px; border-radius: 11px;
  border: 1px solid var(--line-2); background: var(--bg); color: var(--text); cursor: pointer; font-size: 11.5px;
  max-width: 240px; }
.qs-chip:hover { border-color: var(--muted); }
.qs-chip.on { background: var(--select-bg); border-color: var(--accent); }
.qs-chip-label { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.qs-chip-n { color: var(--muted); font-size: 10.5px; font-variant-numeric: tabular-nums; }
.qs-more { font-size: 11.5px; padding-top: 3px; }
.qs-log-box { position: relative; flex: 1; min-height: 0; border-top: 1px solid var(--line); }
.qs-log-scroll { position: absolute; inset: 0; overflow: auto; background: var(--bg); outline: none; }
.qs-log-rows { position: absolute; left: 0; right: 0; top: 0; }
.qs-log-spacer { width: 1px; }
.qs-row { position: absolute; left: 0; right: 0; height: 20px; line-height: 20px; display: flex; gap: 8px;
  padding: 0 10px; font-family: var(--mono); font-size: 12px; white-space: pre; min-width: max-content; }
.qs-row:hover { background: var(--hover-bg); }
.qs-grp { flex: none; width: 46px; text-align: center; font-size: 10px; border-radius: 4px; margin: 3px 0; line-height: 14px;
  background: var(--panel-2); color: var(--muted); font-family: system-ui, sans-serif; letter-spacing: .3px; }
.qs-grp.g-SM { color: var(--qs-sm); } .qs-grp.g-AO { color: var(--qs-ao); } .qs-grp.g-MP { color: var(--qs-mp); }
.qs-grp.g-EQ { color: var(--qs-eq); } .qs-grp.g-TE { color: var(--qs-te); } .qs-grp.g-QF { color: var(--qs-qf); }
.qs-grp.g-COMMS, .qs-grp.g-ERR { color: var(--qs-err); background: var(--red-bg); }
.qs-grp[class*="g-U"] { color: var(--qs-user); }
.qs-log-empty { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  color: var(--muted); pointer-events: none; }
.qs-plot { flex: 1; min-height: 200px; position: relative; }
.qs-plot-empty { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  padding: 20px 28px; color: var(--muted); text-align: center; line-height: 1.5; }
.qs-table-wrap { flex: none; max-height: 34%; overflow: auto; border-top: 1px solid var(--line); }
.qs-margins-table td.bad { color: var(--red); font-weight: 600; }
.qs-margins-table th, .qs-margins-table td { padding-left: 8px; padding-right: 8px; }
.qs-margins-table td.name { max-width: 220px; overflow: hidden; text-overflow: ellipsis; }
.qs-kind { margin-left: 6px; font-size: 10.5px; color: var(--muted); font-family: system-ui, sans-serif; }
.qs-swatch { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 7px; }
.qs-empty { margin: 48px auto; max-width: 640px; padding: 22px 26px; border: 1px dashed var(--line-2);
  border-radius: 10px; background: var(--panel-2); line-height: 1.6; }
.qs-empty-title { font-size: 15px; font-weight: 600; margin-bottom: 6px; }
.qs-empty ol { margin: 0 0 10px; padding-left: 20px; }
`;

function stat(label, value, bad = false, title = "") {
  return el("span", { class: bad ? "bad" : "", title }, el("span", { class: "k" }, label), el("span", { class: "v" }, value));
}

export async function mount(container, ctx) {
  injectStyle("mcuprof-qs-style", STYLE);
  let session = null; // stored session id, or null for the live monitor
  let timer = null;
  let busy = false;
  let lastVersion = null;
  let lastSummary = null;
  let controlling = false; // the Control view is shown (qscontrol.js)

  const sourceSelect = el("select", { id: "qs-source", "aria-label": "QS source" });
  const stats = el("div", { class: "qs-stats", id: "qs-summary" });
  // Trace (log and plots), the event-flow views (qsflow.js), or Control (what the page
  // sends the target: qscontrol.js).
  const control = createControl(ctx);
  const views = [["trace", "Trace", "What the target sends: log, margins and plots"],
    ["sequence", "Sequence", "Posts, publishes, dispatches and time events between objects"],
    ["states", "States", "The state each state machine was in over time"],
    ["control", "Control", "Drive the live QS target: filters, current objects, events, memory, commands"]];
  const viewSwitch = el("div", { class: "seg", id: "qs-view", role: "group", "aria-label": "QS view" },
    ...views.map(([v, text, title]) => el("button", { type: "button", id: `qs-mode-${v}`, "data-qsview": v,
      class: v === "trace" ? "on" : "", "aria-pressed": String(v === "trace"), title }, text)));
  const sourceField = el("label", { class: "inline" }, "Source", sourceSelect);
  const toolbar = el("div", { class: "toolbar" }, viewSwitch, sourceField, stats);
  const logPanel = el("section", { class: "qs-panel qs-log-panel", id: "qs-log-panel" });
  const marginPanel = el("section", { class: "qs-panel", id: "qs-margins-panel" });
  const appPanel = el("section", { class: "qs-panel", id: "qs-app-panel" });
  const body = el("div", { class: "qs-body", id: "qs-body" }, logPanel, marginPanel, appPanel);
  const emptyBox = el("div", { class: "qs-empty", id: "qs-empty", hidden: true },
    el("div", { class: "qs-empty-title" }, "No QS data yet"),
    el("ol", {},
      el("li", {}, "Connect to a QP target that speaks QP/Spy: the ", el("b", {}, "QS target"),
        " port choice (serial, ", el("code", {}, "socket://HOST:PORT"), " or a listening port), or the simulated one, ",
        el("code", {}, "sim://?proto=qs"), "."),
      el("li", {}, "Or pick a stored QS session above as the source."),
      el("li", {}, "The target's dictionaries name objects, states and signals; records before them show raw addresses.")),
    el("div", { class: "muted" }, "The same lines on the command line: ", el("code", {}, "mcuprof qs decode CAPTURE")));
  const flowBox = el("div", { class: "qs-flow", id: "qs-flow", hidden: true });
  const trace = el("div", { class: "qs", id: "qs-trace" }, emptyBox, body, flowBox);
  container.replaceChildren(el("div", { class: "qs" }, toolbar, trace, control.node));

  const source = () => (session === null ? {} : { session });
  const log = createLog(logPanel, ctx, source);
  const marginsView = createMargins(marginPanel);
  const app = createAppPlot(appPanel);
  const flow = createFlow(flowBox, ctx, source);
  let qsView = "trace";
  function showView(v) {
    const was = qsView;
    qsView = v;
    for (const b of viewSwitch.querySelectorAll("button")) {
      b.classList.toggle("on", b.dataset.qsview === v);
      b.setAttribute("aria-pressed", String(b.dataset.qsview === v));
    }
    // The trace's source, figures and polling are the trace's: off while controlling.
    trace.hidden = sourceField.hidden = stats.hidden = controlling = v === "control";
    if (controlling) { stop(); control.show(); return; }
    if (was === "control") { control.hide(); poll(); }
    flowBox.hidden = v === "trace";
    body.hidden = v !== "trace" || (lastSummary !== null && lastSummary.records === 0 && lastSummary.lines === 0);
    if (v !== "trace") ctx.run(() => flow.setMode(v));
    else ctx.run(() => refresh(true)); // the log and plots waited while hidden
  }
  viewSwitch.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-qsview]");
    if (b) showView(b.dataset.qsview);
  });

  function renderStats(s) {
    const bad = s.bad_frames + s.malformed;
    stats.replaceChildren(...[
      stat("QS records since Start", fmtInt(s.records), false,
        "QS records: decoded records, one per good frame, since Start (or Connect); the Health panel counts frames since Connect"),
      stat("Lines", s.lines_dropped ? `${fmtInt(s.lines)} (last ${fmtInt(s.lines_kept)} kept)` : fmtInt(s.lines)),
      stat("Bad frames", fmtInt(bad), bad > 0, "bad checksums, frames too short or too long, malformed records"),
      stat("Gaps", s.discontinuities ? `${fmtInt(s.discontinuities)} (${fmtInt(s.lost_frames)} frames lost)` : "0",
        s.discontinuities > 0, "sequence-number discontinuities"),
      stat("Objects", fmtInt(s.objects_total)),
      stat("Signals", fmtInt(s.signals_total)),
      s.target ? stat("Target", `QP ${s.target.qp_version} · build ${s.target.build}`) : null,
    ].filter(Boolean));
  }

  let queued = null; // a refresh asked for while one runs: run it after (fresh wins)
  let lastError = null;
  async function refresh(fresh = false) {
    if (busy) {
      queued = { fresh: fresh || Boolean(queued && queued.fresh) };
      return;
    }
    busy = true;
    try {
      const s = await ctx.api.getJSON("/api/qs/summary", source());
      lastError = null;
      const changed = fresh || s.version !== lastVersion;
      lastSummary = s;
      renderStats(s);
      const none = s.records === 0 && s.lines === 0;
      emptyBox.hidden = !none;
      body.hidden = none || qsView !== "trace";
      if (!changed || none) { lastVersion = s.version; return; }
      lastVersion = s.version;
      if (qsView !== "trace") { await flow.refresh(); return; }
      plots(s);
      await log.update(s, { fresh });
    } catch (err) {
      // Said once, not every second; polling goes on (a restarted server comes back).
      const message = err.message || String(err);
      if (message !== lastError) ctx.notify(message);
      lastError = message;
    } finally {
      busy = false;
      if (queued) {
        const next = queued;
        queued = null;
        refresh(next.fresh);
      }
    }
  }

  // The plots refresh on their own schedule: loading Plotly or drawing must never hold
  // up the log's live follow. One redraw at a time; the latest summary wins.
  let plotting = false;
  let plotNext = null;
  async function plots(s) {
    if (plotting) { plotNext = s; return; }
    plotting = true;
    const src = source();
    try {
      const [m, a] = await Promise.all([
        ctx.api.getJSON("/api/qs/margins", src),
        ctx.api.getJSON("/api/qs/app", src),
      ]);
      const t0 = s.first_t ?? 0;
      await Promise.all([marginsView.update(m, t0), app.update(a, t0)]);
    } catch (err) {
      const message = err.message || String(err);
      if (message !== lastError) ctx.notify(message);
      lastError = message;
    } finally {
      plotting = false;
      if (plotNext) {
        const next = plotNext;
        plotNext = null;
        plots(next);
      }
    }
  }

  function poll() {
    stop();
    if (ctx.view !== "qs" || controlling) return;
    refresh();
    if (session === null) timer = setInterval(() => refresh(), POLL_MS);
  }
  function stop() { clearInterval(timer); timer = null; }

  async function loadSessions() {
    const out = await ctx.api.getJSON("/api/qs/sessions");
    const keep = session;
    sourceSelect.replaceChildren(el("option", { value: "" }, "Live (connected target)"),
      ...out.sessions.map((s) => el("option", { value: String(s.id) }, `#${s.id} ${s.name}`)));
    sourceSelect.value = keep !== null && out.sessions.some((s) => s.id === keep) ? String(keep) : "";
    session = sourceSelect.value ? Number(sourceSelect.value) : null;
  }
  sourceSelect.addEventListener("change", () => {
    session = sourceSelect.value ? Number(sourceSelect.value) : null;
    lastVersion = null;
    stop();
    ctx.run(async () => { await refresh(true); poll(); });
  });

  ctx.on("view", (name) => {
    if (name === "qs") ctx.run(async () => { await loadSessions(); poll(); });
    else stop();
  });
  ctx.on("sessions-changed", () => ctx.run(loadSessions));
  ctx.qs = { refresh: () => refresh(true), summary: () => lastSummary, filters: log.filters };
  await ctx.run(loadSessions);
  poll();
}
