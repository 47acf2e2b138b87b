// Compare tab: a stored baseline against another session or the live capture.
// Differential flame graph (widths from the newer capture; red grew, blue shrank, by self-time
// share) and a per-function table of deltas: calls, self and total, absolute and %.

import { FlameCanvas, ROW_PX } from "./flamecanvas.js";
import { fmtInt, fmtTime, throttle } from "./format.js";
import { el, injectStyle } from "./dom.js";

const STYLE = `
.cmp { display: flex; flex-direction: column; flex: 1; min-height: 0; }
.cmp .toolbar { display: flex; gap: 8px; align-items: center; padding: 8px 10px; flex-wrap: wrap;
  border-bottom: 1px solid var(--line); }
.cmp-summary { padding: 6px 10px; color: var(--muted); font-size: 12.5px; }
.cmp-flame { position: relative; overflow-x: hidden; overflow-y: auto; max-height: 46%; min-height: 80px;
  border-bottom: 1px solid var(--line); }
.cmp-flame canvas { display: block; }
.cmp-tip { position: fixed; z-index: 50; background: var(--tip-bg); border: 1px solid var(--line-2); border-radius: 6px;
  padding: 6px 8px; font: 12px var(--mono); white-space: pre; pointer-events: none; color: var(--tip-text); }
.cmp-table { flex: 1; min-height: 0; overflow: auto; }
.cmp td.up { color: var(--diff-up-text); }
.cmp td.down { color: var(--diff-down-text); }
.cmp .legend-up { color: var(--diff-up-text); } .cmp .legend-down { color: var(--diff-down-text); }
.cmp-legend { display: inline-flex; align-items: center; gap: 6px; margin-left: 8px; vertical-align: middle; }
.cmp-legend .ramp { width: 160px; height: 10px; border-radius: 3px; border: 1px solid var(--line-2);
  background: linear-gradient(90deg, rgb(0,0,255), rgb(235,235,235) 50%, rgb(255,0,0)); }
#cmp-functions { font-size: 11.5px; }
#cmp-functions th, #cmp-functions td { padding: 3px 4px; }
#cmp-functions td.name { max-width: 220px; }
.cmp select { max-width: 220px; }
.cmp #cmp-filter { width: 180px; }
.cmp .empty-list { padding: 30px; color: var(--muted); text-align: center; }
.cmp-empty { margin: 48px auto; max-width: 560px; padding: 22px 26px; border: 1px dashed var(--line-2);
  border-radius: 10px; background: var(--panel-2); line-height: 1.6; }
.cmp-empty-title { font-size: 15px; font-weight: 600; margin-bottom: 6px; }
.cmp-empty ol { margin: 0 0 10px; padding-left: 20px; }
.cmp-verdict { padding: 6px 10px; border-bottom: 1px solid var(--line); font-size: 12.5px; }
.cmp-verdict .headline { font-weight: 650; display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.cmp-verdict .headline .pill { font-size: 11px; }
.cmp-verdict.ok .headline .pill { background: var(--green-bg); color: var(--green-text); border: 1px solid var(--green); }
.cmp-verdict.fail .headline .pill { background: var(--red-bg); color: var(--red-text); border: 1px solid var(--red); }
.cmp-verdict .gate { color: var(--muted); margin-top: 2px; }
.cmp-verdict .sections { display: flex; flex-wrap: wrap; gap: 4px 18px; margin-top: 3px; }
.cmp-verdict .sections b { font-weight: 600; }
.cmp #cmp-threshold, .cmp #cmp-confidence { width: 64px; }
.cmp td.noise { color: var(--muted); }
.cmp td.v-regressed { color: var(--diff-up-text); font-weight: 600; }
.cmp td.v-inconclusive { color: var(--amber); }
.cmp td.v-unchanged { color: var(--muted); }
.cmp .legend-inc { color: var(--amber); }
.cmp #cmp-basis { width: auto; }
`;

// The gate's three verdicts in the flame graph: regressed red (by its change in the
// gate's metric), an improvement blue, inconclusive amber, the rest pale.
export const INCONCLUSIVE_COLOUR = "rgb(240,200,90)";
export function verdictColour(v, scale) {
  if (!v) return diffColour(0, scale);
  if (v.verdict === "inconclusive") return INCONCLUSIVE_COLOUR;
  const change = v.change_pct || 0;
  if (v.verdict === "regressed") return diffColour(Math.max(change, 1e-9), scale);
  return v.reason && v.reason.startsWith("shrank") ? diffColour(Math.min(change, -1e-9), scale) : diffColour(0, scale);
}

// The diff's red-white-blue is a data scale, not a theme colour: the same in both themes,
// in the legend's ramp and in the diff SVG export (diff/, tests/compare pin its values);
// the labels on it take the theme's readable ink (format.readableOn).
// Colour strength follows the size of the change in points of self-time share: full
// red/blue at the largest change, but never for less than FULL_PTS points, so a 0.4-point
// wobble stays pale (the legend shows the scale).
const FULL_PTS = 2;
export function diffScale(maxAbsDelta) {
  return Math.max(FULL_PTS / 100, maxAbsDelta || 0);
}
export function diffColour(delta, scale) {
  if (!(scale > 0) || delta === 0) return "rgb(235,235,235)";
  const strength = Math.min(1, Math.abs(delta) / scale);
  const fade = Math.round(225 * (1 - strength));
  return delta > 0 ? `rgb(255,${fade},${fade})` : `rgb(${fade},${fade},255)`;
}

function pct(v) {
  if (v === null || v === undefined) return "—";
  return `${v > 0 ? "+" : ""}${v.toFixed(Math.abs(v) >= 100 ? 0 : 1)}%`;
}

function num(v, unit = "") {
  if (v === null || v === undefined) return "—";
  if (unit === "us") return fmtTime(v);
  if (unit === "%") return `${v.toFixed(2)}%`;
  if (unit === "rate") return v >= 100 ? fmtInt(v) : v.toFixed(v >= 10 ? 1 : 2);
  return fmtInt(v);
}

const COLUMNS = [
  // key, header, getter, unit, is-change
  // The display name, as every view's ("name"); the full signature on hover.
  ["key", "Function", (f) => f.name || f.key, "text"],
  // The gate's verdict (its reason on hover); an added or removed function says so.
  ["status", "Verdict", (f) => (f.status === "both" ? f.verdict || "" : f.status), "verdict"],
  // Captures differ in length: calls are compared per second of capture.
  ["rate_base", "Calls/s base", (f) => f.rate_base, "rate"],
  ["rate_new", "Calls/s new", (f) => f.rate_new, "rate"],
  ["rate_pct", "Calls/s Δ", (f) => f.rate_pct, "pct"],
  ["self_mean_base", "Self/call base", (f) => f.self_mean.base, "us"],
  ["self_mean_new", "Self/call new", (f) => f.self_mean.new, "us"],
  ["self_mean_pct", "Self/call Δ", (f) => f.self_mean.pct, "pct"],
  ["total_mean_pct", "Total/call Δ", (f) => f.total_mean.pct, "pct"],
  ["self_share_new", "Self share", (f) => f.self_share.new, "%"],
  ["self_share_delta", "Share Δ pts", (f) => f.self_share.delta, "pts"],
];

export async function mount(container, ctx) {
  injectStyle("mcuprof-diff-style", STYLE);
  let sessions = [];
  let data = null;
  let scale = 0; // the colour scale of the flame graph on screen (diffScale)
  let sortKey = "self_mean_pct";
  let sortDesc = true;
  let liveAuto = true;
  let chosen = false; // the user picked base or new: keep their choice over the defaults

  const baseSel = el("select", { id: "cmp-base", "aria-label": "Baseline session" });
  const newSel = el("select", { id: "cmp-new", "aria-label": "Session to compare" });
  const filter = el("input", { type: "search", id: "cmp-filter", placeholder: "Filter functions (regex)", "aria-label": "Filter functions" });
  const runBtn = el("button", { type: "button", class: "btn small primary", id: "cmp-run", onclick: () => { chosen = true; run(); } }, "Compare");
  // Hidden until a comparison exists: they export the pair on screen.
  const folded = el("a", { class: "btn small secondary", id: "cmp-export-folded", download: "", hidden: true,
    title: "Two-column folded stacks (base and new counts per stack)" }, "Folded diff");
  const svgLink = el("a", { class: "btn small secondary", id: "cmp-export-svg", download: "", hidden: true }, "Diff SVG");
  const auto = el("input", { type: "checkbox", id: "cmp-auto", checked: true,
    onchange: () => { liveAuto = auto.checked; } });
  const thresholdIn = el("input", { type: "number", id: "cmp-threshold", min: "0", step: "1", value: "10",
    "aria-label": "Threshold (%)", title: "A function fails when it grew more than this (mcuprof compare --threshold)" });
  const confidenceIn = el("input", { type: "number", id: "cmp-confidence", min: "0", max: "99.9", step: "any", value: "95",
    "aria-label": "Confidence (%)", title: "A change counts when its interval at this confidence excludes zero (--confidence)" });
  const basisSel = el("select", { id: "cmp-basis", "aria-label": "Basis",
    title: "What the gate compares per function: the mean time per call, or a percentile of it (mcuprof compare --basis)" },
  ["mean", "p50", "p90", "p99"].map((b) => el("option", { value: b }, b === "mean" ? "mean" : b)));
  const verdictBox = el("div", { class: "cmp-verdict", id: "cmp-verdict", role: "status", hidden: true });
  const summary = el("div", { class: "cmp-summary", id: "cmp-summary" },
    "Pick a baseline and a session (or the live capture), then Compare.");
  const canvas = el("canvas", { id: "cmp-flame-canvas" });
  const flameBox = el("div", { class: "cmp-flame", id: "cmp-flame" }, canvas);
  const fc = new FlameCanvas(canvas, { minRow: ROW_PX, maxRow: ROW_PX, flip: ctx.flameFlip, paint });
  ctx.diffFlame = fc; // for the tests, as ctx.flame
  const flipBtn = el("button", { type: "button", class: "btn small secondary", id: "cmp-flip",
    "aria-label": "Compare: flip the flame graph", "aria-pressed": String(!!ctx.flameFlip),
    title: "Root at the top or the bottom, for every flame graph of the page",
    onclick: () => ctx.emit("flame-flip", !fc.flip) }, ctx.flameFlip ? "Root to top" : "Root to bottom");
  const tableBox = el("div", { class: "cmp-table table-wrap", id: "cmp-table" });
  const tip = el("div", { class: "cmp-tip", hidden: true });
  const legendLo = el("span", { class: "mono" }, "");
  const legendHi = el("span", { class: "mono" }, "");
  const legendWhat = el("span", { id: "cmp-legend-what" }, "the gate's change");
  const legend = el("div", { class: "cmp-summary", id: "cmp-legend" }, "Widths: the newer capture. Colour: the verdict, by ", legendWhat, " — ",
    el("span", { class: "legend-up" }, "red regressed"), ", ", el("span", { class: "legend-down" }, "blue shrank"), ", ",
    el("span", { class: "legend-inc" }, "amber inconclusive"), ", pale unchanged",
    el("span", { class: "cmp-legend" }, legendLo, el("span", { class: "ramp" }), legendHi),
    " Click a frame to zoom, the root to reset.");
  const root = el("div", { class: "cmp" },
    el("div", { class: "toolbar" },
      el("label", { class: "muted" }, "Base ", baseSel),
      el("label", { class: "muted" }, "New ", newSel),
      runBtn,
      el("label", { class: "muted" }, "Threshold ", thresholdIn, "%"),
      el("label", { class: "muted" }, "Confidence ", confidenceIn, "%"),
      el("label", { class: "muted" }, "Basis ", basisSel),
      el("label", { class: "muted", title: "Recompute while the live capture grows" }, auto, " follow live"),
      el("span", { class: "spacer" }),
      flipBtn, filter, folded, svgLink),
    verdictBox, summary, legend, flameBox, tableBox, tip);
  container.replaceChildren(root);
  document.body.appendChild(tip);

  // A sensible first comparison, so the tab opens on a result rather than on two pickers:
  // the newest finished session against the live capture while a device is connected,
  // otherwise the two newest finished sessions (older as base). The session being recorded
  // is the live capture itself, so it is never the default baseline.
  // S12Z traces are tables of samples, not calls: `mcuprof compare` refuses them too.
  const comparable = (list) => list.filter((s) => ctx.kind(s.kind).views.includes("profile"));
  // The gate's key of a static function adds " [file]"; the page shows the display name.
  const displayName = (key) => key.replace(/ \[[^\]]*\]$/, "");

  function defaults(preferBase) {
    // Non-empty: a session with records (an empty or failed one compares as "all removed").
    // Not an S12Z trace (no call records to compare); both sides of the newest's kind.
    const done = comparable(sessions).filter((s) => s.status !== "recording" && (s.records === null || s.records === undefined ? s.raw_bytes > 0 : s.records > 0));
    const connected = !!(ctx.state && ctx.state.connected);
    const has = (id) => sessions.some((s) => String(s.id) === String(id));
    if (preferBase !== undefined && preferBase !== null && has(preferBase)) {
      const other = done.find((s) => String(s.id) !== String(preferBase));
      return [String(preferBase), connected || !other ? "live" : String(other.id)];
    }
    const same = done.filter((s) => s.kind === done[0]?.kind);
    if (same.length >= 2) return [String(same[1].id), String(same[0].id)];
    const liveHas = (ctx.state?.health?.profile_records || 0) > 0;
    if (connected && done.length && liveHas) return [String(done[0].id), "live"];
    return null;
  }

  function fillSelects(preferBase) {
    const keepBase = baseSel.value;
    const keepNew = newSel.value;
    // The session being recorded compares what is stored of it so far: its label says so,
    // first, as a narrow picker cuts a long name.
    const label = (s) => `#${s.id} ${s.status === "recording" ? "(recording) " : ""}${s.name}`;
    const opts = () => comparable(sessions).map((s) => el("option", { value: String(s.id) }, label(s)));
    baseSel.replaceChildren(...opts());
    newSel.replaceChildren(el("option", { value: "live" }, "Live capture"), ...opts());
    const pick = defaults(preferBase);
    const has = (id) => id === "live" || sessions.some((s) => String(s.id) === String(id));
    if (preferBase === undefined && chosen && has(keepBase) && has(keepNew)) {
      baseSel.value = keepBase;
      newSel.value = keepNew;
    } else if (pick) {
      [baseSel.value, newSel.value] = pick;
    }
    runBtn.disabled = !sessions.length;
    return pick;
  }

  // Nothing to compare yet: say why and what to do instead of showing two empty pickers.
  function showEmpty() {
    data = null;
    const recording = sessions.some((s) => s.status === "recording");
    const steps = recording
      ? ["The capture running now is stored as a session when you click Stop.",
        "Click Start again afterwards: the new run is compared live against the stored one."]
      : ["Click Start to record a capture: every capture is stored as a session.",
        "Or import a raw capture file in the Sessions tab."];
    summary.textContent = sessions.length
      ? "Only one capture so far: a comparison needs a stored baseline and a second capture."
      : "No stored sessions yet.";
    flameBox.hidden = true;
    legend.hidden = true;
    folded.hidden = true;
    svgLink.hidden = true;
    tableBox.replaceChildren(el("div", { class: "cmp-empty", id: "cmp-empty" },
      el("div", { class: "cmp-empty-title" }, "Nothing to compare yet"),
      el("ol", {}, steps.map((t) => el("li", {}, t))),
      el("div", { class: "muted" }, "Any stored session can be the baseline: pick one here, or use ",
        el("b", {}, "Use as baseline"), " in Sessions.")));
  }

  async function loadSessions(preferBase) {
    const out = await ctx.api.getJSON("/api/sessions");
    sessions = out.sessions.filter((s) => s.raw_bytes > 0 || s.status === "recording");
    return fillSelects(preferBase);
  }

  // Once per opening of the tab until the user picks something: show a result at once.
  async function openTab(preferBase) {
    const pick = await ctx.run(() => loadSessions(preferBase));
    if (pick === undefined) return;
    if (pick && (!data || !chosen)) await run(true);
    else if (!pick && !chosen) showEmpty();
  }

  // The SVG is coloured by the gate's verdicts: the same options as the tab's comparison.
  function exportHref(format) {
    const q = new URLSearchParams({ base: baseSel.value, new: newSel.value, format,
      threshold: `${thresholdIn.value || 10}%`, confidence: `${confidenceIn.value || 0}%`, basis: basisSel.value });
    return `/api/sessions/diff/export?${q}`;
  }

  let requestSeq = 0;
  async function run(quiet = false) {
    if (!baseSel.value || !newSel.value) return;
    const seq = ++requestSeq;
    const action = async () => {
      const out = await ctx.api.getJSON("/api/sessions/diff", { base: baseSel.value, new: newSel.value, max_nodes: 3000,
        threshold: `${thresholdIn.value || 10}%`, confidence: `${confidenceIn.value || 0}%`, basis: basisSel.value });
      if (seq !== requestSeq) return; // a newer choice was made while this one computed
      data = out;
      fc.reset();
      folded.href = exportHref("folded");
      svgLink.href = exportHref("svg");
      render();
    };
    try {
      await action();
    } catch (err) {
      // Following live retries on the next change; otherwise the page says, in one line
      // where the result would be, why this pair cannot be compared.
      if (seq !== requestSeq || (quiet && data)) return;
      showFailure(`Could not compare ${baseSel.selectedOptions[0]?.textContent ?? ""} with ` +
        `${newSel.selectedOptions[0]?.textContent ?? ""}: ${err.message}`);
    }
  }

  function showFailure(message) {
    data = null;
    fc.setData(null);
    for (const box of [verdictBox, flameBox, legend, folded, svgLink]) box.hidden = true;
    tableBox.replaceChildren();
    summary.textContent = message.split("\n")[0];
  }

  function render() {
    if (!data) return;
    const b = data.base;
    const n = data.new;
    flameBox.hidden = false;
    legend.hidden = false;
    folded.hidden = false;
    svgLink.hidden = false;
    summary.textContent = `${b.name}: ${fmtInt(b.records)} records, ${fmtTime(b.duration_us)}  →  ` +
      `${n.name}: ${fmtInt(n.records)} records, ${fmtTime(n.duration_us)}`;
    scale = gateScale(data.verdict);
    legendLo.textContent = `−${scale.toFixed(0)}%`;
    legendHi.textContent = `+${scale.toFixed(0)}%`;
    legendWhat.textContent = data.verdict ? `its change in ${basisText(data.verdict)}` : "the change";
    const bs = (b.duration_us || 0) / 1e6;
    const ns = (n.duration_us || 0) / 1e6;
    for (const f of data.functions) {
      f.rate_base = bs > 0 && f.calls.base != null ? f.calls.base / bs : null;
      f.rate_new = ns > 0 && f.calls.new != null ? f.calls.new / ns : null;
      f.rate_pct = f.rate_base && f.rate_new != null ? (100 * (f.rate_new - f.rate_base)) / f.rate_base : null;
    }
    renderVerdict();
    renderFlame();
    renderTable();
  }

  // ---------------------------------------------------------------- verdict

  // `mcuprof compare`'s report on this pair, computed by the server with the CLI's code:
  // the same sections, threshold and confidence, so the tab and the CI gate agree.
  function renderVerdict() {
    const v = data.verdict;
    verdictBox.hidden = !v;
    if (!v) return;
    const what = basisText(v);
    const inconclusive = v.inconclusive || [];
    const thr = `${+v.threshold_pct.toFixed(3)}%`;
    verdictBox.className = `cmp-verdict ${v.failed ? "fail" : "ok"}`;
    const also = inconclusive.length ? `; ${inconclusive.length} inconclusive` : "";
    const headline = v.failed
      ? `FAIL: ${v.regressions.length} function(s) grew more than ${thr} (${what})${also}`
      : `OK: no function grew more than ${thr} (${what})${v.within_noise.length ? " — the larger changes are within noise" : ""}${also}`;
    const g = v.gate;
    const gate = g.confidence > 0
      ? `Compared ${v.compared} functions. A change counts when its ${+(g.confidence * 100).toFixed(2)}% interval excludes zero: ` +
        `${g.test}, ${(g.per_function_confidence * 100).toFixed(2)}% per function (Bonferroni over ${g.tested}); ` +
        `under ${Math.max(g.min_calls, 2)} calls a function is not gated.`
      : `Compared ${v.compared} functions on the point change alone (confidence 0).`;
    const section = (key, title) => {
      const rows = v[key];
      const names = rows.slice(0, 4).map((r) => `${r.name || displayName(r.key)} ${pct(r.change_pct)}` +
        (r.ci_pct ? ` [${pct(r.ci_pct[0])}…${pct(r.ci_pct[1])}]` : ""));
      return el("span", { "data-section": key }, el("b", {}, `${title}: ${rows.length}`),
        names.length ? ` — ${names.join(", ")}${rows.length > 4 ? ", …" : ""}` : "");
    };
    verdictBox.replaceChildren(
      el("div", { class: "headline" }, el("span", { class: "pill", id: "cmp-verdict-pill" }, v.failed ? "regressed" : "within noise"),
        el("span", { id: "cmp-verdict-text" }, headline)),
      el("div", { class: "sections" }, section("regressions", "Regressed"), section("improvements", "Improved"),
        section("within_noise", "Within noise"), section("too_few_calls", "Too few calls"),
        el("span", { "data-section": "inconclusive" }, el("b", {}, `Inconclusive: ${inconclusive.length}`),
          inconclusive.length ? ` — ${inconclusive.slice(0, 3).map((r) => `${r.name || displayName(r.key)} (${r.reason})`).join(", ")}${inconclusive.length > 3 ? ", …" : ""}` : "")),
      el("div", { class: "gate" }, gate, lossText(v)));
    // By the gate's key, and by the full name the flame frames carry (their "names";
    // the display name is their label). Two statics of one name: the stronger verdict shows.
    gateOf = new Map();
    for (const r of v.verdicts || []) {
      gateOf.set(r.key, r);
      const name = r.signature || displayName(r.key);
      if (!gateOf.has(name) || r.verdict === "regressed") gateOf.set(name, r);
    }
    verdictOf = new Map();
    for (const [key, tag] of [["regressions", "up"], ["improvements", "down"], ["within_noise", "noise"], ["too_few_calls", "noise"]]) {
      for (const r of v[key]) {
        verdictOf.set(r.key, tag);
        const name = r.signature || displayName(r.key);
        if (!verdictOf.has(name)) verdictOf.set(name, tag);
      }
    }
  }
  let verdictOf = new Map();
  let gateOf = new Map(); // function -> its verdict, reason, coverage and change (the gate's)

  function basisText(v) {
    const what = `${v.metric} time per call`;
    return v.basis && v.basis.startsWith("p") ? `${v.basis} of the ${what}` : what;
  }
  // The colour scale in % of the gate's change: full at twice the threshold, or at the
  // largest regression, so a change just past the threshold is plainly red.
  function gateScale(v) {
    if (!v) return 20;
    const changes = (v.verdicts || []).filter((r) => r.verdict === "regressed").map((r) => Math.abs(r.change_pct || 0));
    return Math.max(2 * (v.threshold_pct || 10), ...changes);
  }
  function lossText(v) {
    const parts = [];
    for (const side of ["base", "new"]) {
      const l = v.loss && v.loss[side];
      if (l && (l.lost || l.stretches.length)) {
        parts.push(`${side} lost ${fmtInt(l.lost)} of ${fmtInt(l.captured)} records in ${fmtInt(l.stretches.length)} stretch${l.stretches.length === 1 ? "" : "es"}`);
      }
    }
    return parts.length ? ` Loss: ${parts.join("; ")}: functions judged without those stretches (coverage floor ${Math.round(100 * v.loss.coverage_floor)}%).` : "";
  }

  // ---------------------------------------------------------------- flame graph

  // Drawn by the main flame graph's canvas component from the server's icicle arrays (the
  // same code orders and labels both), with its row height and orientation; only the
  // colour differs: the change of each frame's self-time share.
  function renderFlame() {
    const ic = data.flame.icicle;
    if (!ic || !(ic.values[0] > 0)) {
      fc.setData(null);
      flameBox.replaceChildren(el("div", { class: "empty-list" }, "The newer capture has no samples."));
      return;
    }
    if (canvas.parentNode !== flameBox) flameBox.replaceChildren(canvas);
    fc.setData(ic);
    drawFlame();
  }

  function drawFlame() {
    if (!fc.data) return;
    const height = fc.fit(0); // fixed rows: the graph's own height, the box scrolls
    fc.draw(flameBox.clientWidth || 1000, height);
    if (fc.flip) flameBox.scrollTop = flameBox.scrollHeight;
  }

  // Coloured by the gate: each frame by its function's verdict and its change in the
  // metric the gate judged (the table's verdict column says the same).
  function paint(i) {
    if (!data.verdict) {
      const cell = fc.data.raw.diff[i];
      return diffColour(cell ? cell[3] : 0, diffScale(data.flame.max_abs_delta));
    }
    return verdictColour(gateOf.get(fc.data.names[i]), scale);
  }

  function showTip(ev, i) {
    const t = fc.data;
    const perUs = t.raw.units_per_us;
    const share = (v, total) => (total ? `${((100 * v) / total).toFixed(2)}%` : "—");
    const total = t.values[0] / perUs;
    const lines = [t.names[i], `new:  total ${fmtTime(t.values[i] / perUs)} (${share(t.values[i] / perUs, total)})`];
    const cell = t.raw.diff[i];
    if (cell) {
      const [base, baseSelf, self, delta] = cell;
      const baseTotal = t.raw.diff[0][0];
      lines[1] += `, self ${fmtTime(self)} (${share(self, total)})`;
      lines.push(`base: total ${fmtTime(base)} (${share(base, baseTotal)}), self ${fmtTime(baseSelf)} (${share(baseSelf, baseTotal)})`,
        `self share change: ${delta >= 0 ? "+" : ""}${(delta * 100).toFixed(2)} points`);
    }
    const g = gateOf.get(t.names[i]);
    if (g) lines.push(`${g.verdict}: ${pct(g.change_pct)} (${basisText(data.verdict)}); ${g.reason}`);
    tip.textContent = lines.join("\n");
    tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${ev.clientY + 14}px`;
  }

  function frameAt(ev) {
    const rect = canvas.getBoundingClientRect();
    return fc.hit(ev.clientX - rect.left, ev.clientY - rect.top);
  }
  canvas.addEventListener("mousemove", (ev) => {
    const r = frameAt(ev);
    canvas.style.cursor = r ? "pointer" : "default";
    if (r) showTip(ev, r.i);
    else tip.hidden = true;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("click", (ev) => {
    const r = frameAt(ev);
    if (!r) return;
    if (r.i === 0 || r.i === fc.focus) fc.reset();
    else fc.zoom(r.i);
    drawFlame();
  });
  ctx.on("flame-flip", (value) => {
    fc.flip = !!value;
    flipBtn.textContent = fc.flip ? "Root to top" : "Root to bottom"; // what a click does
    flipBtn.setAttribute("aria-pressed", String(fc.flip));
    if (data && ctx.view === "compare") drawFlame();
  });

  // ---------------------------------------------------------------- table

  function renderTable() {
    for (const f of data.functions) {
      const g = gateOf.get(f.key);
      f.verdict = g ? g.verdict : null;
      f.reason = g ? `${g.reason}${g.coverage < 1 ? ` (coverage ${Math.round(100 * g.coverage)}%)` : ""}` : null;
    }
    let rows = data.functions;
    const q = filter.value.trim();
    if (q) {
      let re = null;
      try { re = new RegExp(q, "i"); } catch { re = null; }
      rows = rows.filter((f) => (re ? re.test(f.key) : f.key.toLowerCase().includes(q.toLowerCase())));
    }
    const col = COLUMNS.find((c) => c[0] === sortKey) || COLUMNS[7];
    const get = col[2];
    rows = [...rows].sort((a, b) => {
      const va = get(a);
      const vb = get(b);
      if (va === vb) return a.key < b.key ? -1 : 1;
      if (va === null || va === undefined) return 1;
      if (vb === null || vb === undefined) return -1;
      const cmp = typeof va === "string" ? va.localeCompare(vb) : va - vb;
      return sortDesc ? -cmp : cmp;
    });
    if (!rows.length) {
      tableBox.replaceChildren(el("div", { class: "empty-list" }, "No function matches."));
      return;
    }
    const head = el("tr", {}, COLUMNS.map(([key, label, , unit]) => el("th", {
      "data-key": key, class: [unit === "text" || unit === "verdict" ? "text" : "", key === sortKey ? (sortDesc ? "sorted-desc" : "sorted-asc") : ""].join(" ").trim(),
      onclick: () => {
        if (sortKey === key) sortDesc = !sortDesc;
        else { sortKey = key; sortDesc = unit !== "text"; }
        renderTable();
      },
    }, label)));
    const body = rows.slice(0, 2000).map((f) => el("tr", { "data-key": f.key },
      COLUMNS.map(([key, , getter, unit]) => {
        const v = getter(f);
        if (unit === "verdict") {
          const judged = f.status === "both" && v;
          return el("td", { class: judged ? `where v-${v}` : "where", title: judged ? f.reason || "" : null }, v || "");
        }
        if (unit === "text") return el("td", { class: key === "key" ? "name" : "where", title: key === "key" ? f.signature || f.key : null }, v || "");
        let text;
        if (unit === "pct") text = pct(v);
        else if (unit === "pts") text = v === null || v === undefined ? "—" : `${v > 0 ? "+" : ""}${v.toFixed(2)}`;
        else text = num(v, unit);
        // Red and blue only on the gated metric, and only where the gate says the change
        // is real (as `mcuprof compare`); other changes are shown plain.
        const gated = data.verdict ? `${data.verdict.metric}_mean_pct` : null;
        const judged = gated ? (key === gated ? verdictOf.get(f.key) || "noise" : "") : v > 0 ? "up" : "down";
        const cls = (unit === "pct" || unit === "pts" || key === "self_delta") && v ? judged : "";
        return el("td", { class: cls }, text);
      })));
    tableBox.replaceChildren(el("table", { class: "grid", id: "cmp-functions" }, el("thead", {}, head), el("tbody", {}, body)));
  }

  filter.addEventListener("input", () => { if (data) renderTable(); });
  for (const input of [thresholdIn, confidenceIn, basisSel]) input.addEventListener("change", () => run());
  baseSel.addEventListener("change", () => { chosen = true; run(); });
  newSel.addEventListener("change", () => { chosen = true; run(); });
  window.addEventListener("resize", throttle(() => { if (data && ctx.view === "compare") drawFlame(); }, 200));

  // Follow the live capture: recompute as it grows, at most every 2 s, only when visible.
  const followLive = throttle(() => {
    if (liveAuto && ctx.view === "compare" && newSel.value === "live" && data) run(true);
  }, 2000);
  ctx.on("version", followLive);
  // The History tab's change point: the builds either side of it, compared at once.
  async function openPair() {
    const pair = ctx.comparePair;
    ctx.comparePair = null;
    chosen = true;
    await ctx.run(() => loadSessions(pair.base));
    baseSel.value = String(pair.base);
    newSel.value = String(pair.new);
    await run();
  }
  ctx.on("view", (name) => { if (name === "compare") (ctx.comparePair ? openPair() : openTab()); });
  ctx.on("compare-base", (id) => ctx.run(async () => {
    chosen = true;
    await loadSessions(id);
    await run();
  }));
  if (ctx.comparePair) return openPair();
  if (ctx.compareBase !== undefined) chosen = true;
  const pick = await ctx.run(() => loadSessions(ctx.compareBase));
  if (pick) await run(ctx.compareBase === undefined);
  else if (pick === null) showEmpty();
}
