// QS control panel (issue 25, point 2): drive a live QP target over QS-RX, as QView does
// and past it. Global and local filters, the AO filter, current objects and queries, an
// event injector, a memory view of the current AP object, user commands. Every action
// goes to /api/qs/control/NAME, where the server checks it (qs/rx.py) before anything
// reaches the target; the target's answers (Trg-Ack, Trg-Done, Query-*, Trg-Peek) are
// shown inline under the action, as QSPY prints them. Text from the target and from the
// server goes in as text, never as markup.

import { el, injectStyle } from "./dom.js";
import { GROUP_ORDER, GROUP_TITLE } from "./qslog.js";

const ANSWER_POLL_MS = 200;
const ANSWER_WAIT_MS = 3000; // how long an action's answers are waited for
const STATE_POLL_MS = 2000;
const KINDS = ["SM", "AO", "MP", "EQ", "TE", "AP"];
const KIND_TITLE = { SM: "state machine", AO: "active object", MP: "memory pool", EQ: "event queue",
  TE: "time event", AP: "application object (peek, poke, fill)" };
const TYPES = { u8: 1, u16: 2, u32: 4 };
const ALL_RECORDS = [...Array(128).keys()];
const DUMP_ROW = 8; // bytes per hex-dump line: fits the narrowest card
// Commands the target only acknowledges (no Trg-Done follows).
const ACK_ONLY = new Set(["glb_filter", "loc_filter", "ao_filter", "curr_obj", "poke", "fill", "reset"]);
const STYLE = `
.qs-ctl { flex: 1; min-height: 0; overflow: auto; padding: 10px; display: grid; gap: 10px; align-content: start;
  grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); grid-auto-rows: max-content; }
/* Cards as tall as their content: the grid scrolls, a card never clips its rows. */
.qs-ctl > .qs-panel { overflow: visible; min-height: auto; }
.qs-ctl-note { grid-column: 1 / -1; padding: 8px 12px; border: 1px dashed var(--line-2); border-radius: 8px;
  background: var(--panel-2); color: var(--muted); }
.qs-ctl-body { padding: 0 10px 10px; display: flex; flex-direction: column; gap: 7px; min-width: 0; }
.qs-ctl-row { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; min-width: 0; }
.qs-ctl-row > label { display: inline-flex; gap: 5px; align-items: center; color: var(--muted); font-size: 12px; }
.qs-ctl-row select, .qs-ctl-row input[type=text], .qs-ctl-row input[type=number] { height: 26px; }
.qs-ctl-row select { max-width: 220px; }
.qs-ctl input.num { width: 76px; }
#qs-ctl-cmd input.num { width: 62px; }
.qs-ctl input.hex { flex: 1; min-width: 120px; font-family: var(--mono); font-size: 12px; }
.qs-ctl-k { flex: none; width: 30px; font-weight: 600; font-size: 12px; }
.qs-ctl-mask { font-family: var(--mono); font-size: 11.5px; overflow-wrap: anywhere; }
.qs-ctl-groups { display: grid; grid-template-columns: repeat(auto-fill, minmax(82px, 1fr)); gap: 3px 8px; }
.qs-ctl-groups label { display: inline-flex; gap: 5px; align-items: center; font-size: 12px; white-space: nowrap; }
.qs-ctl details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
.qs-ctl-records { max-height: 180px; overflow: auto; display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr));
  gap: 1px 10px; padding: 4px 2px; font-family: var(--mono); font-size: 11px; }
.qs-ctl-records label { display: flex; gap: 5px; align-items: center; white-space: nowrap; overflow: hidden; }
.qs-ack { font-family: var(--mono); font-size: 11.5px; min-height: 18px; padding: 3px 7px; border-radius: 5px;
  background: var(--bg); border: 1px solid var(--line); white-space: pre-wrap; overflow-wrap: anywhere; }
.qs-ack:empty { display: none; }
.qs-ack .err { color: var(--red); }
.qs-ack .wait { color: var(--muted); }
.qs-ack .ok { color: var(--green); }
.qs-ctl-curr { display: grid; grid-template-columns: 30px minmax(0, 1fr) auto auto; gap: 5px 6px; align-items: center; }
.qs-ctl-curr select { width: 100%; height: 26px; }
.qs-ctl-curr .now { grid-column: 2 / -1; margin-top: -4px; font-size: 11px; color: var(--muted); }
.qs-mem { display: flex; flex-direction: column; gap: 6px; }
.qs-mem pre { margin: 0; padding: 6px 8px; background: var(--bg); border: 1px solid var(--line); border-radius: 5px;
  font-family: var(--mono); font-size: 11.5px; max-height: 150px; overflow: auto; }
.qs-mem table { font-size: 11.5px; }
.qs-mem .typed { max-height: 150px; overflow: auto; border: 1px solid var(--line); border-radius: 5px; }
.qs-mem .typed:empty { display: none; }
.qs-mem .grid td, .qs-mem .grid th { padding: 2px 8px; }
#qs-ctl-answers { grid-column: 1 / -1; }
.qs-answers { max-height: 220px; overflow: auto; margin: 0; padding: 6px 8px; background: var(--bg);
  border: 1px solid var(--line); border-radius: 5px; font-family: var(--mono); font-size: 11.5px; white-space: pre; }
`;

// One card: a titled section with its body and an inline acknowledgement line.
function card(id, title, hint, ...rows) {
  const ack = el("div", { class: "qs-ack", id: `${id}-ack`, role: "status", "aria-live": "polite" });
  const node = el("section", { class: "qs-panel", id, "aria-label": title },
    el("h3", {}, title, hint ? el("span", { class: "muted" }, hint) : null),
    el("div", { class: "qs-ctl-body" }, ...rows, ack));
  return { node, ack };
}

function field(label, input, title = "") {
  return el("label", { title }, label, input);
}

function textInput(id, placeholder, cls = "hex", title = "") {
  return el("input", { type: "text", id, class: cls, placeholder, "aria-label": title || placeholder,
    spellcheck: "false", autocomplete: "off", maxlength: "400" });
}

function select(id, label, options) {
  const s = el("select", { id, "aria-label": label });
  setOptions(s, options);
  return s;
}

function setOptions(s, options) {
  const keep = s.value;
  s.replaceChildren(...options.map((o) => (typeof o === "string" ? el("option", { value: o }, o)
    : el("option", { value: o.value, title: o.title || "" }, o.label))));
  if (options.some((o) => (typeof o === "string" ? o : o.value) === keep)) s.value = keep;
}

function button(id, label, onclick, title = "", cls = "secondary") {
  return el("button", { type: "button", class: `btn small ${cls}`, id, title, onclick }, label);
}

// "1-8, 12, 0x20" -> [[1, 8], [12, 12], [32, 32]] (the server checks the ranges).
function idRanges(text) {
  const out = [];
  for (const part of text.split(/[\s,]+/).filter(Boolean)) {
    const [a, b] = part.split("-");
    out.push([a, b === undefined ? a : b]);
  }
  return out;
}

// Peeked items (each `size` bytes) as bytes in the target's order.
function itemBytes(items, size, bigEndian) {
  const bytes = [];
  for (const v of items) {
    const one = [];
    for (let i = 0; i < size; i++) one.push(Math.floor(v / 2 ** (8 * i)) % 256);
    bytes.push(...(bigEndian ? one.reverse() : one));
  }
  return bytes;
}

// A filter mask as the server gives it (16 bytes in hex, byte 0 first) -> the bits on.
function maskBits(hex) {
  const bits = [];
  hex.match(/../g).forEach((h, i) => { for (let k = 0; k < 8; k++) if (parseInt(h, 16) & (1 << k)) bits.push(8 * i + k); });
  return bits;
}

function hexDump(offset, bytes) {
  const lines = [];
  for (let i = 0; i < bytes.length; i += DUMP_ROW) {
    const row = bytes.slice(i, i + DUMP_ROW);
    const hex = row.map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(" ");
    const text = row.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(`+${(offset + i).toString(16).padStart(4, "0").toUpperCase()}  ${hex.padEnd(3 * DUMP_ROW - 1)}  ${text}`);
  }
  return lines.join("\n");
}

export function createControl(ctx) {
  injectStyle("mcuprof-qs-control-style", STYLE);
  let info = null; // GET /api/qs/control
  let timer = null;
  let peeked = null; // { offset, bytes }

  const note = el("div", { class: "qs-ctl-note", id: "qs-ctl-note", role: "status" });

  // The target's answers to one action, shown in that action's card.
  async function act(box, name, body, onAnswer) {
    box.replaceChildren(el("span", { class: "wait" }, `${name}: sending…`));
    let sent;
    try {
      sent = await ctx.api.postJSON(`/api/qs/control/${name}`, body);
    } catch (err) {
      box.replaceChildren(el("span", { class: "err" }, `Refused: ${err.message || err}`));
      return;
    }
    box.replaceChildren(el("span", { class: "wait" }, `Sent ${sent.sent.join(" + ")}; waiting for the target…`));
    const lines = [];
    const end = Date.now() + ANSWER_WAIT_MS;
    let since = sent.answers_after;
    let done = false;
    while (!done && Date.now() < end) {
      await new Promise((r) => setTimeout(r, ANSWER_POLL_MS));
      const got = await ctx.api.getJSON("/api/qs/control/answers", { since }).catch(() => null);
      if (!got) continue;
      for (const a of got.answers) {
        since = Math.max(since, a.id);
        lines.push(a);
        if (onAnswer) onAnswer(a);
        done = done || /Trg-Done|Trg-ERR|Query-|Trg-Peek/.test(a.line) || a.name === "QS_TARGET_INFO";
      }
      if (lines.length) {
        box.replaceChildren(...lines.map((a) => el("div", { class: /Trg-ERR/.test(a.line) ? "err" : "ok" }, a.line.trim())));
      }
      // An acknowledged command with no Done to follow: done once the ack is in.
      if (lines.some((a) => a.name === "QS_RX_STATUS") && ACK_ONLY.has(name)) done = true;
    }
    if (!lines.length) box.replaceChildren(el("span", { class: "err" }, `Sent ${sent.sent.join(" + ")}; no answer from the target in ${ANSWER_WAIT_MS / 1000} s`));
    refreshState();
  }

  // ---- global filter: by group and by record, with the mask in force shown
  const glbBits = new Set(); // records on, as the page will send them
  const glbMask = el("div", { class: "qs-ctl-mask", id: "qs-glb-mask" });
  const glbGroups = el("div", { class: "qs-ctl-groups", id: "qs-glb-groups", role: "group", "aria-label": "Record groups" });
  const glbRecords = el("div", { class: "qs-ctl-records", id: "qs-glb-records", role: "group", "aria-label": "Records" });
  const glb = card("qs-ctl-glb", "Global filter", "which records the target sends",
    el("div", { class: "qs-ctl-row" }, el("span", { class: "muted" }, "In force:"), glbMask),
    glbGroups,
    el("details", {}, el("summary", {}, "Single records"), glbRecords),
    el("div", { class: "qs-ctl-row" },
      button("qs-glb-all", "All on", () => { setGlb(ALL_RECORDS); }, "Every record id 0-127, as QP's QS_ALL_RECORDS"),
      button("qs-glb-none", "All off", () => { setGlb([]); }),
      el("span", { class: "spacer" }),
      button("qs-glb-apply", "Apply global filter", () => act(glb.ack, "glb_filter", { records: [...glbBits] }),
        "QS-RX GLB_FILTER with the records checked", "primary")));

  function setGlb(recs) {
    glbBits.clear();
    for (const r of recs) glbBits.add(r);
    drawGlbChecks();
  }
  function drawGlb() {
    if (!info) return;
    const groups = GROUP_ORDER.filter((g) => info.records.some((r) => r.group === g));
    glbGroups.replaceChildren(...groups.map((g) => {
      const box = el("input", { type: "checkbox", "data-group": g });
      box.addEventListener("change", () => {
        for (const r of info.records) if (r.group === g) { if (box.checked) glbBits.add(r.rec); else glbBits.delete(r.rec); }
        drawGlbChecks();
      });
      return el("label", { title: GROUP_TITLE[g] || g }, box, g);
    }));
    glbRecords.replaceChildren(...info.records.map((r) => {
      const box = el("input", { type: "checkbox", "data-rec": String(r.rec) });
      box.addEventListener("change", () => { if (box.checked) glbBits.add(r.rec); else glbBits.delete(r.rec); drawGlbChecks(); });
      return el("label", { title: `${r.rec} (${r.group})` }, box, `${r.rec} ${r.name.replace(/^QS_/, "")}`);
    }));
    drawGlbChecks();
  }
  function drawGlbChecks() {
    for (const box of glbRecords.querySelectorAll("input")) box.checked = glbBits.has(Number(box.dataset.rec));
    for (const box of glbGroups.querySelectorAll("input")) {
      const recs = info.records.filter((r) => r.group === box.dataset.group);
      const on = recs.filter((r) => glbBits.has(r.rec)).length;
      box.checked = on === recs.length;
      box.indeterminate = on > 0 && on < recs.length;
    }
  }

  // ---- local filter by QS-ID group and range; the AO filter by object
  const locMask = el("div", { class: "qs-ctl-mask", id: "qs-loc-mask" });
  const locGroups = el("div", { class: "qs-ctl-groups", id: "qs-loc-groups", role: "group", "aria-label": "QS-ID groups" });
  const locIds = textInput("qs-loc-ids", "QS-IDs, e.g. 1-5, 97", "hex", "More QS-IDs or ranges");
  const aoObj = select("qs-ao-obj", "AO filter object", []);
  const loc = card("qs-ctl-loc", "Local filter", "which objects (QS-IDs) the target traces",
    el("div", { class: "qs-ctl-row" }, el("span", { class: "muted" }, "In force:"), locMask),
    locGroups,
    el("div", { class: "qs-ctl-row" }, field("IDs", locIds, "QS-IDs 0-127 and ranges; QS-ID 0 is always on"),
      button("qs-loc-apply", "Apply local filter", () => {
        const groups = [...locGroups.querySelectorAll("input:checked")].map((b) => b.dataset.group);
        act(loc.ack, "loc_filter", { groups, ranges: idRanges(locIds.value) });
      }, "QS-RX LOC_FILTER: the groups checked and the IDs typed", "primary")),
    el("div", { class: "qs-ctl-row" }, field("AO filter", aoObj, "QS-RX AO_FILTER: one active object's QS-ID (its priority)"),
      button("qs-ao-add", "Trace", () => act(loc.ack, "ao_filter", { object: aoObj.value, remove: false })),
      button("qs-ao-remove", "Silence", () => act(loc.ack, "ao_filter", { object: aoObj.value, remove: true }))));

  function drawLocGroups() {
    locGroups.replaceChildren(...Object.entries(info.loc_groups).map(([g, [a, b]]) =>
      el("label", { title: `QS-IDs ${a}-${b}` }, el("input", { type: "checkbox", "data-group": g, checked: true }), `${g} ${a}-${b}`)));
  }

  // ---- current objects and queries
  const currRows = {};
  const curr = card("qs-ctl-curr", "Current objects", "what QS-RX commands apply to",
    el("div", { class: "qs-ctl-curr", id: "qs-curr-grid" }, ...KINDS.flatMap((k) => {
      const pick = select(`qs-curr-${k}`, `Current ${KIND_TITLE[k]}`, []);
      const now = el("div", { class: "now", id: `qs-curr-now-${k}` });
      currRows[k] = { pick, now };
      return [el("span", { class: "qs-ctl-k", title: KIND_TITLE[k] }, k), pick,
        button(`qs-curr-set-${k}`, "Set", () => act(curr.ack, "curr_obj", { kind: k, object: pick.value }),
          `QS-RX CURR_OBJ: make it the current ${KIND_TITLE[k]}`),
        button(`qs-query-${k}`, "Query", () => act(curr.ack, "query_curr", { kind: k }),
          `QS-RX QUERY_CURR: the current ${KIND_TITLE[k]}'s state`),
        now];
    })));

  // ---- event injector
  const evSig = select("qs-ev-sig", "Signal", []);
  const evAction = select("qs-ev-action", "Action", [
    { value: "publish", label: "Publish" },
    { value: "post", label: "Post to AO" },
    { value: "post_current", label: "Post to current AO" },
    { value: "dispatch", label: "Dispatch to current SM" },
    { value: "init", label: "Init current SM" },
  ]);
  const evAo = select("qs-ev-ao", "Active object to post to", []);
  const evParams = textInput("qs-ev-params", "hex bytes, e.g. 01 00", "hex", "Event parameters (hex bytes)");
  const evAoField = field("to", evAo);
  evAction.addEventListener("change", () => { evAoField.hidden = evAction.value !== "post"; });
  const ev = card("qs-ctl-event", "Event injector", "signals from the target's dictionary",
    el("div", { class: "qs-ctl-row" }, field("Signal", evSig), field("Action", evAction), evAoField),
    el("div", { class: "qs-ctl-row" }, field("Params", evParams, "The event's parameter bytes after its header, in hex"),
      button("qs-ev-send", "Send event", () => {
        const body = { action: evAction.value, signal: evSig.value, params: evParams.value };
        if (evAction.value === "post") body.ao = evAo.value;
        act(ev.ack, "event", body);
      }, "QS-RX EVENT", "primary")));
  evAoField.hidden = true;

  // ---- memory of the current AP object: peek, poke, fill; hex and typed views
  const memOffset = el("input", { type: "text", id: "qs-mem-offset", class: "num", value: "0", "aria-label": "Offset" });
  const memType = select("qs-mem-type", "Element type", Object.keys(TYPES));
  const memCount = el("input", { type: "number", id: "qs-mem-count", class: "num", value: "16", min: "1", max: "255", "aria-label": "Count" });
  const memValue = textInput("qs-mem-value", "values, e.g. 1 0x20", "hex", "Values to poke, or the fill value");
  const memHex = el("pre", { id: "qs-mem-hex", "aria-label": "Peeked bytes in hex" }, "Peek to see the bytes.");
  const memTyped = el("div", { class: "typed", id: "qs-mem-typed" });
  const memAp = el("span", { class: "muted", id: "qs-mem-ap" });
  const mem = card("qs-ctl-mem", "Memory", "of the current AP object",
    el("div", { class: "qs-ctl-row" }, el("span", { class: "muted" }, "AP object:"), memAp),
    el("div", { class: "qs-ctl-row" }, field("Offset", memOffset, "Byte offset into the AP object (decimal or 0x hex)"),
      field("Type", memType), field("Count", memCount)),
    el("div", { class: "qs-ctl-row" }, field("Values", memValue),
      button("qs-mem-peek", "Peek", () => {
        act(mem.ack, "peek", { offset: memOffset.value, size: TYPES[memType.value], num: Number(memCount.value) }, showPeek);
      }, "QS-RX PEEK: Count elements of Type at Offset", "primary"),
      button("qs-mem-poke", "Poke", () => act(mem.ack, "poke", { offset: memOffset.value, size: TYPES[memType.value],
        values: memValue.value.split(/[\s,]+/).filter(Boolean) }), "QS-RX POKE: the values at Offset, each of Type"),
      button("qs-mem-fill", "Fill", () => act(mem.ack, "fill", { offset: memOffset.value, size: TYPES[memType.value],
        num: Number(memCount.value), value: memValue.value.trim().split(/[\s,]+/)[0] || "" }),
        "QS-RX FILL: Count elements of Type at Offset, each the first value")),
    el("div", { class: "qs-mem" }, memHex, memTyped));

  function showPeek(a) {
    if (!a.peek || !info) return;
    const { offset, size, items } = a.peek;
    peeked = { offset, bytes: itemBytes(items, size, info.sizes.big_endian) };
    drawPeek();
  }
  function drawPeek() {
    if (!peeked) return;
    memHex.textContent = hexDump(peeked.offset, peeked.bytes);
    const size = TYPES[memType.value];
    const rows = [];
    for (let i = 0; i + size <= peeked.bytes.length; i += size) {
      let v = 0;
      const part = peeked.bytes.slice(i, i + size);
      (info.sizes.big_endian ? part : [...part].reverse()).forEach((b) => { v = v * 256 + b; });
      rows.push(el("tr", {}, el("td", {}, `+${(peeked.offset + i).toString(16).toUpperCase()}`),
        el("td", {}, String(v)), el("td", {}, `0x${v.toString(16).toUpperCase().padStart(2 * size, "0")}`)));
    }
    memTyped.replaceChildren(el("table", { class: "grid", "aria-label": "Peeked values" },
      el("thead", {}, el("tr", {}, el("th", {}, "Offset"), el("th", {}, memType.value), el("th", {}, "hex"))),
      el("tbody", {}, ...rows)));
  }
  memType.addEventListener("change", drawPeek);

  // ---- user commands and the target itself
  const cmdId = el("input", { type: "text", id: "qs-cmd-id", class: "num", value: "0", "aria-label": "Command id" });
  const cmdParams = [1, 2, 3].map((i) => el("input", { type: "text", id: `qs-cmd-p${i}`, class: "num", value: "0",
    "aria-label": `Parameter ${i}` }));
  const user = card("qs-ctl-cmd", "User command", "QS_onCommand(id, p1, p2, p3) on the target",
    el("div", { class: "qs-ctl-row" }, field("Id", cmdId), ...cmdParams.map((p, i) => field(`P${i + 1}`, p))),
    el("div", { class: "qs-ctl-row" },
      button("qs-cmd-send", "Send command", () => act(user.ack, "command", { id: cmdId.value, params: cmdParams.map((p) => p.value) }),
        "QS-RX COMMAND", "primary"),
      button("qs-cmd-tick", "Tick", () => act(user.ack, "tick", { rate: 0 }), "QS-RX TICK at rate 0"),
      button("qs-cmd-info", "Target info", () => act(user.ack, "info", {}), "QS-RX INFO")));

  // ---- every answer, newest last
  const answerLog = el("pre", { class: "qs-answers", id: "qs-answers", role: "log", "aria-label": "Target answers" });
  const answersCard = card("qs-ctl-answers", "Target answers", "acknowledgements, queries, peeks", answerLog);
  let answersSince = 0;
  const answerLines = [];
  async function pollAnswers() {
    const got = await ctx.api.getJSON("/api/qs/control/answers", { since: answersSince }).catch(() => null);
    if (!got || !got.answers.length) return;
    for (const a of got.answers) { answersSince = Math.max(answersSince, a.id); answerLines.push(a.line.trim()); }
    answerLines.splice(0, Math.max(0, answerLines.length - 200));
    answerLog.textContent = answerLines.join("\n");
    if (followAnswers) answerLog.scrollTop = answerLog.scrollHeight;
  }
  // The newest answer stays in view unless the user scrolled up to read older ones.
  let followAnswers = true;
  answerLog.addEventListener("scroll", () => {
    followAnswers = answerLog.scrollTop + answerLog.clientHeight >= answerLog.scrollHeight - 4;
  });

  const cards = [glb, loc, curr, ev, mem, user, answersCard].map((c) => c.node);
  const node = el("div", { class: "qs-ctl", id: "qs-control", hidden: true }, note, ...cards);

  function maskText(hex, what) {
    if (hex === null) return `the target's own (no ${what} sent from here since it started)`;
    const bytes = hex.match(/../g).reverse().join("").toUpperCase();
    return `0x${bytes} (${maskBits(hex).length} of 128 on)`;
  }

  async function refreshState() {
    const got = await ctx.api.getJSON("/api/qs/control").catch((err) => ({ available: false, why: err.message }));
    const first = !info && got.available;
    for (const c of cards) c.hidden = !got.available;
    note.hidden = got.available;
    if (!got.available) { note.textContent = `${got.why} (the QS control panel drives a live QS target).`; info = null; return; }
    info = got;
    const objects = [{ value: "", label: "Choose an object…" },
      ...info.objects.map((o) => ({ value: o.name, label: o.name, title: o.addr }))];
    for (const k of KINDS) {
      setOptions(currRows[k].pick, objects);
      currRows[k].now.textContent = info.current[k] ? `current: ${info.current[k]}` : "";
      currRows[k].now.hidden = !info.current[k];
    }
    setOptions(aoObj, objects);
    setOptions(evAo, objects);
    setOptions(evSig, info.signals.map((s) => ({ value: s.name, label: s.name, title: `signal ${s.sig}` })));
    memAp.textContent = info.current.AP || "none set: pick one under Current objects (AP)";
    glbMask.textContent = maskText(info.masks.glb, "global filter");
    locMask.textContent = maskText(info.masks.loc, "local filter");
    if (first) {
      drawLocGroups();
      drawGlb();
      setGlb(info.masks.glb === null ? ALL_RECORDS : maskBits(info.masks.glb));
      answersSince = Math.max(0, info.next_id - 50);
    }
  }

  function show() {
    node.hidden = false;
    clearInterval(timer);
    const tick = () => {
      if (ctx.view !== "qs" || node.hidden) return; // another tab: no polling
      ctx.run(async () => { await refreshState(); if (info) await pollAnswers(); });
    };
    tick();
    timer = setInterval(tick, STATE_POLL_MS);
  }
  function hide() {
    node.hidden = true;
    clearInterval(timer);
    timer = null;
  }
  return { node, show, hide };
}
