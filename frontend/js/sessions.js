// Sessions tab: stored captures. List, open (the CLI's loader), replay at 1x/10x/max,
// rename, notes, download, delete, import a raw capture by upload, pick a diff baseline.

import { el, injectStyle } from "./dom.js";
import { fmtHz, fmtInt, fmtPct, fmtRate, fmtTime, fmtWhen } from "./format.js";

const STYLE = `
.sess { display: flex; flex-direction: column; min-height: 0; flex: 1; }
.sess .toolbar { display: flex; gap: 8px; align-items: center; padding: 8px 10px; flex-wrap: wrap;
  border-bottom: 1px solid var(--line); }
.sess .replay-note { color: var(--accent-text); }
.sess-progress { display: flex; align-items: center; gap: 10px; padding: 6px 10px; border-bottom: 1px solid var(--line);
  font-size: 12px; }
.sess-progress .meter { width: 240px; margin-top: 0; flex: none; }
.sess-progress .what { min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.sess-body { display: flex; flex: 1; min-height: 0; }
.sess-list { flex: 1; overflow: auto; min-width: 0; }
.sess-detail { width: 330px; border-left: 1px solid var(--line); padding: 10px 12px; overflow: auto;
  display: flex; flex-direction: column; gap: 8px; }
.sess-detail textarea { width: 100%; min-height: 110px; resize: vertical; background: var(--bg);
  color: var(--text); border: 1px solid var(--line-2); border-radius: var(--radius); padding: 6px; font: inherit; }
.sess-detail input[type=text] { width: 100%; }
.sess-actions { display: flex; flex-wrap: wrap; gap: 6px; }
.sess tr.selected { background: var(--select-bg); }
.sess tr { cursor: pointer; }
.st { padding: 0 6px; border-radius: 4px; font-size: 11px; }
.st.recording { color: var(--red-text); background: var(--red-bg); }
.st.interrupted { color: var(--amber-text); background: var(--amber-bg); }
.st.complete { color: var(--green-text); background: var(--green-bg); }
.sess .empty-list { padding: 30px; color: var(--muted); text-align: center; }
.sess-empty { margin: 48px auto; max-width: 560px; padding: 22px 26px; border: 1px dashed var(--line-2);
  border-radius: 10px; background: var(--panel-2); line-height: 1.6; }
.sess-empty-title { font-size: 15px; font-weight: 600; margin-bottom: 6px; }
.sess-empty ol { margin: 0 0 10px; padding-left: 20px; }
.sess-detail h3 { margin: 0; font-size: 13px; }
.sess .grid th, .sess .grid td { padding: 3px 7px; }
.sess .grid td.name { max-width: 220px; }
.sess .grid td.where { max-width: 140px; }
.sess-export { position: relative; }
.sess-export summary { list-style: none; cursor: pointer; }
.sess-export summary::-webkit-details-marker { display: none; }
.sess-export .menu-list { position: absolute; right: 0; z-index: 20; }
@media (max-width: 1600px) {
  .sess-detail { width: 280px; }
  .sess .grid td.name { max-width: 160px; }
  .sess .grid td.where { max-width: 100px; }
  .sess .grid th, .sess .grid td { padding: 3px 6px; }
}
/* Narrow windows: the details go under the list, so the list keeps every column. */
@media (max-width: 1280px) {
  .sess-body { flex-direction: column; }
  .sess-list { flex: 1 1 55%; }
  .sess-detail { width: auto; flex: 0 1 45%; border-left: 0; border-top: 1px solid var(--line); }
  .sess .grid td.name { max-width: 120px; }
  .sess .grid td.where { max-width: 90px; }
  .sess .grid th, .sess .grid td { padding: 3px 5px; }
  .sess .grid .yr { display: none; }
}
`;

// PATCH/DELETE with the same error contract as api.js: the server's one line, or a plain one.
export async function send(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new Error("the mcuprof server is not reachable");
  }
  const type = response.headers.get("content-type") || "";
  const data = type.includes("application/json") ? await response.json() : await response.text();
  if (!response.ok) {
    throw new Error(data && data.error ? data.error : `${response.status} ${response.statusText}`);
  }
  return data;
}

function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

export async function mount(container, ctx) {
  await ctx.exportFormatsReady; // each row's Export menu offers the menu's formats
  injectStyle("mcuprof-sessions-style", STYLE);
  let sessions = [];
  let selected = null;
  let replay = null;
  let speed = "1x";
  let picked = false; // a session was selected once: after that an empty selection is the user's

  const speedSeg = el("span", { class: "seg", role: "group", "aria-label": "Replay speed" });
  for (const s of ["1x", "10x", "max"]) {
    speedSeg.append(el("button", {
      type: "button", "data-speed": s, class: s === speed ? "on" : "",
      onclick: () => {
        speed = s;
        for (const b of speedSeg.children) b.classList.toggle("on", b.dataset.speed === s);
      },
    }, s === "max" ? "max" : `${s.slice(0, -1)}×`));
  }
  const elfSelect = el("select", { id: "sess-import-elf", "aria-label": "ELF for the imported capture" },
    el("option", { value: "" }, "no ELF"));
  const fileInput = el("input", { type: "file", id: "sess-import-file", "aria-label": "Import a raw capture" });
  const replayNote = el("span", { class: "replay-note", id: "sess-replay-state" });
  const stopBtn = el("button", { type: "button", class: "btn small secondary", id: "sess-replay-stop", hidden: true,
    onclick: () => ctx.run(async () => { await ctx.api.postJSON("/api/sessions/replay/stop"); await refresh(); }) },
  "Stop replay");
  const toolbar = el("div", { class: "toolbar" },
    el("label", { class: "btn small secondary file-btn" }, "Import capture…", fileInput),
    el("label", { class: "muted" }, "with ", elfSelect),
    el("span", { class: "spacer" }),
    el("span", { class: "muted" }, "Replay speed"), speedSeg,
    stopBtn, replayNote,
    el("button", { type: "button", class: "btn small secondary", id: "sess-refresh", onclick: () => refresh() }, "Refresh"),
  );
  const listBox = el("div", { class: "sess-list table-wrap" },
    el("div", { class: "muted sess-loading" }, "Loading sessions…"));
  const detail = el("aside", { class: "sess-detail", id: "sess-detail" },
    el("div", { class: "muted" }, "Select a session to see its details."));
  // Progress of the long work this tab starts: an import's upload, an open (replay).
  const progressBar = el("div", {});
  const progressMeter = el("div", { class: "meter", role: "progressbar", "aria-label": "Progress",
    "aria-valuemin": "0", "aria-valuemax": "100" }, progressBar);
  const progressText = el("span", { class: "what mono", id: "sess-progress-text" });
  const progress = el("div", { class: "sess-progress", id: "sess-progress", hidden: true },
    progressMeter, progressText);
  function showProgress(pct, text) {
    progress.hidden = text === null;
    if (text === null) return;
    progressBar.style.width = `${pct ?? 0}%`;
    progressMeter.setAttribute("aria-valuenow", String(Math.round(pct ?? 0)));
    progressText.textContent = text;
  }
  const root = el("div", { class: "sess" }, toolbar, progress,
    el("div", { class: "sess-body" }, listBox, detail));
  container.replaceChildren(root);

  fileInput.addEventListener("change", () => ctx.run(async () => {
    const file = fileInput.files && fileInput.files[0];
    fileInput.value = "";
    if (!file) return;
    const params = { name: file.name.slice(0, 200) };
    if (elfSelect.value) params.elf = elfSelect.value;
    let out;
    try {
      out = await upload(file, params);
    } catch (err) {
      // The store lists an import while it checks the bytes: a list fetched meanwhile
      // shows a row that the refusal removed (a CI run saw 2 rows for 1 session).
      refresh();
      throw err;
    }
    ctx.notify(`Imported session ${out.session.id}: ${out.session.name}`, "info");
    selected = out.session.id;
    await refresh();
  }));

  // fetch() reports no upload progress: an XMLHttpRequest does (bytes, percent, rate).
  function upload(file, params) {
    const url = new URL("/api/sessions/import", location.origin);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    const started = performance.now();
    importing = true;
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.setRequestHeader("Content-Type", "application/octet-stream");
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = (ev) => {
        const secs = (performance.now() - started) / 1000;
        const pct = ev.lengthComputable ? (100 * ev.loaded) / ev.total : null;
        showProgress(pct, `Importing ${file.name}: ${fmtPct(pct)} · ${fmtBytes(ev.loaded)} of ` +
          `${fmtBytes(file.size)} · ${secs > 0 ? fmtRate(ev.loaded / secs / (1 << 20), "MiB") : "—"}`);
      };
      xhr.upload.onload = () => showProgress(100, `Importing ${file.name}: storing and checking the capture…`);
      const done = (fn) => { importing = false; showProgress(null, null); renderReplay(); fn(); };
      xhr.onload = () => {
        let data = null;
        try { data = JSON.parse(xhr.responseText); } catch { data = null; }
        if (xhr.status >= 200 && xhr.status < 300) done(() => resolve(data));
        else done(() => reject(new Error(data && data.error ? data.error : `${xhr.status} ${xhr.statusText}`)));
      };
      xhr.onerror = () => done(() => reject(new Error("upload failed: the mcuprof server is not reachable")));
      xhr.send(file);
    });
  }

  async function loadElfs() {
    const out = await ctx.api.getJSON("/api/elfs");
    const keep = elfSelect.value || out.selected || "";
    elfSelect.replaceChildren(el("option", { value: "" }, "no ELF"),
      ...out.elfs.map((e) => el("option", { value: e.id }, e.label)));
    elfSelect.value = keep;
  }

  function renderList() {
    detail.hidden = !sessions.length;
    if (!sessions.length) {
      listBox.replaceChildren(el("div", { class: "sess-empty", id: "sess-empty" },
        el("div", { class: "sess-empty-title" }, "No stored sessions yet"),
        el("ol", {},
          el("li", {}, "Click ", el("b", {}, "Start"), ": every capture is stored here as a session, with its ELF."),
          el("li", {}, "Or ", el("b", {}, "Import capture…"), " above: a raw capture file recorded with ",
            el("code", {}, "mcuprof record"), " or downloaded from another session.")),
        el("div", { class: "muted" }, "Stored sessions can be reopened, replayed, annotated and compared.")));
      return;
    }
    const head = el("tr", {}, ["#", "Name", "Status", "Created", "Length", "Records", "Lost", "Size", "ELF", "Export"]
      .map((h, i) => el("th", { class: i === 1 || i === 8 ? "text" : "",
        title: h === "Lost" ? "Records the device captured that never arrived, as at Stop" : "" }, h)));
    const rows = sessions.map((s) => el("tr", {
      "data-id": s.id, class: s.id === selected ? "selected" : "",
      onclick: () => { selected = s.id; renderList(); showDetail(); },
    },
    el("td", {}, s.id),
    el("td", { class: "name", title: s.name }, s.name),
    el("td", {}, el("span", { class: `st ${s.status}` }, s.status)),
    // The year goes in narrow windows (its title keeps it), so every column fits.
    el("td", { title: fmtWhen(s.created_at) }, el("span", { class: "yr" }, fmtWhen(s.created_at).slice(0, 5)),
      fmtWhen(s.created_at).slice(5)),
    el("td", {}, s.length_s === null ? "—" : fmtTime(s.length_s * 1e6)),
    el("td", {}, s.records === null || s.records === undefined ? "—" : fmtInt(s.records)),
    s.status === "recording" ? el("td", { class: "lost" }, "—") : lostCell(s.loss),
    el("td", {}, fmtBytes(s.raw_bytes)),
    el("td", { class: "where" }, s.elf_name || "—"),
    el("td", {}, exportMenu(s))));
    // A refresh (a capture starting or stopping) must not shut an Export menu the user
    // has open: the rebuilt row's menu opens again.
    const open = listBox.querySelector("details.sess-export[open]");
    const openId = open ? open.closest("tr").dataset.id : null;
    listBox.replaceChildren(el("table", { class: "grid", id: "sessions-table" },
      el("thead", {}, head), el("tbody", {}, rows)));
    if (openId !== null) {
      const again = listBox.querySelector(`tr[data-id="${openId}"] details.sess-export`);
      if (again) again.open = true;
    }
  }

  // The device's loss as at Stop (loss.py's lost_text): sessions stored before it was kept
  // read "not recorded", never 0.
  function lostCell(loss) {
    if (!loss) return el("td", { class: "lost muted", title: "stored before loss was kept" }, "not recorded");
    if (loss.lost === null || loss.lost === undefined) return el("td", { class: "lost muted", title: "no status from the device" }, "?");
    const pct = loss.captured && loss.lost ? ` (${fmtPct((100 * loss.lost) / loss.captured)})` : "";
    return el("td", { class: `lost ${loss.lost ? "warn" : ""}`,
      title: loss.captured ? `of ${fmtInt(loss.captured)} captured` : null }, `${fmtInt(loss.lost)}${pct}`);
  }

  // Every format of the Export menu, for this session without opening it. An S12Z trace
  // is not a profile: it offers its raw capture only.
  function exportMenu(s) {
    const formats = (ctx.exportFormats || [["raw", "Raw capture"]])
      .filter(([fmt]) => fmt === "raw" || (ctx.kind(s.kind).views.includes("profile") && s.raw_bytes));
    const items = formats.map(([fmt, label]) => el("button", { type: "button", role: "menuitem",
      "data-session-export": fmt, onclick: () => { menu.open = false; ctx.exportSession(s.id, fmt); } }, label));
    const menu = el("details", { class: "sess-export", onclick: (ev) => ev.stopPropagation() },
      el("summary", { class: "btn small secondary", "aria-label": `Export session ${s.id}` }, "Export"),
      el("div", { class: "menu-list", role: "menu" }, items));
    return menu;
  }

  // Every refresh (the tab shown, a capture stored) rebuilds the panel: what the user is
  // typing into the same session's name or notes carries over, focus too, so nothing
  // typed is lost. Returns the field to focus again, if any.
  function carryEdits(id, name, notes, tags) {
    const same = detail.dataset.sid === String(id);
    detail.dataset.sid = String(id);
    const before = ["sess-name", "sess-notes", "sess-tags"].map((i) => document.getElementById(i));
    for (const field of [name, notes, tags]) field.dataset.orig = field.value;
    if (!same) return null;
    let focus = null;
    for (const [old, now] of [[before[0], name], [before[1], notes], [before[2], tags]]) {
      if (!old) continue;
      if (old.value !== old.dataset.orig) now.value = old.value;
      if (document.activeElement === old) focus = now;
    }
    return focus;
  }

  async function showDetail() {
    const s = sessions.find((x) => x.id === selected);
    if (!s) {
      detail.replaceChildren(el("div", { class: "muted" }, "Select a session to see its details."));
      return;
    }
    const name = el("input", { type: "text", id: "sess-name", value: s.name, maxlength: "200", "aria-label": "Session name" });
    const notes = el("textarea", { id: "sess-notes", "aria-label": "Notes", maxlength: "20000" });
    notes.value = s.notes || "";
    // Tags as KEY=VALUE words (commit=…, branch=…, board=…): what History filters by.
    const tagText = (t) => Object.entries(t || {}).map(([k, v]) => `${k}=${v}`).join(" ");
    const tags = el("input", { type: "text", id: "sess-tags", value: tagText(s.tags), maxlength: "2000",
      "aria-label": "Tags", placeholder: "commit=… branch=main board=…",
      title: "KEY=VALUE words, such as branch=main board=nucleo-f4; the History tab filters by them" });
    tags.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); save(s, name.value, notes.value, tags.value); }
    });
    // Enter in the name saves, as in any form with one line to edit.
    name.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); save(s, name.value, notes.value, tags.value); }
    });
    const info = el("dl", { class: "kv", id: "sess-info" });
    const meta = s.metadata;
    const kv = [
      ["Status", s.status], ["Source", s.source], ["Created", fmtWhen(s.created_at)],
      ["Firmware", meta ? meta.fw_version || "—" : "no METADATA"],
      ["Build ID", meta ? "0x" + (meta.elf_build_id >>> 0).toString(16).padStart(8, "0") : "—"],
      ["Raw", fmtBytes(s.raw_bytes)], ["ELF", s.elf_name || "—"],
    ];
    const ticks = ctx.kind(s.kind).ticks_assumed; // a QS session: its tick rate, re-readable
    if (ticks) kv.push(["QS tick rate", meta ? fmtHz(meta.timer_freq) : "—"]);
    for (const [k, v] of kv) info.append(el("dt", {}, k), el("dd", { title: String(v) }, v));
    const busy = s.status === "recording";
    // Not a profile (an S12Z DBG trace): shown in its own tab, not replayed or compared.
    const s12z = !ctx.kind(s.kind).views.includes("profile");
    const focus = carryEdits(s.id, name, notes, tags);
    detail.replaceChildren(
      el("h3", { class: "mono" }, `Session ${s.id}`),
      el("label", {}, "Name", name),
      el("div", { class: "sess-actions" },
        el("button", { type: "button", class: "btn small primary", id: "sess-open", disabled: !s.raw_bytes,
          title: "Show it in the live views (loaded as mcuprof info loads it)",
          onclick: () => (s12z ? openS12z(s) : startReplay(s, "max", true)) }, "Open"),
        el("button", { type: "button", class: "btn small secondary", id: "sess-replay", disabled: !s.raw_bytes || s12z,
          onclick: () => startReplay(s, speed, false) }, "Replay"),
        el("button", { type: "button", class: "btn small secondary", id: "sess-compare", disabled: s12z,
          onclick: () => {
            // Kept on ctx too: the Compare tab may mount only after this click.
            ctx.compareBase = s.id;
            ctx.emit("compare-base", s.id);
            document.getElementById("tab-compare")?.click();
          } },
        "Use as baseline"),
        el("a", { class: "btn small secondary", id: "sess-download", href: `/api/sessions/${s.id}/raw`, download: "" }, "Download"),
        el("button", { type: "button", class: "btn small stop", id: "sess-delete", disabled: busy,
          title: busy ? "Stop the capture first" : "Delete the session and its files",
          onclick: () => remove(s) }, "Delete"),
      ),
      info,
      el("label", {}, "Tags", tags),
      ...(ticks ? [tickRow(s)] : []),
      el("label", {}, "Notes", notes),
      el("div", { class: "sess-actions" },
        el("button", { type: "button", class: "btn small primary", id: "sess-save",
          onclick: () => save(s, name.value, notes.value, tags.value) }, "Save")),
      el("div", { class: "note", id: "sess-capture" }, "Reading the capture…"),
    );
    if (focus) focus.focus();
    const capBox = detail.querySelector("#sess-capture");
    try {
      const out = await ctx.api.getJSON(`/api/sessions/${s.id}`);
      const c = out.session.capture;
      if (s12z) {
        capBox.textContent = `S12Z trace: ${fmtInt(c.records)} lines; reserved ${fmtInt(c.reserved)}, ` +
          `malformed ${fmtInt(c.malformed)}${c.tbovf ? "; ended by TBOVF (data lost)" : ""}`;
        return;
      }
      const l = out.session.loss;
      const lost = !l ? "; loss not recorded" : l.lost == null ? "; loss unknown (no device status)"
        : `; lost ${fmtInt(l.lost)} of ${fmtInt(l.captured)} captured (overflows ${fmtInt(l.overflows)}` +
          `${l.stretches.length ? `, in ${fmtInt(l.stretches.length)} stretch${l.stretches.length === 1 ? "" : "es"}` : ""})`;
      capBox.textContent = `${fmtInt(c.records)} records over ${fmtTime(c.duration_us)}; ` +
        `CRC errors ${fmtInt(c.crc_errors)}, malformed ${fmtInt(c.malformed)}, skipped ${fmtInt(c.skipped_bytes)} bytes${lost}`;
    } catch (err) {
      capBox.textContent = err.message;
    }
  }

  // A QS session's times are read with the tick rate stored with it: re-read them
  // with another (the same ticks, other microseconds).
  function tickRow(s) {
    const input = el("input", { type: "number", id: "sess-tick", min: "1", step: "any",
      value: s.metadata?.timer_freq || "", "aria-label": "QS tick rate (Hz)" });
    const reread = async () => {
      const hz = Number(input.value);
      if (!(hz > 0)) return;
      const done = await ctx.run(() => ctx.api.postJSON(`/api/qs/time/sessions/${s.id}/tick-hz`, { hz }));
      if (done) {
        ctx.notify(`Session ${s.id} is read at ${fmtHz(done.metadata.timer_freq)} from now on; open it again to see it.`, "info");
        refresh();
      }
    };
    return el("label", { title: "QS timestamp ticks per second this session's times are read with" },
      "QS tick rate (Hz)", el("span", { class: "sess-actions" }, input,
        el("button", { type: "button", class: "btn small secondary", id: "sess-tick-set", onclick: reread }, "Re-read")));
  }

  async function save(s, name, notes, tagText) {
    await ctx.run(async () => {
      const body = {};
      if (name !== s.name) body.name = name;
      if (notes !== (s.notes || "")) body.notes = notes;
      const tags = {};
      for (const word of (tagText || "").split(/\s+/).filter(Boolean)) {
        const at = word.indexOf("=");
        if (at <= 0) throw new Error(`tag ${word}: expected KEY=VALUE, such as branch=main`);
        tags[word.slice(0, at)] = word.slice(at + 1);
      }
      if (JSON.stringify(tags) !== JSON.stringify(s.tags || {})) body.tags = tags;
      if (!Object.keys(body).length) return;
      await send("PATCH", `/api/sessions/${s.id}`, body);
      ctx.notify(`Session ${s.id} saved`, "info");
      await refresh();
    });
  }

  async function remove(s) {
    if (!window.confirm(`Delete session ${s.id} (${s.name}) and its files?`)) return;
    await ctx.run(async () => {
      await send("DELETE", `/api/sessions/${s.id}`);
      if (selected === s.id) selected = null;
      await refresh();
    });
  }

  function openS12z(s) {
    ctx.s12zSession = s.id; // read by the S12Z tab when it mounts
    ctx.emit("s12z-open", s.id);
    document.getElementById("tab-s12z")?.click();
  }

  async function startReplay(s, how, open) {
    await ctx.run(async () => {
      await ctx.api.postJSON(`/api/sessions/${s.id}/replay`, { speed: how, open: !!open });
      ctx.emit("refresh");
      await refresh();
      if (open) document.getElementById("tab-flame")?.click();
    });
  }

  // The open (or replay) in progress, from the live updates: records, percent and rate.
  let live = null;
  let importing = false;
  function renderReplay() {
    stopBtn.hidden = !replay && !live;
    replayNote.textContent = replay && !live ? replay.label : "";
    if (importing) return;
    if (!live) { showProgress(null, null); return; }
    const of = live.total ? ` of ${fmtInt(live.total)}` : "";
    showProgress(live.pct, `${live.label}: ${fmtPct(live.pct)} · ${fmtInt(live.received)}${of} records · ` +
      `${fmtRate(live.rate, " records")} on average`);
  }

  async function refresh() {
    await ctx.run(async () => {
      const out = await ctx.api.getJSON("/api/sessions");
      sessions = out.sessions;
      replay = out.replay;
      if (selected !== null && !sessions.some((s) => s.id === selected)) selected = null;
      // Open on the newest session's details rather than an empty side panel.
      if (selected === null && !picked && sessions.length) selected = sessions[0].id;
      picked = picked || sessions.length > 0;
      renderList();
      renderReplay();
      await showDetail();
    });
  }

  // Keep the list current: when this tab is shown, and when a capture starts or stops.
  let recording = null;
  ctx.on("view", (name) => { if (name === "sessions") refresh(); });
  ctx.on("state", (state) => {
    const was = live;
    live = state && state.health ? state.health.replay || null : null;
    renderReplay();
    if (was && !live && ctx.view === "sessions") refresh();
    const now = state && state.health ? state.health.recording : null;
    if (now !== recording) {
      recording = now;
      if (ctx.view === "sessions") refresh();
    }
  });
  ctx.on("sessions-changed", () => refresh());
  await Promise.all([refresh(), ctx.run(loadElfs)]);
}
