// Budgets: the verdicts of the server's budgets (serve --budgets, or a file loaded in the
// Budgets card, which replaces them: POST /api/budgets) on the whole capture, the same as
// `mcuprof check` gives, followed at most once a second while calls arrive. Health counts
// the broken ones, Functions and the flame graph mark their functions ("budgets" event),
// and the Log gets one line per budget the first time it breaks, with a link to the first
// call over on the timeline where that call is known.

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
  const status = document.getElementById("budgets-status");
  const upload = document.getElementById("budgets-upload");
  const logged = new Set();
  let loads = 0; // files loaded in the page: a new file's breaks are logged afresh

  function apply(d) {
    dt.hidden = dd.hidden = !d.file;
    if (!d.file) return;
    const checks = d.verdicts.filter((v) => v.state !== "no calls yet").length;
    dd.textContent = `${d.broken} of ${checks} broken`;
    dd.title = `${d.file}: ${d.verdicts.length} checks, ${d.broken} broken`;
    dd.classList.toggle("bad", d.broken > 0);
    status.textContent = `${d.file}: ${d.broken} of ${checks} broken`;
    status.title = dd.title;
    const fresh = [];
    for (const v of d.verdicts) {
      const key = `${v.budget}:${v.function}:${v.limit}`;
      if (v.state !== "broken" || logged.has(key)) continue;
      logged.add(key);
      const span = v.first_over_span_us || null;
      fresh.push({ seq: `budget:${loads}:${key}`, t: Date.now() / 1000, level: "warning", message: budgetLine(v),
        span, link: span ? "show on the timeline" : null });
    }
    if (fresh.length) ctx.emit("log", fresh);
    ctx.emit("budgets", d.verdicts);
  }

  async function load() {
    const d = await ctx.api.getJSON("/api/budgets").catch(() => null);
    if (d) apply(d);
  }

  upload.addEventListener("change", async () => {
    const file = upload.files && upload.files[0];
    upload.value = ""; // the same file again is a new load
    if (!file) return;
    const d = await ctx.run(() => ctx.api.postFile("/api/budgets", file, { name: file.name || "budgets.toml" }));
    if (!d) return; // the server's one line is in the banner; its budgets are as they were
    logged.clear();
    loads++;
    apply(d);
    const n = d.verdicts.length;
    ctx.notify(`${d.file}: ${n} budget ${n === 1 ? "check" : "checks"} loaded`, "info");
  });

  const follow = throttle(load, 1000);
  // Followed with or without a file: another tab may load one (it is the server's).
  ctx.on("version", follow);
  ctx.on("capture-start", () => logged.clear());
  load();
  return { load };
}
