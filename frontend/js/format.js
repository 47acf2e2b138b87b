// Number and time formatting shared by every view.

export function fmtTime(us) {
  if (us === null || us === undefined || Number.isNaN(us)) return "—";
  const a = Math.abs(us);
  if (a >= 1e6) return `${(us / 1e6).toFixed(a >= 1e7 ? 2 : 3)} s`;
  if (a >= 1e3) return `${(us / 1e3).toFixed(a >= 1e5 ? 1 : 2)} ms`;
  if (a >= 10) return `${us.toFixed(1)} µs`;
  return `${us.toFixed(2)} µs`;
}

export function fmtInt(n) {
  if (n === null || n === undefined) return "—";
  return Math.round(n).toLocaleString("en-US");
}

export function fmtRate(n, unit) {
  if (n === null || n === undefined) return "—";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M${unit}/s`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k${unit}/s`;
  return `${n.toFixed(0)} ${unit}/s`;
}

export function fmtHz(hz) {
  if (!hz) return "—";
  if (hz >= 1e6) return `${+(hz / 1e6).toFixed(3)} MHz`;
  if (hz >= 1e3) return `${+(hz / 1e3).toFixed(3)} kHz`;
  return `${hz} Hz`;
}

export function fmtPct(p) {
  if (p === null || p === undefined) return "—";
  return `${p.toFixed(p >= 10 ? 1 : 2)}%`;
}

export function hex32(n) {
  if (n === null || n === undefined) return "—";
  return "0x" + (n >>> 0).toString(16).padStart(8, "0");
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ESC[c]);
}

// Flame-graph colours: warm hues, stable per function name.
export function nameColor(name) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  const u = (h >>> 0) / 4294967295;
  const hue = 8 + Math.round(u * 42);
  const light = 46 + Math.round(((h >>> 8) & 0xff) / 255 * 14);
  return `hsl(${hue}, 78%, ${light}%)`;
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

// At most one call per `ms`, and always a trailing call so the last change is shown.
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  return () => {
    const wait = last + ms - performance.now();
    if (wait <= 0) {
      last = performance.now();
      fn();
    } else if (!timer) {
      timer = setTimeout(() => { timer = null; last = performance.now(); fn(); }, wait);
    }
  };
}
