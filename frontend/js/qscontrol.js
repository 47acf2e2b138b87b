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
const ANSWERS_SHOWN = 200; // lines in the answers card (the server keeps more)
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

// The object pickers' choices: the target's dictionary, after a prompt.
function objectOptions(info) {
  return [{ value: "", label: "Choose an object…" },
    ...info.objects.map((o) => ({ value: o.name, label: o.name, title: o.addr }))];
}

function maskText(hex, what) {
  if (hex === null) return `the target's own (no ${what} sent from here since it started)`;
  const bytes = hex.match(/../g).reverse().join("").toUpperCase();
  return `0x${bytes} (${maskBits(hex).length} of 128 on)`;
}

// One action: POST it, then poll the target's answers into the card's box until the
// last one it needs (Done, ERR, a query or peek; the ack for ACK_ONLY) or a time-out.
function makeActor(ctx, after) {
  return async function act(box, name, body, onAnswer) {
    box.replaceChildren(el("span", { class: "wait" }, `${name}: sending…`));
    let sent;
    try {
      sent = await ctx.api.postJSON(`/api/qs/control/${name}`, body);
    } catch (err) {
      box.replaceChildren(el("span", { class: "err" }, `Refused: ${err.message || err}`));
      return;
    }
    const what = sent.sent.join(" + ");
    box.replaceChildren(el("span", { class: "wait" }, `Sent ${what}; waiting for the target…`));
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
      if (ACK_ONLY.has(name) && lines.some((a) => a.name === "QS_RX_STATUS")) done = true;
    }
    if (!lines.length) {
      box.replaceChildren(el("span", { class: "err" }, `Sent ${what}; no answer from the target in ${ANSWER_WAIT_MS / 1000} s`));
    }
    after();
  };
}

// Global filter: by group and by record, with the mask in force.
function globalFilter(act) {
  let info = null;
  const bits = new Set(); // records on, as the page will send them
  const mask = el("div", { class: "qs-ctl-mask", id: "qs-glb-mask" });
  const groups = el("div", { class: "qs-ctl-groups", id: "qs-glb-groups", role: "group", "aria-label": "Record groups" });
  const records = el("div", { class: "qs-ctl-records", id: "qs-glb-records", role: "group", "aria-label": "Records" });
  const set = (recs) => { bits.clear(); for (const r of recs) bits.add(r); checks(); };
  const toggle = (recs, on) => { for (const r of recs) { if (on) bits.add(r); else bits.delete(r); } checks(); };
  const c = card("qs-ctl-glb", "Global filter", "which records the target sends",
    el("div", { class: "qs-ctl-row" }, el("span", { class: "muted" }, "In force:"), mask),
    groups,
    el("details", {}, el("summary", {}, "Single records"), records),
    el("div", { class: "qs-ctl-row" },
      button("qs-glb-all", "All on", () => set(ALL_RECORDS), "Every record id 0-127, as QP's QS_ALL_RECORDS"),
      button("qs-glb-none", "All off", () => set([])),
      el("span", { class: "spacer" }),
      button("qs-glb-apply", "Apply global filter", () => act(c.ack, "glb_filter", { records: [...bits] }),
        "QS-RX GLB_FILTER with the records checked", "primary")));

  function draw() {
    const shown = GROUP_ORDER.filter((g) => info.records.some((r) => r.group === g));
    groups.replaceChildren(...shown.map((g) => {
      const box = el("input", { type: "checkbox", "data-group": g });
      box.addEventListener("change", () => toggle(info.records.filter((r) => r.group === g).map((r) => r.rec), box.checked));
      return el("label", { title: GROUP_TITLE[g] || g }, box, g);
    }));
    records.replaceChildren(...info.records.map((r) => {
      const box = el("input", { type: "checkbox", "data-rec": String(r.rec) });
      box.addEventListener("change", () => toggle([r.rec], box.checked));
      return el("label", { title: `${r.rec} (${r.group})` }, box, `${r.rec} ${r.name.replace(/^QS_/, "")}`);
    }));
  }
  function checks() {
    for (const box of records.querySelectorAll("input")) box.checked = bits.has(Number(box.dataset.rec));
    for (const box of groups.querySelectorAll("input")) {
      const recs = info.records.filter((r) => r.group === box.dataset.group);
      const on = recs.filter((r) => bits.has(r.rec)).length;
      box.checked = on === recs.length;
      box.indeterminate = on > 0 && on < recs.length;
    }
  }
  function update(next, first) {
    info = next;
    mask.textContent = maskText(info.masks.glb, "global filter");
    if (!first) return;
    draw();
    set(info.masks.glb === null ? ALL_RECORDS : maskBits(info.masks.glb));
  }
  return { node: c.node, update };
}

// Local filter by QS-ID group and range; the AO filter by object.
function localFilter(act) {
  const mask = el("div", { class: "qs-ctl-mask", id: "qs-loc-mask" });
  const groups = el("div", { class: "qs-ctl-groups", id: "qs-loc-groups", role: "group", "aria-label": "QS-ID groups" });
  const ids = textInput("qs-loc-ids", "QS-IDs, e.g. 1-5, 97", "hex", "More QS-IDs or ranges");
  const ao = select("qs-ao-obj", "AO filter object", []);
  const c = card("qs-ctl-loc", "Local filter", "which objects (QS-IDs) the target traces",
    el("div", { class: "qs-ctl-row" }, el("span", { class: "muted" }, "In force:"), mask),
    groups,
    el("div", { class: "qs-ctl-row" }, field("IDs", ids, "QS-IDs 0-127 and ranges; QS-ID 0 is always on"),
      button("qs-loc-apply", "Apply local filter", () => {
        const on = [...groups.querySelectorAll("input:checked")].map((b) => b.dataset.group);
        act(c.ack, "loc_filter", { groups: on, ranges: idRanges(ids.value) });
      }, "QS-RX LOC_FILTER: the groups checked and the IDs typed", "primary")),
    el("div", { class: "qs-ctl-row" }, field("AO filter", ao, "QS-RX AO_FILTER: one active object's QS-ID (its priority)"),
      button("qs-ao-add", "Trace", () => act(c.ack, "ao_filter", { object: ao.value, remove: false })),
      button("qs-ao-remove", "Silence", () => act(c.ack, "ao_filter", { object: ao.value, remove: true }))));
  function update(info, first) {
    mask.textContent = maskText(info.masks.loc, "local filter");
    setOptions(ao, objectOptions(info));
    if (!first) return;
    groups.replaceChildren(...Object.entries(info.loc_groups).map(([g, [a, b]]) =>
      el("label", { title: `QS-IDs ${a}-${b}` }, el("input", { type: "checkbox", "data-group": g, checked: true }), `${g} ${a}-${b}`)));
  }
  return { node: c.node, update };
}

// Current objects, one picker per kind, with Query.
function currentObjects(act) {
  const rows = {};
  const c = card("qs-ctl-curr", "Current objects", "what QS-RX commands apply to",
    el("div", { class: "qs-ctl-curr", id: "qs-curr-grid" }, ...KINDS.flatMap((k) => {
      const pick = select(`qs-curr-${k}`, `Current ${KIND_TITLE[k]}`, []);
      const now = el("div", { class: "now", id: `qs-curr-now-${k}` });
      rows[k] = { pick, now };
      return [el("span", { class: "qs-ctl-k", title: KIND_TITLE[k] }, k), pick,
        button(`qs-curr-set-${k}`, "Set", () => act(c.ack, "curr_obj", { kind: k, object: pick.value }),
          `QS-RX CURR_OBJ: make it the current ${KIND_TITLE[k]}`),
        button(`qs-query-${k}`, "Query", () => act(c.ack, "query_curr", { kind: k }),
          `QS-RX QUERY_CURR: the current ${KIND_TITLE[k]}'s state`),
        now];
    })));
  function update(info) {
    const options = objectOptions(info);
    for (const k of KINDS) {
      setOptions(rows[k].pick, options);
      rows[k].now.textContent = info.current[k] ? `current: ${info.current[k]}` : "";
      rows[k].now.hidden = !info.current[k];
    }
  }
  return { node: c.node, update };
}

// Event injector: a signal from the dictionary, hex parameters, where it goes.
function eventInjector(act) {
  const sig = select("qs-ev-sig", "Signal", []);
  const action = select("qs-ev-action", "Action", [
    { value: "publish", label: "Publish" },
    { value: "post", label: "Post to AO" },
    { value: "post_current", label: "Post to current AO" },
    { value: "dispatch", label: "Dispatch to current SM" },
    { value: "init", label: "Init current SM" },
  ]);
  const ao = select("qs-ev-ao", "Active object to post to", []);
  const params = textInput("qs-ev-params", "hex bytes, e.g. 01 00", "hex", "Event parameters (hex bytes)");
  const aoField = field("to", ao);
  aoField.hidden = true;
  action.addEventListener("change", () => { aoField.hidden = action.value !== "post"; });
  const c = card("qs-ctl-event", "Event injector", "signals from the target's dictionary",
    el("div", { class: "qs-ctl-row" }, field("Signal", sig), field("Action", action), aoField),
    el("div", { class: "qs-ctl-row" }, field("Params", params, "The event's parameter bytes after its header, in hex"),
      button("qs-ev-send", "Send event", () => {
        const body = { action: action.value, signal: sig.value, params: params.value };
        if (action.value === "post") body.ao = ao.value;
        act(c.ack, "event", body);
      }, "QS-RX EVENT", "primary")));
  function update(info) {
    setOptions(ao, objectOptions(info));
    setOptions(sig, info.signals.map((s) => ({ value: s.name, label: s.name, title: `signal ${s.sig}` })));
  }
  return { node: c.node, update };
}

// Memory of the current AP object: peek, poke, fill; a hex dump and a typed view.
function memoryView(act) {
  let info = null;
  let peeked = null; // { offset, bytes }
  const offset = el("input", { type: "text", id: "qs-mem-offset", class: "num", value: "0", "aria-label": "Offset" });
  const type = select("qs-mem-type", "Element type", Object.keys(TYPES));
  const count = el("input", { type: "number", id: "qs-mem-count", class: "num", value: "16", min: "1", max: "255", "aria-label": "Count" });
  const value = textInput("qs-mem-value", "values, e.g. 1 0x20", "hex", "Values to poke, or the fill value");
  const hex = el("pre", { id: "qs-mem-hex", "aria-label": "Peeked bytes in hex" }, "Peek to see the bytes.");
  const typed = el("div", { class: "typed", id: "qs-mem-typed" });
  const ap = el("span", { class: "muted", id: "qs-mem-ap" });
  const where = () => ({ offset: offset.value, size: TYPES[type.value] });
  const values = () => value.value.split(/[\s,]+/).filter(Boolean);
  const c = card("qs-ctl-mem", "Memory", "of the current AP object",
    el("div", { class: "qs-ctl-row" }, el("span", { class: "muted" }, "AP object:"), ap),
    el("div", { class: "qs-ctl-row" }, field("Offset", offset, "Byte offset into the AP object (decimal or 0x hex)"),
      field("Type", type), field("Count", count)),
    el("div", { class: "qs-ctl-row" }, field("Values", value),
      button("qs-mem-peek", "Peek", () => act(c.ack, "peek", { ...where(), num: Number(count.value) }, show),
        "QS-RX PEEK: Count elements of Type at Offset", "primary"),
      button("qs-mem-poke", "Poke", () => act(c.ack, "poke", { ...where(), values: values() }),
        "QS-RX POKE: the values at Offset, each of Type"),
      button("qs-mem-fill", "Fill", () => act(c.ack, "fill", { ...where(), num: Number(count.value), value: values()[0] || "" }),
        "QS-RX FILL: Count elements of Type at Offset, each the first value")),
    el("div", { class: "qs-mem" }, hex, typed));
  function show(a) {
    if (!a.peek || !info) return;
    peeked = { offset: a.peek.offset, bytes: itemBytes(a.peek.items, a.peek.size, info.sizes.big_endian) };
    draw();
  }
  function draw() {
    if (!peeked) return;
    hex.textContent = hexDump(peeked.offset, peeked.bytes);
    const size = TYPES[type.value];
    const rows = [];
    for (let i = 0; i + size <= peeked.bytes.length; i += size) {
      const part = peeked.bytes.slice(i, i + size);
      const v = (info.sizes.big_endian ? part : [...part].reverse()).reduce((acc, b) => acc * 256 + b, 0);
      rows.push(el("tr", {}, el("td", {}, `+${(peeked.offset + i).toString(16).toUpperCase()}`),
        el("td", {}, String(v)), el("td", {}, `0x${v.toString(16).toUpperCase().padStart(2 * size, "0")}`)));
    }
    typed.replaceChildren(el("table", { class: "grid", "aria-label": "Peeked values" },
      el("thead", {}, el("tr", {}, el("th", {}, "Offset"), el("th", {}, type.value), el("th", {}, "hex"))),
      el("tbody", {}, ...rows)));
  }
  type.addEventListener("change", draw);
  function update(next) {
    info = next;
    ap.textContent = info.current.AP || "none set: pick one under Current objects (AP)";
  }
  return { node: c.node, update };
}

// User commands, and the target's clock tick and info.
function userCommand(act) {
  const id = el("input", { type: "text", id: "qs-cmd-id", class: "num", value: "0", "aria-label": "Command id" });
  const params = [1, 2, 3].map((i) => el("input", { type: "text", id: `qs-cmd-p${i}`, class: "num", value: "0",
    "aria-label": `Parameter ${i}` }));
  const c = card("qs-ctl-cmd", "User command", "QS_onCommand(id, p1, p2, p3) on the target",
    el("div", { class: "qs-ctl-row" }, field("Id", id), ...params.map((p, i) => field(`P${i + 1}`, p))),
    el("div", { class: "qs-ctl-row" },
      button("qs-cmd-send", "Send command", () => act(c.ack, "command", { id: id.value, params: params.map((p) => p.value) }),
        "QS-RX COMMAND", "primary"),
      button("qs-cmd-tick", "Tick", () => act(c.ack, "tick", { rate: 0 }), "QS-RX TICK at rate 0"),
      button("qs-cmd-info", "Target info", () => act(c.ack, "info", {}), "QS-RX INFO")));
  return { node: c.node, update() {} };
}

// Every answer of the target, newest last, followed unless the user scrolls up.
function answerList(ctx) {
  const log = el("pre", { class: "qs-answers", id: "qs-answers", role: "log", "aria-label": "Target answers" });
  const c = card("qs-ctl-answers", "Target answers", "acknowledgements, queries, peeks", log);
  const lines = [];
  let since = 0;
  let follow = true;
  log.addEventListener("scroll", () => { follow = log.scrollTop + log.clientHeight >= log.scrollHeight - 4; });
  async function poll() {
    const got = await ctx.api.getJSON("/api/qs/control/answers", { since }).catch(() => null);
    if (!got || !got.answers.length) return;
    for (const a of got.answers) { since = Math.max(since, a.id); lines.push(a.line.trim()); }
    lines.splice(0, Math.max(0, lines.length - ANSWERS_SHOWN));
    log.textContent = lines.join("\n");
    if (follow) log.scrollTop = log.scrollHeight;
  }
  function update(info, first) {
    if (first) since = Math.max(0, info.next_id - 1 - ANSWERS_SHOWN);
  }
  return { node: c.node, update, poll };
}

export function createControl(ctx) {
  injectStyle("mcuprof-qs-control-style", STYLE);
  let info = null; // GET /api/qs/control
  let timer = null;
  const note = el("div", { class: "qs-ctl-note", id: "qs-ctl-note", role: "status" });
  const act = makeActor(ctx, () => refresh());
  const answers = answerList(ctx);
  const parts = [globalFilter(act), localFilter(act), currentObjects(act), eventInjector(act),
    memoryView(act), userCommand(act), answers];
  const node = el("div", { class: "qs-ctl", id: "qs-control", hidden: true }, note, ...parts.map((p) => p.node));

  async function refresh() {
    const got = await ctx.api.getJSON("/api/qs/control").catch((err) => ({ available: false, why: err.message }));
    const first = !info && got.available;
    for (const p of parts) p.node.hidden = !got.available;
    note.hidden = got.available;
    info = got.available ? got : null;
    if (!info) { note.textContent = `${got.why} (the QS control panel drives a live QS target).`; return; }
    for (const p of parts) p.update(info, first);
  }

  function show() {
    node.hidden = false;
    clearInterval(timer);
    const tick = () => {
      if (ctx.view !== "qs" || node.hidden) return; // another tab: no polling
      ctx.run(async () => { await refresh(); if (info) await answers.poll(); });
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
