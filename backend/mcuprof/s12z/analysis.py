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

from ..protocol.s12z import LINE_DTYPE, BadLine, LineEvent, Lines, TraceStats
from .digest import MAX_BAD_SHOWN, Analysis
from .elf import Firmware
from .measures import PTVB, carried_cycles, cof_counts

__all__ = ["MAX_BAD_SHOWN", "Analysis", "Trace", "analyse", "carried_cycles"]


@dataclass
class Trace:
    """A whole decoded capture: all good lines in one array, the bad ones, the counts.
    For small traces and tests; ``Analysis`` takes a trace a piece at a time."""

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
        return cof_counts(self.lines)


def analyse(
    trace: Trace,
    firmware: Firmware | None = None,
    bus_hz: float | None = None,
    timeline_limit: int | None = None,
) -> dict[str, Any]:
    """Everything ``mcuprof s12z --json`` prints and the dashboard shows, as plain data.
    ``timeline_limit`` caps the interrupt timeline (None: no timeline at all). The same
    figures as ``Analysis`` fed the trace a piece at a time: it is that, fed once."""
    timeline = None
    if timeline_limit is not None:
        timeline = (int((trace.lines["format"] == PTVB).sum()), timeline_limit)
    digest = Analysis(timeline)
    digest.lines(trace.lines)
    digest.feed(trace.bad)
    return digest.result(trace.stats, firmware, bus_hz)
