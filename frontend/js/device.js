// Device card, the four controls, the health panel and the state dot in the top bar.

import { fmtHz, fmtInt, fmtPct, fmtRate, fmtTime, fmtWhen, hex32 } from "./format.js";

const $ = (id) => document.getElementById(id);

export function initDevice(ctx) {
  const buttons = {
    start: $("btn-start"),
    stop: $("btn-stop"),
    reset: $("btn-reset"),
    status: $("btn-status"),
  };
  let busy = false;
  let lastOverflows = null;
  let shownMismatch = null;

  async function command(path, after) {
    busy = true;
    renderControls(ctx.state);
    const result = await ctx.run(() => ctx.api.postJSON(path));
    busy = false;
    if (result) {
      const state = result.state || result;
      ctx.emit("state", state);
      if (after) after(result);
    } else {
      renderControls(ctx.state);
    }
  }

  buttons.start.addEventListener("click", () => command("/api/start", () => {
    ctx.setWindow(null);
    ctx.emit("capture-start");
  }));
  buttons.stop.addEventListener("click", () => {
    if (ctx.state?.health?.replay) {
      command("/api/sessions/replay/stop", () => { ctx.emit("refresh"); ctx.emit("sessions-changed"); });
    } else {
      command("/api/stop", () => ctx.emit("refresh"));
    }
  });
  buttons.reset.addEventListener("click", () => command("/api/reset"));
  const qsButtons = { reset: $("btn-qs-reset"), info: $("btn-qs-info"), tick: $("btn-qs-tick") };
  for (const [name, btn] of Object.entries(qsButtons)) {
    btn.addEventListener("click", () => command(`/api/qs/${name}`));
  }
  buttons.status.addEventListener("click", () => command("/api/status", (r) => {
    const s = r.status;
    ctx.notify(`Device status: ${s.is_profiling ? "profiling" : "idle"}, ${fmtInt(s.records_captured)} records captured, buffer ${s.buffer_usage_percent}%`, "info");
  }));

  let wasReplaying = false;
  function renderControls(state) {
    const connected = !!state?.connected;
    const profiling = state?.health?.state === "profiling";
    const replay = state?.health?.replay || null;
    buttons.start.disabled = busy || !connected || profiling || !!replay;
    buttons.start.title = replay ? "A replay is playing: stop it first" : "";
    buttons.stop.disabled = busy || !connected || (!profiling && !replay);
    buttons.stop.textContent = replay ? "Stop replay" : "Stop";
    buttons.reset.disabled = busy || !connected || !!replay;
    buttons.status.disabled = busy || !connected;
    // A QS target has no buffers or status to ask for; it takes QS-RX commands instead.
    const controls = ctx.kind(state?.device?.kind).controls;
    buttons.reset.hidden = !controls.includes("device-control");
    buttons.status.hidden = !controls.includes("device-control");
    $("qs-controls").hidden = !controls.includes("qs-rx");
    for (const btn of Object.values(qsButtons)) btn.disabled = busy || !connected || !!replay;
    const box = $("replay-box");
    box.hidden = !replay;
    if (replay) {
      const pct = replay.pct ?? 0;
      $("replay-label").textContent = replay.label;
      $("replay-label").title = replay.label;
      $("replay-pct").textContent = replay.total
        ? `${fmtPct(pct)} · ${fmtInt(replay.received)} of ${fmtInt(replay.total)} records`
        : `${fmtInt(replay.received)} records`;
      // The rate (average since the replay began) is in the Sessions tab's progress line:
      // the sidebar has no room for a third number, and Health shows the recent rate.
      $("replay-pct").title = replay.rate ? `${fmtRate(replay.rate, " records")} on average` : "";
      $("replay-bar").style.width = `${pct}%`;
      $("replay-meter").setAttribute("aria-valuenow", String(Math.round(pct)));
    }
    if (wasReplaying && !replay) {
      ctx.emit("sessions-changed");
      // An Open shows the session: the views say so already (the source line); only a
      // replay the user watched has news at its end.
      if (!state?.health?.opened?.open) {
        ctx.notify("Replay finished: its data stays in the views; the device is back.", "info");
      }
    }
    wasReplaying = !!replay;
  }

  // A stored session shown (opened, its replay over): its own figures, not the device's.
  function storedShown(state) {
    const h = state?.health || {};
    return h.opened && !h.replay && h.state !== "profiling" ? h.opened : null;
  }

  // One line above the tabs: live, a replay, or which stored session the views show.
  function renderSource(state) {
    const h = state?.health || {};
    const line = $("source-line");
    const opened = h.opened;
    const records = h.profile_records ? plainRecords(h.profile_records) : "no records yet";
    let kind = "Live";
    const qsh = h.qs;
    const qsRecords = qsh && h.profile_records
      ? `${fmtInt(h.profile_records / 3)} RTC steps since Start (${plainRecords(h.profile_records)}, 3 per step)` : null;
    let text = `${state?.device?.label || "device"} · ${qsRecords || records}`;
    if (!state?.connected) {
      // After Disconnect the views keep the last capture: say that is what they show.
      kind = h.profile_records ? "Last capture" : "No device";
      text = h.profile_records ? `${qsRecords || records} · the device is disconnected`
        : "Connect a device, or open a stored session (Sessions)";
    } else if (qsh && qsh.tick_source === "assumed" && !opened) {
      text += ` · times assume ${fmtHz(qsh.tick_hz)} ticks: set the tick rate (device card) or --qs-tick-hz`;
    }
    if (opened) {
      kind = h.replay ? "Replay" : "Stored session";
      const total = opened.records != null ? plainRecords(opened.records) : records;
      text = `${opened.id} · ${opened.name} · captured ${fmtWhen(opened.captured_at)} · ${h.replay ? `${fmtInt(h.replay.received)} of ` : ""}${total}`;
    }
    line.className = `source-line ${opened ? (h.replay ? "replay" : "stored") : state?.connected ? "live" : "stored"}`;
    $("source-kind").textContent = kind;
    $("source-text").textContent = text;
    line.title = `${kind}: ${text}`;
  }
  const plainRecords = (n) => `${fmtInt(n)} record${n === 1 ? "" : "s"}`;

  function renderDevice(state) {
    const stored = storedShown(state);
    const d = stored ? storedDevice(stored) : state?.device || {};
    const connected = !!state?.connected || !!stored;
    const kind = $("device-kind");
    kind.hidden = !connected || !(d.simulated || d.replay || stored);
    kind.textContent = stored ? `Stored session ${stored.id}` : d.replay ? "Replay"
      : ctx.kind(d.kind).simulator_label;
    // Keep the last device's figures readable, but plainly not live.
    $("device-card").classList.toggle("stale", !connected);
    $("fw-version").textContent = d.fw_version || "—";
    $("fw-version").title = d.label || "";
    $("mcu-clock").textContent = fmtHz(d.mcu_clock_hz);
    $("timer-freq").textContent = fmtHz(d.timer_freq);
    $("timer-freq").title = ctx.kind(d.kind).ticks_assumed ? "QS timestamp ticks per second (mcuprof serve --qs-tick-hz)" : "";
    renderTick(stored ? null : state?.health?.qs, d);
    $("build-id").textContent = d.device_build_id != null ? hex32(d.device_build_id) : "—";
    const badge = $("build-badge");
    const check = d.build_check || { state: "unknown", message: "" };
    if (stored) {
      badge.className = "badge neutral";
      badge.textContent = `Figures of stored session ${stored.id}; Start captures from the device`;
    } else if (!connected) {
      badge.className = "badge neutral";
      badge.textContent = state?.elf ? `ELF ${state.elf.label} — connect to check the build ID` : "No device";
    } else {
      // A QS target names its frames itself: there is no build ID to check.
      badge.className = `badge ${ctx.kind(d.kind).names_from_elf ? check.state : "neutral"}`;
      badge.textContent = check.message;
    }
    // A mismatched ELF makes every name wrong: say it where it cannot be missed, once
    // per device/ELF pair.
    const pair = `${d.device_build_id}/${d.elf_build_id}/${state?.elf?.label}`;
    if (connected && check.state === "mismatch" && pair !== shownMismatch) {
      shownMismatch = pair;
      ctx.notify(`${check.message} — the names shown for ${state?.elf?.label || "this ELF"} are not ` +
        "trustworthy; choose the firmware's own ELF.", "warning");
    }
    if (check.state !== "mismatch") shownMismatch = null;
    const note = $("elf-note");
    const notes = [];
    if (state?.elf_error) notes.push(state.elf_error);
    for (const w of state?.elf_warnings || []) notes.push(w);
    note.hidden = notes.length === 0;
    note.textContent = notes.join(" · ");
  }

  // How the QS tick rate was set, as the device card says it.
  const TICK_SOURCE = { assumed: "assumed", given: "given", page: "set", estimate: "measured" };
  const TICK_TITLE = { assumed: "assumed: nobody gave the target's tick rate", given: "given: mcuprof serve --qs-tick-hz",
    page: "set in the page", estimate: "the estimate from the target's frames, applied" };
  // The QS tick rate in use beside the one measured from the target's frames; when they
  // differ by more than 20%, a warning with the estimate to apply.
  function renderTick(qsh, d) {
    const live = !!qsh && ctx.kind(d.kind).ticks_assumed && !d.replay;
    for (const el of document.querySelectorAll(".qs-tick")) el.hidden = !live;
    $("tick-note").hidden = true;
    $("timer-freq").classList.remove("warn");
    if (!live) return;
    const est = qsh.tick_estimate_hz;
    $("timer-freq").textContent = `${fmtHz(qsh.tick_hz)} · ${TICK_SOURCE[qsh.tick_source] || qsh.tick_source}`;
    $("timer-freq").classList.toggle("warn", qsh.tick_source === "assumed");
    $("timer-freq").title = `QS timestamp ticks per second, ${TICK_TITLE[qsh.tick_source] || qsh.tick_source}`;
    $("tick-estimate").textContent = est ? fmtHz(Math.round(est))
      : `after ${qsh.tick_min_span_s} s (${qsh.tick_span_s} s so far)`;
    $("tick-estimate").title = est ? `from ${qsh.tick_span_s} s of the target's frames` : "";
    const note = $("tick-note");
    const apply = $("tick-apply");
    if (qsh.tick_differs) {
      const ratio = est / qsh.tick_hz;
      $("tick-note-text").textContent = `The target's clock runs at about ${fmtHz(Math.round(est))}, not ` +
        `the ${fmtHz(qsh.tick_hz)} QS times are read with: they are ${ratio >= 1 ? `${ratio.toFixed(1)}× too long` : `${(1 / ratio).toFixed(1)}× too short`}.`;
      apply.textContent = `Apply ${fmtHz(Math.round(est))}`;
      apply.hidden = false;
      note.hidden = false;
    } else if (qsh.tick_source === "assumed") {
      $("tick-note-text").textContent = "QS times assume this rate: set the target's tick rate below " +
        "(or start mcuprof serve with --qs-tick-hz).";
      apply.hidden = true;
      note.hidden = false;
    }
  }
  $("tick-apply").addEventListener("click", () => tickCommand({ estimate: true }));
  $("tick-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const hz = Number($("tick-input").value);
    if (hz > 0) tickCommand({ hz });
  });
  async function tickCommand(body) {
    const result = await ctx.run(() => ctx.api.postJSON("/api/qs/time/tick-hz", body));
    if (result) {
      ctx.emit("state", result.state);
      ctx.emit("refresh");
      ctx.notify(`QS times are read at ${fmtHz(result.tick_hz)} from now on.`, "info");
    }
  }

  // An assertion of the target (=ASSERT=): a red banner naming where, until dismissed
  // or the target resets; the capture is kept.
  const assertBanner = $("assert-banner");
  let shownAssert = null;
  assertBanner.querySelector(".banner-close").addEventListener("click", () => { assertBanner.hidden = true; });
  function renderAssert(qsh) {
    const a = qsh?.asserted;
    if (!a) { shownAssert = null; assertBanner.hidden = true; return; }
    if (shownAssert === a.count) return;
    shownAssert = a.count;
    assertBanner.querySelector(".banner-text").textContent =
      `Target asserted: module ${a.module}, location ${a.location}. The capture so far is kept.`;
    assertBanner.hidden = false;
  }

  function storedDevice(stored) {
    const m = stored.metadata || {};
    return {
      fw_version: m.fw_version, mcu_clock_hz: m.mcu_clock_hz, timer_freq: m.timer_freq,
      device_build_id: m.elf_build_id, label: `Stored session ${stored.id} (${stored.name})`,
      build_check: { state: "unknown", message: "" },
    };
  }

  // A stored session keeps its received count, CRC errors and malformed packets; the
  // device's own counters (captured, overflows) were never stored.
  // The device's counters as of Stop come with the session (loss.py); a session stored
  // before they were kept has none: "not recorded", never 0.
  function storedHealth(h, stored) {
    const loss = stored.loss;
    const captured = loss && loss.captured != null ? loss.captured : null;
    return {
      ...h, received: stored.records ?? h.profile_records, captured, overflows: loss ? loss.overflows : null,
      loss: loss ? loss.lost : null, loss_pct: captured ? (100 * loss.lost) / captured : 0,
      in_flight: 0, status_age_s: null,
      buffer_usage: null, crc_errors: stored.crc_errors || 0, malformed: stored.malformed || 0,
      bytes_per_s: null, records_per_s: null, overflow_warning: false,
    };
  }

  // The decoder's and the log's bounded losses, named only when one was hit.
  const BOUNDS = [["names_lumped", "names lumped"], ["dictionary_overflow", "dictionary overflow"],
    ["lines_cut", "lines cut"], ["names_cut", "names cut"], ["idle_dropped", "idle drops"]];
  function showBounds(qsh) {
    const hit = BOUNDS.filter(([k]) => qsh && qsh[k] > 0).map(([k, what]) => `${what} ${fmtInt(qsh[k])}`);
    $("h-qs-bounds").textContent = hit.join(" · ");
    $("h-qs-bounds").hidden = $("h-qs-bounds-k").hidden = !hit.length;
  }

  function renderHealth(state) {
    const stored = storedShown(state);
    const h = stored ? storedHealth(state.health, stored) : state?.health || {};
    const conn = $("conn-state");
    const asserted = !stored && h.qs?.asserted;
    const label = asserted ? "target asserted" : h.state || "disconnected";
    conn.className = `conn-state ${label.replace(" ", "-")}`;
    const d = state?.device || {};
    conn.title = d.label || "";
    conn.querySelector(".text").textContent =
      label === "disconnected" ? "Disconnected"
        : `${label[0].toUpperCase()}${label.slice(1)} · ${d.label || d.port || ""}`;
    const pill = $("h-state");
    pill.textContent = label;
    pill.className = `pill ${label.replace(" ", "-")}`;
    // The rows of the shown data's protocol: a stored session's own, else the link's (a
    // MiniProfiler session opened while a QS target is connected has no QS frames).
    const qs = stored ? ctx.kind(stored.kind).views.includes("qs-monitor") : !!h.qs;
    const qsh = qs ? h.qs : null;
    $("health").classList.toggle("qs", qs);
    for (const id of ["h-qs-frames", "h-qs-bad", "h-qs-gaps", "h-qs-steps"]) if (!qsh) $(id).textContent = "—";
    if (qsh) {
      $("h-qs-frames").textContent = fmtInt(qsh.frames);
      const bad = $("h-qs-bad");
      bad.textContent = fmtInt(qsh.bad_frames);
      bad.className = `mono qs-only ${qsh.bad_frames ? "warn" : ""}`;
      const gaps = $("h-qs-gaps");
      gaps.textContent = fmtInt(qsh.discontinuities);
      gaps.className = `mono qs-only ${qsh.discontinuities ? "warn" : ""}`;
      $("h-qs-steps").textContent = qsh.unfinished_steps
        ? `${fmtInt(qsh.rtc_steps)} (+${fmtInt(qsh.unfinished_steps)} unfinished)` : fmtInt(qsh.rtc_steps);
      const tick = $("h-qs-tick");
      const est = qsh.tick_estimate_hz;
      tick.textContent = `${fmtHz(qsh.tick_hz)} ${qsh.tick_source === "assumed" ? "assumed" : "in use"}`;
      tick.className = `mono qs-only ${qsh.tick_differs || qsh.tick_source === "assumed" ? "warn" : ""}`;
      const measured = $("h-qs-measured");
      measured.textContent = est && !state?.device?.replay ? fmtHz(Math.round(est)) : "—";
      measured.className = `mono qs-only ${qsh.tick_differs ? "warn" : ""}`;
    }
    renderAssert(stored ? null : qsh);
    // QS: Received counts profile records, three per RTC step (object, state, signal).
    $("h-received-k").textContent = qsh ? "Records since Start" : "Received";
    $("h-received-k").title = qsh ? "Profile records since Start: three per RTC step (object, state, signal)"
      : "Records decoded from the link since Start";
    showBounds(qsh);
    const usage = h.buffer_usage;
    $("h-buffer").textContent = usage == null ? "—" : `${usage}%`;
    const bar = $("h-buffer-bar");
    bar.style.width = `${Math.max(0, Math.min(100, usage || 0))}%`;
    bar.className = usage >= 90 ? "full" : usage >= 70 ? "high" : "";
    const ov = $("h-overflows");
    ov.textContent = h.overflows == null ? "—" : fmtInt(h.overflows);
    ov.className = `mono mp-only ${h.overflow_warning ? "bad" : ""}`;
    const cap = $("h-captured");
    const age = label === "profiling" && h.status_age_s != null ? ` · ${h.status_age_s.toFixed(1)} s ago` : "";
    cap.textContent = h.captured == null ? "—" : `${fmtInt(h.captured)}${age}`;
    cap.title = h.status_age_s == null ? "" : `device status ${h.status_age_s.toFixed(1)} s ago`;
    $("h-received").textContent = fmtInt(h.received);
    $("h-inflight").textContent = h.captured == null ? "—" : fmtInt(h.in_flight || 0);
    const loss = $("h-loss");
    loss.textContent = h.captured != null ? `${fmtInt(h.loss)} (${fmtPct(h.loss_pct)})` : "—";
    loss.className = `mono mp-only ${h.loss_pct > 1 ? "bad" : h.loss_pct > 0 ? "warn" : ""}`;
    const rec = $("h-reconcile");
    rec.hidden = (h.captured == null || qs) && !stored;
    rec.textContent = stored
      ? (h.captured != null
        ? `Stored session ${stored.id}, as at Stop: ${fmtInt(h.captured)} captured = ${fmtInt(h.received)} received + ${fmtInt(h.loss)} lost` +
          `${stored.loss.stretches.length ? ` (dropped in ${fmtInt(stored.loss.stretches.length)} stretch${stored.loss.stretches.length === 1 ? "" : "es"})` : ""}.`
        : `Stored session ${stored.id}: ${fmtInt(h.received)} records as recorded; loss not recorded (stored before the device's counters were kept${stored.loss ? ", or no status from the device" : ""}).`)
      : label === "profiling"
      ? `Running: the device's count is ${h.status_age_s == null ? "periodic" : `${h.status_age_s.toFixed(1)} s old`}; in-flight records arrive after Stop.`
      : `${label === "disconnected" ? "At Disconnect" : "After Stop"}: ${fmtInt(h.captured)} captured = ${fmtInt(h.received)} received + ${fmtInt(h.loss)} lost.`;
    $("h-bytes").textContent = fmtRate(h.bytes_per_s, "B");
    $("h-records").textContent = fmtRate(h.records_per_s, "rec");
    const crc = $("h-crc");
    crc.textContent = fmtInt(h.crc_errors || 0);
    crc.className = `mono ${h.crc_errors ? "warn" : ""}`;
    const mal = $("h-malformed");
    mal.textContent = fmtInt(h.malformed || 0);
    mal.className = `mono ${h.malformed ? "warn" : ""}`;
    const warn = $("h-warning");
    const warnings = [];
    if (h.overflow_warning) warnings.push("Device buffer is overflowing: records are being lost. Raise the baud rate or instrument fewer functions.");
    if (h.reason && label === "disconnected") warnings.push(h.reason);
    if (qsh?.tick_differs && !state?.device?.replay) {
      warnings.push(`QS times are read at ${fmtHz(qsh.tick_hz)}, but the target's clock runs at about ` +
        `${fmtHz(Math.round(qsh.tick_estimate_hz))}: apply the estimate in the device card, or set the tick rate.`);
    }
    warn.hidden = warnings.length === 0;
    warn.textContent = warnings.join(" ");
    lastOverflows = h.overflows;
  }

  // Coverage of the whole capture, from each live flame update.
  ctx.on("icicle", ({ icicle }) => {
    if (!icicle || icicle.wall_us === undefined) return;
    const has = icicle.wall_us > 0;
    $("h-coverage").textContent = has ? `${fmtPct(icicle.coverage_pct)} of ${fmtTime(icicle.wall_us)}` : "—";
    $("h-outside").textContent = has ? fmtTime(Math.max(0, icicle.wall_us - icicle.profiled_us)) : "—";
  });

  // The protocol of what the views show: an opened session's, else the link's.
  ctx.shownKind = () => {
    const stored = storedShown(ctx.state);
    return stored ? stored.kind : ctx.state?.device?.kind;
  };

  ctx.on("state", (state) => {
    ctx.state = state;
    renderDevice(state);
    renderControls(state);
    renderHealth(state);
    renderSource(state);
  });
  return { lastOverflows: () => lastOverflows };
}
