// Log: connect/disconnect, NACKs, CRC errors, warnings, from the server's session log.
// An entry with a ``span`` ([start, end] µs on the timeline's clock: a budget's first
// call over, budgets.js) carries a link that shows that call on the timeline.

import { esc } from "./format.js";

export function initLog(ctx) {
  const body = document.querySelector("#log-table tbody");
  const info = document.getElementById("log-info");
  const badge = document.getElementById("log-count");
  const entries = [];
  const seen = new Set();
  let level = "all";
  let unseen = 0;

  function row(e) {
    const t = new Date(e.t * 1000);
    const time = t.toLocaleTimeString("en-GB", { hour12: false }) + "." + String(t.getMilliseconds()).padStart(3, "0");
    const link = e.span ? ` <button type="button" class="log-link" data-seq="${esc(e.seq)}">${esc(e.link || "show on the timeline")}</button>` : "";
    return `<tr><td>${time}</td><td class="text"><span class="lvl ${esc(e.level)}">${esc(e.level)}</span></td><td class="msg">${esc(e.message)}${link}</td></tr>`;
  }

  function visible(e) {
    if (level === "all") return true;
    if (level === "warning") return e.level === "warning" || e.level === "error";
    return e.level === "error";
  }

  function render() {
    const shown = entries.filter(visible);
    body.innerHTML = shown.slice().reverse().map(row).join("") ||
      `<tr><td colspan="3" class="msg muted">Nothing logged yet.</td></tr>`;
    info.textContent = `${entries.length} entries`;
  }

  function add(list) {
    let fresh = 0;
    for (const e of list || []) {
      if (seen.has(e.seq)) continue;
      seen.add(e.seq);
      entries.push(e);
      fresh++;
      if (ctx.view !== "log" && (e.level === "warning" || e.level === "error")) unseen++;
    }
    while (entries.length > 2000) seen.delete(entries.shift().seq);
    if (!fresh) return;
    badge.hidden = unseen === 0;
    badge.textContent = unseen > 99 ? "99+" : String(unseen);
    if (ctx.view === "log") render();
  }

  for (const btn of document.querySelectorAll("#view-log [data-level]")) {
    btn.addEventListener("click", () => {
      level = btn.dataset.level;
      for (const b of document.querySelectorAll("#view-log [data-level]")) b.classList.toggle("on", b === btn);
      render();
    });
  }
  body.addEventListener("click", (ev) => {
    const btn = ev.target.closest("button.log-link");
    const e = btn && entries.find((x) => x.seq === btn.dataset.seq);
    if (!e) return;
    document.getElementById("tab-timeline").click();
    ctx.emit("reveal", e.span);
  });
  ctx.on("log", add);
  return {
    show() {
      unseen = 0;
      badge.hidden = true;
      render();
    },
  };
}
