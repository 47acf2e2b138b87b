"""``analyse`` a piece at a time: an S12Z trace's figures from its line batches as they
are decoded, in memory bounded by configuration, whatever the trace's length.

What is held: counts per 24-bit destination (one uint32 array, 64 MiB at most, made at the
first PTIB line, its pages touched only where destinations are), three counters per
interrupt vector, the first rows of what is listed, the interrupt timeline's picks, and the
gaps between interrupts for their median: in memory up to MAX_HELD_GAPS, then in a
temporary file from which the median is selected 16 bits at a time. The figures are those
of the whole-trace computation (``analysis.analyse`` is this, fed once).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..protocol.s12z import TBOVF, TERM, BadLine, LineDecoder, LineEvent, Lines, TraceStats
from .destinations import MAX_ROWS, destination_rows
from .elf import Firmware
from .gaps import Gaps
from .measures import PTIB, PTS, PTVB, PTW, carried_cycles, cof_counts, pct, us

MAX_BAD_SHOWN = 20
# Trace bytes decoded at a time: garbage costs tens of bytes a byte while it is decoded
# (a line each), so this keeps the decoder's share of the peak small (docs/limits.md).
TRACE_CHUNK = 1 << 20
_ADDRESSES = 1 << 24


def analyse_chunks(
    chunks: Iterable[bytes],
    firmware: Firmware | None = None,
    bus_hz: float | None = None,
    timeline: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """``analyse`` of a trace read a piece at a time (see ``Analysis``)."""
    decoder = LineDecoder()
    digest = Analysis(timeline)
    for chunk in chunks:
        digest.feed(decoder.feed(chunk))
    digest.feed(decoder.close())
    return digest.result(decoder.stats, firmware, bus_hz)


class Analysis:
    """Feed decoded events in stream order, then ``result``. ``timeline`` is (the number
    of interrupts the trace holds, the most points wanted), or None for no timeline: the
    picks are every k-th interrupt, k = ceil(total / points), so the total must be known
    before (a stored session's import counted it)."""

    def __init__(self, timeline: tuple[int, int] | None = None) -> None:
        self.bad: list[BadLine] = []
        self.taken = self.cofs = 0
        self.starts: list[int] = []
        self.starts_seen = 0
        self._dest: np.ndarray | None = None
        self.indirect = 0
        self._vec_count = np.zeros(256, np.int64)
        self._vec_first = np.zeros(256, np.int64)
        self._vec_last = np.zeros(256, np.int64)
        self.interrupts = 0
        self.gaps = Gaps()
        self._last_at: int | None = None
        self._errors = np.zeros(16, np.int64)
        self.cycles = 0
        self.good = 0
        self._tbovf: tuple[int, int] | None = None  # (good-line index, byte offset)
        self._term: tuple[int, int] | None = None
        self._step = None
        if timeline is not None:
            total, points = timeline
            self._step = max(1, -(-total // points)) if points else 1
        self._picks: list[tuple[np.ndarray, np.ndarray]] = []

    def feed(self, events: list[LineEvent]) -> None:
        for e in events:
            if isinstance(e, Lines):
                self.lines(e.lines)
            elif len(self.bad) < MAX_BAD_SHOWN:
                self.bad.append(e)

    def lines(self, lines: np.ndarray) -> None:
        if not len(lines):
            return
        fmt = lines["format"]
        position = np.cumsum(carried_cycles(lines))
        position += self.cycles
        self.cycles = int(position[-1])
        taken, not_taken = cof_counts(lines)
        self.taken += taken
        self.cofs += taken + not_taken
        pts = lines["address"][fmt == PTS]
        self.starts_seen += len(pts)
        self.starts += pts[: max(0, MAX_ROWS - len(self.starts))].tolist()
        self._destinations(lines["address"][fmt == PTIB])
        is_vec = fmt == PTVB
        self._interrupts(lines["vector"][is_vec].astype(np.int64), position[is_vec])
        codes = (lines["info"][fmt == PTW] >> 4).astype(np.int64)
        self._errors += np.bincount(codes, minlength=16)
        self._ends(lines, fmt)
        self.good += len(lines)

    def _destinations(self, dest: np.ndarray) -> None:
        if not len(dest):
            return
        if self._dest is None:
            self._dest = np.zeros(_ADDRESSES, np.uint32)  # pages given as they are touched
        addrs, counts = np.unique(dest, return_counts=True)
        self._dest[addrs] += counts.astype(np.uint32)
        self.indirect += len(dest)

    def _interrupts(self, vectors: np.ndarray, at: np.ndarray) -> None:
        n = len(vectors)
        if not n:
            return
        if self._last_at is not None:
            self.gaps.add(np.diff(at, prepend=self._last_at))
        else:
            self.gaps.add(np.diff(at))
        self._last_at = int(at[-1])
        seen, first, counts = np.unique(vectors, return_index=True, return_counts=True)
        last = n - 1 - np.unique(vectors[::-1], return_index=True)[1]
        new = self._vec_count[seen] == 0
        self._vec_first[seen[new]] = at[first[new]]
        self._vec_last[seen] = at[last]
        self._vec_count[seen] += counts
        if self._step is not None:
            pick = np.flatnonzero((np.arange(n) + self.interrupts) % self._step == 0)
            self._picks.append((at[pick], vectors[pick]))
        self.interrupts += n

    def _ends(self, lines: np.ndarray, fmt: np.ndarray) -> None:
        flagged = fmt != PTW
        info = lines["info"]
        if self._tbovf is None:
            found = np.flatnonzero(flagged & (info & TBOVF).astype(bool))
            if len(found):
                self._tbovf = (self.good + int(found[0]), int(lines["offset"][found[0]]))
        if self._term is None:
            found = np.flatnonzero(flagged & (info & TERM).astype(bool))
            if len(found):
                self._term = (self.good + int(found[0]), int(lines["offset"][found[0]]))

    # ------------------------------------------------------------ the figures

    def result(
        self, st: TraceStats, firmware: Firmware | None = None, bus_hz: float | None = None
    ) -> dict[str, Any]:
        """Everything ``mcuprof s12z --json`` prints and the dashboard shows."""
        fw = firmware or Firmware.none()
        out: dict[str, Any] = {
            "bytes": st.bytes,
            "lines": dict(st.lines),
            "good_lines": st.good,
            "reserved": st.reserved,
            "malformed": st.malformed,
            "truncated": st.truncated,
            "bad_lines": [
                {"offset": b.offset, "kind": b.kind, "reason": b.reason} for b in self.bad
            ],
            "cofs": {"taken": self.taken, "not_taken": self.cofs - self.taken, "total": self.cofs},
            "elf": fw.name,
            "bus_hz": bus_hz,
        }
        out["starts"] = [{"pc": f"0x{a:06x}", "function": fw.function_name(a)} for a in self.starts]
        if self.starts_seen > len(self.starts):
            out["starts_more"] = self.starts_seen - len(self.starts)
        out.update(destination_rows(self._dest, self.indirect, fw))
        out["interrupts"] = self._interrupt_rows(fw, bus_hz)
        out["errors"] = {str(c): int(n) for c, n in enumerate(self._errors.tolist()) if n}
        out["time"] = {"cycles": self.cycles, "us": us(self.cycles, bus_hz)}
        out["end"] = self._end(st)
        return out

    def _interrupt_rows(self, fw: Firmware, bus_hz: float | None) -> dict[str, Any]:
        total = self.interrupts
        rows = []
        for v in np.flatnonzero(self._vec_count).tolist():
            count = int(self._vec_count[v])
            isr = fw.isr_of(v)
            base = fw.vector_base
            name = fw.function_name(isr) if isr is not None else f"vector 0x{v * 2:03x}"
            # The mean of the periods is the span over their number (exact below 2**53).
            span = int(self._vec_last[v] - self._vec_first[v])
            period = span / (count - 1) if count > 1 else None
            rows.append(
                {
                    "vector": v,
                    "offset": f"0x{v * 2:03x}",
                    "address": None if base is None else f"0x{base + v * 2:06x}",
                    "isr": None if isr is None else f"0x{isr:06x}",
                    "name": name,
                    "count": count,
                    "share": pct(count, total),
                    "period_cycles": period,
                    "period_us": us(period, bus_hz) if period is not None else None,
                }
            )
        rows.sort(key=lambda r: (-r["count"], r["vector"]))
        out: dict[str, Any] = {"total": total, "vectors": rows, "between": self.gaps.spread(bus_hz)}
        if self._step is not None:
            names = {r["vector"]: r["name"] for r in rows}
            at = [int(x) for a, _ in self._picks for x in a.tolist()]
            vec = [int(x) for _, v in self._picks for x in v.tolist()]
            out["timeline"] = {
                "decimated_by": self._step,
                "cycle": at,
                "vector": vec,
                "name": [names[v] for v in vec],
                "time_us": None if not bus_hz else [c * 1e6 / bus_hz for c in at],
            }
        return out

    def _end(self, st: TraceStats) -> dict[str, Any]:
        ends = [e for e in (self._tbovf, self._term) if e is not None]
        first = min(e[0] for e in ends) if ends else None
        return {
            "tbovf": self._tbovf is not None,
            "tbovf_offset": None if self._tbovf is None else self._tbovf[1],
            "term": self._term is not None,
            "term_offset": None if self._term is None else self._term[1],
            "tsovf": st.tsovf,
            "lines_after_end": 0 if first is None else self.good - first - 1,
            "data_lost": self._tbovf is not None,
        }
