// Flame graph view: top-down, bottom-up (callers) and sandwich, drawn by FlameCanvas.
// Click zooms (ancestors stay on screen, the path bar names them), Esc goes back.

import { FlameCanvas, ROW_PX, searchPattern } from "./flamecanvas.js";
import { esc, fmtCalls, fmtInt, fmtPct, fmtTime, shortName, themeColor, throttle } from "./format.js";
import { drawAxis, Minimap, pctLabel, timeLabel } from "./flamenav.js";
import { initFlameDetail } from "./flamedetail.js";

const ZOOM_STEP = 1.5; // one W/S or +/− press: the view 1.5 times narrower or wider
const PAN_STEP = 0.2; // one A/D or arrow press: a fifth of the view
const DRAG_PX = 4; // a press that moves less is a click
const SPLIT_MIN = 0.15; // the sandwich's smaller half keeps at least this share

export function initFlame(ctx, live) {
  const $ = (id) => document.getElementById(id);
  const area = $("flame-area");
  const empty = $("flame-empty");
  const search = $("flame-search");
  const matchesEl = $("flame-matches");
  const info = $("flame-info");
  const foot = $("flame-foot");
  const pathbar = $("flame-path");
  const tip = $("flame-tip");
  const sandwichBox = $("flame-sandwich");
  const flipBtn = $("flame-flip");
  let mode = "top-down";
  // Root at the bottom or top: one setting for every flame graph of the page (the
  // Compare tab's follows it and may toggle it too, through "flame-flip").
  let flip = !!ctx.flameFlip;
  let data = null; // the payload on screen (main graph)
  let sandwichData = null;
  let sandwichFid = null;
  let pending = null;
  let pendingMeta = null;
  const zoomMs = [];
  ctx.flameZoomMs = zoomMs;

  // Compact fixed rows, as speedscope: a deep graph scrolls, a shallow one leaves room
  // below rather than stretching each frame to fill the panel.
  const rows = { minRow: ROW_PX, maxRow: ROW_PX };
  const main = new FlameCanvas($("flame-plot"), { onZoom: () => renderPath(), ...rows });
  const callers = new FlameCanvas($("sw-callers"), { flip: true, ...rows });
  const callees = new FlameCanvas($("sw-callees"), rows);
  ctx.flame = main;
  ctx.sandwich = { callers, callees };

  const windowed = () => !!ctx.window;
  const fetched = () => windowed() || mode !== "top-down";

  const minimap = new Minimap($("flame-minimap"));
  const detail = initFlameDetail(ctx, $("flame-detail"), () => ({ data, mode }));
  ctx.flameNav = { minimap, detail };

  // Time along the top-down graph; share of the root in the bottom-up graph and the
  // sandwich's halves (their x is not time spent in one stretch).
  function axisFor(fc, canvas, width, share) {
    const [lo, hi, whole] = fc.visibleUnits();
    const perUs = fc.data?.raw?.units_per_us;
    if (!fc.data) return drawAxis(canvas, width, 0, 0, pctLabel);
    if (share || !perUs) return drawAxis(canvas, width, (100 * lo) / whole, (100 * hi) / whole, pctLabel);
    return drawAxis(canvas, width, lo / perUs, hi / perUs, timeLabel);
  }

  // Rows from the root on screen, [first, last), for the minimap's region.
  function rowsShown() {
    const h = main.canvas.clientHeight || area.clientHeight;
    const top = area.scrollTop;
    const bottom = top + area.clientHeight;
    return flip ? [(h - bottom) / ROW_PX, (h - top) / ROW_PX] : [top / ROW_PX, bottom / ROW_PX];
  }

  function drawNav() {
    const width = area.clientWidth;
    axisFor(main, $("flame-axis"), width, mode !== "top-down");
    minimap.draw(main, width, rowsShown());
  }

  function redraw() {
    if (ctx.view !== "flame") return;
    if (mode === "sandwich") return redrawSandwich();
    const room = Math.max(120, area.clientHeight);
    const width = area.clientWidth;
    main.flip = flip;
    const height = main.fit(room);
    main.draw(width, height);
    // "match k of N" counts the frames on screen: read after the draw that put them there.
    matchesEl.textContent = main.matchSummary();
    if (flip && height > room && !navigated) area.scrollTop = area.scrollHeight;
    drawNav();
  }

  // Wheel, drag and keys ask for a redraw; one frame draws once, however many asked.
  let navigated = false; // the user moved the view: a redraw keeps the scroll
  let queued = false;
  let queuedAt = [];
  function redrawSoon(ev) {
    navigated = true;
    if (ev) queuedAt.push(ev.timeStamp);
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      redraw();
      const now = performance.now();
      for (const t of queuedAt) navMs.push(now - t);
      queuedAt = [];
      if (navMs.length > 200) navMs.splice(0, navMs.length - 200);
    });
  }
  const navMs = [];
  ctx.flameNavMs = navMs;

  let split = 0.5; // the callers' share of the sandwich's height
  function redrawSandwich() {
    // The halves share the height (split); the callers' graph, root at the bottom,
    // sits at the bottom of its half, next to the callees' root.
    $("sw-callers-half").style.flex = `${split} 1 0`;
    $("sw-callees-half").style.flex = `${1 - split} 1 0`;
    renderSwTable();
    for (const [fc, id] of [[callers, "sw-callers"], [callees, "sw-callees"]]) {
      const box = $(`${id}-area`);
      const room = Math.max(ROW_PX, box.clientHeight);
      const h = fc.flip ? Math.max(ROW_PX, fc.levels() * ROW_PX) : fc.fit(room);
      if (fc.flip) fc.rowPx = ROW_PX;
      fc.draw(box.clientWidth, h);
      if (fc.flip && h > room) box.scrollTop = box.scrollHeight;
      axisFor(fc, $(`${id}-axis`), box.clientWidth, true);
    }
  }

  // The handle between the halves: drag it, or arrow keys when it has focus.
  const splitter = $("sw-split");
  const setSplit = (f) => { split = Math.min(1 - SPLIT_MIN, Math.max(SPLIT_MIN, f)); redrawSandwich(); };
  splitter.addEventListener("pointerdown", (ev) => {
    ev.preventDefault();
    splitter.setPointerCapture(ev.pointerId);
    const box = splitter.parentElement.getBoundingClientRect();
    const move = (e) => setSplit((e.clientY - box.top) / box.height);
    const up = () => { splitter.removeEventListener("pointermove", move); splitter.removeEventListener("pointerup", up); };
    splitter.addEventListener("pointermove", move);
    splitter.addEventListener("pointerup", up);
  });
  splitter.addEventListener("keydown", (ev) => {
    const by = ev.key === "ArrowUp" ? -0.05 : ev.key === "ArrowDown" ? 0.05 : 0;
    if (!by) return;
    ev.preventDefault();
    setSplit(split + by);
  });

  // speedscope's sandwich table: every function, by self time until a header is clicked
  // (again: the other direction); a row picks it.
  const swBody = document.querySelector("#sw-table tbody");
  const swHead = document.querySelector("#sw-table thead");
  let swRows = null;
  let swKey = "self_us";
  let swDesc = true;
  const swName = (r) => shortName(r.label || r.name);
  function sortSwRows() {
    const sign = swDesc ? -1 : 1;
    swRows.sort(swKey === "label" ? (a, b) => sign * swName(a).localeCompare(swName(b))
      : (a, b) => sign * (a[swKey] - b[swKey]));
    for (const th of swHead.querySelectorAll("th[data-sw]")) {
      const on = th.dataset.sw === swKey;
      th.classList.toggle("sorted-desc", on && swDesc);
      th.classList.toggle("sorted-asc", on && !swDesc);
      if (on) th.setAttribute("aria-sort", swDesc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    }
  }
  swHead.addEventListener("click", (ev) => {
    const th = ev.target.closest("th[data-sw]");
    if (!th || !swRows) return;
    swDesc = th.dataset.sw === swKey ? !swDesc : th.dataset.sw !== "label";
    swKey = th.dataset.sw;
    sortSwRows();
    renderSwTable();
  });
  function renderSwTable() {
    const fns = data?.functions;
    if (!swRows && fns) {
      ctx.run(async () => {
        const out = await ctx.api.getJSON("/api/functions", ctx.windowParams());
        swRows = out.functions.slice();
        // speedscope lists "[unknown]" too: the time of calls whose callers the capture
        // did not see (it began inside them). It is no function: no row of its own to pick.
        if (out.unknown_us > 0) {
          const pct = out.profiled_us ? (100 * out.unknown_us) / out.profiled_us : 0;
          swRows.push({ fid: -1, name: "[unknown]", label: "[unknown]", total_us: out.unknown_us,
            self_us: 0, calls: null, pct, self_pct: 0 });
        }
        sortSwRows();
        renderSwTable();
      });
      return;
    }
    if (!swRows) return;
    swBody.innerHTML = swRows.map((r) =>
      `<tr data-fid="${r.fid}" class="${r.fid === sandwichFid ? "selected" : ""}${r.fid < 0 ? " unknown" : ""}"` +
      `${r.fid < 0 ? ' title="Calls whose callers the capture did not see: it began inside them"' : ""}>` +
      `<td class="name" title="${esc(r.name)}">${esc(swName(r))}</td>` +
      barCell(r.total_us, r.pct) + barCell(r.self_us, r.self_pct) +
      `<td class="num">${r.calls === null ? "—" : esc(fmtInt(r.calls))}</td></tr>`).join("");
  }

  // A time, its share of profiled time, and a bar as long as the share behind them.
  function barCell(us, pct) {
    const w = Math.max(0, Math.min(100, pct || 0));
    return `<td class="num bar-cell" title="${esc(fmtTime(us))} · ${esc(fmtPct(pct))} of profiled time"><span class="bar" style="width:${w.toFixed(1)}%"></span>` +
      `<span class="v">${esc(fmtTime(us))}</span><span class="p">${esc(fmtPct(pct))}</span></td>`;
  }
  swBody.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-fid]");
    if (!tr || Number(tr.dataset.fid) < 0) return;
    // New data (a version, a window) drops swRows before the refetched table replaces the
    // rows on screen: a click in between still picks the row's function.
    const fid = Number(tr.dataset.fid);
    const row = swRows?.find((r) => r.fid === fid);
    const name = row ? row.name : tr.querySelector("td.name")?.title;
    ctx.emit("select-function", { fid, name, from: "sandwich" });
  });
  ctx.on("version", () => { swRows = null; });
  ctx.on("window", () => { swRows = null; });

  function setMatch() {
    // Only the main graph: the sandwich's halves show one function's callers and callees,
    // which greyed out entirely while a search was active.
    main.match = searchPattern(search.value.trim());
    const m = main.matches();
    if (!m || !m.frames) main.currentI = -1;
    $("flame-prev").disabled = $("flame-next").disabled = !m || !m.frames;
    matchesEl.textContent = main.matchSummary();
  }

  // Next / previous match: zoom to it (its ancestors stay above, Esc comes back) and
  // select its function; the detail panel shows it.
  function step(by) {
    const i = main.step(by);
    if (i < 0) return;
    const t = main.data;
    main.zoom(i);
    detail.pin(main, i);
    if (t.fids[i] >= 0) {
      sandwichFid = t.fids[i];
      ctx.emit("select-function", { fid: t.fids[i], name: t.names[i], from: "search" });
    }
    setMatch();
    redraw();
    const r = main.rects.find((x) => x.i === i);
    if (r) area.scrollTop = Math.max(0, r.y - area.clientHeight / 2);
  }

  function describe(d) {
    if (!d) return;
    const win = d.window;
    const scope = win ? "the window" : "the capture";
    info.textContent = `${d.nodes.toLocaleString("en-US")} of ${d.frames.toLocaleString("en-US")} frames · ` +
      `${fmtTime(d.total_us)} profiled` + (d.nodes < d.frames ? " · small frames merged into “other”" : "");
    if (d.wall_us === undefined) { foot.textContent = ""; return; }
    const outside = Math.max(0, d.wall_us - d.profiled_us);
    // A QS target's frames are run-to-completion steps, not instrumented functions.
    const inside = ctx.kind(ctx.shownKind()).frames_are;
    foot.innerHTML =
      `<span title="Time inside ${inside} (nested calls once) against the wall time of ${scope}">` +
      `<b>Coverage ${esc(fmtPct(d.coverage_pct))}</b>: ${esc(fmtTime(d.profiled_us))} profiled of ` +
      `${esc(fmtTime(d.wall_us))} wall time of ${scope}</span>` +
      `<span>${esc(fmtTime(outside))} (${esc(fmtPct(100 - d.coverage_pct))}) outside ${inside}</span>` +
      `<span class="muted">100% = profiled time of ${scope}</span>`;
  }

  function renderPath() {
    const t = main.data;
    if (!t || mode === "sandwich") { pathbar.hidden = true; return; }
    const path = main.path();
    pathbar.hidden = path.length <= 1;
    pathbar.innerHTML = path.map((i, k) =>
      `<button type="button" data-i="${i}" ${k === path.length - 1 ? 'aria-current="true"' : ""} title="${esc(t.names[i])}">` +
      `${esc(k === 0 ? "all" : t.labels[i])}</button>`).join('<span class="sep">›</span>') +
      '<span class="muted hint">Esc: back</span>';
  }

  function show(d, meta) {
    const started = performance.now();
    data = d;
    const hasData = !!d && d.ids.length > 1 && d.values[0] > 0;
    empty.hidden = hasData || mode === "sandwich";
    area.style.visibility = hasData ? "visible" : "hidden";
    main.setData(hasData ? d : null);
    // No graph, no minimap, axis nor details (the "No samples yet" line says why).
    $("flame-nav").hidden = $("flame-detail").hidden = !hasData || mode === "sandwich";
    detail.refresh(main);
    setMatch();
    if (hasData) describe(d);
    else { info.textContent = ""; foot.textContent = ""; }
    renderPath();
    redraw();
    reportDrawn(meta, started);
  }

  function reportDrawn(meta, started) {
    if (!meta || meta.recv_ts === undefined) return;
    requestAnimationFrame(() => {
      live.report({ type: "drawn", seq: meta.seq, recv_ts: meta.recv_ts, frame_ms: performance.now() - started });
    });
  }

  async function fetchMain() {
    if (mode === "sandwich") return fetchSandwich();
    const d = await ctx.run(() => ctx.api.getJSON("/api/flame", { mode, ...ctx.windowParams() }));
    if (d) show(d, null);
  }

  async function fetchSandwich() {
    if (sandwichFid === null) {
      sandwichData = null;
      $("sw-name").textContent = "—";
      $("sw-name2").textContent = "—";
      $("sw-hint").hidden = false;
      callers.setData(null);
      callees.setData(null);
      redrawSandwich();
      return;
    }
    const d = await ctx.run(() => ctx.api.getJSON("/api/sandwich", { fid: sandwichFid, ...ctx.windowParams() }));
    if (!d) return;
    sandwichData = d;
    $("sw-hint").hidden = true;
    $("sw-name").textContent = d.name;
    $("sw-name2").textContent = d.name;
    callers.setData(d.callers);
    callees.setData(d.callees);
    setMatch();
    redrawSandwich();
  }

  const refetch = throttle(() => { if (ctx.view === "flame" && fetched()) fetchMain(); }, 1000);

  ctx.on("icicle", ({ icicle, meta }) => {
    if (fetched()) { refetch(); return; } // live updates go on through the window/mode
    if (ctx.view === "flame") show(icicle, meta);
    else { pending = icicle; pendingMeta = meta; }
  });
  ctx.on("version", () => { if (fetched()) refetch(); });
  ctx.on("window", () => {
    main.reset();
    if (fetched()) fetchMain();
    else ctx.run(async () => show(await ctx.api.getJSON("/api/flame"), null));
  });
  ctx.on("capture-start", () => main.reset());
  ctx.on("theme", () => redraw());
  // Broken budgets (budgets.js): their functions' frames are outlined and carry a ⚠.
  let markedKey = "";
  ctx.on("budgets", (verdicts) => {
    const names = [...new Set(verdicts.filter((v) => v.state === "broken" && v.function).map((v) => v.function))].sort();
    if (names.join("\n") === markedKey) return; // asked every second: redraw on a change only
    markedKey = names.join("\n");
    const marked = names.length ? new Set(names) : null;
    for (const fc of [main, callers, callees]) fc.marked = marked;
    redraw();
  });
  ctx.on("select-function", (sel) => {
    const fid = sel ? sel.fid : null;
    for (const fc of [main, callers, callees]) fc.selectedFid = fid;
    if (sel && mode === "sandwich") { sandwichFid = fid; fetchSandwich(); }
    else if (sel) sandwichFid = fid;
    redraw();
  });

  function setMode(next) {
    mode = next;
    for (const b of document.querySelectorAll("#view-flame [data-flame]")) {
      b.classList.toggle("on", b.dataset.flame === mode);
      b.setAttribute("aria-pressed", String(b.dataset.flame === mode));
    }
    const sw = mode === "sandwich";
    sandwichBox.hidden = !sw;
    area.hidden = sw;
    flipBtn.hidden = sw;
    main.reset();
    navigated = false;
    $("flame-nav").hidden = sw;
    $("flame-detail").hidden = sw;
    detail.pin(main, -1);
    if (sw) { empty.hidden = true; pathbar.hidden = true; }
    fetchMain();
  }
  for (const b of document.querySelectorAll("#view-flame [data-flame]")) {
    b.addEventListener("click", () => setMode(b.dataset.flame));
  }
  flipBtn.addEventListener("click", () => ctx.emit("flame-flip", !flip));
  ctx.on("flame-flip", (value) => {
    flip = ctx.flameFlip = value;
    flipBtn.setAttribute("aria-pressed", String(flip));
    flipBtn.textContent = flip ? "Root to top" : "Root to bottom"; // what a click does
    redraw();
  });

  // ---------------------------------------------------------------- mouse and keys

  function tooltip(fc, ev, kind) {
    const rect = fc.canvas.getBoundingClientRect();
    const r = fc.hit(ev.clientX - rect.left, ev.clientY - rect.top);
    fc.canvas.style.cursor = r ? "pointer" : "default";
    if (!r) { tip.hidden = true; return; }
    const t = fc.data;
    const c = t.custom[r.i] || [];
    const d = t.raw;
    const scope = d.window || (kind === "main" ? data?.window : sandwichData?.window) ? "window" : "capture";
    const profiled = (kind === "main" ? data?.profiled_us : sandwichData?.profiled_us) || d.total_us;
    const shareOfAll = profiled ? (100 * c[1]) / profiled : 0;
    const lines = [`<b>${esc(c[0] ?? r.name)}</b>`];
    if (c[5]) lines.push(`<span class="muted">${esc(c[5])}</span>`);
    if (c[3] === null || c[3] === undefined) {
      lines.push(`${esc(fmtTime(c[1]))} · ${esc(fmtPct(shareOfAll))} of profiled time`);
    } else {
      const what = kind === "main" && mode === "bottom-up" ? "Self time along this caller path"
        : kind === "callers" ? "Time in the function along this path" : "This frame";
      lines.push(`${what}: ${esc(fmtTime(c[1]))} · ${esc(fmtPct(shareOfAll))} of profiled time`);
      const parent = t.parent[r.i];
      if (parent > 0 && t.values[parent]) {
        lines.push(`${esc(fmtPct((100 * t.values[r.i]) / t.values[parent]))} of its parent, ` +
          `${esc(t.labels[parent])}`);
      }
      if (!(kind === "main" && mode === "bottom-up") && kind !== "callers") {
        lines.push(`self ${esc(fmtTime(c[2]))} · ${esc(fmtCalls(c[3]))}`);
      } else {
        lines.push(esc(fmtCalls(c[3])));
      }
      const fn = (data?.functions || {})[String(r.fid)];
      if (fn) {
        lines.push(`Function, all frames: total ${esc(fmtPct(fn[0]))} · self ${esc(fmtPct(fn[1]))} · ` +
          `${esc(fmtCalls(fn[2]))}`);
      }
    }
    lines.push(`<span class="muted">100% = profiled time of the ${scope} (${esc(fmtTime(profiled))})</span>`);
    tip.innerHTML = lines.join("<br>");
    tip.hidden = false;
    const x = Math.min(window.innerWidth - tip.offsetWidth - 8, ev.clientX + 14);
    const y = ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16;
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${Math.max(4, y)}px`;
  }

  // After a zoom the clicked frame moves only if the graph's height changed (root at
  // the bottom): scroll so it is again under the pointer.
  function keepUnderPointer(fc, i, clientY, under) {
    const now = fc.rects.find((x) => x.i === i);
    if (!now) return;
    const top = fc.canvas.getBoundingClientRect().top;
    area.scrollTop += top + now.y + under - clientY;
  }

  function wire(fc, kind) {
    fc.canvas.addEventListener("mousemove", (ev) => {
      if (drag?.moved) return;
      tooltip(fc, ev, kind);
      if (kind !== "main") return;
      const rect = fc.canvas.getBoundingClientRect();
      const r = fc.hit(ev.clientX - rect.left, ev.clientY - rect.top);
      detail.hover(fc, r ? r.i : -1);
    });
    fc.canvas.addEventListener("mouseleave", () => {
      tip.hidden = true;
      if (kind === "main") detail.hover(fc, -1);
    });
    fc.canvas.addEventListener("click", (ev) => {
      if (kind === "main" && dragged) { dragged = false; return; } // the end of a drag
      const rect = fc.canvas.getBoundingClientRect();
      const r = fc.hit(ev.clientX - rect.left, ev.clientY - rect.top);
      if (!r) return;
      if (kind === "main") detail.pin(fc, r.i);
      if (kind === "main" && mode !== "sandwich") {
        const target = r.i === fc.focus ? fc.data.parent[r.i] : r.i;
        const under = ev.clientY - rect.top - r.y; // the pointer's place in its frame
        fc.zoom(target);
        redraw();
        keepUnderPointer(fc, r.i, ev.clientY, under);
        requestAnimationFrame(() => zoomMs.push(performance.now() - ev.timeStamp));
        if (r.fid >= 0) ctx.emit("select-function", { fid: r.fid, name: r.name, from: "flame" });
      } else if (r.fid >= 0 && kind !== "main") {
        sandwichFid = r.fid;
        ctx.emit("select-function", { fid: r.fid, name: r.name, from: "sandwich" });
      }
      tooltip(fc, ev, kind);
    });
  }
  // Drag pans the main graph both ways: sideways through the view, up and down through
  // the scroll. A press that barely moves stays a click.
  let drag = null;
  let dragged = false;
  main.canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
    dragged = false;
  });
  main.canvas.addEventListener("pointermove", (ev) => {
    if (!drag || !(ev.buttons & 1)) { drag = null; return; }
    const dx = ev.clientX - drag.x;
    const dy = ev.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < DRAG_PX) return;
    if (!drag.moved) { drag.moved = true; main.canvas.setPointerCapture(drag.id); tip.hidden = true; }
    main.canvas.style.cursor = "grabbing";
    drag.x = ev.clientX;
    drag.y = ev.clientY;
    main.panBy(-dx / Math.max(1, area.clientWidth));
    area.scrollTop -= dy;
    redrawSoon(ev);
  });
  main.canvas.addEventListener("pointerup", () => {
    dragged = !!drag?.moved;
    drag = null;
    main.canvas.style.cursor = "default";
  });

  // speedscope's wheel: scrolling pans (either axis; Shift turns a vertical wheel
  // sideways), Ctrl or Cmd with the wheel, and a trackpad pinch (which the browser
  // sends as Ctrl+wheel), zooms at the cursor.
  function onWheel(ev) {
    if (!main.data || mode === "sandwich") return;
    const line = ev.deltaMode === 1 ? ROW_PX : ev.deltaMode === 2 ? area.clientHeight : 1;
    let dx = ev.deltaX * line;
    let dy = ev.deltaY * line;
    if (ev.ctrlKey || ev.metaKey) {
      ev.preventDefault();
      const rect = main.canvas.getBoundingClientRect();
      const at = Math.min(1, Math.max(0, (ev.clientX - rect.left) / Math.max(1, rect.width)));
      // A pinch sends small steps: make them count more, as a wheel notch does.
      const factor = Math.exp(Math.max(-2, Math.min(2, dy * (ev.ctrlKey ? 0.01 : 0.005))));
      main.zoomAt(at, factor);
      redrawSoon(ev);
      return;
    }
    if (ev.shiftKey && !dx) [dx, dy] = [dy, 0];
    if (!dx) return; // vertical only: the area scrolls itself
    ev.preventDefault();
    main.panBy(dx / Math.max(1, area.clientWidth));
    if (dy) area.scrollTop += dy;
    redrawSoon(ev);
  }
  area.addEventListener("wheel", onWheel, { passive: false });
  $("flame-axis").addEventListener("wheel", onWheel, { passive: false }); // the same x as the graph
  area.addEventListener("scroll", () => { if (mode !== "sandwich") minimap.draw(main, area.clientWidth, rowsShown()); });

  // The minimap: press in the region and drag it, or press elsewhere to centre the view
  // there; up and down move the scroll.
  const mapCanvas = $("flame-minimap");
  mapCanvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0 || !main.data || !minimap.region) return;
    ev.preventDefault();
    mapCanvas.setPointerCapture(ev.pointerId);
    const box = mapCanvas.getBoundingClientRect();
    const reg = minimap.region;
    const px = ev.clientX - box.left;
    const py = ev.clientY - box.top;
    const inside = px >= reg.x && px <= reg.x + reg.w && py >= reg.y && py <= reg.y + reg.h;
    const off = inside ? [px - reg.x - reg.w / 2, py - reg.y - reg.h / 2] : [0, 0];
    const move = (e) => {
      const [lo, hi] = main.visibleUnits();
      const at = minimap.at(main, e.clientX - box.left - off[0], e.clientY - box.top - off[1], box.width);
      main.showUnits(at.units - (hi - lo) / 2, at.units + (hi - lo) / 2);
      navigated = true;
      redraw();
      const h = main.canvas.clientHeight;
      const rowY = flip ? h - at.row * ROW_PX : at.row * ROW_PX;
      area.scrollTop = rowY - area.clientHeight / 2;
      navMs.push(performance.now() - e.timeStamp);
    };
    move(ev);
    const up = () => { mapCanvas.removeEventListener("pointermove", move); mapCanvas.removeEventListener("pointerup", up); };
    mapCanvas.addEventListener("pointermove", move);
    mapCanvas.addEventListener("pointerup", up);
  });

  wire(main, "main");
  wire(callers, "callers");
  wire(callees, "callees");
  pathbar.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-i]");
    if (!b) return;
    main.zoom(Number(b.dataset.i));
    redraw();
  });
  document.addEventListener("keydown", (ev) => {
    if (ctx.view !== "flame" || ev.key !== "Escape") return;
    if (ev.target instanceof HTMLInputElement && ev.target !== search) return;
    if (main.back()) { redraw(); ev.preventDefault(); return; }
    if (ctx.selected || search.value) {
      ev.preventDefault();
      if (search.value) { search.value = ""; setMatch(); redraw(); }
      if (ctx.selected) ctx.emit("select-function", null);
    }
  });
  // speedscope's keys: "/" or Ctrl+F searches, 1/2/3 pick top-down, bottom-up, sandwich.
  document.addEventListener("keydown", (ev) => {
    if (ctx.view !== "flame" || ev.altKey || ev.metaKey) return;
    const t = ev.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement) return;
    if (ev.key === "/" || (ev.ctrlKey && ev.key === "f")) {
      ev.preventDefault();
      search.focus();
      search.select();
      return;
    }
    const pick = !ev.ctrlKey && ["top-down", "bottom-up", "sandwich"][["1", "2", "3"].indexOf(ev.key)];
    if (pick) { document.querySelector(`[data-flame=${pick}]`).click(); return; }
    // Arrows on a tab switch tabs, on the sandwich's handle move it: not the view.
    if (t instanceof Element && t.closest("[role=tab], [role=separator]")) return;
    if (!ev.ctrlKey && mode !== "sandwich" && main.data && navKey(ev)) ev.preventDefault();
  });

  // speedscope's view keys: W/S or +/− zoom at the middle, A/D or the arrows pan (up
  // and down scroll), 0 shows the whole graph.
  function navKey(ev) {
    const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (k === "w" || k === "+" || k === "=") main.zoomAt(0.5, 1 / ZOOM_STEP);
    else if (k === "s" || k === "-" || k === "_" || k === "−") main.zoomAt(0.5, ZOOM_STEP);
    else if (k === "a" || k === "ArrowLeft") main.panBy(-PAN_STEP);
    else if (k === "d" || k === "ArrowRight") main.panBy(PAN_STEP);
    else if (k === "ArrowUp" || k === "ArrowDown") area.scrollTop += (k === "ArrowUp" ? -3 : 3) * ROW_PX;
    else if (k === "0") {
      main.reset();
      navigated = false;
      area.scrollTop = flip ? area.scrollHeight : 0;
    } else return false;
    redrawSoon(ev);
    return true;
  }
  search.addEventListener("input", () => { main.currentI = -1; setMatch(); redraw(); });
  search.addEventListener("keydown", (ev) => {
    // Enter steps to the next match (Shift: previous) and selects its function; in the
    // sandwich view it shows the first matching function.
    if (ev.key !== "Enter" || !main.data || !main.match) return;
    ev.preventDefault();
    if (mode !== "sandwich") { step(ev.shiftKey ? -1 : 1); return; }
    const t = main.data;
    for (let i = 1; i < t.n; i++) {
      if (t.fids[i] >= 0 && main.match.test(t.names[i])) {
        ctx.emit("select-function", { fid: t.fids[i], name: t.names[i], from: "search" });
        return;
      }
    }
  });
  $("flame-next").addEventListener("click", () => step(1));
  $("flame-prev").addEventListener("click", () => step(-1));
  $("flame-reset").addEventListener("click", () => { main.reset(); navigated = false; redraw(); });

  let lastSize = "";
  new ResizeObserver(() => {
    const size = `${area.clientWidth}x${area.clientHeight}x${sandwichBox.clientHeight}`;
    if (size === lastSize) return;
    lastSize = size;
    redraw();
  }).observe(document.getElementById("view-flame"));

  return {
    show() {
      if (fetched()) fetchMain();
      else if (pending) { show(pending, pendingMeta); pending = null; }
      else redraw();
    },
    // Title lines for exports: firmware, capture time, window, total.
    title() {
      const dev = ctx.state?.device || {};
      const started = ctx.state?.capture_started;
      const when = started ? new Date(started * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "—";
      const range = ctx.state?.range;
      const win = ctx.window && range
        ? `window ${fmtTime(ctx.window[0] - range[0])} – ${fmtTime(ctx.window[1] - range[0])}`
        : "whole capture";
      const d = data || {};
      return {
        title: `mcuprof flame graph — firmware ${dev.fw_version || "unknown"}`,
        sub: `captured ${when} · ${win} · ${fmtTime(d.total_us)} profiled` +
          (d.wall_us ? ` of ${fmtTime(d.wall_us)} wall (${fmtPct(d.coverage_pct)} coverage)` : ""),
      };
    },
    // The graph on screen (its zoom and search), or a stored session's ({flame, title,
    // subtitle} from /api/sessions/{id}/flame), whole.
    async png(filename, stored = null) {
      if (!stored && (!data || !main.data)) throw new Error("nothing to export yet: the flame graph is empty");
      const width = 1600;
      const head = 58;
      const fc = new FlameCanvas(document.createElement("canvas"), { maxRow: 22, minRow: 20 });
      fc.setData(stored ? stored.flame : data);
      fc.focusId = stored ? null : main.focusId;
      if (!stored) [fc.vx0, fc.vx1] = [main.vx0, main.vx1]; // the wheel's zoom too
      fc.match = stored ? null : main.match;
      const h = fc.levels() * 20;
      fc.rowPx = 20;
      const flameCanvas = document.createElement("canvas");
      fc.draw(width - 16, h, 2, flameCanvas);
      const out = document.createElement("canvas");
      out.width = width * 2;
      out.height = (head + h + 12) * 2;
      const g = out.getContext("2d");
      g.scale(2, 2);
      g.fillStyle = themeColor("--panel", "#161a20");
      g.fillRect(0, 0, width, head + h + 12);
      const { title, sub } = stored ? { title: stored.title, sub: stored.subtitle } : this.title();
      g.fillStyle = themeColor("--text", "#d6dbe2");
      g.font = "600 16px system-ui, sans-serif";
      g.fillText(title, 8, 24);
      g.fillStyle = themeColor("--muted", "#8b95a3");
      g.font = "13px system-ui, sans-serif";
      g.fillText(sub, 8, 44);
      g.drawImage(flameCanvas, 8, head, width - 16, h);
      const a = document.createElement("a");
      a.href = out.toDataURL("image/png");
      a.download = filename;
      document.body.append(a);
      a.click();
      a.remove();
    },
    current: () => data,
  };
}
