// S12Z tab: DBG profiling traces stored as sessions of their own kind. Import a PDO
// capture with its ELF, then: where indirect COFs went (destination table), which
// interrupts fired (histogram) and when (timeline); CSV and JSON exports. While this tab
// is shown, the sidebar's health card gives way to the trace's own health: TBOVF loss,
// bad lines, timestamp overflows.

import { el, injectStyle } from "./dom.js";
import { fmtHz, fmtInt, fmtPct, fmtTime, seriesColour, themeColor } from "./format.js";
import { loadPlotly, themedPlot } from "./plotly.js";

const STYLE = `
.s12z { display: flex; flex-direction: column; flex: 1; min-height: 0; }
.s12z .toolbar { display: flex; gap: 8px; align-items: center; padding: 8px 10px; flex-wrap: wrap;
  border-bottom: 1px solid var(--line); }
.s12z .toolbar label.inline { display: inline-flex; gap: 6px; align-items: center; color: var(--muted); }
.s12z #s12z-session { max-width: 280px; }
.s12z #s12z-bus { width: 90px; }
#s12z-health .note.warn { margin: 0 0 8px; }
.s12z-body { flex: 1; min-height: 0; overflow: auto; padding: 10px; display: grid; gap: 10px;
  grid-template-columns: minmax(0, 1.3fr) minmax(0, 1fr); grid-auto-rows: min-content; }
.s12z-body.single { grid-template-columns: 1fr; }
.s12z-panel { background: var(--panel-2); border: 1px solid var(--line); border-radius: 8px; min-width: 0;
  display: flex; flex-direction: column; }
.s12z-panel h3 { margin: 0; padding: 8px 10px 6px; font-size: 12px; font-weight: 600; letter-spacing: .4px;
  text-transform: uppercase; color: var(--muted); display: flex; gap: 8px; align-items: baseline; }
.s12z-panel h3 .muted { text-transform: none; letter-spacing: 0; font-weight: 400; }
.s12z-panel .table-wrap { max-height: 430px; }
.s12z-summary { grid-column: 1 / -1; display: flex; flex-wrap: wrap; gap: 8px; }
.s12z-stat { flex: 1 1 140px; background: var(--panel-2); border: 1px solid var(--line); border-radius: 8px;
  padding: 8px 12px; min-width: 0; }
.s12z-stat .k { font-size: 10.5px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); }
.s12z-stat .v { font-size: 18px; font-weight: 600; margin-top: 2px; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
.s12z-stat .s { font-size: 11.5px; color: var(--muted); }
.s12z-stat.bad { border-color: var(--red); background: var(--red-bg); }
.s12z-wide { grid-column: 1 / -1; }
.s12z-plot { height: 300px; }
.s12z-plot.short { height: 260px; }
.s12z-empty { margin: 48px auto; max-width: 600px; padding: 22px 26px; border: 1px dashed var(--line-2);
  border-radius: 10px; background: var(--panel-2); line-height: 1.6; }
.s12z-empty-title { font-size: 15px; font-weight: 600; margin-bottom: 6px; }
.s12z-empty ol { margin: 0 0 10px; padding-left: 20px; }
#s12z-health dd.bad { color: var(--red); }
`;

const PLOT_LAYOUT = {
  // Colours: the theme's, painted in by themedPlot below (plotly.js).
  font: { size: 11 },
  hoverlabel: { font: { size: 12 } },
};
const PLOT_CONFIG = { displaylogo: false, displayModeBar: false, responsive: true, showLink: false };
const AXIS = { zeroline: false, automargin: true };
themedPlot(PLOT_LAYOUT, AXIS); // dark or light, as the page

// Plotly reads tags in its labels and decodes only &amp; &lt; &gt;: escape those three.
const PLOTLY_ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
function esc(text) {
  return String(text ?? "").replace(/[&<>]/g, (c) => PLOTLY_ESC[c]);
}

function stat(label, value, sub, bad = false) {
  return el("div", { class: `s12z-stat${bad ? " bad" : ""}` },
    el("div", { class: "k" }, label), el("div", { class: "v", title: String(value) }, value),
    el("div", { class: "s", title: sub || "" }, sub || "\u00a0"));
}

export async function mount(container, ctx) {
  injectStyle("mcuprof-s12z-style", STYLE);
  let sessions = [];
  let current = null; // session id shown
  let data = null;
  let sortKey = "entries";
  let desc = true;

  const fileInput = el("input", { type: "file", id: "s12z-file", "aria-label": "Import an S12Z trace" });
  const elfSelect = el("select", { id: "s12z-elf", "aria-label": "ELF for the S12Z trace" },
    el("option", { value: "" }, "no ELF"));
  const busInput = el("input", { type: "number", id: "s12z-bus", min: "0.001", max: "1000", step: "any",
    placeholder: "MHz", "aria-label": "Bus clock in MHz", title: "Bus clock, to turn cycles into time" });
  const sessionSelect = el("select", { id: "s12z-session", "aria-label": "S12Z session" });
  const exportMenu = el("div", { class: "menu-list", role: "menu", hidden: true },
    ...[["functions", "csv", "Destination table CSV"], ["destinations", "csv", "Destinations by address CSV"],
      ["interrupts", "csv", "Interrupts CSV"], ["functions", "json", "Full analysis JSON"]]
      .map(([table, format, label]) => el("button", {
        role: "menuitem", "data-export": `${format}:${table}`,
        onclick: () => { exportMenu.hidden = true; download(format, table); },
      }, label)));
  const exportBtn = el("button", { type: "button", class: "btn small secondary", id: "s12z-export",
    "aria-haspopup": "true", disabled: true,
    onclick: () => { exportMenu.hidden = !exportMenu.hidden; } }, "Export \u25be");
  const toolbar = el("div", { class: "toolbar" },
    el("label", { class: "btn small secondary file-btn" }, "Import S12Z trace…", fileInput),
    el("label", { class: "inline" }, "ELF", elfSelect),
    el("label", { class: "inline" }, "Bus clock", busInput, "MHz"),
    el("span", { class: "spacer" }),
    el("label", { class: "inline" }, "Trace", sessionSelect),
    el("div", { class: "menu" }, exportBtn, exportMenu),
  );
  const body = el("div", { class: "s12z-body", id: "s12z-body" });
  container.replaceChildren(el("div", { class: "s12z" }, toolbar, body));
  document.addEventListener("click", (ev) => {
    if (!exportBtn.contains(ev.target) && !exportMenu.contains(ev.target)) exportMenu.hidden = true;
  });

  // The trace's health card takes the live health card's place while this tab is shown.
  const liveHealth = document.getElementById("health");
  const health = el("section", { class: "card", id: "s12z-health", "aria-labelledby": "s12z-health-title", hidden: true },
    el("h2", { id: "s12z-health-title" }, "Trace health"),
    el("div", { class: "note warn", id: "s12z-loss", hidden: true }),
    el("dl", { class: "kv", id: "s12z-health-kv" }));
  if (liveHealth) liveHealth.after(health);
  // The tab bar's Export menu exports MiniProfiler profiles: not this view's (it has its own).
  const liveExport = document.getElementById("export-menu");
  function placeHealth(view) {
    const mine = view === "s12z" && data !== null;
    health.hidden = !mine;
    if (liveHealth) liveHealth.hidden = mine;
    if (liveExport) liveExport.hidden = view === "s12z";
  }
  ctx.on("view", placeHealth);

  fileInput.addEventListener("change", () => ctx.run(async () => {
    const file = fileInput.files && fileInput.files[0];
    fileInput.value = "";
    if (!file) return;
    const params = { name: file.name.slice(0, 200) };
    if (elfSelect.value) params.elf = elfSelect.value;
    const mhz = parseFloat(busInput.value);
    if (mhz > 0) params.bus_hz = String(mhz * 1e6);
    const out = await ctx.api.postFile("/api/s12z/import", file, params);
    ctx.notify(`Imported S12Z trace as session ${out.session.id}: ${out.session.name}`, "info");
    ctx.emit("sessions-changed");
    await loadSessions(out.session.id);
  }));
  sessionSelect.addEventListener("change", () => show(Number(sessionSelect.value)));
  busInput.addEventListener("change", () => { if (current !== null) show(current); });

  // Refreshed whenever the tab is shown: an ELF uploaded from the top bar appears here too.
  let elfPicked = false;
  elfSelect.addEventListener("change", () => { elfPicked = true; });
  async function loadElfs() {
    const out = await ctx.api.getJSON("/api/elfs");
    const keep = elfSelect.value;
    const s12z = out.elfs.find((e) => /s12z/i.test(e.label));
    elfSelect.replaceChildren(el("option", { value: "" }, "no ELF"),
      ...out.elfs.map((e) => el("option", { value: e.id }, e.label)));
    const still = out.elfs.some((e) => e.id === keep);
    elfSelect.value = elfPicked && (still || keep === "") ? keep : s12z ? s12z.id : "";
  }

  async function loadSessions(pick) {
    const out = await ctx.api.getJSON("/api/sessions");
    sessions = out.sessions.filter((s) => ctx.kind(s.kind).views.includes("s12z-report"));
    sessionSelect.replaceChildren(...sessions.map((s) => el("option", { value: s.id }, `#${s.id} ${s.name}`)));
    const want = pick ?? ctx.s12zSession ?? current;
    const target = sessions.find((s) => s.id === want) || sessions[0];
    if (!target) {
      current = null;
      data = null;
      exportBtn.disabled = true;
      renderEmpty();
      placeHealth(ctx.view);
      return;
    }
    sessionSelect.value = String(target.id);
    await show(target.id);
  }

  function params() {
    const mhz = parseFloat(busInput.value);
    return mhz > 0 ? { bus_hz: String(mhz * 1e6) } : {};
  }

  async function show(sid) {
    await ctx.run(async () => {
      const out = await ctx.api.getJSON(`/api/s12z/sessions/${sid}`, params());
      current = sid;
      data = out.analysis;
      if (!busInput.value && data.bus_hz) busInput.value = String(data.bus_hz / 1e6);
      exportBtn.disabled = false;
      render(out.session);
      placeHealth(ctx.view);
    });
  }

  function download(format, table) {
    if (current === null) return;
    const url = new URL(`/api/s12z/sessions/${current}/export`, location.origin);
    url.searchParams.set("format", format);
    url.searchParams.set("table", table);
    for (const [k, v] of Object.entries(params())) url.searchParams.set(k, v);
    const a = el("a", { href: url.toString(), download: "" });
    document.body.append(a);
    a.click();
    a.remove();
  }

  function renderEmpty() {
    body.classList.add("single");
    body.replaceChildren(el("div", { class: "s12z-empty", id: "s12z-empty" },
      el("div", { class: "s12z-empty-title" }, "No S12Z traces yet"),
      el("ol", {},
        el("li", {}, "Record the PDO output of an S12Z's debug module (S12ZDBGV2) with a probe or logic analyser, as raw bytes."),
        el("li", {}, "Pick the firmware's ", el("b", {}, "ELF"), " (it names destinations and interrupt vectors) and, for time, the ",
          el("b", {}, "bus clock"), "."),
        el("li", {}, "Click ", el("b", {}, "Import S12Z trace…"), ". The sample ", el("code", {}, "sample_elfs/s12z-demo.trace"),
          " goes with ", el("code", {}, "s12z-demo.elf"), ".")),
      el("div", { class: "muted" }, "The same analysis on the command line: ", el("code", {}, "mcuprof s12z CAPTURE --elf ELF --bus-hz HZ"))));
  }

  function render(session) {
    body.classList.remove("single");
    const a = data;
    const irq = a.interrupts;
    const between = irq.between;
    const lost = a.end.tbovf;
    const bad = a.reserved + a.malformed + a.truncated;
    const summary = el("div", { class: "s12z-summary", id: "s12z-summary" },
      stat("Lines", fmtInt(a.good_lines), Object.entries(a.lines).map(([k, v]) => `${k} ${fmtInt(v)}`).join(" · ")),
      stat("Direct COFs", fmtInt(a.cofs.total), `taken ${fmtInt(a.cofs.taken)} · not taken ${fmtInt(a.cofs.not_taken)}`),
      stat("Indirect jumps & returns", fmtInt(a.indirect), `${fmtInt(a.destinations.length)} destinations in ${fmtInt(a.functions.length)} functions`),
      stat("Interrupts", fmtInt(irq.total), between.count
        ? `median ${between.unit_us ? fmtTime(between.unit_us.median) : `${fmtInt(between.median)} cycles`} apart` : "none"),
      stat("Trace time", a.time.us === null ? `${fmtInt(a.time.cycles)} cycles` : fmtTime(a.time.us),
        a.bus_hz ? `${fmtInt(a.time.cycles)} cycles at ${fmtHz(a.bus_hz)}` : "give the bus clock for time"),
      stat("End", lost ? "TBOVF" : a.end.term ? "TERM" : "not marked",
        lost ? "data lost: trace buffer overflow stopped profiling" : a.end.term ? "profiling terminated by disarming" : "capture stops mid-trace", lost),
    );
    const funcPanel = el("section", { class: "s12z-panel", id: "s12z-functions-panel" },
      el("h3", {}, "Destinations by function",
        el("span", { class: "muted" }, a.elf ? `named with ${a.elf}` : "no ELF: raw addresses")),
      el("div", { class: "table-wrap" }, functionsTable(a)));
    const histPanel = el("section", { class: "s12z-panel" },
      el("h3", {}, "Interrupts by vector", el("span", { class: "muted" }, `${fmtInt(irq.total)} in all`)),
      el("div", { class: "s12z-plot", id: "s12z-histogram" }));
    const tlPanel = el("section", { class: "s12z-panel s12z-wide" },
      el("h3", {}, "Interrupt timeline",
        el("span", { class: "muted" }, irq.timeline && irq.timeline.decimated_by > 1
          ? `every ${irq.timeline.decimated_by}th interrupt shown` : "each interrupt at the trace time it was taken")),
      el("div", { class: "s12z-plot short", id: "s12z-timeline" }));
    body.replaceChildren(summary, funcPanel, histPanel, tlPanel);
    renderHealth(a, session);
    loadPlotly().then(() => {
      if (data !== a) return; // another trace was opened meanwhile
      drawHistogram(irq);
      drawTimeline(irq, a);
    }, (err) => {
      for (const id of ["s12z-histogram", "s12z-timeline"]) {
        document.getElementById(id).replaceChildren(el("div", { class: "empty" }, el("span", {}, err.message)));
      }
    });
  }

  function functionsTable(a) {
    const cols = [["function", "Function", true], ["entries", "Entries"], ["share", "Share"],
      ["calls", "Calls"], ["returns", "Returns"], ["destinations", "Addresses"]];
    const rows = [...a.functions].sort((x, y) => {
      const c = sortKey === "function" ? String(x.function).localeCompare(String(y.function)) : x[sortKey] - y[sortKey];
      return desc ? -c : c;
    });
    const maxShare = Math.max(1e-9, ...a.functions.map((f) => f.share));
    const head = el("tr", {}, cols.map(([key, label, text]) => {
      const th = el("th", { "data-key": key, class: [text ? "text" : "", key === sortKey ? (desc ? "sorted-desc" : "sorted-asc") : ""].join(" ").trim(),
        tabindex: "0", "aria-sort": key === sortKey ? (desc ? "descending" : "ascending") : "none",
        title: {
          entries: "Indirect jumps and returns (PTIB lines) whose destination lies in the function",
          share: "Entries as a share of all PTIB lines",
          calls: "Destinations at the function's first byte (indexed calls and jumps)",
          returns: "Destinations inside the body (returns into it)",
          destinations: "Distinct destination addresses in the function",
        }[key] }, label);
      const sort = () => {
        if (sortKey === key) desc = !desc;
        else { sortKey = key; desc = key !== "function"; }
        const wrap = document.querySelector("#s12z-functions-panel .table-wrap");
        if (wrap) wrap.replaceChildren(functionsTable(a));
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sort(); } });
      return th;
    }));
    const body = rows.map((f) => el("tr", {},
      el("td", { class: "name", title: f.start ? `${f.function} @ ${f.start}` : f.function }, f.function),
      el("td", {}, fmtInt(f.entries)),
      el("td", { class: "pct-cell" }, el("div", { class: "bar", style: `width:${Math.min(100, (100 * f.share) / maxShare).toFixed(1)}%` }),
        el("span", {}, fmtPct(f.share))),
      el("td", {}, fmtInt(f.calls)), el("td", {}, fmtInt(f.returns)), el("td", {}, fmtInt(f.destinations))));
    if (!rows.length) body.push(el("tr", {}, el("td", { colspan: "6", class: "text muted" }, "No indirect jumps or returns in this trace.")));
    return el("table", { class: "grid", id: "s12z-functions" }, el("thead", {}, head), el("tbody", {}, body));
  }

  function drawHistogram(irq) {
    const box = document.getElementById("s12z-histogram");
    if (!window.Plotly) return;
    if (!irq.vectors.length) {
      box.replaceChildren(el("div", { class: "empty" }, el("span", {}, "No interrupts (PTVB lines) in this trace.")));
      return;
    }
    const rows = [...irq.vectors].reverse(); // largest on top
    // Names come from the ELF: escaped, never markup.
    const labels = rows.map((v) => `${esc(v.name)}  ${v.offset}`);
    const height = Math.max(190, Math.min(420, 70 + 40 * rows.length));
    box.style.height = `${height}px`;
    window.Plotly.react(box, [{
      type: "bar", orientation: "h", x: rows.map((v) => v.count), y: labels,
      marker: { color: themeColor("--accent", "#4c9aff") }, text: rows.map((v) => `${fmtInt(v.count)} · ${fmtPct(v.share)}`),
      textposition: "outside", cliponaxis: false,
      customdata: rows.map((v) => [v.vector.toString(16).padStart(2, "0"), esc(v.isr || "—"),
        v.period_us !== null ? fmtTime(v.period_us) : v.period_cycles !== null ? `${fmtInt(v.period_cycles)} cycles` : "—"]),
      hovertemplate: "%{y}<br>vector byte 0x%{customdata[0]}, ISR %{customdata[1]}<br>%{x} interrupts" +
        "<br>mean time between: %{customdata[2]}<extra></extra>",
    }], {
      ...PLOT_LAYOUT, height,
      margin: { l: 10, r: 20, t: 8, b: 36 }, bargap: 0.55,
      xaxis: { ...AXIS, title: { text: "interrupts taken", font: { size: 11, color: AXIS.color } },
        range: [0, 1.22 * Math.max(...rows.map((v) => v.count))] },
      yaxis: { ...AXIS, gridcolor: "transparent" },
    }, PLOT_CONFIG);
  }

  function drawTimeline(irq, a) {
    const box = document.getElementById("s12z-timeline");
    const tl = irq.timeline;
    if (!window.Plotly) return;
    if (!tl || !tl.cycle.length) {
      box.replaceChildren(el("div", { class: "empty" }, el("span", {}, "No interrupts to place on a timeline.")));
      return;
    }
    const useTime = Array.isArray(tl.time_us);
    const xs = useTime ? tl.time_us.map((t) => t / 1000) : tl.cycle;
    const names = [...new Set(irq.vectors.map((v) => v.name))];
    const traces = names.map((name, i) => {
      const idx = tl.name.map((n, j) => (n === name ? j : -1)).filter((j) => j >= 0);
      return {
        type: "scatter", mode: "markers", name: esc(name),
        x: idx.map((j) => xs[j]), y: idx.map(() => esc(name)),
        marker: { symbol: "line-ns-open", size: 16, line: { width: 2 }, color: seriesColour(i) },
        hovertemplate: `%{y}<br>${useTime ? "%{x:.3f} ms" : "cycle %{x:,}"}<extra></extra>`,
      };
    });
    const height = Math.max(150, Math.min(360, 90 + 45 * names.length));
    box.style.height = `${height}px`;
    window.Plotly.react(box, traces, {
      ...PLOT_LAYOUT, height, showlegend: false, margin: { l: 10, r: 20, t: 8, b: 40 },
      xaxis: { ...AXIS, title: { text: useTime ? "trace time (ms)" : "trace time (bus cycles; give the bus clock for ms)",
        font: { size: 11, color: AXIS.color } }, rangemode: "tozero" },
      yaxis: { ...AXIS, type: "category", categoryorder: "array", categoryarray: names.map(esc).reverse() },
    }, PLOT_CONFIG);
  }

  function renderHealth(a, session) {
    const kv = document.getElementById("s12z-health-kv");
    const rows = [
      ["Trace", session ? `#${session.id} ${session.name}` : "—"],
      ["End", a.end.tbovf ? "TBOVF: data lost" : a.end.term ? "TERM" : "not marked", a.end.tbovf],
      ["Lines", fmtInt(a.good_lines)],
      ["Reserved", fmtInt(a.reserved), a.reserved > 0],
      ["Malformed", fmtInt(a.malformed), a.malformed > 0],
      ["Truncated", fmtInt(a.truncated), a.truncated > 0],
      ["TS overflows", fmtInt(a.end.tsovf)],
      ["PTW errors", fmtInt(Object.values(a.errors).reduce((s, n) => s + n, 0)),
        Object.keys(a.errors).length > 0],
      ["Bytes", fmtInt(a.bytes)],
    ];
    kv.replaceChildren(...rows.flatMap(([k, v, isBad]) => [el("dt", {}, k),
      el("dd", { class: `mono${isBad ? " bad" : ""}`, title: String(v) }, v)]));
    const loss = document.getElementById("s12z-loss");
    loss.hidden = !a.end.tbovf;
    loss.textContent = a.end.tbovf
      ? `Data lost: trace buffer overflow (TBOVF) at byte ${fmtInt(a.end.tbovf_offset)}. ` +
        "The DBG module stopped profiling there; counts cover the trace up to it."
      : "";
  }

  ctx.on("view", (name) => {
    if (name === "s12z") ctx.run(() => Promise.all([loadElfs(), loadSessions()]));
  });
  ctx.on("sessions-changed", () => { if (ctx.view === "s12z") ctx.run(() => loadSessions()); });
  ctx.on("s12z-open", (sid) => { ctx.s12zSession = sid; ctx.run(() => loadSessions(sid)); });
  await Promise.all([ctx.run(loadElfs), ctx.run(() => loadSessions())]);
}
