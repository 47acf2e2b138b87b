"""Frozen events of the S12Z line decoder."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .layout import TBOVF, TERM, TSOVF, TSOVF_CYCLES, LineFormat

# One decoded line. ``address`` is the PTS start PC or the PTIB destination (24 bits),
# ``cof_word`` the raw direct-COF word (stop bit included) and ``cofs`` how many COFs it
# holds; ``vector`` and ``stamp`` are set on PTVB lines only.
LINE_DTYPE = np.dtype(
    [
        ("offset", "<i8"),  # byte offset of the INFO byte in the stream
        ("info", "u1"),
        ("format", "u1"),
        ("cofs", "u1"),
        ("vector", "u1"),
        ("stamp", "<u2"),
        ("cof_word", "<u4"),
        ("address", "<u4"),
    ]
)


@dataclass(frozen=True, slots=True)
class Line:
    """One line, for people and golden tests. Bulk consumers read ``Lines.lines``."""

    offset: int
    format: LineFormat
    info: int
    cofs: tuple[bool, ...] = ()  # oldest first; True = branch taken
    address: int | None = None  # PTS start PC, PTIB destination
    vector: int | None = None  # PTVB: vector address bits 8:1
    stamp: int | None = None  # PTVB: bus cycles since the previous entry
    error: int | None = None  # PTW: INFO[7:4]

    @property
    def tsovf(self) -> bool:
        return self.format != LineFormat.PTW and bool(self.info & TSOVF)

    @property
    def tbovf(self) -> bool:
        return self.format != LineFormat.PTW and bool(self.info & TBOVF)

    @property
    def term(self) -> bool:
        return self.format != LineFormat.PTW and bool(self.info & TERM)

    @property
    def cycles(self) -> int:
        """Bus cycles this line adds to the trace's time: its stamp, plus 65,536 for TSOVF."""
        return (self.stamp or 0) + (TSOVF_CYCLES if self.tsovf else 0)


@dataclass(frozen=True, slots=True, eq=False)
class Lines:
    """Consecutive good lines, in stream order; ``lines`` is a read-only LINE_DTYPE array."""

    lines: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.lines)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Lines):
            return NotImplemented
        return np.array_equal(self.lines, other.lines)

    def __hash__(self) -> int:
        return hash(self.lines.tobytes())

    def __repr__(self) -> str:
        return f"Lines(<{len(self.lines)} lines>)"

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (to_line(row) for row in self.lines)


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that was not decoded: ``reserved`` format, ``malformed`` (INFO[7] set, no
    stop bit, a PTHF not full), or ``truncated`` by the end of the stream. Decoding goes
    on with the byte after it (after the INFO byte alone for a reserved format)."""

    offset: int
    kind: str
    reason: str
    raw: bytes


LineEvent = Lines | BadLine


def to_line(row: np.void) -> Line:
    fmt = LineFormat(int(row["format"]))
    info = int(row["info"])
    n = int(row["cofs"])
    word = int(row["cof_word"])
    cofs = tuple(bool(word >> i & 1) for i in range(n - 1, -1, -1))
    if fmt == LineFormat.PTW:
        return Line(int(row["offset"]), fmt, info, error=info >> 4)
    address = int(row["address"]) if fmt in (LineFormat.PTS, LineFormat.PTIB) else None
    vector = stamp = None
    if fmt == LineFormat.PTVB:
        vector, stamp = int(row["vector"]), int(row["stamp"])
    return Line(int(row["offset"]), fmt, info, cofs, address, vector, stamp)


__all__ = ["LINE_DTYPE", "BadLine", "Line", "LineEvent", "Lines", "to_line"]
