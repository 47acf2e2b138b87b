// History tab: one figure per stored session for the functions a glob selects, oldest
// first, with the change points found in each series (the same JSON as `mcuprof history
// --json`). A click on a point opens its session; a click on a change point (the diamond,
// or its row below the chart) compares the builds either side of it.

import { el, injectStyle } from "./dom.js";
import { fmtTime, themeColor } from "./format.js";
import { loadPlotly, themedPlot } from "./plotly.js";

const STYLE = `
.hist { display: flex; flex-direction: column; flex: 1; min-height: 0; }
.hist .toolbar { display: flex; gap: 8px; align-items: center; padding: 8px 10px; flex-wrap: wrap;
  border-bottom: 1px solid var(--line); }
.hist .toolbar label { display: inline-flex; gap: 6px; align-items: center; color: var(--muted); }
.hist #hist-function { width: 220px; }
.hist #hist-where { width: 200px; }
.hist-body { flex: 1; min-height: 0; overflow: auto; padding: 10px; display: flex; flex-direction: column; gap: 10px; }
.hist-plot { height: 380px; min-height: 260px; background: var(--panel-2); border: 1px solid var(--line);
  border-radius: 8px; }
.hist-note { color: var(--muted); font-size: 12.5px; }
.hist-changes td, .hist-changes th { padding: 3px 8px; }
.hist-changes .up { color: var(--red); }
.hist-changes .down { color: var(--green); }
.hist-empty { margin: 48px auto; max-width: 600px; padding: 22px 26px; border: 1px dashed var(--line-2);
  border-radius: 10px; background: var(--panel-2); line-height: 1.6; }
`;

const PLOT_LAYOUT = { font: { size: 11 }, hoverlabel: { font: { size: 12 } } };
const PLOT_CONFIG = { displaylogo: false, displayModeBar: false, responsive: true, showLink: false };
const AXIS = { zeroline: false, automargin: true };
themedPlot(PLOT_LAYOUT, AXIS); // dark or light, as the page

const UNITS = { mean: "µs per call (mean, inclusive)", p99: "µs per call (p99, inclusive)", share: "% of profiled time (self)" };
// Plotly reads tags in its labels and decodes only &amp; &lt; &gt;: escape those three.
const esc = (t) => String(t ?? "").replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
const fmtValue = (v, metric) => (metric === "share" ? `${v.toFixed(2)}%` : fmtTime(v));

export async function mount(container, ctx) {
  injectStyle("history-style", STYLE);
  const fnIn = el("input", { type: "text", id: "hist-function", placeholder: "function or glob, e.g. dsp_*",
    "aria-label": "Function name or glob", maxlength: "200" });
  const metricSel = el("select", { id: "hist-metric", "aria-label": "Metric" },
    el("option", { value: "mean" }, "Mean per call"), el("option", { value: "p99" }, "p99 per call"),
    el("option", { value: "share" }, "Share (self)"));
  const whereIn = el("input", { type: "text", id: "hist-where", placeholder: "branch=main board=…",
    "aria-label": "Only sessions with these tags", maxlength: "600",
    title: "KEY=VALUE words: only sessions carrying all of these tags (set in Sessions, or --tag)" });
  const showBtn = el("button", { type: "button", class: "btn small primary", id: "hist-show" }, "Show");
  const note = el("div", { class: "hist-note", id: "hist-note" });
  const plot = el("div", { class: "hist-plot", id: "hist-plot", hidden: true });
  const changes = el("div", { id: "hist-changes" });
  const body = el("div", { class: "hist-body" }, note, plot, changes);
  container.replaceChildren(el("div", { class: "hist" },
    el("div", { class: "toolbar" }, el("label", {}, "Function ", fnIn), el("label", {}, "Metric ", metricSel),
      el("label", {}, "Where ", whereIn), showBtn),
    body));
  showEmpty();

  function showEmpty() {
    note.replaceChildren(el("div", { class: "hist-empty" },
      el("div", {}, "Name a function (or a glob such as dsp_*) and click Show: its figure in every stored session, " +
        "oldest first, with the builds where it changed marked."),
      el("div", { class: "muted" }, "Tag sessions with their build (commit=…, branch=…, board=…) in Sessions, or with " +
        "--tag when they are recorded or imported, and filter by those tags in Where.")));
  }

  async function show() {
    const fn = fnIn.value.trim();
    if (!fn) { showEmpty(); return; }
    const params = new URLSearchParams({ function: fn, metric: metricSel.value });
    for (const w of whereIn.value.split(/\s+/).filter(Boolean)) params.append("where", w);
    note.textContent = "Reading the sessions' summaries…";
    const out = await ctx.api.getJSON(`/api/history?${params}`);
    render(out);
  }

  function render(out) {
    const series = out.series;
    const n = series.reduce((a, s) => a + s.points.length, 0);
    const found = series.reduce((a, s) => a + s.change_points.length, 0);
    if (!series.length) {
      plot.hidden = true;
      changes.replaceChildren();
      note.textContent = "No stored session has a matching function" + (Object.keys(out.where).length ? " with those tags." : ".");
      return;
    }
    note.textContent = `${series.length} function${series.length > 1 ? "s" : ""}, ${n} points, ` +
      `${found} change point${found === 1 ? "" : "s"}. Click a point to open its session, a diamond to compare the builds either side.`;
    plot.hidden = false;
    drawPlot(series, out.metric);
    drawChanges(series, out.metric);
  }

  // A point that starts a change carries it: the diamond drawn on it is what a click there
  // means (Plotly hands a click to the line's point, not to the marker on top of it).
  function pointData(s, p, i) {
    const c = s.change_points.find((x) => x.index === i);
    return c ? { base: c.previous_session_id, new: c.session_id } : { open: p.session_id };
  }

  async function drawPlot(series, metric) {
    const Plotly = await loadPlotly();
    const red = themeColor("--red", "#e5534b");
    const traces = [];
    for (const s of series) {
      traces.push({
        type: "scatter", mode: "lines+markers", name: esc(s.function), x: s.points.map((_, i) => i),
        y: s.points.map((p) => p.value), customdata: s.points.map((p, i) => pointData(s, p, i)),
        text: s.points.map((p) => esc(`${p.build} · #${p.session_id} ${p.session}` +
          Object.entries(p.tags).filter(([k]) => k !== "commit").map(([k, v]) => ` · ${k}=${v}`).join(""))),
        hovertemplate: `%{text}<br>${esc(s.function)}: %{y:.4g}<extra></extra>`,
      });
      const cps = s.change_points;
      if (cps.length) {
        traces.push({
          type: "scatter", mode: "markers", name: "change points", showlegend: false,
          x: cps.map((c) => c.index), y: cps.map((c) => s.points[c.index].value),
          marker: { symbol: "diamond", size: 14, color: "rgba(0,0,0,0)", line: { width: 2.5, color: red } },
          customdata: cps.map((c) => ({ base: c.previous_session_id, new: c.session_id })),
          text: cps.map((c) => esc(`change at ${c.first_build}: ${c.step_pct === null ? "" : `${c.step_pct >= 0 ? "+" : ""}${c.step_pct.toFixed(1)}%`}`)),
          hovertemplate: "%{text}<br>click: compare the builds either side<extra></extra>",
        });
      }
    }
    const first = series[0];
    const ticks = first.points.map((p) => esc(p.build.slice(0, 12)));
    const shapes = series.flatMap((s) => s.change_points.map((c) => ({ type: "line", xref: "x", yref: "paper",
      x0: c.index - 0.5, x1: c.index - 0.5, y0: 0, y1: 1, line: { color: red, width: 1, dash: "dot" } })));
    await Plotly.react(plot, traces, {
      ...PLOT_LAYOUT, margin: { l: 10, r: 16, t: 10, b: 60 }, showlegend: series.length > 1, shapes,
      hovermode: "closest",
      legend: { orientation: "h", y: 1.08 },
      xaxis: { ...AXIS, title: { text: "build (oldest first)" }, tickmode: "array",
        tickvals: first.points.map((_, i) => i), ticktext: ticks, tickangle: -30 },
      yaxis: { ...AXIS, title: { text: UNITS[metric] }, rangemode: "normal" },
    }, PLOT_CONFIG);
    plot.removeAllListeners?.("plotly_click");
    plot.on("plotly_click", (ev) => {
      // A diamond sits on its series' point: the change point wins over the session.
      const picked = (ev.points || []).map((p) => p.customdata).filter(Boolean);
      const change = picked.find((d) => d.base !== undefined);
      if (change) compare(change.base, change.new);
      else if (picked.length) openSession(picked[0].open);
    });
  }

  function drawChanges(series, metric) {
    const rows = [];
    for (const s of series) {
      for (const c of s.change_points) {
        const pct = c.step_pct === null ? "—" : `${c.step_pct >= 0 ? "+" : ""}${c.step_pct.toFixed(2)}%`;
        rows.push(el("tr", {},
          el("td", { class: "mono" }, s.function),
          el("td", { class: "mono" }, c.first_build),
          el("td", { class: "num" }, fmtValue(c.before, metric)),
          el("td", { class: "num" }, fmtValue(c.after, metric)),
          el("td", { class: `num ${c.step > 0 ? "up" : "down"}` }, pct),
          el("td", { class: "num" }, `${fmtValue(c.interval[0], metric)} … ${fmtValue(c.interval[1], metric)}`),
          el("td", {}, el("button", { type: "button", class: "btn small secondary", "data-compare": `${c.previous_session_id}:${c.session_id}`,
            onclick: () => compare(c.previous_session_id, c.session_id) }, `Compare #${c.previous_session_id} → #${c.session_id}`))));
      }
    }
    if (!rows.length) { changes.replaceChildren(el("div", { class: "hist-note" }, "No change point in these series.")); return; }
    changes.replaceChildren(el("div", { class: "table-wrap" }, el("table", { class: "hist-changes", id: "hist-change-table" },
      el("thead", {}, el("tr", {}, ...["Function", "First build after", "Before", "After", "Step", "Step interval (95%)", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows))));
  }

  function compare(base, next) {
    ctx.comparePair = { base, new: next }; // read by the Compare tab when it is shown
    document.getElementById("tab-compare")?.click();
  }

  async function openSession(id) {
    await ctx.run(async () => {
      await ctx.api.postJSON(`/api/sessions/${id}/replay`, { speed: "max" });
      ctx.emit("refresh");
      document.getElementById("tab-flame")?.click();
    });
  }

  showBtn.addEventListener("click", () => ctx.run(show));
  for (const input of [fnIn, whereIn]) {
    input.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); ctx.run(show); } });
  }
  metricSel.addEventListener("change", () => { if (fnIn.value.trim()) ctx.run(show); });
  // The function selected in another view is the first one asked about here.
  if (ctx.selected && ctx.selected.name) fnIn.value = ctx.selected.name;
}
