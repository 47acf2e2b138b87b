"""From decoded lines to what a user asks of an S12Z trace: where indirect COFs went
(by function), which interrupts fired and how often, the cycles between them, and how
the trace ended. One definition per number, shared by the CLI, the API and the views:

- ``entries`` of a function: PTIB lines whose destination lies in it (indexed jumps,
  indirect calls and returns); ``share`` is entries / all PTIB lines, in percent. A
  destination at the function's first byte is counted as a ``call``, elsewhere as a
  ``return`` (a return lands after the call instruction, never on a function's start).
- an interrupt is a PTVB line, attributed to its vector and, through the vector table,
  to the ISR it names.
- trace time advances only by what lines carry: each PTVB's stamp and 65,536 cycles per
  TSOVF flag. It is the time the trace accounts for; lines without a stamp add none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..protocol.s12z import (
    LINE_DTYPE,
    TBOVF,
    TERM,
    TSOVF,
    TSOVF_CYCLES,
    BadLine,
    LineEvent,
    LineFormat,
    Lines,
    TraceStats,
)
from .elf import Firmware

MAX_BAD_SHOWN = 20
PTW = int(LineFormat.PTW)
PTIB = int(LineFormat.PTIB)
PTVB = int(LineFormat.PTVB)
PTS = int(LineFormat.PTS)


@dataclass
class Trace:
    """A whole decoded capture: all good lines in one array, the bad ones, the counts."""

    lines: np.ndarray
    stats: TraceStats
    bad: list[BadLine] = field(default_factory=list)

    @classmethod
    def from_events(cls, events: Iterable[LineEvent], stats: TraceStats) -> Trace:
        arrays, bad = [], []
        for e in events:
            if isinstance(e, Lines):
                arrays.append(e.lines)
            else:
                bad.append(e)
        if len(arrays) == 1:
            lines = arrays[0]
        else:
            lines = np.concatenate(arrays) if arrays else np.empty(0, dtype=LINE_DTYPE)
        return cls(lines, stats, bad)

    def cycles(self) -> np.ndarray:
        return carried_cycles(self.lines)

    def cof_counts(self) -> tuple[int, int]:
        """(taken, not taken) over all direct COFs."""
        word = self.lines["cof_word"]
        total = int(self.lines["cofs"].sum(dtype=np.int64))
        # Clear the stop bit (lines without COFs have a word of 0), count the ones below it.
        stop = np.left_shift(np.uint32(1), self.lines["cofs"].astype(np.uint32))
        payload = np.where(word > 0, word ^ stop, np.uint32(0))
        taken = int(_popcount(payload).sum(dtype=np.int64))
        return taken, total - taken


_BYTE_ONES = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words)
    return _BYTE_ONES[words.astype("<u4").view(np.uint8)]


def carried_cycles(lines: np.ndarray) -> np.ndarray:
    """Bus cycles each line adds to trace time (see the module docstring)."""
    fmt = lines["format"]
    flagged = (lines["info"] & TSOVF).astype(bool) & (fmt != PTW)
    stamp = np.where(fmt == PTVB, lines["stamp"].astype(np.int64), 0)
    return stamp + flagged * TSOVF_CYCLES


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def _us(cycles: float | None, bus_hz: float | None) -> float | None:
    if cycles is None or not bus_hz:
        return None
    return cycles * 1e6 / bus_hz


def _spread(values: np.ndarray, bus_hz: float | None) -> dict[str, Any]:
    if not len(values):
        return {"count": 0}
    out: dict[str, Any] = {
        "count": len(values),
        "min": int(values.min()),
        "median": float(np.median(values)),
        "mean": float(values.mean()),
        "max": int(values.max()),
    }
    if bus_hz:
        out["unit_us"] = {k: _us(out[k], bus_hz) for k in ("min", "median", "mean", "max")}
    return out


def analyse(
    trace: Trace,
    firmware: Firmware | None = None,
    bus_hz: float | None = None,
    timeline_limit: int | None = None,
) -> dict[str, Any]:
    """Everything ``mcuprof s12z --json`` prints and the dashboard shows, as plain data.
    ``timeline_limit`` caps the interrupt timeline (None: no timeline at all)."""
    fw = firmware or Firmware.none()
    lines = trace.lines
    st = trace.stats
    fmt = lines["format"]
    cycles = trace.cycles()
    position = np.cumsum(cycles)
    taken, not_taken = trace.cof_counts()

    out: dict[str, Any] = {
        "bytes": st.bytes,
        "lines": dict(st.lines),
        "good_lines": st.good,
        "reserved": st.reserved,
        "malformed": st.malformed,
        "truncated": st.truncated,
        "bad_lines": [
            {"offset": b.offset, "kind": b.kind, "reason": b.reason}
            for b in trace.bad[:MAX_BAD_SHOWN]
        ],
        "cofs": {"taken": taken, "not_taken": not_taken, "total": taken + not_taken},
        "elf": fw.name,
        "bus_hz": bus_hz,
    }
    starts = lines["address"][fmt == PTS].tolist()
    out["starts"] = [{"pc": f"0x{a:06x}", "function": fw.function_name(a)} for a in starts]
    out.update(_destinations(lines["address"][fmt == PTIB], fw))
    out["interrupts"] = _interrupts(lines, fmt, position, fw, bus_hz, timeline_limit)
    codes = (lines["info"][fmt == PTW] >> 4).astype(np.int64)
    found = np.bincount(codes, minlength=16)
    out["errors"] = {str(c): int(n) for c, n in enumerate(found.tolist()) if n}
    total = int(position[-1]) if len(position) else 0
    out["time"] = {"cycles": total, "us": _us(total, bus_hz)}
    out["end"] = _end(lines, fmt, st)
    return out


def _destinations(dest: np.ndarray, fw: Firmware) -> dict[str, Any]:
    total = len(dest)
    addrs, counts = np.unique(dest, return_counts=True)
    index = fw.symbols.lookup(addrs.astype(np.uint32))
    rows = []
    per_function: dict[str, dict[str, Any]] = {}
    for addr, count, i in zip(addrs.tolist(), counts.tolist(), index.tolist(), strict=True):
        func = fw.symbols.functions[i] if i >= 0 else None
        label = func.label if func is not None else f"0x{addr:06x}"
        kind = "unknown" if func is None else "call" if addr == func.start else "return"
        rows.append(
            {
                "address": f"0x{addr:06x}",
                "function": label,
                "offset": None if func is None else addr - func.start,
                "kind": kind,
                "count": count,
                "share": _pct(count, total),
            }
        )
        row = per_function.setdefault(
            label,
            {
                "function": label,
                "start": None if func is None else f"0x{func.start:06x}",
                "entries": 0,
                "calls": 0,
                "returns": 0,
                "destinations": 0,
            },
        )
        row["entries"] += count
        row["destinations"] += 1
        if kind == "call":
            row["calls"] += count
        elif kind == "return":
            row["returns"] += count
    functions = sorted(per_function.values(), key=lambda r: (-r["entries"], r["function"]))
    for row in functions:
        row["share"] = _pct(row["entries"], total)
    rows.sort(key=lambda r: (-r["count"], r["address"]))
    return {"indirect": total, "functions": functions, "destinations": rows}


def _interrupts(
    lines: np.ndarray,
    fmt: np.ndarray,
    position: np.ndarray,
    fw: Firmware,
    bus_hz: float | None,
    timeline_limit: int | None,
) -> dict[str, Any]:
    is_vec = fmt == PTVB
    vectors = lines["vector"][is_vec].astype(np.int64)
    at = position[is_vec]
    total = len(vectors)
    rows = []
    for v in np.unique(vectors).tolist():
        mine = at[vectors == v]
        isr = fw.isr_of(v)
        name = fw.function_name(isr) if isr is not None else f"vector 0x{v * 2:03x}"
        periods = np.diff(mine)
        rows.append(
            {
                "vector": v,
                "offset": f"0x{v * 2:03x}",
                "address": None if fw.vector_base is None else f"0x{fw.vector_base + v * 2:06x}",
                "isr": None if isr is None else f"0x{isr:06x}",
                "name": name,
                "count": len(mine),
                "share": _pct(len(mine), total),
                "period_cycles": float(periods.mean()) if len(periods) else None,
                "period_us": _us(float(periods.mean()), bus_hz) if len(periods) else None,
            }
        )
    rows.sort(key=lambda r: (-r["count"], r["vector"]))
    out: dict[str, Any] = {
        "total": total,
        "vectors": rows,
        "between": _spread(np.diff(at), bus_hz),
    }
    if timeline_limit is not None:
        names = {r["vector"]: r["name"] for r in rows}
        step = max(1, -(-total // timeline_limit)) if timeline_limit else 1
        pick = np.arange(0, total, step)
        out["timeline"] = {
            "decimated_by": step,
            "cycle": at[pick].tolist(),
            "vector": vectors[pick].tolist(),
            "name": [names[v] for v in vectors[pick].tolist()],
            "time_us": None if not bus_hz else [c * 1e6 / bus_hz for c in at[pick].tolist()],
        }
    return out


def _end(lines: np.ndarray, fmt: np.ndarray, st: TraceStats) -> dict[str, Any]:
    flagged = fmt != PTW
    info = lines["info"]
    tbovf = np.flatnonzero(flagged & (info & TBOVF).astype(bool))
    term = np.flatnonzero(flagged & (info & TERM).astype(bool))
    first = min([*tbovf[:1].tolist(), *term[:1].tolist()], default=None)
    return {
        "tbovf": bool(len(tbovf)),
        "tbovf_offset": int(lines["offset"][tbovf[0]]) if len(tbovf) else None,
        "term": bool(len(term)),
        "term_offset": int(lines["offset"][term[0]]) if len(term) else None,
        "tsovf": st.tsovf,
        "lines_after_end": 0 if first is None else len(lines) - first - 1,
        "data_lost": bool(len(tbovf)),
    }
