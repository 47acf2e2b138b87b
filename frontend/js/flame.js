// Flame graph: a Plotly icicle with the root at the bottom, click to zoom, regex search.

import { esc, fmtTime, nameColor } from "./format.js";

const DIM = "#2a3039";
const HIT = "#e64980";
const ROOT_COLOR = "#3b4350";
const OTHER_COLOR = "#4a525e";
const MIN_ROW_PX = 18;
const MAX_ROW_PX = 44; // taller rows read as slabs, not frames

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
  let rowPx = MIN_ROW_PX;

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

  // Dark labels on the warm palette; light ones where the box itself is dark (root, dimmed).
  function textColors(fills) {
    return fills.map((c) => (c === ROOT_COLOR || c === OTHER_COLOR ? "#d6dbe2" : c === DIM ? "#6b7380" : "#111"));
  }

  function trace(d) {
    const fills = colors(d);
    const labels = textColors(fills);
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
      // Tall rows read better with a larger label centred on the box.
      textposition: rowPx >= 30 ? "middle left" : "top left",
      textfont: { family: "system-ui, sans-serif", size: rowPx >= 30 ? 12 : 11, color: labels },
      insidetextfont: { color: labels },
      marker: { colors: fills, line: { width: 0.6, color: "#0f1216" } },
      hovertemplate:
        "<b>%{customdata[0]}</b><br>" +
        "total %{customdata[1]:,.1f} µs · %{customdata[4]:.2f}%<br>" +
        "self %{customdata[2]:,.1f} µs · calls %{customdata[3]:,}<br>" +
        "<span style='color:#8b95a3'>%{customdata[5]}</span><extra></extra>",
      hoverlabel: { bgcolor: "#1c2129", bordercolor: "#4c9aff", font: { color: "#d6dbe2", size: 12 } },
    };
  }

  // Rows stretch to use the panel (a shallow tree should not sit in a strip at the bottom),
  // but stay between MIN and MAX px so boxes neither turn into slabs nor lose their labels.
  // Plotly splits the height evenly over the levels under the visible root, so the height
  // follows from the row we want and the depth below the zoomed frame.
  function levelsUnder(d, rootId) {
    const depth = new Map();
    let levels = 1;
    for (let i = 0; i < d.ids.length; i++) {
      const id = d.ids[i];
      let v;
      if (rootId === undefined ? i === 0 : id === rootId) v = 1;
      else if (depth.has(d.parents[i])) v = depth.get(d.parents[i]) + 1;
      else continue; // outside the zoomed subtree (the payload lists parents first)
      depth.set(id, v);
      if (v > levels) levels = v;
    }
    return levels;
  }

  function fitHeight(d) {
    const zoomed = level !== undefined && level !== "root" && d.ids.includes(level);
    const levels = levelsUnder(d, zoomed ? level : undefined);
    const room = Math.max(120, area.clientHeight);
    rowPx = Math.max(MIN_ROW_PX, Math.min(MAX_ROW_PX, Math.floor((room - 8) / levels)));
    const px = levels * rowPx + 8;
    if (px === layout.height) return;
    setHeight(px);
    // Too deep for the panel: the area scrolls; show the root, which is at the bottom.
    area.scrollTop = area.scrollHeight;
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
    fitHeight(d);
    await window.Plotly.react(plot, [trace(d)], layout, config);
    if (!drawn) {
      drawn = true;
      // Plotly zooms on click by itself; once it has, its trace holds the new visible root,
      // and the zoomed subtree (fewer levels) gets taller rows.
      plot.on("plotly_animated", () => {
        const next = plot.data && plot.data[0] ? plot.data[0].level : undefined;
        const was = level;
        level = next && next !== "root" ? next : undefined;
        if (level !== was) refit();
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
  function refit() {
    if (!drawn || !data || ctx.view !== "flame") return;
    fitHeight(data);
    window.Plotly.react(plot, [trace(data)], layout, config);
  }
  // The panel changes size with the window, the error banner and the sidebar.
  let lastRoom = 0;
  new ResizeObserver(() => {
    if (area.clientHeight === lastRoom) return;
    lastRoom = area.clientHeight;
    refit();
  }).observe(area);
  search.addEventListener("input", () => {
    if (!data || data.ids.length <= 1) return;
    const fills = colors(data);
    const labels = textColors(fills);
    window.Plotly.restyle(plot, { "marker.colors": [fills], "textfont.color": [labels], "insidetextfont.color": [labels] });
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
