// The shared context every view receives: API helpers, live state, the time window,
// a tiny event bus and the error banner.

import { getJSON, postFile, postJSON } from "./api.js";
import { fmtTime, fmtWindow } from "./format.js";

export function createContext() {
  const listeners = new Map();
  const banner = document.getElementById("banner");
  const bannerText = banner.querySelector(".banner-text");
  let bannerTimer = null;
  banner.querySelector(".banner-close").addEventListener("click", () => { banner.hidden = true; });

  const ctx = {
    api: { getJSON, postJSON, postFile },
    state: null,
    window: null,
    version: 0,
    view: "flame",
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(fn);
      return () => listeners.get(event).delete(fn);
    },
    emit(event, data) {
      for (const fn of listeners.get(event) || []) {
        try { fn(data); } catch (err) { console.warn(`mcuprof: ${event} handler failed`, err); }
      }
    },
    notify(message, level = "error") {
      bannerText.textContent = message;
      banner.className = `banner ${level === "error" ? "" : level}`.trim();
      banner.setAttribute("role", level === "info" ? "status" : "alert");
      banner.hidden = false;
      clearTimeout(bannerTimer);
      // Information fades; warnings and errors stay until dismissed.
      if (level === "info") {
        bannerTimer = setTimeout(() => {
          banner.classList.add("fading");
          bannerTimer = setTimeout(() => { banner.hidden = true; }, 700);
        }, 5000);
      }
    },
    clearNotice() { banner.hidden = true; },
    setWindow(win) {
      ctx.window = win;
      const chip = document.getElementById("window-chip");
      if (win) {
        const origin = ctx.state?.range?.[0] ?? 0;
        chip.querySelector(".chip-text").textContent =
          `Window ${fmtWindow(win[0] - origin, win[1] - origin)} (${fmtTime(win[1] - win[0])})`;
        chip.hidden = false;
      } else {
        chip.hidden = true;
      }
      ctx.emit("window", win);
    },
    windowParams() {
      return ctx.window ? { t0: ctx.window[0], t1: ctx.window[1] } : {};
    },
    // Run a server action; errors land in the banner, never in the console as tracebacks.
    async run(action) {
      try {
        return await action();
      } catch (err) {
        ctx.notify(err.message || String(err));
        return undefined;
      }
    },
  };
  document.getElementById("window-clear").addEventListener("click", () => ctx.setWindow(null));
  return ctx;
}
