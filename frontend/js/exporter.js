// Export menu: server-side formats are fetched (so errors show in the page), PNG is
// drawn by the page's flame component at 2x density. File names carry the firmware version and time.

function filenameFrom(response, fallback) {
  const cd = response.headers.get("content-disposition") || "";
  const m = /filename="([^"]+)"/.exec(cd);
  return m ? m[1] : fallback;
}

function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// Fetched rather than linked, so a failure is the server's one line in the page.
async function fetchAndSave(url, fmt) {
  let response;
  try {
    response = await fetch(url);
  } catch {
    throw new Error("export failed: the mcuprof server is not reachable");
  }
  if (!response.ok) {
    let message = `export failed (${response.status})`;
    try { message = (await response.json()).error || message; } catch { /* not JSON */ }
    throw new Error(message);
  }
  save(await response.blob(), filenameFrom(response, `mcuprof.${fmt}`));
}

export function initExport(ctx, flame) {
  const wrap = document.getElementById("export-menu");
  const button = document.getElementById("export-button");
  const list = wrap.querySelector(".menu-list");

  function setOpen(open) {
    list.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
  }
  button.addEventListener("click", (ev) => { ev.stopPropagation(); setOpen(list.hidden); });
  document.addEventListener("click", (ev) => { if (!wrap.contains(ev.target)) setOpen(false); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") setOpen(false); });

  async function download(fmt) {
    if (fmt === "png") {
      const stem = ctx.state?.file_stem || "mcuprof";
      await flame.png(`${stem}.png`);
      return;
    }
    const url = new URL(`/api/export/${fmt}`, location.origin);
    if (fmt !== "raw") for (const [k, v] of Object.entries(ctx.windowParams())) url.searchParams.set(k, v);
    await fetchAndSave(url, fmt);
  }

  // The menu's items, in groups, from the server's one list of formats.
  function build(groups) {
    const items = [];
    groups.forEach((group, i) => {
      if (i) items.push(document.createElement("hr"));
      for (const format of group) {
        const item = document.createElement("button");
        item.setAttribute("role", "menuitem");
        item.dataset.export = format.name;
        item.textContent = format.label;
        item.addEventListener("click", async () => {
          setOpen(false);
          await ctx.run(() => download(format.name));
        });
        items.push(item);
      }
    });
    list.replaceChildren(...items);
    // A stored session's export from its row in Sessions: the same formats, titles and
    // file names as this menu gives once the session is opened.
    ctx.exportFormats = groups.flat().map((format) => [format.name, format.label]);
  }
  // (the Sessions view waits for it; without it, a row offers its raw capture only)
  ctx.exportFormatsReady = ctx.api.getJSON("/api/export/formats")
    .then((body) => build(body.groups)).catch(() => {});
  ctx.exportSession = (sid, fmt) => ctx.run(async () => {
    if (fmt !== "png") return fetchAndSave(new URL(`/api/sessions/${sid}/export/${fmt}`, location.origin), fmt);
    const stored = await ctx.api.getJSON(`/api/sessions/${sid}/flame`);
    await flame.png(`${stored.file_stem}.png`, stored);
  });
}
