// Wiring: context, views, tabs and the live WebSocket.

import { initCallTree } from "./calltree.js";
import { initConnection } from "./connection.js";
import { createContext } from "./context.js";
import { initDevice } from "./device.js";
import { initExport } from "./exporter.js";
import { initFlame } from "./flame.js";
import { initBudgets } from "./budgets.js";
import { initFunctions } from "./functions.js";
import { connectLive } from "./live.js";
import { initKinds } from "./kinds.js";
import { initLog } from "./log.js";
import { initTabOverflow } from "./tabsmore.js";
import { initTimeline } from "./timeline.js";

const ctx = createContext();
window.mcuprof = ctx; // handy from the devtools console, and for the tests

function mountModule(file, containerId) {
  let mounted = false;
  return {
    async show() {
      if (mounted) return;
      mounted = true;
      const container = document.getElementById(containerId);
      try {
        const mod = await import(file);
        await mod.mount(container, ctx);
      } catch (err) {
        container.innerHTML = `<div class="empty">This view is not available: ${String(err.message || err)
          .replace(/[<>&]/g, "")}</div>`;
      }
    },
  };
}

// Light or dark: the system's choice until the toggle picks one (kept in localStorage).
function initTheme(ctx) {
  const system = window.matchMedia("(prefers-color-scheme: light)");
  const button = document.getElementById("theme-toggle");
  const stored = () => { try { return localStorage.getItem("mcuprof-theme"); } catch { return null; } };
  function apply() {
    const theme = stored() || (system.matches ? "light" : "dark");
    document.documentElement.dataset.theme = theme;
    button.setAttribute("aria-label", theme === "light" ? "Dark theme" : "Light theme");
    button.innerHTML = theme === "light" ? "&#x263E;" : "&#x263C;";
    ctx.emit("theme", theme);
  }
  button.addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "light" ? "dark" : "light";
    try { localStorage.setItem("mcuprof-theme", next); } catch { /* private mode: this page only */ }
    document.documentElement.dataset.theme = next;
    apply();
  });
  system.addEventListener("change", apply);
  apply();
}

function start() {
  initTheme(ctx);
  initKinds(ctx);
  initDevice(ctx);
  initConnection(ctx);
  const live = connectLive(ctx, { onMessage });
  const flame = initFlame(ctx, live);
  const views = {
    flame,
    timeline: initTimeline(ctx),
    functions: initFunctions(ctx),
    tree: initCallTree(ctx),
    log: initLog(ctx),
    sessions: mountModule("./sessions.js", "sessions-mount"),
    compare: mountModule("./diff.js", "compare-mount"),
    history: mountModule("./history.js", "history-mount"),
    s12z: mountModule("./s12z.js", "s12z-mount"),
    qs: mountModule("./qs.js", "qs-mount"),
  };
  initExport(ctx, flame);
  initBudgets(ctx); // after the Log, which takes its lines

  const tabs = [...document.querySelectorAll("[role=tab]")];
  let relayoutTabs = () => {};
  function select(name, focus = false) {
    if (!views[name]) name = "flame";
    ctx.view = name;
    for (const tab of tabs) {
      const on = tab.dataset.view === name;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
      document.getElementById(tab.getAttribute("aria-controls")).hidden = !on;
      if (on && focus) tab.focus();
    }
    if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
    relayoutTabs(); // the selected tab stays on the bar, others may go to "More"
    views[name].show();
    ctx.emit("view", name);
  }
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => select(tab.dataset.view));
    tab.addEventListener("keydown", (ev) => {
      const step = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : 0;
      if (step) select(tabs[(i + step + tabs.length) % tabs.length].dataset.view, true);
    });
  });
  relayoutTabs = initTabOverflow(document.getElementById("tabs"), select);
  select(location.hash.slice(1) || "flame");

  let version = -1;
  function onMessage(msg) {
    if (msg.type === "hello") {
      ctx.emit("state", msg.state);
      ctx.emit("log", msg.log);
      ctx.emit("icicle", { icicle: msg.icicle, meta: null });
      version = msg.state.version;
      ctx.version = version;
      ctx.emit("version", version);
      return;
    }
    if (msg.type !== "update") return;
    const state = { ...(ctx.state || {}), health: msg.health, device: msg.device, connected: msg.connected };
    if (msg.range !== undefined) state.range = msg.range;
    if (msg.version !== undefined) state.version = msg.version;
    ctx.emit("state", state);
    if (msg.log && msg.log.length) ctx.emit("log", msg.log);
    if (msg.icicle) ctx.emit("icicle", { icicle: msg.icicle, meta: { seq: msg.seq, recv_ts: msg.recv_ts } });
    if (msg.version !== undefined && msg.version !== version) {
      version = msg.version;
      ctx.version = version;
      ctx.emit("version", version);
    }
  }

  // The selected function, named on screen (it greys the others out); Esc or × clears it.
  const chip = document.getElementById("selection-chip");
  ctx.selected = null;
  ctx.on("select-function", (sel) => {
    ctx.selected = sel;
    chip.hidden = !sel;
    if (sel) chip.querySelector(".chip-text").textContent = `Selected: ${sel.name || `function ${sel.fid}`}`;
  });
  document.getElementById("selection-clear").addEventListener("click", () => ctx.emit("select-function", null));
  document.addEventListener("keydown", (ev) => {
    // The flame view's own Esc handler first steps back out of a zoom, then clears.
    if (ev.key !== "Escape" || ctx.view === "flame" || !ctx.selected) return;
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement) return;
    ctx.emit("select-function", null);
  });

  // Fresh file-name stem and ELF list after actions that change them.
  ctx.on("refresh", () => ctx.run(async () => ctx.emit("state", await ctx.api.getJSON("/api/state"))));
  ctx.on("capture-start", () => ctx.emit("refresh"));
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
