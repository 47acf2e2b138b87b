// What each kind of capture offers (/api/kinds: its views, controls and labels). The
// page asks these, as the backend asks its kind objects, instead of comparing names.

// Until the list arrives (and for a name it lacks): a profile with ELF names.
const PLAIN = {
  views: ["profile"], controls: ["device-control"], names_from_elf: true, ticks_assumed: false,
  simulator_label: "Simulated device", frames_are: "instrumented functions",
};

export function initKinds(ctx) {
  let known = new Map();
  ctx.kind = (name) => known.get(name) || { ...PLAIN, name: name || "", label: name || "" };
  ctx.kindsReady = ctx.api.getJSON("/api/kinds").then((body) => {
    known = new Map(body.kinds.map((k) => [k.name, k]));
    if (ctx.state) ctx.emit("state", ctx.state); // drawn before the list came: again
  }).catch(() => {});
}
