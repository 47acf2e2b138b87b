"""Standalone interactive flame graph (SVG with inline script, no network), in the
manner of flamegraph.pl: hover for name/time/%, click to zoom, reset, and a search box
that highlights matches and shows the matched share."""

from __future__ import annotations

import hashlib
from xml.sax.saxutils import escape, quoteattr

from ..profile import Profile, TreeNode, Window, prune
from ..profile.aggregate import path_ticks

WIDTH = 1200
ROW = 16
TOP = 64
BOTTOM = 28
PAD = 10
CHAR_PX = 7.0


def _tree(profile: Profile, window: Window) -> TreeNode:
    """Frames merged by name path, as flamegraph.pl merges folded stacks; totals in µs.
    Built from the interned paths in one pass each way, whatever the depth or fan-out."""
    to_us = 1e6 / profile.timer_freq
    root = TreeNode("all", "all", -2)
    with profile.lock:
        names, ticks = path_ticks(profile, window)
    self_t = ticks.tolist()
    total = list(self_t)
    parents = [names.parent(i) for i in range(len(total))]
    for pid in range(len(total) - 1, -1, -1):
        if parents[pid] >= 0:
            total[parents[pid]] += total[pid]
    nodes: dict[int, TreeNode] = {}
    for pid in range(len(total)):
        if total[pid] <= 0:
            continue
        name = _clean(names.name(pid))
        node = nodes[pid] = TreeNode(name, name, pid, total[pid] * to_us, self_t[pid] * to_us)
        up = parents[pid]
        (root if up < 0 else nodes[up]).children.append(node)
        if up < 0:
            root.total_us += node.total_us
    return root


def _clean(name: str) -> str:
    # XML 1.0 cannot carry most control characters, even escaped.
    return "".join(c if c >= " " or c in "\t" else "?" for c in name)


def _colour(name: str) -> str:
    h = hashlib.blake2s(name.encode("utf-8"), digest_size=3).digest()
    return f"rgb({205 + h[0] % 50},{80 + h[1] % 130},{h[2] % 60})"


def _fit(name: str, width_px: float) -> str:
    n = int((width_px - 6) / CHAR_PX)
    if n < 3:
        return ""
    return name if len(name) <= n else name[: n - 2] + ".."


def render(
    profile: Profile,
    title: str = "Flame Graph",
    window: Window = None,
    max_nodes: int = 3000,
) -> str:
    tree = prune(_tree(profile, window), max_nodes=max_nodes, min_fraction=0.1 / WIDTH)
    total = tree.total_us or 1.0
    rows: list[str] = []
    depth_max = 0
    # (node, depth, x fraction)
    stack: list[tuple[TreeNode, int, float]] = [(tree, 0, 0.0)]
    inner = WIDTH - 2 * PAD
    while stack:
        node, d, x = stack.pop()
        depth_max = max(depth_max, d)
        w = node.total_us / total
        pct = 100.0 * node.total_us / total
        tip = f"{node.name} ({node.total_us:,.0f} µs, {pct:.2f}%)"
        px = w * inner
        rows.append(
            f'<g class="f" data-n={quoteattr(node.name)} data-v="{node.total_us:.3f}" '
            f'data-x="{x:.9f}" data-w="{w:.9f}" data-d="{d}">'
            f"<title>{escape(tip)}</title>"
            f'<rect x="0" y="0" width="0" height="{ROW - 1}" rx="2" ry="2" '
            f'fill="{_colour(node.name)}"/>'
            f"<text>{escape(_fit(node.name, px))}</text></g>"
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
        mid=WIDTH / 2,
        frames="\n".join(rows),
        row=ROW,
        top=TOP,
        pad=PAD,
        bottom_y=height - 10,
        depth_max=depth_max,
        total=f"{tree.total_us:.3f}",
        search_x=WIDTH - PAD - 240,
    )


_DOC = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" \
viewBox="0 0 {width} {height}" font-family="Verdana, sans-serif" font-size="12">
<style>
.f text {{ pointer-events: none; fill: #000; font-size: 11px; }}
.f:hover rect {{ stroke: #000; stroke-width: 0.5; cursor: pointer; }}
.hl rect {{ fill: rgb(230,0,230) !important; }}
.faded rect {{ opacity: 0.5; }}
.btn {{ cursor: pointer; fill: #246; }}
#search input {{ width: 150px; font-size: 11px; }}
</style>
<rect x="0" y="0" width="100%" height="100%" fill="#f8f8f0"/>
<text x="{mid}" y="20" text-anchor="middle" font-size="16">{title}</text>
<text id="reset" class="btn" x="{pad}" y="40" visibility="hidden">Reset Zoom</text>
<text id="matched" x="{pad}" y="56"></text>
<foreignObject id="search" x="{search_x}" y="26" width="240" height="28">
<div xmlns="http://www.w3.org/1999/xhtml"><input id="q" type="search" \
placeholder="Search (regex)" aria-label="search frames"/></div>
</foreignObject>
<text id="details" x="{pad}" y="{bottom_y}"> </text>
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
  var width = +svg.getAttribute("width") - 2 * pad;
  var details = document.getElementById("details");
  var reset = document.getElementById("reset");
  var matched = document.getElementById("matched");
  var input = document.getElementById("q");
  function num(g, k) {{ return parseFloat(g.getAttribute("data-" + k)); }}
  function fit(name, px) {{
    var n = Math.floor((px - 6) / 7);
    if (n < 3) return "";
    return name.length <= n ? name : name.slice(0, n - 2) + "..";
  }}
  function place(g, x, w) {{
    var r = g.getElementsByTagName("rect")[0], t = g.getElementsByTagName("text")[0];
    var y = top + (depthMax - num(g, "d")) * row;
    var px = Math.max(w * width, 0);
    r.setAttribute("x", pad + x * width); r.setAttribute("y", y);
    r.setAttribute("width", px);
    t.setAttribute("x", pad + x * width + 3); t.setAttribute("y", y + row - 4);
    t.textContent = fit(g.getAttribute("data-n"), px);
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
      details.textContent = g.getAttribute("data-n") + " (" + v.toFixed(0) + " \\u00b5s, " +
        (100 * v / total).toFixed(2) + "%)";
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
