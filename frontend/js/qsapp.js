// QS application records (ids >= 100) plotted: each numeric argument of the chosen
// record as a series over target time. Strings, enums and memory dumps are in the log.

import { el } from "./dom.js";
import { fmtInt, seriesColour } from "./format.js";
import { AXIS, PLOT_CONFIG, PLOT_LAYOUT, TIME_AXIS_TITLE, plotMessage, plotText, plotlyOrMessage, xy } from "./qsmargins.js";

const FLOAT = new Set(["F32", "F64"]);

// Whole numbers over a small range get one tick per value, not 0.5 steps.
function integerTicks(series) {
  if (series.some((s) => FLOAT.has(s.kind))) return {};
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of series) for (let i = 0; i < s.lo.length; i++) { lo = Math.min(lo, s.lo[i]); hi = Math.max(hi, s.hi[i]); }
  return hi - lo <= 12 ? { dtick: 1, tickformat: "d" } : { tickformat: "d" };
}

export function createAppPlot(panel) {
  const select = el("select", { id: "qs-app-record", "aria-label": "Application record", hidden: true });
  const note = el("span", { class: "muted", id: "qs-app-note" });
  const plot = el("div", { class: "qs-plot", id: "qs-app-plot" });
  panel.replaceChildren(el("h3", {}, "Application records", note, el("span", { class: "spacer" }), select), plot);
  let shown = null;
  let t0 = 0;
  select.addEventListener("change", () => { if (shown) draw(shown); });

  async function update(data, first) {
    shown = data;
    t0 = first;
    const records = data.records;
    const keep = select.value;
    select.replaceChildren(...records.map((r) => el("option", { value: String(r.rec) }, `${r.name} (${r.rec})`)));
    if (records.some((r) => String(r.rec) === keep)) select.value = keep;
    select.hidden = records.length < 2;
    await draw(data);
  }

  async function draw(data) {
    const record = data.records.find((r) => String(r.rec) === select.value) || data.records[0];
    if (!record) {
      note.textContent = "";
      plotMessage(plot, "No numeric application records (QS ids 100 and up) yet. Records made only of "
        + "strings, enums or memory dumps are shown in the trace log.");
      return;
    }
    const samples = record.series.reduce((n, s) => Math.max(n, s.samples), 0);
    const decimated = record.series.some((s) => s.per_point > 1);
    note.textContent = `${record.name}: ${fmtInt(samples)} records${decimated ? " · lowest value per plotted point" : ""}`;
    const Plotly = await plotlyOrMessage(plot);
    if (!Plotly) return;
    if (shown !== data) return;
    if (plot.querySelector(".qs-plot-empty")) plot.replaceChildren();
    const traces = record.series.map((s, i) => {
      const { x, y } = xy(s, t0);
      const float = FLOAT.has(s.kind);
      return {
        type: "scatter", // series hold at most 2000 points (the monitor decimates)
        mode: float ? "lines+markers" : "markers",
        x, y, customdata: s.t,
        name: plotText(`${record.name} arg ${s.arg} (${s.kind})`),
        marker: { size: 5, color: seriesColour(i) },
        line: { width: 1.2, color: seriesColour(i) },
        hovertemplate: `${plotText(record.name)} arg ${s.arg}: %{y}<br>t %{customdata}<extra></extra>`,
      };
    });
    Plotly.react(plot, traces, {
      ...PLOT_LAYOUT,
      margin: { l: 56, r: 12, t: 8, b: 40 },
      showlegend: traces.length > 1,
      legend: { ...PLOT_LAYOUT.legend, orientation: "h", y: 1.02, yanchor: "bottom" },
      xaxis: { ...AXIS, title: { text: TIME_AXIS_TITLE, font: { size: 11 } } },
      yaxis: { ...AXIS, ...integerTicks(record.series), title: { text: traces.length === 1 ? `arg ${record.series[0].arg} (${record.series[0].kind})` : "value",
        font: { size: 11 } } },
    }, PLOT_CONFIG);
  }

  return { update };
}
