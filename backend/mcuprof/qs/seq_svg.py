"""The -g sequence diagram as plain SVG: the same items on the same lanes as QSPY's
text (sequence.SeqLanes decides both), drawn with lines, arrows and labels. No script,
no external references; every name is escaped (control characters as \\xNN, then XML
entities), and labels too long for a lane are cut with "…", the full text in a tooltip.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..console import for_terminal
from ..markup import escape
from .sequence import SYSTEM, FlowItem, Placed, SeqLanes

# Rows kept for one SVG (the height is known only at the end): past this many, rows
# are counted, not drawn, and the count is written at the foot of the drawing.
SVG_ROWS_MAX = 20_000

LANE_PX = 170
ROW_PX = 18
TS_PX = 96  # the timestamp column
TOP_PX = 44  # the name boxes
RIGHT_PX = 100  # room for labels right of the last lane (self-posts, publishes)
CHAR_PX = 7.2  # 12 px monospace
LABEL_CHARS = int((LANE_PX - 24) / CHAR_PX)
_STYLE = (
    "text{font:12px monospace;fill:#1d2330}.ts{fill:#6b7280}.lane{stroke:#9aa3b2}"
    ".sys{stroke:#9aa3b2;stroke-dasharray:4 3}.box{fill:#eef2f7;stroke:#4b5563}"
    ".post{stroke:#1d4ed8;fill:none}.attempt{stroke:#b45309;fill:none;stroke-dasharray:5 3}"
    ".lifo{stroke:#7c3aed;fill:none}.pub{stroke:#059669;stroke-dasharray:2 3}"
    ".star{fill:#059669}.state{fill:#fef3c7;stroke:#b45309}.note{font-style:italic}"
    ".tick{stroke:#9ca3af;stroke-dasharray:1 3}"
)


def _safe(text: str) -> str:
    """XML character data for a name from the target or the command line."""
    return escape(for_terminal(text))


def _label(text: str, x: float, y: float, anchor: str = "start", cls: str = "") -> str:
    """A label cut to a lane's width, with the whole text as its tooltip when cut."""
    shown = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    title = f"<title>{_safe(text)}</title>" if shown != text else ""
    css = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.0f}" y="{y:.0f}" text-anchor="{anchor}"{css}>{title}{_safe(shown)}</text>'


class SeqSvg:
    """Feed items; ``finish`` gives the SVG. Keeps at most SVG_ROWS_MAX rows."""

    def __init__(self, names: Sequence[str]) -> None:
        self.lanes = SeqLanes(names)
        self.names = self.lanes.names
        self.rows: list[str] = []
        self.dropped = 0  # rows past SVG_ROWS_MAX

    def x(self, lane: int) -> float:
        return TS_PX + LANE_PX * lane + LANE_PX / 2

    def feed(self, item: FlowItem) -> None:
        p = self.lanes.place(item)
        if p is None:
            return
        if len(self.rows) >= SVG_ROWS_MAX:
            self.dropped += 1
            return
        y = TOP_PX + ROW_PX * (len(self.rows) + 1)
        ts = "" if p.ts is None else f'<text x="4" y="{y + 4}" class="ts">{p.ts:010d}</text>'
        self.rows.append(ts + self._shape(p, y))

    def _shape(self, p: Placed, y: int) -> str:
        a, b = self.x(p.lane), self.x(p.dst)
        if p.shape == "arrow" and p.lane != p.dst:
            cls = "attempt" if p.attempt else "post"
            tip = b - 6 if b > a else b + 6
            head = f'<path d="M{tip:.0f},{y - 4}L{b:.0f},{y}L{tip:.0f},{y + 4}" class="{cls}"/>'
            line = f'<line x1="{a:.0f}" y1="{y}" x2="{b:.0f}" y2="{y}" class="{cls}"/>'
            anchor, lx = ("start", a + 6) if b > a else ("end", a - 6)
            return line + head + _label(p.label, lx, y - 3, anchor)
        if p.shape in ("arrow", "lifo"):  # to itself: a loop on the right of the lane
            cls = "lifo" if p.shape == "lifo" else ("attempt" if p.attempt else "post")
            loop = f'<path d="M{a:.0f},{y - 5}h14v10h-14" class="{cls}"/>'
            return loop + _label(p.label, a + 18, y + 4)
        if p.shape == "publish":
            right = self.x(len(self.names) - 1) + LANE_PX / 2
            line = f'<line x1="{TS_PX}" y1="{y}" x2="{right:.0f}" y2="{y}" class="pub"/>'
            star = f'<circle cx="{a:.0f}" cy="{y}" r="4" class="star"/>'
            return line + star + _label(p.label, a + 8, y - 3)
        if p.shape == "tick":
            right = self.x(len(self.names) - 1) + LANE_PX / 2
            line = f'<line x1="4" y1="{y}" x2="{right:.0f}" y2="{y}" class="tick"/>'
            return line + _label(p.label, 4, y - 3, cls="ts")
        if p.shape == "state":
            w = min(len(p.label), LABEL_CHARS) * CHAR_PX + 12
            box = (
                f'<rect x="{a - w / 2:.0f}" y="{y - 8}" width="{w:.0f}" height="15" rx="6" '
                'class="state"/>'
            )
            return box + _label(p.label, a, y + 4, "middle")
        return _label(f"({p.label})", a, y + 4, "middle", "note")

    def finish(self) -> str:
        n = len(self.names)
        width = TS_PX + LANE_PX * n + RIGHT_PX
        foot = TOP_PX + ROW_PX * (len(self.rows) + 2)
        height = foot + (ROW_PX if self.dropped else 0)
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">',
            f"<style>{_STYLE}</style>",
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        ]
        for i, name in enumerate(self.names):
            x = self.x(i)
            cls = "sys" if name == SYSTEM else "lane"
            out.append(
                f'<line x1="{x:.0f}" y1="{TOP_PX - 8}" x2="{x:.0f}" y2="{foot}" class="{cls}"/>'
            )
            out.append(
                f'<rect x="{x - LANE_PX / 2 + 6:.0f}" y="6" width="{LANE_PX - 12}" height="26" '
                f'class="box"><title>{_safe(name)}</title></rect>'
            )
            out.append(_label(name, x, 24, "middle"))
        out += self.rows
        if self.dropped:
            note = f"{self.dropped} more rows not drawn (at most {SVG_ROWS_MAX} rows)"
            out.append(f'<text x="4" y="{foot + 12}" class="ts">{escape(note)}</text>')
        out.append("</svg>")
        return "\n".join(out) + "\n"


def seq_svg(items: Iterable[FlowItem], names: Sequence[str]) -> tuple[str, int]:
    """The SVG for ``items``, and how many rows were past SVG_ROWS_MAX."""
    svg = SeqSvg(names)
    for item in items:
        svg.feed(item)
    return svg.finish(), svg.dropped
