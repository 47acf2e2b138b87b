// Functions: a sortable table of per-function statistics, and the selected function's
// distribution of call durations under it (distribution.js).

import { budgetLine } from "./budgets.js";
import { initDistribution } from "./distribution.js";
import { esc, fmtInt, fmtPct, fmtTime, shortName, throttle } from "./format.js";

const TEXT_KEYS = new Set(["label", "where"]);

export function initFunctions(ctx) {
  const table = document.getElementById("functions-table");
  const body = table.querySelector("tbody");
  const empty = document.getElementById("functions-empty");
  const filter = document.getElementById("functions-filter");
  const info = document.getElementById("functions-info");
  let rows = [];
  let sortKey = "self_us";
  let desc = true;
  let stale = true;
  let selected = null; // frame id of the selected function
  let span = null;
  let broken = new Map(); // function name -> its broken budgets' lines (serve --budgets)

  function render() {
    const q = filter.value.trim().toLowerCase();
    const shown = rows.filter((r) => !q || r.label.toLowerCase().includes(q) || (r.where || "").toLowerCase().includes(q));
    shown.sort((a, b) => {
      const x = a[sortKey];
      const y = b[sortKey];
      const c = TEXT_KEYS.has(sortKey) ? String(x || "").localeCompare(String(y || "")) : (x ?? -1) - (y ?? -1);
      return desc ? -c : c;
    });
    for (const th of table.querySelectorAll("th[data-key]")) {
      th.classList.toggle("sorted-desc", th.dataset.key === sortKey && desc);
      th.classList.toggle("sorted-asc", th.dataset.key === sortKey && !desc);
      th.setAttribute("aria-sort", th.dataset.key === sortKey ? (desc ? "descending" : "ascending") : "none");
    }
    const maxPct = Math.max(1e-9, ...rows.map((r) => r.pct));
    const html = [];
    for (const r of shown) {
      html.push(
        `<tr data-fid="${r.fid}" class="${r.fid === selected ? "selected" : ""}">` +
        nameCell(r) +
        `<td class="where" title="${esc(r.where)}">${esc(r.where)}</td>` +
        `<td>${fmtInt(r.calls)}</td><td>${fmtTime(r.total_us)}</td><td>${fmtTime(r.self_us)}</td>` +
        `<td>${fmtTime(r.mean_us)}</td><td>${fmtTime(r.min_us)}</td><td>${fmtTime(r.p99_us)}</td><td>${fmtTime(r.max_us)}</td>` +
        `<td class="pct-cell"><div class="bar" style="width:${Math.min(100, (100 * r.pct) / maxPct).toFixed(1)}%"></div>` +
        `<span>${fmtPct(r.pct)}</span></td><td>${fmtPct(r.self_pct)}</td></tr>`,
      );
    }
    body.innerHTML = html.join("");
    empty.hidden = rows.length > 0;
    info.textContent = rows.length
      ? `${shown.length} of ${rows.length} functions · 100% = ${fmtTime(span?.profiled_us)} profiled` +
        (span ? ` (${fmtPct(span.coverage_pct)} of ${fmtTime(span.wall_us)} wall time)` : "")
      : "";
  }

  const dist = initDistribution(ctx);

  function nameCell(r) {
    const lines = broken.get(r.name);
    if (!lines) return `<td class="name" title="${esc(r.label)}">${esc(shortName(r.label))}</td>`;
    return `<td class="name budget-broken" title="${esc([r.label, ...lines].join("\n"))}">` +
      `<span class="budget-mark" aria-label="budget broken">⚠</span> ${esc(shortName(r.label))}</td>`;
  }

  async function load() {
    stale = false;
    dist.load();
    const d = await ctx.run(() => ctx.api.getJSON("/api/functions", ctx.windowParams()));
    if (!d) return;
    span = { profiled_us: d.profiled_us, wall_us: d.wall_us, coverage_pct: d.coverage_pct };
    rows = d.functions.map((f) => ({ ...f, where: f.file ? (f.line ? `${f.file}:${f.line}` : f.file) : "" }));
    render();
  }

  for (const th of table.querySelectorAll("th[data-key]")) {
    th.tabIndex = 0;
    const sort = () => {
      const key = th.dataset.key;
      if (key === sortKey) desc = !desc;
      else { sortKey = key; desc = !TEXT_KEYS.has(key); }
      render();
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sort(); } });
  }
  filter.addEventListener("input", render);
  // A row click selects the function in the flame graph and the timeline.
  body.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-fid]");
    if (!tr) return;
    const fid = Number(tr.dataset.fid);
    const row = rows.find((r) => r.fid === fid);
    ctx.emit("select-function", selected === fid ? null : { fid, name: row?.name, from: "functions" });
  });
  ctx.on("select-function", (sel) => { selected = sel ? sel.fid : null; render(); });
  ctx.on("budgets", (verdicts) => {
    broken = new Map();
    for (const v of verdicts) {
      if (v.state !== "broken") continue;
      broken.set(v.function, [...(broken.get(v.function) || []), budgetLine(v)]);
    }
    if (ctx.view === "functions") render();
  });
  const follow = throttle(() => { if (ctx.view === "functions") load(); }, 1000);
  ctx.on("version", () => { stale = true; follow(); });
  ctx.on("window", () => { stale = true; if (ctx.view === "functions") load(); });
  ctx.on("refresh", () => { stale = true; if (ctx.view === "functions") load(); });
  return { show() { if (stale) load(); } };
}
