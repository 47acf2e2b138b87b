"""Queue and pool margins over time from decoded QS records: pure functions, no I/O.

Event queues report their free entries on every post (with the minimum so far, QP's
low-water mark) and get; memory pools on every get (with the minimum) and put. Each
sample keeps the target timestamp, so a view can plot free entries over time with the
low-water mark beside them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..protocol.qs import QSEvent, Record
from .text import names_for

# record id -> (kind, has a minimum field)
_SAMPLES = {
    14: ("queue", True),  # QS_QF_ACTIVE_POST: free, min
    45: ("queue", True),  # QS_QF_ACTIVE_POST_ATTEMPT: free, margin
    15: ("queue", True),  # QS_QF_ACTIVE_POST_LIFO
    16: ("queue", False),  # QS_QF_ACTIVE_GET: free
    19: ("queue", True),  # QS_QF_EQUEUE_POST
    20: ("queue", True),
    46: ("queue", True),
    21: ("queue", False),
    24: ("pool", True),  # QS_QF_MPOOL_GET: free, min
    47: ("pool", True),  # QS_QF_MPOOL_GET_ATTEMPT: free, margin
    25: ("pool", False),  # QS_QF_MPOOL_PUT: free
}
# Attempts report the margin asked for, not a minimum.
_ATTEMPTS = {45, 46, 47}


@dataclass
class Margin:
    """One queue or pool: samples of (timestamp, free) and the lowest minimum seen."""

    name: str
    kind: str
    times: list[int] = field(default_factory=list)
    free: list[int] = field(default_factory=list)
    low_water: int | None = None

    @property
    def lowest_free(self) -> int:
        return min(self.free)


def margin_sample(e: Record) -> tuple[str, int, int | None] | None:
    """(kind, free, minimum or None) for a queue or pool record, else None. One
    definition for `mcuprof qs margins` and the dashboard's QS monitor."""
    spec = _SAMPLES.get(e.rec)
    if spec is None:
        return None
    kind, has_min = spec
    names, values = e.names, e.values
    least = None
    if has_min and e.rec not in _ATTEMPTS:
        least = values[names.index("min")]
    return kind, values[names.index("free")], least


def margins(events: Iterable[QSEvent]) -> list[Margin]:
    """Per object, in order of first appearance."""
    out: dict[int, Margin] = {}
    for e in events:
        if e.__class__ is not Record:
            continue
        sample = margin_sample(e)
        if sample is None:
            continue
        kind, free, least = sample
        obj = e.fields["obj"]
        m = out.get(obj)
        if m is None:
            m = out[obj] = Margin(names_for(e).obj(obj), kind)
        m.times.append(e.timestamp)
        m.free.append(free)
        if least is not None:
            m.low_water = least if m.low_water is None else min(m.low_water, least)
    return list(out.values())
