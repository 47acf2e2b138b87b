"""Queue and pool margins over time from decoded QS records: pure functions, no I/O.

Event queues report their free entries on every post (with the minimum so far, QP's
low-water mark) and get; memory pools on every get (with the minimum) and put. Each
sample keeps the target timestamp, so a view can plot free entries over time with the
low-water mark beside them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..protocol.qs import QSEvent, Record
from .text import Names, names_for

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
SAMPLE_RECORDS = tuple(_SAMPLES)


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


def margins_columns(chunks: Iterable[tuple[Any, Any]]) -> list[Margin]:
    """``margins`` of chunks decoded by ``QSDecoder.feed_select(data, SAMPLE_RECORDS)``,
    given as (Selected, the decoder's dictionaries after the chunk), in stream order."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("index", "obj", "ts", "free", "least")}
    firsts: dict[int, tuple[int, Names]] = {}  # object -> (index, names) of its first sample
    for selected, after in chunks:
        for config, tables in selected.segments:
            for rec, table in tables.items():
                f = table.fields
                index = table.index.astype(np.int64)
                obj = f["obj"].astype(np.uint64)
                kind, has_min = _SAMPLES[rec]
                least = np.full(len(index), -1, dtype=np.int64)
                if has_min and rec not in _ATTEMPTS:
                    least = f["min"].astype(np.int64)
                for name, col in zip(cols, (index, obj, f["ts"], f["free"], least), strict=True):
                    cols[name].append(col.astype(np.int64) if name != "obj" else col)
                _first_samples(firsts, selected, after, config, index, obj, kind)
    if not firsts:
        return []
    index, obj, ts, free, least = (np.concatenate(cols[k]) for k in cols)
    by_object = np.lexsort((index, obj))
    obj = obj[by_object]
    edges = np.flatnonzero(np.r_[True, obj[1:] != obj[:-1]])
    stops = np.r_[edges[1:], len(obj)]
    out = []
    for a, b in sorted(zip(edges.tolist(), stops.tolist(), strict=True),
                       key=lambda ab: firsts[int(obj[ab[0]])][0]):  # fmt: skip
        rows = by_object[a:b]
        _, names, kind = firsts[int(obj[a])]
        m = Margin(names.obj(int(obj[a])), kind, ts[rows].tolist(), free[rows].tolist())
        low = least[rows]
        low = low[low >= 0]
        m.low_water = int(low.min()) if len(low) else None
        out.append(m)
    return out


def _first_samples(firsts, selected, after, config, index, obj, kind) -> None:
    """Remember, per object, its first sample's index, the names it had then, its kind."""
    uniq, first = np.unique(obj, return_index=True)
    epoch, epochs = selected.dictionaries_at(index[first], after)
    for o, i, e in zip(uniq.tolist(), index[first].tolist(), epoch.tolist(), strict=True):
        if o not in firsts or i < firsts[o][0]:
            names = Names(SimpleNamespace(dicts=epochs[e], config=config))  # type: ignore[arg-type]
            firsts[o] = (i, names, kind)
