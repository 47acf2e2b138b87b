// Timeline: a flame chart over time. The server sends only what is visible at pixel
// resolution (level of detail); zooming or panning asks for the new range. A range
// selected here filters every other view.

import { fmtTime, nameColor, throttle } from "./format.js";

export function initTimeline(ctx) {
  const plot = document.getElementById("timeline-plot");
  const empty = document.getElementById("timeline-empty");
  const info = document.getElementById("timeline-info");
  let drawn = false;
  let origin = 0; // capture start, µs: the axis shows ms since then
  let view = null; // [t0, t1] absolute µs when zoomed, null for the whole capture
  let mode = "zoom";
  let inflight = false;
  let again = false;
  let stale = true;

  // The chart fills the panel: rows get the height the panel allows for the deepest level,
  // capped so a shallow capture keeps proportions of a flame chart, not of a bar chart.
  const MAX_ROW_PX = 64;
  const AXES_PX = 44; // top and bottom margins: the x axis and its title
  let last = null;
  let rowPx = 20;

  function fitHeight(d) {
    const room = plot.parentElement.clientHeight - plot.offsetTop;
    const levels = Math.max(d.max_depth + 1, 1);
    rowPx = Math.min(MAX_ROW_PX, (room - AXES_PX) / levels);
    plot.style.flex = "0 0 auto";
    plot.style.height = `${Math.max(160, Math.min(room, Math.ceil(levels * rowPx + AXES_PX)))}px`;
  }

  function toMs(us) { return (us - origin) / 1000; }
  function toUs(ms) { return ms * 1000 + origin; }

  function traces(d) {
    const n = d.start_us.length;
    const base = new Array(n);
    const x = new Array(n);
    const y = new Array(n);
    const colors = new Array(n);
    const text = new Array(n);
    const custom = new Array(n);
    const span = (d.t1_us - d.t0_us) || 1;
    const pxPerUs = (d.width_px || plot.clientWidth || 1000) / span;
    const charPx = rowPx >= 30 ? 7.1 : 6.5;
    for (let i = 0; i < n; i++) {
      const name = d.names[d.frame[i]];
      const count = d.count[i];
      base[i] = toMs(d.start_us[i]);
      x[i] = Math.max(d.dur_us[i], 1e-6) / 1000;
      y[i] = d.depth[i];
      colors[i] = count > 1 ? "#6b7380" : nameColor(name);
      const chars = Math.floor((d.dur_us[i] * pxPerUs - 6) / charPx);
      text[i] = count > 1 || chars < 3 ? "" : name.length > chars ? name.slice(0, chars - 1) + "…" : name;
      custom[i] = [name, d.dur_us[i], count, toMs(d.start_us[i])];
    }
    return [{
      type: "bar",
      orientation: "h",
      base, x, y, text, customdata: custom,
      marker: { color: colors, line: { width: 0.4, color: "#0f1216" } },
      textposition: "inside",
      insidetextanchor: "start",
      constraintext: "none",
      cliponaxis: true,
      textfont: { size: rowPx >= 30 ? 12 : 11, color: "#111" },
      hovertemplate:
        "<b>%{customdata[0]}</b><br>%{customdata[1]:,.1f} µs at %{customdata[3]:,.3f} ms" +
        "<extra>%{customdata[2]} call(s)</extra>",
      hoverlabel: { bgcolor: "#1c2129", bordercolor: "#4c9aff", font: { color: "#d6dbe2", size: 12 } },
      selected: { marker: { opacity: 1 } },
      unselected: { marker: { opacity: 1 } },
    }];
  }

  function layout(d) {
    const depth = Math.max(d.max_depth + 1, 1);
    const shapes = [];
    if (ctx.window) {
      shapes.push({
        type: "rect", xref: "x", yref: "paper", x0: toMs(ctx.window[0]), x1: toMs(ctx.window[1]),
        y0: 0, y1: 1, fillcolor: "rgba(76,154,255,0.12)", line: { color: "#4c9aff", width: 1 },
      });
    }
    return {
      margin: { t: 8, l: 44, r: 12, b: 36 },
      paper_bgcolor: "#161a20",
      plot_bgcolor: "#161a20",
      font: { color: "#d6dbe2", size: 11 },
      barmode: "overlay",
      bargap: 0.08,
      dragmode: mode,
      selectdirection: "h",
      showlegend: false,
      shapes,
      xaxis: {
        title: { text: "time since capture start (ms)", font: { size: 11, color: "#8b95a3" } },
        range: [toMs(d.t0_us), toMs(d.t1_us)],
        gridcolor: "#272e38", zeroline: false, showspikes: false,
      },
      yaxis: {
        title: { text: "depth", font: { size: 11, color: "#8b95a3" } },
        autorange: false, range: [depth - 0.5, -0.5], fixedrange: true,
        dtick: 1, gridcolor: "#1f252d", zeroline: false,
      },
    };
  }

  async function fetchAndDraw() {
    if (inflight) { again = true; return; }
    inflight = true;
    stale = false;
    const width = Math.max(200, Math.round(plot.clientWidth || 1000));
    const params = { width };
    if (view) { params.t0 = view[0]; params.t1 = view[1]; }
    try {
      const d = await ctx.run(() => ctx.api.getJSON("/api/timeline", params));
      if (d) await draw(d);
    } finally {
      inflight = false;
      if (again) { again = false; fetchAndDraw(); }
    }
  }

  async function draw(d) {
    if (!window.Plotly) return;
    last = d;
    if (!d.empty) fitHeight(d);
    if (d.empty) {
      empty.hidden = false;
      plot.style.visibility = "hidden";
      info.textContent = "";
      return;
    }
    empty.hidden = true;
    plot.style.visibility = "visible";
    origin = d.range[0];
    info.textContent = `${d.start_us.length.toLocaleString("en-US")} boxes for ${d.records.toLocaleString("en-US")} calls in view · ${fmtTime(d.t1_us - d.t0_us)} visible of ${fmtTime(d.range[1] - d.range[0])}`;
    await window.Plotly.react(plot, traces(d), layout(d), {
      displaylogo: false, responsive: true, scrollZoom: true, showLink: false,
      showSendToCloud: false, showEditInChartStudio: false,
      modeBarButtonsToRemove: ["toImage", "lasso2d", "autoScale2d", "zoomIn2d", "zoomOut2d"],
    });
    if (!drawn) {
      drawn = true;
      plot.on("plotly_relayout", (ev) => {
        if (ev["xaxis.autorange"]) { view = null; fetchAndDraw(); return; }
        const a = ev["xaxis.range[0]"] ?? ev["xaxis.range"]?.[0];
        const b = ev["xaxis.range[1]"] ?? ev["xaxis.range"]?.[1];
        if (a === undefined || b === undefined) return;
        view = [toUs(Math.min(a, b)), toUs(Math.max(a, b))];
        fetchAndDraw();
      });
      plot.on("plotly_selected", (ev) => {
        const r = ev && ev.range && ev.range.x;
        if (!r) return;
        ctx.setWindow([toUs(Math.min(r[0], r[1])), toUs(Math.max(r[0], r[1]))]);
        window.Plotly.restyle(plot, { selectedpoints: [null] });
      });
    }
  }

  for (const btn of document.querySelectorAll("#view-timeline [data-mode]")) {
    btn.addEventListener("click", () => {
      mode = btn.dataset.mode;
      for (const b of document.querySelectorAll("#view-timeline [data-mode]")) b.classList.toggle("on", b === btn);
      if (drawn) window.Plotly.relayout(plot, { dragmode: mode });
    });
  }
  document.getElementById("timeline-fit").addEventListener("click", () => { view = null; fetchAndDraw(); });
  document.getElementById("timeline-filter").addEventListener("click", () => {
    const range = view || ctx.state?.range;
    if (range) ctx.setWindow([range[0], range[1]]);
  });

  ctx.on("window", () => { if (ctx.view === "timeline") fetchAndDraw(); else stale = true; });
  // While live, follow the data at most twice a second.
  const follow = throttle(() => { if (ctx.view === "timeline") fetchAndDraw(); }, 500);
  ctx.on("version", () => {
    stale = true;
    if (ctx.view === "timeline") follow();
  });
  ctx.on("capture-start", () => { view = null; });

  // Window, banner or sidebar changes resize the panel: refit the rows to it.
  let lastRoom = 0;
  new ResizeObserver(() => {
    const room = plot.parentElement.clientHeight;
    if (room === lastRoom || !room || !drawn || !last || last.empty) return;
    lastRoom = room;
    fitHeight(last);
    // Resize to the div (not relayout with a height, which would pin the old width too).
    window.Plotly.Plots.resize(plot);
  }).observe(plot.parentElement);

  return {
    show() {
      if (stale || !drawn) fetchAndDraw();
      else window.Plotly.Plots.resize(plot);
    },
  };
}
