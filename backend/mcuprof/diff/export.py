"""Differential exports: two-column folded stacks (difffolded.pl's format) and a
standalone differential flame-graph SVG."""

from __future__ import annotations

from html import escape

from .flame import DiffNode, build_tree, colour, max_abs_delta

Folded = dict[str, int] | dict[str, float] | dict[str, int | float]


def render_folded2(base: Folded, new: Folded, normalize: bool = True) -> str:
    """``stack base new`` per line, sorted by stack (byte order), like difffolded.pl.

    With ``normalize`` the base column is scaled to the new capture's total (difffolded.pl
    ``-n``), so captures of different length compare; flamegraph.pl then colours by the
    difference of the two columns. Lines where both are 0 are left out."""
    base_total = sum(v for v in base.values() if v > 0)
    new_total = sum(v for v in new.values() if v > 0)
    scale = new_total / base_total if normalize and base_total > 0 else 1.0
    lines = []
    for stack in sorted(base.keys() | new.keys(), key=lambda s: s.encode("utf-8")):
        b = round(max(base.get(stack, 0), 0) * scale)
        n = round(max(new.get(stack, 0), 0))
        if b or n:
            lines.append(f"{stack} {b} {n}\n")
    return "".join(lines)


_WIDTH = 1200
_FRAME_H = 17
_PAD = 10
_TOP = 44
_FONT = 12
_CHAR_W = _FONT * 0.6  # monospace advance, close enough to decide how much text fits
_MIN_W = 0.3  # frames narrower than this are not drawn (they would be invisible anyway)


def _pct(value: float, total: float) -> str:
    return f"{100.0 * value / total:.2f}%" if total > 0 else "-"


def _tooltip(node: DiffNode, base_total: float, new_total: float) -> str:
    d_pp = node.delta * 100.0
    return (
        f"{node.name}\n"
        f"new:  total {node.new:,.0f} µs ({_pct(node.new, new_total)}), "
        f"self {node.new_self:,.0f} µs ({_pct(node.new_self, new_total)})\n"
        f"base: total {node.base:,.0f} µs ({_pct(node.base, base_total)}), "
        f"self {node.base_self:,.0f} µs ({_pct(node.base_self, base_total)})\n"
        f"self share change: {d_pp:+.2f} points"
    )


def render_svg(
    base: Folded,
    new: Folded,
    title: str = "Differential flame graph",
    subtitle: str = "",
) -> str:
    """A self-contained SVG: widths from ``new``, red = self share grew, blue = shrank.
    Hovering a frame shows both captures' values and the change (SVG ``<title>``), so it
    needs no script and no network."""
    root = build_tree(base, new)
    scale = max_abs_delta(root)
    depth = _max_depth(root)
    height = _TOP + (depth + 1) * _FRAME_H + 2 * _PAD
    usable = _WIDTH - 2 * _PAD
    per_us = usable / root.new if root.new > 0 else 0.0
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" font-family="monospace" '
        f'font-size="{_FONT}">\n',
        "<style>g.f:hover rect{stroke:#000;stroke-width:1}text{pointer-events:none}</style>\n",
        f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="#fdfdfd"/>\n',
        f'<text x="{_WIDTH / 2}" y="20" text-anchor="middle" font-size="16">'
        f"{escape(title)}</text>\n",
        f'<text x="{_WIDTH / 2}" y="36" text-anchor="middle" fill="#555">'
        f"{escape(subtitle or _legend(root))}</text>\n",
    ]
    if root.new <= 0:
        out.append(
            f'<text x="{_WIDTH / 2}" y="{_TOP + 20}" text-anchor="middle">'
            "no samples in the new capture</text>\n"
        )
    else:
        bottom = height - _PAD - _FRAME_H

        todo: list[tuple[DiffNode, float]] = [(root, float(_PAD))]
        while todo:  # iterative: a deep recursion in the firmware must not recurse here
            node, x = todo.pop()
            w = node.new * per_us
            if w < _MIN_W:
                continue
            y = bottom - node.depth * _FRAME_H
            tip = escape(_tooltip(node, root.base, root.new))
            fill = colour(node.delta, scale) if node is not root else "rgb(220,220,220)"
            out.append(
                f'<g class="f"><title>{tip}</title>'
                f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{_FRAME_H - 1}" '
                f'fill="{fill}" rx="2"/>'
            )
            fits = int((w - 6) // _CHAR_W)
            if fits >= 3:
                label = node.name if len(node.name) <= fits else node.name[: fits - 2] + ".."
                out.append(f'<text x="{x + 3:.2f}" y="{y + _FRAME_H - 5}">{escape(label)}</text>')
            out.append("</g>\n")
            cx = x
            for child in sorted(node.children.values(), key=lambda c: c.name):
                if child.new > 0:
                    todo.append((child, cx))
                    cx += child.new * per_us

    out.append("</svg>\n")
    return "".join(out)


def _legend(root: DiffNode) -> str:
    return (
        f"widths: new capture ({root.new:,.0f} µs profiled); colour: self-time share vs "
        f"base ({root.base:,.0f} µs) - red grew, blue shrank"
    )


def _max_depth(root: DiffNode) -> int:
    best = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.new > 0:
            best = max(best, node.depth)
            stack.extend(node.children.values())
    return best
