// Flame graph: a Plotly icicle with the root at the bottom, click to zoom, regex search.

import { esc, fmtTime, nameColor } from "./format.js";

const DIM = "#2a3039";
const HIT = "#e64980";
const ROOT_COLOR = "#3b4350";
const OTHER_COLOR = "#4a525e";
const ROW_PX = 20;
const MAX_ROW_PX = 34;

export function initFlame(ctx, live) {
  const plot = document.getElementById("flame-plot");
  const area = document.getElementById("flame-area");
  const empty = document.getElementById("flame-empty");
  const search = document.getElementById("flame-search");
  const matches = document.getElementById("flame-matches");
  const info = document.getElementById("flame-info");
  let data = null; // the icicle payload on screen
  let pending = null; // latest live payload, drawn when visible
  let pendingMeta = null;
  let level = undefined;
  let drawn = false;
  let windowed = false;

  function colors(d) {
    const query = search.value.trim();
    let re = null;
    if (query) {
      try { re = new RegExp(query, "i"); } catch { re = null; }
    }
    const n = d.ids.length;
    const out = new Array(n);
    let hits = 0;
    let hitUnits = 0;
    const hitIndex = new Set();
    const indexOf = new Map(d.ids.map((id, i) => [id, i]));
    for (let i = 0; i < n; i++) {
      const name = d.names[i];
      if (i === 0) { out[i] = ROOT_COLOR; continue; }
      if (name === "other" && d.customdata[i][3] === null) { out[i] = query ? DIM : OTHER_COLOR; continue; }
      if (!query) { out[i] = nameColor(name); continue; }
      const hit = re ? re.test(name) : name.toLowerCase().includes(query.toLowerCase());
      out[i] = hit ? HIT : DIM;
      if (hit) {
        hits++;
        hitIndex.add(i);
        // Count time once: skip frames nested under a frame that already matched.
        let p = indexOf.get(d.parents[i]);
        let nested = false;
        while (p !== undefined && p > 0) {
          if (hitIndex.has(p)) { nested = true; break; }
          p = indexOf.get(d.parents[p]);
        }
        if (!nested) hitUnits += d.values[i];
      }
    }
    if (query) {
      const pct = d.values[0] ? (100 * hitUnits) / d.values[0] : 0;
      matches.textContent = hits ? `${hits} frames, ${pct.toFixed(1)}% of time` : "no match";
    } else {
      matches.textContent = "";
    }
    return out;
  }

  function trace(d) {
    return {
      type: "icicle",
      ids: d.ids,
      labels: d.labels,
      parents: d.parents,
      values: d.values,
      customdata: d.customdata,
      branchvalues: "total",
      sort: false,
      level,
      maxdepth: -1,
      tiling: { orientation: "v", flip: "y", pad: 0 },
      pathbar: { visible: false },
      textinfo: "label",
      textfont: { family: "system-ui, sans-serif", size: 11, color: "#111" },
      insidetextfont: { color: "#111" },
      marker: { colors: colors(d), line: { width: 0.6, color: "#0f1216" } },
      hovertemplate:
        "<b>%{customdata[0]}</b><br>" +
        "total %{customdata[1]:,.1f} µs · %{customdata[4]:.2f}%<br>" +
        "self %{customdata[2]:,.1f} µs · calls %{customdata[3]:,}<br>" +
        "<span style='color:#8b95a3'>%{customdata[5]}</span><extra></extra>",
      hoverlabel: { bgcolor: "#1c2129", bordercolor: "#4c9aff", font: { color: "#d6dbe2", size: 12 } },
    };
  }

  // Classic flame-graph proportions: fixed-height rows stacked on the root at the bottom.
  function fitHeight(d) {
    const depth = new Map();
    let levels = 1;
    for (let i = 0; i < d.ids.length; i++) {
      const v = i === 0 ? 1 : (depth.get(d.parents[i]) || 0) + 1;
      depth.set(d.ids[i], v);
      if (v > levels) levels = v;
    }
    const room = Math.max(120, area.clientHeight);
    const row = Math.max(ROW_PX, Math.min(MAX_ROW_PX, Math.floor((room - 8) / levels)));
    setHeight(Math.min(room, levels * row + 8));
  }

  // Plotly keeps the size of its first draw unless told; the layout carries it.
  function setHeight(px) {
    plot.style.height = `${px}px`;
    layout.height = px;
  }

  const layout = {
    margin: { t: 4, l: 4, r: 4, b: 4 },
    uniformtext: { mode: "hide", minsize: 11 },
    paper_bgcolor: "#161a20",
    plot_bgcolor: "#161a20",
    font: { color: "#d6dbe2", size: 11 },
    uirevision: "flame",
  };
  const config = { displaylogo: false, displayModeBar: false, responsive: true, showLink: false };

  async function draw(d, meta) {
    if (!window.Plotly) return;
    const started = performance.now();
    data = d;
    const hasData = d && d.ids.length > 1 && d.values[0] > 0;
    empty.hidden = hasData;
    plot.style.visibility = hasData ? "visible" : "hidden";
    if (!hasData) {
      info.textContent = "";
      if (drawn) { window.Plotly.purge(plot); drawn = false; }
      reportDrawn(meta, started);
      return;
    }
    info.innerHTML = `${esc(d.nodes)} of ${esc(d.frames)} frames · ${esc(fmtTime(d.total_us))} total` +
      (d.nodes < d.frames ? " · small frames merged into <i>other</i>" : "");
    if (level === undefined || level === "root") fitHeight(d);
    else setHeight(Math.max(120, area.clientHeight));
    await window.Plotly.react(plot, [trace(d)], layout, config);
    if (!drawn) {
      drawn = true;
      plot.on("plotly_click", (ev) => {
        if (!ev || !("nextLevel" in ev)) return;
        level = ev.nextLevel && ev.nextLevel !== "root" ? ev.nextLevel : undefined;
        // A zoomed-in subtree gets the full height; zooming back out restores the rows.
        if (level === undefined) fitHeight(data);
        else setHeight(Math.max(120, area.clientHeight));
        window.Plotly.relayout(plot, { height: layout.height });
      });
    }
    reportDrawn(meta, started);
  }

  function reportDrawn(meta, started) {
    if (!meta || meta.recv_ts === undefined) return;
    requestAnimationFrame(() => {
      live.report({ type: "drawn", seq: meta.seq, recv_ts: meta.recv_ts, frame_ms: performance.now() - started });
    });
  }

  async function fetchWindow() {
    const d = await ctx.run(() => ctx.api.getJSON("/api/flame", ctx.windowParams()));
    if (d) await draw(d, null);
  }

  ctx.on("icicle", ({ icicle, meta }) => {
    if (windowed) return;
    pending = icicle;
    pendingMeta = meta;
    if (ctx.view === "flame") {
      draw(pending, pendingMeta);
      pending = null;
    }
  });
  ctx.on("window", (win) => {
    windowed = !!win;
    level = undefined;
    if (windowed) fetchWindow();
    else ctx.run(async () => draw(await ctx.api.getJSON("/api/flame"), null));
  });
  ctx.on("capture-start", () => { level = undefined; });
  window.addEventListener("resize", () => {
    if (!drawn || !data || ctx.view !== "flame") return;
    if (level === undefined || level === "root") fitHeight(data);
    else setHeight(Math.max(120, area.clientHeight));
    window.Plotly.relayout(plot, { height: layout.height });
  });
  search.addEventListener("input", () => {
    if (data && data.ids.length > 1) window.Plotly.restyle(plot, { "marker.colors": [colors(data)] });
  });
  document.getElementById("flame-reset").addEventListener("click", () => {
    level = "root";
    if (data) draw(data, null);
  });

  return {
    show() {
      if (pending) { draw(pending, pendingMeta); pending = null; }
      else if (drawn) window.Plotly.Plots.resize(plot);
    },
    async png(filename) {
      if (!data || !drawn) throw new Error("nothing to export yet: the flame graph is empty");
      const url = await window.Plotly.toImage(plot, {
        format: "png", width: Math.max(1200, plot.clientWidth), height: Math.max(700, plot.clientHeight), scale: 2,
      });
      const a = document.createElement("a");
      a.href = url;
      a.download = filename;
      document.body.append(a);
      a.click();
      a.remove();
    },
    current: () => data,
  };
}
