// QS trace log: QSPY's lines, filtered by record group, object and signal (chips) and
// by text, in a virtual list (only the rows on screen exist in the DOM). Live, it
// follows new lines while scrolled to the bottom; scrolled to the top, it pages back.
// Every string comes from the target: it goes in as text, never as markup.

import { el } from "./dom.js";
import { debounce, fmtInt, plural } from "./format.js";

const ROW = 20; // px per line
const PAGE = 1000; // lines per request
const KEEP = 20000; // lines held by the page
const CHIPS = 40; // object and signal chips shown (the most frequent)
// QSPY's groups in the order of QP's QS_GRP_* list, then the host's own.
export const GROUP_ORDER = ["SM", "AO", "EQ", "MP", "TE", "QF", "SC", "SEM", "MTX", "U0", "U1", "U2", "U3", "U4", "UA",
  "INF", "DIC", "TST", "ERR", "COMMS"];
export const GROUP_TITLE = {
  SM: "state machines", AO: "active objects", EQ: "raw event queues", MP: "memory pools",
  TE: "time events", QF: "framework", SC: "scheduler", SEM: "semaphores", MTX: "mutexes",
  INF: "target info, QF_RUN", DIC: "dictionaries", TST: "test and QS-RX", ERR: "assertions",
  COMMS: "framing errors: bad checksums, gaps, malformed records",
};

export function createLog(panel, ctx, source) {
  const filters = { group: new Set(), obj: new Set(), sig: new Set() };
  let text = "";
  let rows = []; // lines held, in id order
  let older = false; // the server has older matching lines
  let matched = 0;
  let dropped = 0;
  let follow = true;
  let loading = null;
  let generation = 0; // bumped by every filter change; stale answers are ignored

  const search = el("input", { type: "search", id: "qs-log-search", placeholder: "Search lines (regex)",
    "aria-label": "Search the trace log (regular expression)", maxlength: "200" });
  const searchNote = el("span", { class: "qs-search-note", id: "qs-search-note", role: "alert", hidden: true,
    style: "color: var(--red); font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;" });
  const followBox = el("input", { type: "checkbox", id: "qs-follow", checked: true });
  const clear = el("button", { type: "button", class: "btn small secondary", id: "qs-clear-filters",
    hidden: true }, "Clear filters");
  const info = el("span", { class: "muted", id: "qs-log-info" });
  const save = el("a", { class: "btn small secondary", id: "qs-log-save", download: "",
    title: "The matching lines as QSPY prints them, to diff with QSPY's output" }, "Save lines");
  const chipRows = {
    group: el("div", { class: "qs-chips", id: "qs-chips-group", role: "group", "aria-label": "Filter by record group" }),
    obj: el("div", { class: "qs-chips", id: "qs-chips-obj", role: "group", "aria-label": "Filter by object" }),
    sig: el("div", { class: "qs-chips", id: "qs-chips-sig", role: "group", "aria-label": "Filter by signal" }),
  };
  const spacer = el("div", { class: "qs-log-spacer" });
  const rowsBox = el("div", { class: "qs-log-rows" });
  const scroller = el("div", { class: "qs-log-scroll", id: "qs-log", tabindex: "0", role: "log",
    "aria-label": "QS trace log" }, spacer, rowsBox);
  const empty = el("div", { class: "qs-log-empty", id: "qs-log-empty", hidden: true });
  panel.replaceChildren(
    el("h3", {}, "Trace log", el("span", { class: "muted" }, "QSPY's lines")),
    el("div", { class: "qs-log-tools" }, search, searchNote,
      el("label", { class: "inline", title: "Keep the newest line in view" }, followBox, "Follow"),
      clear, el("span", { class: "spacer" }), info, save),
    el("div", { class: "qs-filter" }, el("span", { class: "qs-filter-k" }, "Group"), chipRows.group),
    el("div", { class: "qs-filter" }, el("span", { class: "qs-filter-k" }, "Object"), chipRows.obj),
    el("div", { class: "qs-filter" }, el("span", { class: "qs-filter-k" }, "Signal"), chipRows.sig),
    el("div", { class: "qs-log-box" }, scroller, empty));

  function params(extra) {
    const p = new URLSearchParams({ ...source(), ...extra });
    for (const [key, set] of Object.entries(filters)) for (const v of set) p.append(key, v);
    if (text) p.set("q", text);
    return p;
  }
  async function fetchLog(extra) {
    const url = new URL("/api/qs/log", location.origin);
    url.search = params(extra).toString();
    return ctx.api.getJSON(url.pathname + url.search);
  }

  // ---- the virtual list
  let frame = 0;
  function paint() {
    frame = 0;
    spacer.style.height = `${rows.length * ROW}px`;
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - 10);
    const last = Math.min(rows.length, Math.ceil((top + scroller.clientHeight) / ROW) + 10);
    const nodes = [];
    for (let i = first; i < last; i++) {
      const line = rows[i];
      nodes.push(el("div", { class: "qs-row", style: `top:${i * ROW}px`, "data-id": String(line.id),
        title: [line.rec, line.objs.join(", "), line.sig].filter(Boolean).join(" · ") },
      el("span", { class: `qs-grp g-${line.group}` }, line.group),
      el("span", { class: "qs-text" }, line.text)));
    }
    rowsBox.replaceChildren(...nodes);
  }
  function repaint() { if (!frame) frame = requestAnimationFrame(paint); }
  function atBottom() { return scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW; }
  function toBottom() {
    spacer.style.height = `${rows.length * ROW}px`;
    scroller.scrollTop = scroller.scrollHeight;
    paint();
  }
  let programmatic = false;
  scroller.addEventListener("scroll", () => {
    if (!programmatic) {
      const bottom = atBottom();
      if (follow !== bottom) { follow = bottom; followBox.checked = bottom; }
      if (scroller.scrollTop < ROW * 5 && older && !loading) loadOlder();
    }
    programmatic = false;
    repaint();
  });
  new ResizeObserver(repaint).observe(scroller);
  followBox.addEventListener("change", () => { follow = followBox.checked; if (follow) { programmatic = true; toBottom(); } });

  function showInfo() {
    const url = new URL("/api/qs/log.txt", location.origin);
    const p = params({});
    url.search = p.toString();
    save.href = url.pathname + url.search;
    const active = filters.group.size + filters.obj.size + filters.sig.size + (text ? 1 : 0);
    clear.hidden = active === 0;
    let s = active ? plural(matched, "matching line") : plural(matched, "line");
    if (dropped) s += ` · ${fmtInt(dropped)} oldest not kept`;
    info.textContent = s;
    empty.hidden = rows.length > 0;
    empty.textContent = active ? "No line matches these filters." : "No QS lines yet.";
  }

  // ---- loading
  let reloading = 0; // reloads in flight: following waits for them (they fetch the newest too)
  async function reload() {
    const gen = ++generation;
    reloading += 1;
    let out;
    try {
      out = await fetchLog({ limit: PAGE });
    } finally {
      reloading -= 1;
    }
    if (gen !== generation) return;
    rows = out.lines;
    older = out.older;
    matched = out.matched;
    dropped = out.dropped;
    showInfo();
    programmatic = true;
    if (follow) toBottom();
    else { scroller.scrollTop = 0; paint(); }
  }
  async function loadNewer() {
    if (reloading) return;
    const gen = generation;
    for (let round = 0; round < 20; round++) {
      const since = rows.length ? rows[rows.length - 1].id : -1;
      const out = await fetchLog({ since, limit: PAGE });
      if (gen !== generation) return;
      matched = out.matched;
      dropped = out.dropped;
      rows = rows.concat(out.lines);
      if (rows.length > KEEP) {
        const cut = rows.length - KEEP;
        rows = rows.slice(cut);
        older = true;
        if (!follow) { programmatic = true; scroller.scrollTop = Math.max(0, scroller.scrollTop - cut * ROW); }
      }
      if (!out.newer) break;
    }
    showInfo();
    if (follow) { programmatic = true; toBottom(); } else repaint();
  }
  async function loadOlder() {
    const gen = generation;
    loading = (async () => {
      const out = await fetchLog({ before: rows[0].id, limit: PAGE });
      if (gen !== generation) return;
      older = out.older;
      rows = out.lines.concat(rows).slice(0, KEEP);
      programmatic = true;
      spacer.style.height = `${rows.length * ROW}px`;
      scroller.scrollTop += out.lines.length * ROW;
      paint();
    })();
    try { await ctx.run(() => loading); } finally { loading = null; }
  }
  function refilter() { ctx.run(reload); }

  // A regex, as the flame graph's search (case-insensitive). One that does not parse is
  // said beside the box and the lines on screen stay: nothing is thrown, nothing fetched.
  function badRegex(q) {
    try { new RegExp(q, "i"); return ""; } catch (err) { return err.message; }
  }
  function noteSearch(problem) {
    searchNote.hidden = !problem;
    searchNote.textContent = problem ? `Not a valid regular expression: ${problem}` : "";
    search.setAttribute("aria-invalid", String(!!problem));
  }
  search.addEventListener("input", debounce(() => {
    const q = search.value.trim();
    const problem = q ? badRegex(q) : "";
    noteSearch(problem);
    if (problem) return;
    text = q;
    refilter();
  }, 250));
  clear.addEventListener("click", () => {
    for (const set of Object.values(filters)) set.clear();
    text = "";
    search.value = "";
    noteSearch("");
    renderChipState();
    refilter();
  });

  // ---- chips
  let counts = { group: {}, obj: {}, sig: {} };
  function chip(kind, value, count, title) {
    const on = filters[kind].has(value);
    return el("button", { type: "button", class: `qs-chip${on ? " on" : ""}${kind === "group" ? ` g-${value}` : ""}`,
      "aria-pressed": String(on), "data-kind": kind, "data-value": value, title: title || value,
      onclick: () => {
        if (filters[kind].has(value)) filters[kind].delete(value);
        else filters[kind].add(value);
        renderChipState();
        refilter();
      } },
    el("span", { class: "qs-chip-label" }, value), el("span", { class: "qs-chip-n" }, fmtInt(count)));
  }
  function renderChipState() {
    for (const [kind, row] of Object.entries(chipRows)) {
      const entries = Object.entries(counts[kind]);
      if (kind === "group") entries.sort((a, b) => order(a[0]) - order(b[0]));
      // Active filters first (always shown, even out of the top list), then the most frequent.
      const active = [...filters[kind]].map((v) => [v, counts[kind][v] || 0]);
      const rest = entries.filter(([v]) => !filters[kind].has(v));
      const shown = kind === "group" ? entries : active.concat(rest.slice(0, Math.max(0, CHIPS - active.length)));
      const more = entries.length - Math.min(entries.length, CHIPS);
      const nodes = shown.map(([v, n]) => chip(kind, v, n, kind === "group" ? `${v}: ${GROUP_TITLE[v] || "application records"}` : v));
      if (kind !== "group" && more > 0) nodes.push(el("span", { class: "muted qs-more" }, `+${fmtInt(more)} more (search the text)`));
      if (!shown.length) nodes.push(el("span", { class: "muted qs-more" }, "none yet"));
      row.replaceChildren(...nodes);
    }
  }
  function order(g) { const i = GROUP_ORDER.indexOf(g); return i < 0 ? GROUP_ORDER.length : i; }

  let lastVersion = null;
  return {
    // A summary from /api/qs/summary: refresh the chips and fetch what is new.
    async update(summary, { fresh = false } = {}) {
      const groups = { ...summary.groups };
      if (summary.bad_frames || summary.discontinuities || summary.malformed) {
        groups.COMMS = summary.bad_frames + summary.discontinuities + summary.malformed;
      }
      counts = { group: groups, obj: summary.objects, sig: summary.signals };
      renderChipState();
      const reset = rows.length > 0 && summary.lines <= rows[rows.length - 1].id; // the monitor started again
      if (fresh || reset || lastVersion === null) {
        lastVersion = summary.version;
        await reload();
      } else if (summary.version !== lastVersion) {
        lastVersion = summary.version;
        await loadNewer();
      }
    },
    filters,
  };
}
