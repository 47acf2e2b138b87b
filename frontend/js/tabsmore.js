// Tabs that do not fit the bar go into a "More" menu (issue 24: one row of tabs down to
// 1024 px, an overflow menu below that) rather than a tab list that scrolls sideways.
// The selected tab always stays on the bar; the menu lists the others that were moved.

import { el } from "./dom.js";

export function initTabOverflow(tablist, select) {
  const tabs = [...tablist.querySelectorAll("[role=tab]")];
  const list = el("div", { class: "menu-list", role: "menu", id: "tab-more-list", hidden: true });
  const button = el("button", { type: "button", class: "tab-more", id: "tab-more", hidden: true,
    "aria-haspopup": "true", "aria-expanded": "false", title: "Views that do not fit the bar" }, "More ▾");
  const wrap = el("div", { class: "menu tab-more-menu" }, button, list);
  tablist.after(wrap);

  const fits = () => tablist.scrollWidth <= tablist.clientWidth + 1;
  function setOpen(open) {
    list.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
  }
  function layout() {
    for (const tab of tabs) tab.hidden = false;
    button.hidden = true;
    if (fits()) { list.replaceChildren(); setOpen(false); return; }
    button.hidden = false; // takes its room first, then tabs leave from the end
    const moved = [];
    for (let i = tabs.length - 1; i >= 0 && !fits(); i--) {
      if (tabs[i].getAttribute("aria-selected") === "true") continue;
      tabs[i].hidden = true;
      moved.unshift(tabs[i]);
    }
    list.replaceChildren(...moved.map((tab) => el("button", { role: "menuitem", "data-view": tab.dataset.view,
      onclick: () => { setOpen(false); select(tab.dataset.view); } }, tab.firstChild.textContent.trim())));
  }
  button.addEventListener("click", (ev) => { ev.stopPropagation(); setOpen(list.hidden); });
  document.addEventListener("click", (ev) => { if (!wrap.contains(ev.target)) setOpen(false); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") setOpen(false); });
  new ResizeObserver(() => layout()).observe(tablist.parentElement);
  return layout; // call again when the selected tab changes
}
