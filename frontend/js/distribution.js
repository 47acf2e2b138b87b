// The selected function's distribution of call durations (Functions view): a histogram
// on a log axis (2% buckets, /api/distribution), its percentiles marked, the period and
// jitter. A click on a bucket shows its first call on the timeline: the timeline takes a
// function and a span, not a set of calls, so it is zoomed to that call and the function
// stays selected (the bucket's count is said in the banner).

import { loadPlotly, themedPlot } from "./plotly.js";
import { esc, fmtInt, fmtTime } from "./format.js";

const ACCENT = "#4c9aff";
const MARK = "#e3a83a";
const LAYOUT = {
  paper_bgcolor: "#1c2129",
  plot_bgcolor: "#1c2129",
  font: { color: "#d6dbe2", size: 11 },
  hoverlabel: { bgcolor: "#1c2129", bordercolor: ACCENT, font: { color: "#d6dbe2", size: 12 } },
};
const CONFIG = { displaylogo: false, displayModeBar: false, responsive: true, showLink: false };
const AXIS = { gridcolor: "#272e38", zeroline: false, automargin: true, color: "#8b95a3" };
themedPlot(LAYOUT, AXIS);

const MARKS = [["p50_us", "p50"], ["p90_us", "p90"], ["p99_us", "p99"], ["p999_us", "p99.9"], ["max_us", "max"]];

// The marks' labels, one per place: marks closer than 4% of the axis share one label
// ("p99 = p99.9 = max" when the tail is one call; "p99, max" when only close), so none
// is drawn over another.
function markLabels(d, span) {
  const groups = [];
  for (const [k, label] of MARKS) {
    const x = Math.log10(d[k]);
    const last = groups[groups.length - 1];
    if (last && Math.abs(x - last.x) < 0.04 * span) {
      last.text += `${d[k] === last.value ? " = " : ", "}${label}`;
      last.value = d[k];
    } else groups.push({ x, value: d[k], text: label });
  }
  return groups.map((g) => [g.x, g.text]);
}

export function initDistribution(ctx) {
  const panel = document.getElementById("functions-dist");
  const name = document.getElementById("functions-dist-name");
  const stats = document.getElementById("functions-dist-stats");
  const plot = document.getElementById("functions-dist-plot");
  let fid = null;
  let shown = null; // the drawn answer
  let asked = 0;

  async function load() {
    if (fid === null) { panel.hidden = true; shown = null; return; }
    const mine = ++asked;
    const d = await ctx.api.getJSON("/api/distribution", { fid, ...ctx.windowParams() }).catch(() => null);
    if (mine !== asked) return;
    if (!d) { panel.hidden = true; shown = null; return; }
    panel.hidden = false;
    shown = d;
    name.textContent = d.name;
    stats.textContent = summary(d);
    const Plotly = await loadPlotly().catch((err) => { stats.textContent = err.message; return null; });
    if (Plotly && mine === asked) draw(Plotly, d);
  }

  function summary(d) {
    const parts = [`${fmtInt(d.calls)} calls`, ...MARKS.map(([k, label]) => `${label} ${fmtTime(d[k])}`),
      `std ${fmtTime(d.std_us)}`];
    const p = d.period;
    parts.push(p ? `period ${fmtTime(p.period_us)}, jitter ${fmtTime(p.jitter_us)}, ` +
      `${fmtInt(p.broke)} ${p.broke === 1 ? "call" : "calls"} broke it` : "not periodic");
    return parts.join(" · ");
  }

  function draw(Plotly, d) {
    const b = d.buckets;
    const idx = b.k.map((_, i) => i).filter((i) => b.lo_us[i] > 0); // zero-length calls: no log
    const log = (v) => Math.log10(v);
    const x = idx.map((i) => (log(b.lo_us[i]) + log(b.hi_us[i])) / 2);
    const lo = Math.floor(log(Math.max(1e-3, d.min_us || b.lo_us[idx[0]] || 1)));
    const hi = Math.ceil(log(Math.max(d.max_us, 1e-3)) + 1e-9);
    const ticks = [];
    for (let e = lo; e <= hi; e++) ticks.push(e);
    const shapes = MARKS.map(([k]) => ({ type: "line", xref: "x", yref: "paper", x0: log(d[k]), x1: log(d[k]), y0: 0, y1: 1,
      line: { color: MARK, width: 1, dash: k === "max_us" ? "solid" : "dot" } }));
    const annotations = markLabels(d, hi - lo).map(([x, text], i) => ({ x, y: i % 2 ? 0.9 : 1, xref: "x",
      yref: "paper", text, showarrow: false, font: { size: 10, color: MARK }, xanchor: "left" }));
    Plotly.react(plot, [{
      type: "bar", x, y: idx.map((i) => b.count[i]), width: idx.map((i) => log(b.hi_us[i]) - log(b.lo_us[i])),
      marker: { color: ACCENT }, customdata: idx.map((i) => [b.k[i], fmtTime(b.lo_us[i]), fmtTime(b.hi_us[i])]),
      hovertemplate: "%{customdata[1]} to %{customdata[2]}: %{y} calls<br>click: show on the timeline<extra></extra>",
    }], {
      ...LAYOUT, height: 220, margin: { l: 44, r: 20, t: 18, b: 36 }, bargap: 0, shapes, annotations,
      xaxis: { ...AXIS, tickvals: ticks, ticktext: ticks.map((e) => esc(fmtTime(10 ** e))), range: [lo, hi],
        title: { text: "time per call (inclusive, log scale)", font: { size: 11 } } },
      yaxis: { ...AXIS, title: { text: "calls", font: { size: 11 } } },
    }, CONFIG);
    if (!plot.dataset.clicks) {
      plot.dataset.clicks = "1";
      plot.on("plotly_click", (ev) => { const pt = ev.points && ev.points[0]; if (pt) showBucket(pt.customdata[0]); });
    }
  }

  async function showBucket(k) {
    if (!shown) return;
    const f = shown.fid;
    const got = await ctx.run(() => ctx.api.getJSON("/api/distribution/bucket", { fid: f, k, ...ctx.windowParams() }));
    if (!got || !got.calls.length) return;
    const [a, z] = got.calls[0];
    document.getElementById("tab-timeline").click();
    ctx.emit("reveal", [a, z]);
    ctx.notify(`${fmtInt(got.count)} ${got.count === 1 ? "call" : "calls"} of ${shown.name} in this bucket: ` +
      `the timeline shows the first, ${fmtTime(z - a)}`, "info");
  }

  ctx.on("select-function", (sel) => { fid = sel ? sel.fid : null; if (ctx.view === "functions" || fid === null) load(); });
  return { load, get fid() { return fid; } };
}
