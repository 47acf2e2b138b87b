// Call tree: top-down, expandable, with a bottom-up (callers) toggle.

import { esc, fmtInt, fmtPct, fmtTime, shortName, throttle } from "./format.js";

export function initCallTree(ctx) {
  const body = document.querySelector("#tree-table tbody");
  const empty = document.getElementById("tree-empty");
  const info = document.getElementById("tree-info");
  let mode = "top-down";
  let root = null;
  let stale = true;
  const open = new Set(); // paths of expanded nodes, kept across refreshes
  let userTouched = false;

  function pathOf(parentPath, node) { return `${parentPath}/${node.n}`; }

  function render() {
    const html = [];
    const walk = (node, path, depth) => {
      for (const child of node.k) {
        const p = pathOf(path, child);
        const hasKids = child.k.length > 0;
        const isOpen = open.has(p);
        html.push(
          `<tr data-path="${esc(p)}"><td class="name" style="padding-left:${10 + depth * 16}px" title="${esc(child.n)}">` +
          `<span class="toggle ${hasKids ? "" : "leaf"}" aria-hidden="true">${hasKids ? (isOpen ? "▾" : "▸") : "·"}</span>` +
          `${esc(shortName(child.n))}${child.f ? ` <span class="muted">${esc(child.f)}</span>` : ""}</td>` +
          `<td>${fmtTime(child.t)}</td><td>${fmtTime(child.s)}</td><td>${fmtInt(child.c)}</td>` +
          `<td class="pct-cell" title="${esc(fmtPct(node.t ? (100 * child.t) / node.t : 0))} of ${esc(depth ? shortName(node.n) : "all")}"><div class="bar" style="width:${Math.min(100, child.p).toFixed(1)}%"></div><span>${fmtPct(child.p)}</span></td><td>${fmtPct(child.q)}</td></tr>`,
        );
        if (hasKids && isOpen) walk(child, p, depth + 1);
      }
    };
    if (root) walk(root, "", 0);
    body.innerHTML = html.join("");
    empty.hidden = !!root;
  }

  function expandHot(node, path, levels) {
    let cur = node;
    let p = path;
    for (let i = 0; i < levels && cur && cur.k.length; i++) {
      const child = cur.k[0];
      p = pathOf(p, child);
      open.add(p);
      cur = child;
    }
  }

  async function load() {
    stale = false;
    const d = await ctx.run(() => ctx.api.getJSON("/api/tree", { mode, ...ctx.windowParams() }));
    if (!d) return;
    root = d.root;
    if (root && !userTouched) {
      open.clear();
      if (mode === "top-down") expandHot(root, "", 6);
    }
    info.textContent = root
      ? `${fmtInt(d.nodes)} nodes${d.pruned ? " (smallest merged into “other”)" : ""} · ` +
        `100% = ${fmtTime(d.profiled_us)} profiled`
      : "";
    render();
  }

  body.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-path]");
    if (!tr) return;
    const p = tr.dataset.path;
    userTouched = true;
    if (open.has(p)) open.delete(p);
    else open.add(p);
    render();
  });
  for (const btn of document.querySelectorAll("#view-tree [data-tree]")) {
    btn.addEventListener("click", () => {
      mode = btn.dataset.tree;
      for (const b of document.querySelectorAll("#view-tree [data-tree]")) b.classList.toggle("on", b === btn);
      open.clear();
      userTouched = false;
      load();
    });
  }
  document.getElementById("tree-expand").addEventListener("click", () => {
    if (root) { expandHot(root, "", 32); userTouched = true; render(); }
  });
  document.getElementById("tree-collapse").addEventListener("click", () => {
    open.clear(); userTouched = true; render();
  });
  const follow = throttle(() => { if (ctx.view === "tree") load(); }, 1000);
  ctx.on("version", () => { stale = true; follow(); });
  ctx.on("window", () => { stale = true; if (ctx.view === "tree") load(); });
  ctx.on("refresh", () => { stale = true; if (ctx.view === "tree") load(); });
  return { show() { if (stale) load(); } };
}
