"""Standalone interactive flame graph (SVG with inline script, no network), in the
manner of flamegraph.pl: hover for name/time/%, click to zoom, reset, and a search box
that highlights matches and shows the matched share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..markup import escape, quoteattr
from ..names import name_colour, short_label
from ..profile import Profile, TreeNode, Window
from ..profile.aggregate import path_ticks
from ..profile.flame import subtree_totals
from ..profile.shares import share_pct, span
from ..profile.trees import ROOT_ID, prune_by

# The dashboard's look: dark panel, 20 px rows, 12 px labels cut with "…", the root on
# top, and the page's colour per function (names.name_colour). WIDTH is the drawing's
# own width (its viewBox): the file is as wide as what shows it, scaled to fit (issue 34:
# a fixed 1,600 px was cut off in a 1,440 px window).
WIDTH = 1600
ROW = 20
TOP = 84
BOTTOM = 30
PAD = 10
CHAR_PX = 6.8
ROOT_COLOUR = "#3b4350"


def _tree(profile: Profile, window: Window, max_nodes: int, min_fraction: float) -> TreeNode:
    """``prune`` (trees.py) of the tree of frames merged by name path (as flamegraph.pl
    merges folded stacks; totals in µs), run on path ids: only what it keeps becomes a
    TreeNode, so a capture with a million distinct stacks costs a few arrays, not an
    object graph."""
    to_us = 1e6 / profile.timer_freq
    with profile.lock:
        names, ticks = path_ticks(profile, window)
        # Views: a path's entries never change once written (more paths make new arrays).
        parents, levels, name_of = names.parents, names.levels, names.name_ids
        texts = list(names.names)
    total = subtree_totals(ticks, parents, levels)
    timed = total > 0  # paths with no time are left out
    total *= to_us
    tops = total[(parents < 0) & timed]
    out = TreeNode("all", "all", ROOT_ID, float(np.cumsum(tops)[-1]) if len(tops) else 0.0)

    def node(pid: int) -> TreeNode:
        name = _clean(texts[name_of[pid]])
        return TreeNode(name, name, int(pid), float(total[pid]), float(ticks[pid]) * to_us)

    def totals(pids: np.ndarray) -> np.ndarray:
        return total[pids]

    kids = _Children(parents, timed, total)
    return prune_by(out, -1, kids, totals, node, max_nodes, min_fraction)


class _Children:
    """The paths' shape: a path's children with time (-1: the roots) in falling total,
    then path id."""

    def __init__(self, parents: np.ndarray, timed: np.ndarray, total: np.ndarray) -> None:
        self.order = np.argsort(parents, kind="stable").astype(np.int32)  # path ids
        self.parent = parents[self.order]
        self.timed, self.total = timed, total

    def __call__(self, pid: int) -> np.ndarray:
        ends = np.array([pid, pid + 1], self.parent.dtype)  # in its dtype: no copy of it
        lo, hi = np.searchsorted(self.parent, ends)
        c = self.order[lo:hi]
        c = c[self.timed[c]]
        return c[np.argsort(-self.total[c], kind="stable")]


def _clean(name: str) -> str:
    # XML 1.0 cannot carry most control characters, even escaped.
    return "".join(c if c >= " " or c in "\t" else "?" for c in name)


def _colour(name: str, depth: int) -> str:
    return ROOT_COLOUR if depth == 0 else name_colour(name)


def _fit(name: str, width_px: float) -> str:
    """As the page: a frame with room for three characters shows its name, cut with "…"."""
    n = int((width_px - 8) / CHAR_PX)
    if n < 3:
        return ""
    return name if len(name) <= n else name[: n - 1] + "…"


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: tuple[str, str] | None = None,
) -> None:
    """The export contract (export/__init__.py): ``title`` is the title line and the
    subtitle the page puts over its flame graph (export/titles.py)."""
    head, sub = title if title is not None else ("Flame Graph", "")
    out(render(profile, title=head, window=window, subtitle=sub).encode("utf-8"))


def render(
    profile: Profile,
    title: str = "Flame Graph",
    window: Window = None,
    max_nodes: int = 3000,
    subtitle: str = "",
) -> str:
    tree = _tree(profile, window, max_nodes, 0.1 / WIDTH)
    total = tree.total_us or 1.0
    profiled = span(profile, window)["profiled_us"]  # the tooltips' 100%, as every view's
    rows: list[str] = []
    depth_max = 0
    # (node, depth, x fraction)
    stack: list[tuple[TreeNode, int, float]] = [(tree, 0, 0.0)]
    inner = WIDTH - 2 * PAD
    while stack:
        node, d, x = stack.pop()
        depth_max = max(depth_max, d)
        w = node.total_us / total
        pct = share_pct(node.total_us, profiled)
        px = w * inner
        label = short_label(node.name)  # the display name, as every view's
        tip = f"{label} ({node.total_us:,.0f} µs, {pct:.2f}%)"
        if label != node.name:  # the full signature in the tooltip, a line of its own
            tip += f"\n{node.name}"
        light = ' class="light"' if d == 0 else ""
        rows.append(
            f'<g class="f" data-n={quoteattr(node.name)} data-l={quoteattr(label)} '
            f'data-v="{node.total_us:.3f}" data-x="{x:.9f}" data-w="{w:.9f}" data-d="{d}">'
            f"<title>{escape(tip)}</title>"
            f'<rect x="0" y="0" width="0" height="{ROW - 1}" '
            f'fill="{_colour(node.name, d)}"/>'
            f"<text{light}>{escape(_fit(label, px))}</text></g>"
        )
        cx = x
        kids = []
        for c in node.children:
            kids.append((c, d + 1, cx))
            cx += c.total_us / total
        stack.extend(reversed(kids))
    height = TOP + (depth_max + 1) * ROW + BOTTOM
    return _DOC.format(
        width=WIDTH,
        height=height,
        title=escape(title),
        subtitle=escape(subtitle),
        frames="\n".join(rows),
        row=ROW,
        top=TOP,
        pad=PAD,
        bottom_y=height - 10,
        depth_max=depth_max,
        total=f"{tree.total_us:.3f}",
        search_x=WIDTH - PAD - 240,
        char_px=CHAR_PX,
        top_bar=TOP - 12,
        pad_matched=PAD + 90,
    )


_DOC = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="100%" \
style="height: auto" viewBox="0 0 {width} {height}" \
font-family="system-ui, -apple-system, 'Segoe UI', \
sans-serif" font-size="12">
<style>
.f text {{ pointer-events: none; fill: #15181d; font-size: 12px; }}
.f text.light {{ fill: #d6dbe2; }}
.f:hover rect {{ stroke: #ffffff; stroke-width: 1; cursor: pointer; }}
.hl rect {{ stroke: #ffffff; stroke-width: 1.5; }}
.dim rect {{ fill: #2a3039 !important; }}
.faded rect {{ opacity: 0.72; }}
.btn {{ cursor: pointer; fill: #4c9aff; }}
.muted {{ fill: #8b95a3; }}
#search input {{ width: 200px; font-size: 12px; background: #0f1216; color: #d6dbe2;
  border: 1px solid #323a46; border-radius: 6px; padding: 3px 6px; }}
</style>
<rect x="0" y="0" width="100%" height="100%" fill="#161a20"/>
<rect x="0" y="0" width="100%" height="{top_bar}" fill="#0f1216"/>
<text x="{pad}" y="24" font-size="16" font-weight="600" fill="#e6e9ee">{title}</text>
<text x="{pad}" y="44" class="muted" font-size="12.5">{subtitle}</text>
<text id="reset" class="btn" x="{pad}" y="66" visibility="hidden">Reset zoom</text>
<text id="matched" class="muted" x="{pad_matched}" y="66"></text>
<foreignObject id="search" x="{search_x}" y="12" width="240" height="32">
<div xmlns="http://www.w3.org/1999/xhtml"><input id="q" type="search" \
placeholder="Search (regex)" aria-label="search frames"/></div>
</foreignObject>
<text id="details" class="muted" x="{pad}" y="{bottom_y}"> </text>
<g id="frames" data-total="{total}" data-top="{top}" data-row="{row}" data-pad="{pad}" \
data-depth="{depth_max}">
{frames}
</g>
<script type="text/ecmascript"><![CDATA[
(function () {{
  "use strict";
  var svg = document.documentElement;
  var box = document.getElementById("frames");
  var frames = Array.prototype.slice.call(box.getElementsByClassName("f"));
  var total = parseFloat(box.getAttribute("data-total")) || 1;
  var top = +box.getAttribute("data-top"), row = +box.getAttribute("data-row");
  var pad = +box.getAttribute("data-pad"), depthMax = +box.getAttribute("data-depth");
  var width = svg.viewBox.baseVal.width - 2 * pad;
  var details = document.getElementById("details");
  var reset = document.getElementById("reset");
  var matched = document.getElementById("matched");
  var input = document.getElementById("q");
  function num(g, k) {{ return parseFloat(g.getAttribute("data-" + k)); }}
  function fit(name, px) {{
    var n = Math.floor((px - 8) / {char_px});
    if (n < 3) return "";
    return name.length <= n ? name : name.slice(0, n - 1) + "\u2026";
  }}
  function place(g, x, w) {{
    var r = g.getElementsByTagName("rect")[0], t = g.getElementsByTagName("text")[0];
    var y = top + num(g, "d") * row;
    var px = Math.max(w * width, 0);
    r.setAttribute("x", pad + x * width); r.setAttribute("y", y);
    r.setAttribute("width", px);
    t.setAttribute("x", pad + x * width + 4); t.setAttribute("y", y + row - 6);
    t.textContent = fit(g.getAttribute("data-l"), px);
  }}
  function zoom(target) {{
    var x0 = num(target, "x"), w0 = num(target, "w"), d0 = num(target, "d");
    frames.forEach(function (g) {{
      var x = num(g, "x"), w = num(g, "w"), d = num(g, "d");
      g.classList.remove("faded");
      if (d < d0 && x <= x0 + 1e-12 && x + w >= x0 + w0 - 1e-12) {{
        g.style.display = ""; g.classList.add("faded"); place(g, 0, 1);
      }} else if (d >= d0 && x >= x0 - 1e-12 && x + w <= x0 + w0 + 1e-12 && w0 > 0) {{
        g.style.display = ""; place(g, (x - x0) / w0, w / w0);
      }} else {{
        g.style.display = "none";
      }}
    }});
    reset.setAttribute("visibility", d0 > 0 || w0 < 1 ? "visible" : "hidden");
  }}
  function unzoom() {{
    frames.forEach(function (g) {{
      g.style.display = ""; g.classList.remove("faded"); place(g, num(g, "x"), num(g, "w"));
    }});
    reset.setAttribute("visibility", "hidden");
  }}
  function search(term) {{
    var re = null;
    if (term) {{
      try {{ re = new RegExp(term); }} catch (e) {{ re = null; }}
    }}
    var spans = [];
    frames.forEach(function (g) {{
      var hit = !!term && (re ? re.test(g.getAttribute("data-n"))
                              : g.getAttribute("data-n").indexOf(term) >= 0);
      g.classList.toggle("hl", hit);
      g.classList.toggle("dim", !!term && !hit && num(g, "d") > 0);
      if (hit) spans.push([num(g, "x"), num(g, "x") + num(g, "w")]);
    }});
    // Matched share: union of matched spans, so nested matches are not counted twice.
    spans.sort(function (a, b) {{ return a[0] - b[0]; }});
    var sum = 0, end = -1;
    spans.forEach(function (s) {{
      if (s[0] >= end) {{ sum += s[1] - s[0]; end = s[1]; }}
      else if (s[1] > end) {{ sum += s[1] - end; end = s[1]; }}
    }});
    matched.textContent = term ? "Matched: " + (100 * sum).toFixed(2) + "%" : "";
  }}
  frames.forEach(function (g) {{
    place(g, num(g, "x"), num(g, "w"));
    g.addEventListener("mouseover", function () {{
      var v = num(g, "v");
      var l = g.getAttribute("data-l"), n = g.getAttribute("data-n");
      details.textContent = l + " (" + v.toFixed(0) + " \\u00b5s, " +
        (100 * v / total).toFixed(2) + "%)" + (n !== l ? " \\u00b7 " + n : "");
    }});
    g.addEventListener("mouseout", function () {{ details.textContent = " "; }});
    g.addEventListener("click", function () {{ zoom(g); }});
  }});
  reset.addEventListener("click", unzoom);
  input.addEventListener("input", function () {{ search(input.value); }});
  svg.addEventListener("keydown", function (e) {{
    if ((e.ctrlKey || e.metaKey) && e.key === "f") {{ e.preventDefault(); input.focus(); }}
  }});
  window.mcuprofFlame = {{ zoom: zoom, unzoom: unzoom, search: search }};
}})();
]]></script>
</svg>
"""
