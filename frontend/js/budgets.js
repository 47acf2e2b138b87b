// serve --budgets: the budgets' verdicts on the whole capture (/api/budgets, the same as
// `mcuprof check` gives), followed at most once a second while calls arrive. Health counts
// the broken ones, Functions marks their functions ("budgets" event), and the Log gets one
// line per budget the first time it breaks.

import { fmtTime, throttle } from "./format.js";

function what(v) {
  return v.limit.replace(/_us$/, "").replace("p999", "p99.9");
}

export function budgetLine(v) {
  const figure = v.figure_us === null ? "" : ` ${fmtTime(v.figure_us)}`;
  const at = v.first_over_us === null ? "" : `, first over at ${fmtTime(v.first_over_us)} into the capture`;
  return `budget ${v.budget} (${v.pattern}) broken: ${v.function} ${what(v)}${figure} over ${fmtTime(v.limit_us)}${at}`;
}

export function initBudgets(ctx) {
  const dt = document.getElementById("h-budgets-dt");
  const dd = document.getElementById("h-budgets");
  const logged = new Set();
  let enabled = null; // unknown until the first answer; false: no budgets file

  async function load() {
    const d = await ctx.api.getJSON("/api/budgets").catch(() => null);
    if (!d) return;
    enabled = Boolean(d.file);
    dt.hidden = dd.hidden = !enabled;
    if (!enabled) return;
    const checks = d.verdicts.filter((v) => v.state !== "no calls yet").length;
    dd.textContent = `${d.broken} of ${checks} broken`;
    dd.title = `${d.file}: ${d.verdicts.length} checks, ${d.broken} broken`;
    dd.classList.toggle("bad", d.broken > 0);
    const fresh = [];
    for (const v of d.verdicts) {
      const key = `${v.budget}:${v.function}:${v.limit}`;
      if (v.state !== "broken" || logged.has(key)) continue;
      logged.add(key);
      fresh.push({ seq: `budget:${key}`, t: Date.now() / 1000, level: "warning", message: budgetLine(v) });
    }
    if (fresh.length) ctx.emit("log", fresh);
    ctx.emit("budgets", d.verdicts);
  }

  const follow = throttle(load, 1000);
  ctx.on("version", () => { if (enabled !== false) follow(); });
  ctx.on("capture-start", () => logged.clear());
  load();
  return { load };
}
