// Plotly draws the chart views (histograms, scatter timelines). The flame graph and the
// main timeline are canvases of their own, so the page loads Plotly only when a chart
// is first shown.

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
