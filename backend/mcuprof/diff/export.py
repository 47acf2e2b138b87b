"""Differential exports: two-column folded stacks (difffolded.pl's format) and a
standalone differential flame-graph SVG, coloured as the page's Compare tab colours
(frontend/js/diff.js verdictColour): by the gate's verdict and its change in the metric
the gate used."""

from __future__ import annotations

from html import escape
from typing import Any

from ..names import short_label
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


INCONCLUSIVE_COLOUR = "rgb(240,200,90)"  # diff.js INCONCLUSIVE_COLOUR


def gate_scale(report: dict[str, Any]) -> float:
    """The colour scale in % of the gate's change (diff.js gateScale): full at twice the
    threshold, or at the largest regression, so a change just past the threshold is red."""
    changes = [
        abs(r["change_pct"] or 0.0) for r in report["verdicts"] if r["verdict"] == "regressed"
    ]
    return max([2 * (report["threshold_pct"] or 10.0), *changes])


def verdict_colour(v: dict[str, Any] | None, scale: float) -> str:
    """A frame's fill from its function's verdict (diff.js verdictColour): regressed red
    by its change, shrunk past the threshold blue, inconclusive amber, the rest pale."""
    if v is None:
        return colour(0.0, scale)
    if v["verdict"] == "inconclusive":
        return INCONCLUSIVE_COLOUR
    change = v["change_pct"] or 0.0
    if v["verdict"] == "regressed":
        return colour(max(change, 1e-9), scale)
    if (v["reason"] or "").startswith("shrank"):
        return colour(min(change, -1e-9), scale)
    return colour(0.0, scale)


def gate_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each verdict by the gate's key and by the name the frames carry, the full
    signature (a static's key adds its file); two statics of one name: a regression
    shows (as diff.js does)."""
    out: dict[str, dict[str, Any]] = {}
    for r in report["verdicts"]:
        out[r["key"]] = r
    for r in report["verdicts"]:
        name = r.get("signature", r["name"])
        if name not in out or r["verdict"] == "regressed":
            out[name] = r
    return out


def basis_text(report: dict[str, Any]) -> str:
    what = f"{report['metric']} time per call"
    basis = report.get("basis") or "mean"
    if basis == "share":
        return f"{report['metric']} time share"
    return f"{basis} of the {what}" if basis.startswith("p") else what


def _shown(name: str) -> str:
    """A frame's display name, as every view's (its folded name is the full signature)."""
    return short_label(name)


def _tooltip(
    node: DiffNode, base_total: float, new_total: float, gate: dict[str, Any] | None = None
) -> str:
    d_pp = node.delta * 100.0
    text = (
        f"{_shown(node.name)}\n"
        + (f"{node.name}\n" if _shown(node.name) != node.name else "")
        + f"new:  total {node.new:,.0f} µs ({_pct(node.new, new_total)}), "
        f"self {node.new_self:,.0f} µs ({_pct(node.new_self, new_total)})\n"
        f"base: total {node.base:,.0f} µs ({_pct(node.base, base_total)}), "
        f"self {node.base_self:,.0f} µs ({_pct(node.base_self, base_total)})\n"
        f"self share change: {d_pp:+.2f} points"
    )
    v = None if gate is None else gate["of"].get(node.name)
    if v is not None:
        change = "—" if v["change_pct"] is None else f"{v['change_pct']:+.1f}%"
        text += f"\n{v['verdict']}: {change} ({gate['basis']}); {v['reason']}"
    return text


def render_svg(
    base: Folded,
    new: Folded,
    title: str = "Differential flame graph",
    subtitle: str = "",
    report: dict[str, Any] | None = None,
) -> str:
    """A self-contained SVG: widths from ``new``. With the gate's ``report``
    (diff/gated.py) each frame is coloured by its function's verdict and change in the
    gate's metric (verdict_colour); without one, red = self share grew, blue = shrank.
    Hovering a frame shows both captures' values and the change (SVG ``<title>``), so it
    needs no script and no network."""
    root = build_tree(base, new)
    gate = None
    if report is not None:
        gate = {"of": gate_of(report), "scale": gate_scale(report), "basis": basis_text(report)}

    def fill_of(node: DiffNode) -> str:
        if node is root:
            return "rgb(220,220,220)"
        if gate is not None:
            return verdict_colour(gate["of"].get(node.name), gate["scale"])
        return colour(node.delta, scale)

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
        f"{escape(subtitle or _legend(root, gate))}</text>\n",
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
            tip = escape(_tooltip(node, root.base, root.new, gate))
            fill = fill_of(node)
            out.append(
                f'<g class="f"><title>{tip}</title>'
                f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{_FRAME_H - 1}" '
                f'fill="{fill}" rx="2"/>'
            )
            fits = int((w - 6) // _CHAR_W)
            if fits >= 3:
                name = _shown(node.name)  # the display name; the tooltip has the signature
                label = name if len(name) <= fits else name[: fits - 2] + ".."
                out.append(f'<text x="{x + 3:.2f}" y="{y + _FRAME_H - 5}">{escape(label)}</text>')
            out.append("</g>\n")
            cx = x
            for child in sorted(node.children.values(), key=lambda c: c.name):
                if child.new > 0:
                    todo.append((child, cx))
                    cx += child.new * per_us

    out.append("</svg>\n")
    return "".join(out)


def _legend(root: DiffNode, gate: dict[str, Any] | None = None) -> str:
    if gate is not None:
        return (
            f"widths: new capture ({root.new:,.0f} µs profiled); colour: the gate's verdict "
            f"on the {gate['basis']} - red regressed, blue shrank, amber inconclusive"
        )
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
