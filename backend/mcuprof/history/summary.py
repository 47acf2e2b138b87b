"""A session's per-function summary: what history reads instead of the raw capture.

It is the figures every view shows (``profile.function_stats``), kept as JSON in the
store when a capture is stored and, for sessions stored before summaries existed, the
first time history asks. A summary is keyed by ``VERSION``: a change to what it holds
bumps it, and older ones are computed again on demand.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..profile import Profile
    from ..store import Store

VERSION = 2  # 2: the percentiles of profile/distribution.py

# FunctionStat's fields kept per function (µs, counts and % of the profiled time).
FIELDS = ("calls", "total_us", "self_us", "min_us", "max_us", "mean_us", "pct", "self_pct")
# profile/distribution.py's percentiles of the inclusive time per call, sorted exactly.
PERCENTILE_FIELDS = ("p50_us", "p90_us", "p99_us", "p999_us")


def summarise(profile: Profile) -> dict[str, Any]:
    """The whole capture's per-function figures, keyed by label (the name compare
    matches functions by across builds)."""
    from ..profile.distribution import summaries

    dist = summaries(profile, exact=True)
    functions: dict[str, dict[str, Any]] = {}
    for s in profile.function_stats():
        row: dict[str, Any] = {"name": s.name}
        row.update({f: _finite(getattr(s, f)) for f in FIELDS})
        row.update({f: _finite(getattr(dist[s.frame], f)) for f in PERCENTILE_FIELDS})
        functions[s.label] = row
    return {
        "records": int(profile.n_records),
        "duration_us": _finite(float(profile.duration_us)),
        "functions": functions,
    }


def _finite(x: float | int) -> float | int | None:
    """JSON holds no inf or NaN (a function without calls has min_us inf)."""
    return x if isinstance(x, int) or math.isfinite(x) else None


def session_summary(store: Store, session_id: int) -> dict[str, Any]:
    """The kept summary, computed from the stored capture and kept when missing."""
    kept = store.summary(session_id, VERSION)
    if kept is not None:
        return kept
    summary = summarise(_load(store, session_id))
    store.save_summary(session_id, VERSION, summary)
    return summary


def _load(store: Store, session_id: int) -> Profile:
    from ..sources import load_stream, peek_kind

    elf = store.elf_bytes(session_id)
    symbols = None
    if elf is not None:
        from ..symbols import SymbolTable

        symbols = SymbolTable.from_elf_bytes(elf, store.get(session_id).elf_name or "session ELF")
    kind, chunks = peek_kind(store.raw_chunks(session_id))
    return load_stream(kind, chunks, store.get(session_id).raw_bytes, symbols).profile
