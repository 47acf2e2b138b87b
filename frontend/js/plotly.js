// Plotly draws the chart views (histograms, scatter timelines). The flame graph and the
// main timeline are canvases of their own, so the page loads Plotly only when a chart
// is first shown.

import { themeColor } from "./format.js";

let loading = null;

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "/vendor/plotly.min.js";
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        loading = null;
        reject(new Error("could not load the chart library (/vendor/plotly.min.js)"));
      };
      document.head.append(script);
    });
  }
  return loading;
}

// Charts follow the page's theme (issue 24): the views' shared layout and axis objects are
// painted in place from the CSS variables, so each draw spreads the current colours, and
// the charts on screen are restyled when <html data-theme> changes.
const themed = [];

export function themedPlot(layout, axis) {
  themed.push([layout, axis]);
  paint(layout, axis);
}

function colours() {
  return {
    bg: themeColor("--panel-2", "#1c2129"), text: themeColor("--text", "#d6dbe2"),
    muted: themeColor("--muted", "#8b95a3"), line: themeColor("--line", "#272e38"),
    accent: themeColor("--accent", "#4c9aff"),
  };
}

function paint(layout, axis) {
  const c = colours();
  layout.paper_bgcolor = c.bg;
  layout.plot_bgcolor = c.bg;
  layout.font = { ...layout.font, color: c.text };
  if (layout.hoverlabel) layout.hoverlabel = { ...layout.hoverlabel, bgcolor: c.bg, bordercolor: c.accent, font: { ...layout.hoverlabel.font, color: c.text } };
  axis.gridcolor = c.line;
  axis.color = c.muted;
}

function retheme() {
  for (const [layout, axis] of themed) paint(layout, axis);
  if (!window.Plotly) return;
  const c = colours();
  for (const div of document.querySelectorAll(".js-plotly-plot")) {
    window.Plotly.relayout(div, {
      paper_bgcolor: c.bg, plot_bgcolor: c.bg, "font.color": c.text,
      "hoverlabel.bgcolor": c.bg, "hoverlabel.bordercolor": c.accent, "hoverlabel.font.color": c.text,
      "xaxis.color": c.muted, "xaxis.gridcolor": c.line, "yaxis.color": c.muted,
    });
  }
}

if (typeof MutationObserver === "function") {
  new MutationObserver(retheme).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
}
