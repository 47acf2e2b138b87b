// QS queue and pool margins: free entries over time per event queue and memory pool,
// with QP's low-water mark (the minimum the target reported) as a dashed line. Numbers
// come from /api/qs/margins, which uses `mcuprof qs margins`' definitions.

import { el } from "./dom.js";
import { fmtInt, seriesColour } from "./format.js";
import { loadPlotly, themedPlot } from "./plotly.js";

export const PLOT_LAYOUT = {
  // Colours: the theme's, painted in by themedPlot below (plotly.js).
  font: { size: 11 },
  hoverlabel: { font: { size: 12 } },
  legend: { orientation: "h", y: -0.2, x: 0, font: { size: 11 } },
};
export const PLOT_CONFIG = { displaylogo: false, displayModeBar: false, responsive: true, showLink: false };
export const AXIS = { zeroline: false, automargin: true };
themedPlot(PLOT_LAYOUT, AXIS); // dark or light, as the page
export const TIME_AXIS_TITLE = "target time (timestamp ticks since the first record)";

// Plotly reads tags in its labels and decodes only &amp; &lt; &gt;: escape those three.
const PLOTLY_ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
export function plotText(text) {
  return String(text ?? "").replace(/[&<>]/g, (c) => PLOTLY_ESC[c]);
}

// A series' points as Plotly x/y: time relative to the first record; decimated points
// (several samples each) plot their lowest value, the one that matters for margins.
export function xy(series, t0) {
  return { x: series.t.map((t) => t - t0), y: series.lo };
}

// Plotly, or null once the box says why it could not be loaded.
export async function plotlyOrMessage(box) {
  try {
    return await loadPlotly();
  } catch (err) {
    plotMessage(box, err.message);
    return null;
  }
}

export function plotMessage(box, text) {
  box.replaceChildren(el("div", { class: "qs-plot-empty" }, el("span", {}, text)));
}

function subplotLabel(text, y) {
  return { text, xref: "paper", yref: "paper", x: 0, y, xanchor: "left", yanchor: "top", showarrow: false,
    font: { size: 11, color: AXIS.color } };
}

export function createMargins(panel) {
  const plot = el("div", { class: "qs-plot", id: "qs-margins-plot" });
  const table = el("table", { class: "grid qs-margins-table", id: "qs-margins-table" },
    el("thead", {}, el("tr", {},
      el("th", { class: "text" }, "Queue / pool"),
      el("th", { title: "Samples (post/get and pool records)" }, "Samples"),
      el("th", { title: "Free entries in the latest record" }, "Now"),
      el("th", { title: "Lowest free count among the records received" }, "Lowest"),
      el("th", { title: "QP's own minimum (Min= in QS_QF_ACTIVE_POST, QS_QF_EQUEUE_POST, QS_QF_MPOOL_GET)" },
        "Low-water"))),
    el("tbody"));
  const note = el("span", { class: "muted", id: "qs-margins-note" });
  panel.replaceChildren(
    el("h3", {}, "Queue and pool margins", note),
    plot,
    el("div", { class: "qs-table-wrap" }, table));
  let shown = null;

  function renderTable(items) {
    table.tBodies[0].replaceChildren(...items.map((m, i) => el("tr", {},
      el("td", { class: "text name", title: `${m.name} (${m.kind === "pool" ? "memory pool" : "event queue"})` },
        el("span", { class: "qs-swatch", style: `background:${seriesColour(i)}` }), m.name,
        el("span", { class: "qs-kind" }, m.kind)),
      el("td", {}, fmtInt(m.samples)),
      el("td", {}, fmtInt(m.last_free)),
      el("td", {}, fmtInt(m.lowest_free)),
      el("td", { class: m.low_water === 0 ? "bad" : "" }, m.low_water === null ? "—" : fmtInt(m.low_water)))));
  }

  async function update(data, t0) {
    shown = data;
    const items = data.margins;
    renderTable(items);
    const decimated = items.some((m) => m.per_point > 1);
    note.textContent = items.length
      ? `${items.length} tracked${decimated ? " · long runs: lowest value per plotted point" : ""}`
      : "";
    if (!items.length) {
      plotMessage(plot, "No queue or pool records yet: QS_QF_ACTIVE_POST/GET, QS_QF_EQUEUE_* and "
        + "QS_QF_MPOOL_GET/PUT (the AO, EQ and MP groups of the target's QS filter).");
      return;
    }
    const Plotly = await plotlyOrMessage(plot);
    if (!Plotly) return;
    if (shown !== data) return; // newer data arrived meanwhile
    if (plot.querySelector(".qs-plot-empty")) plot.replaceChildren();
    const hasQueue = items.some((m) => m.kind === "queue");
    const hasPool = items.some((m) => m.kind === "pool");
    const both = hasQueue && hasPool;
    const traces = [];
    items.forEach((m, i) => {
      const color = seriesColour(i);
      const yaxis = both && m.kind === "pool" ? "y2" : "y";
      const { x, y } = xy(m, t0);
      traces.push({
        type: "scatter", mode: "lines", x, y, yaxis, name: plotText(m.name),
        line: { shape: "hv", width: 1.6, color }, customdata: m.t,
        hovertemplate: `${plotText(m.name)}<br>free %{y}<br>t %{customdata}<extra></extra>`,
      });
      if (m.low_water !== null && x.length) {
        traces.push({
          type: "scatter", mode: "lines", x: [x[0], x[x.length - 1]], y: [m.low_water, m.low_water], yaxis,
          name: plotText(`${m.name} low-water`), showlegend: false,
          line: { dash: "dash", width: 1, color },
          hovertemplate: `${plotText(m.name)}<br>low-water mark %{y}<extra></extra>`,
        });
      }
    });
    const layout = {
      ...PLOT_LAYOUT,
      margin: { l: 56, r: 12, t: 8, b: 40 },
      showlegend: false, // the table below is the legend: same colours, with the numbers
      xaxis: { ...AXIS, anchor: both ? "y2" : "y", title: { text: TIME_AXIS_TITLE, font: { size: 11 } } },
      yaxis: { ...AXIS, rangemode: "tozero", title: { text: "free", font: { size: 11 } },
        domain: both ? [0.58, 0.94] : [0, 0.9] },
      // Each subplot says what it shows above it; the y axes are both "free".
      annotations: [hasQueue ? subplotLabel("Event queues: free entries", 1) : null,
        hasPool ? subplotLabel("Memory pools: free blocks", both ? 0.44 : 1) : null].filter(Boolean),
    };
    if (both) {
      layout.yaxis2 = { ...AXIS, rangemode: "tozero", domain: [0, 0.38], anchor: "x",
        title: { text: "free", font: { size: 11 } } };
    }
    Plotly.react(plot, traces, layout, PLOT_CONFIG);
  }

  return { update };
}
