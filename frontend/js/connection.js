// Connection bar: port picker (serial ports, TCP URL, simulated device, QS targets),
// protocol, baud, ELF, Connect.

const SIM = "sim://";
const SIM_QS = "sim://?proto=qs";
const TCP = "__tcp__";
const LISTEN = "__listen__";
const QS_NAMES = "__qs__";

export function initConnection(ctx) {
  const form = document.getElementById("connection");
  const portSelect = document.getElementById("port-select");
  const tcpField = document.getElementById("tcp-field");
  const tcpUrl = document.getElementById("tcp-url");
  const protoSelect = document.getElementById("proto-select");
  const protoField = document.getElementById("proto-field");
  const listenField = document.getElementById("listen-field");
  const listenUrl = document.getElementById("listen-url");
  const baud = document.getElementById("baud");
  const rateField = document.getElementById("rate-field");
  const simRate = document.getElementById("sim-rate");
  const elfSelect = document.getElementById("elf-select");
  const upload = document.getElementById("elf-upload");
  const connectBtn = document.getElementById("connect");
  const disconnectBtn = document.getElementById("disconnect");
  const refreshBtn = document.getElementById("ports-refresh");
  let busy = false;
  let qsShown = false; // the picker says "not used" while a QS target is connected
  let portsLoaded = false;

  function option(value, label, title) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    if (title) o.title = title;
    return o;
  }

  async function loadPorts() {
    const previous = portSelect.value;
    const data = await ctx.run(() => ctx.api.getJSON("/api/ports"));
    if (!data) return;
    portSelect.replaceChildren();
    portSelect.append(option(SIM, "Simulated device"));
    portSelect.append(option(SIM_QS, "Simulated QS target", "A simulated QP application (DPP) speaking QS"));
    const serial = document.createElement("optgroup");
    serial.label = data.ports.length ? "Serial ports" : "Serial ports (none found)";
    for (const p of data.ports) {
      const label = p.description && p.description !== "n/a" ? `${p.device} — ${p.description}` : p.device;
      serial.append(option(p.device, label, p.vid_pid || ""));
    }
    portSelect.append(serial);
    const other = document.createElement("optgroup");
    other.label = "Network";
    other.append(option(TCP, "TCP URL…"));
    other.append(option(LISTEN, "QS: listen for a target…", "The QS target connects to us (QSPY -t)"));
    portSelect.append(other);
    const wanted = portsLoaded ? previous : (ctx.state?.device?.port || data.default || SIM);
    selectPort(wanted);
    portsLoaded = true;
  }

  function selectPort(value) {
    if (!value) value = SIM;
    if (value.startsWith(SIM) && !value.includes("proto=qs")) {
      // The rate the simulated device runs at, as its URL says (the server fills it in).
      const rate = new URLSearchParams(value.split("?")[1] || "").get("rate");
      if (rate) simRate.value = String(Number(rate));
    }
    if (value.startsWith(SIM)) value = value.includes("proto=qs") ? SIM_QS : SIM;
    if (value.startsWith("socket://")) {
      tcpUrl.value = value;
      value = TCP;
    }
    if (value.startsWith("listen://")) {
      listenUrl.value = value;
      value = LISTEN;
    }
    if (![...portSelect.options].some((o) => o.value === value)) {
      portSelect.insertBefore(option(value, value), portSelect.options[1] || null);
    }
    portSelect.value = value;
    showFields();
  }

  // The QS simulator and a listening port only ever speak QS; serial and TCP either.
  function fixedProto() {
    return portSelect.value === SIM_QS || portSelect.value === LISTEN ? "qs"
      : portSelect.value === SIM ? "miniprofiler" : null;
  }

  function showFields() {
    tcpField.hidden = portSelect.value !== TCP;
    listenField.hidden = portSelect.value !== LISTEN;
    rateField.hidden = portSelect.value !== SIM || !!ctx.state?.connected;
    const fixed = fixedProto();
    if (fixed) protoSelect.value = fixed;
    // Only serial and TCP ports can speak either protocol: ask only for those.
    protoField.hidden = !!fixed;
    render(ctx.state);
  }

  async function loadElfs() {
    const data = await ctx.run(() => ctx.api.getJSON("/api/elfs"));
    if (!data) return;
    elfSelect.replaceChildren();
    if (!data.elfs.length) elfSelect.append(option("", "No ELF (addresses in hex)"));
    const groups = { cli: "Command line", sample: "Sample ELFs", upload: "Uploaded" };
    for (const kind of Object.keys(groups)) {
      const items = data.elfs.filter((e) => e.kind === kind);
      if (!items.length) continue;
      const g = document.createElement("optgroup");
      g.label = groups[kind];
      for (const e of items) g.append(option(e.id, e.label));
      elfSelect.append(g);
    }
    if (data.selected) elfSelect.value = data.selected;
    if (qsShown) {
      qsShown = false;
      showQsNames(true);
    }
  }

  function chosenPort() {
    if (portSelect.value === TCP) return tcpUrl.value.trim();
    if (portSelect.value === LISTEN) return listenUrl.value.trim();
    // The server checks the rate's bounds (MAX_SIM_RATE) and says so in one line.
    if (portSelect.value === SIM && simRate.value.trim()) return `${SIM}?rate=${encodeURIComponent(simRate.value.trim())}`;
    return portSelect.value;
  }

  portSelect.addEventListener("change", () => {
    showFields();
    if (!tcpField.hidden) tcpUrl.focus();
    if (!listenField.hidden) listenUrl.focus();
  });
  refreshBtn.addEventListener("click", loadPorts);

  elfSelect.addEventListener("change", async () => {
    setBusy(true);
    const result = await ctx.run(() => ctx.api.postJSON("/api/elfs/select", { id: elfSelect.value }));
    setBusy(false);
    if (result) { ctx.emit("state", result.state); ctx.emit("refresh"); }
    await loadElfs();
  });

  upload.addEventListener("change", async () => {
    const file = upload.files && upload.files[0];
    upload.value = "";
    if (!file) return;
    const limit = 64 * 1024 * 1024;
    if (file.size > limit) {
      ctx.notify(`${file.name} is too large: ELF uploads are limited to 64 MiB`);
      return;
    }
    setBusy(true);
    const result = await ctx.run(() => ctx.api.postFile("/api/elfs", file, { name: file.name }));
    setBusy(false);
    await loadElfs();
    if (result) {
      ctx.emit("state", result.state);
      ctx.emit("refresh");
      ctx.notify(`Loaded ${result.elf.label}`, "info");
    }
  });

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const port = chosenPort();
    if (!port) { ctx.notify("Enter a TCP URL such as socket://192.168.1.20:5000"); return; }
    const rate = parseInt(baud.value, 10);
    if (!Number.isFinite(rate) || rate < 300) { ctx.notify("Enter a baud rate (e.g. 115200)"); return; }
    setBusy(true);
    connectBtn.textContent = "Connecting…";
    // Old errors go now; what the new connection says (an ELF mismatch) stays.
    ctx.clearNotice();
    const proto = protoSelect.value;
    const state = await ctx.run(() => ctx.api.postJSON("/api/connect", { port, baud: rate, proto }));
    connectBtn.textContent = "Connect";
    setBusy(false);
    if (state) ctx.emit("state", state);
  });

  disconnectBtn.addEventListener("click", async () => {
    setBusy(true);
    const state = await ctx.run(() => ctx.api.postJSON("/api/disconnect"));
    setBusy(false);
    if (state) ctx.emit("state", state);
  });

  function setBusy(value) {
    busy = value;
    render(ctx.state);
  }

  function render(state) {
    const connected = !!state?.connected;
    const connecting = state?.health?.state === "connecting";
    connectBtn.disabled = busy || connected || connecting;
    disconnectBtn.disabled = busy || !connected;
    portSelect.disabled = busy || connected;
    tcpUrl.disabled = busy || connected;
    listenUrl.disabled = busy || connected;
    protoSelect.disabled = busy || connected || !!fixedProto();
    baud.disabled = busy || connected;
    simRate.disabled = busy || connected;
    // Only while choosing a port: connected, the bar's room goes to the port's name.
    rateField.hidden = portSelect.value !== SIM || connected;
    refreshBtn.disabled = busy || connected;
    // A QS target names its objects, states and signals in its own dictionaries: while
    // one is connected the ELF is not used, so the picker says so rather than show one.
    const qs = connected && !ctx.kind(state?.device?.kind).names_from_elf;
    elfSelect.disabled = busy || qs;
    upload.disabled = busy || qs;
    showQsNames(qs);
  }

  function showQsNames(qs) {
    if (qs === qsShown) return;
    qsShown = qs;
    if (qs) {
      const o = option(QS_NAMES, "Not used: QS names");
      elfSelect.prepend(o);
      elfSelect.value = QS_NAMES;
      elfSelect.title = "A QS target sends its own dictionaries of object, state and signal names";
    } else {
      elfSelect.title = "";
      loadElfs();  // back to the ELF the server has selected
    }
  }

  let lastPort = null;
  ctx.on("state", (state) => {
    render(state);
    if (state?.connected && state.device?.port && state.device.port !== lastPort) {
      lastPort = state.device.port;
      selectPort(state.device.port);
      if (state.device.baud) baud.value = state.device.baud;
    }
  });
  loadPorts();
  loadElfs();
  return { loadElfs };
}
