"""A session's per-function summary: what history reads instead of the raw capture.

It is the figures every view shows (``profile.function_stats``), kept as JSON in the
store when a capture is stored and, for sessions stored before summaries existed, the
first time history asks. A summary is keyed by ``VERSION``: a change to what it holds
bumps it, and older ones are computed again on demand.

It also holds, under ``view``, the whole capture's aggregate (profile/stored.py) that
opening the session shows at once, while the calls load. Both are computed from the
profile the session's kind loads (``Kind.load_stored``, the loader an open uses), so the
aggregate's frame ids are those of the loaded profile. ``keep`` makes one when a capture
is stored: at Stop, at import and at ``qs scenario``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    from ..profile import Profile
    from ..store import Store

VERSION = 3  # 2: the percentiles of profile/distribution.py; 3: the aggregate an open shows

# FunctionStat's fields kept per function (µs, counts and % of the profiled time).
FIELDS = ("calls", "total_us", "self_us", "min_us", "max_us", "mean_us", "pct", "self_pct")
# profile/distribution.py's percentiles of the inclusive time per call, sorted exactly.
PERCENTILE_FIELDS = ("p50_us", "p90_us", "p99_us", "p999_us")


def summarise(profile: Profile, tick_hz: int | None = None) -> dict[str, Any]:
    """The whole capture's per-function figures, keyed by label (the name compare
    matches functions by across builds), and the aggregate an open shows (``view``;
    None past stored.MAX_KEPT_STACKS). ``tick_hz``: the rate the loader was given."""
    from ..profile.distribution import summaries
    from ..profile.stored import aggregate

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
        "view": aggregate(profile, tick_hz),
    }


def _finite(x: float | int) -> float | int | None:
    """JSON holds no inf or NaN (a function without calls has min_us inf)."""
    return x if isinstance(x, int) or math.isfinite(x) else None


def session_summary(store: Store, session_id: int) -> dict[str, Any]:
    """The kept summary, computed from the stored capture and kept when missing."""
    kept = store.summary(session_id, VERSION)
    if kept is not None:
        return kept
    summary = keep(store, session_id, session_symbols(store, session_id))
    if summary is None:
        raise UserError(f"session {session_id} is not a profile")
    return summary


def keep(
    store: Store, session_id: int, symbols: Any = None, server_tick_hz: int | None = None
) -> dict[str, Any] | None:
    """Load a stored session with its kind's loader and keep its summary. ``symbols``
    name its frames as an open would name them (the dashboard's ELF, or the session's
    own); ``server_tick_hz`` is the rate an open reads a session's ticks with when
    neither the kind nor the session says it (kinds.session_tick_hz). None: the
    session's kind is not a profile (an S12Z trace)."""
    from .. import kinds

    info = store.get(session_id)
    if not kinds.get(info.kind).profiles:
        return None
    tick_hz = kinds.session_tick_hz(info, server_tick_hz)
    profile = kinds.get(info.kind).load_stored(store, session_id, symbols, tick_hz)
    summary = summarise(profile, tick_hz)
    del profile  # its columns go before the summary is written
    store.save_summary(session_id, VERSION, summary)
    return summary


def session_symbols(store: Store, session_id: int) -> Any:
    """The names of the session's own ELF, if it has one."""
    elf = store.elf_bytes(session_id)
    if elf is None:
        return None
    from ..symbols import SymbolTable

    return SymbolTable.from_elf_bytes(elf, store.get(session_id).elf_name or "session ELF")


def kept_view(store: Store, session_id: int, symbols: Any, tick_hz: int | None) -> Any:
    """The kept aggregate as a profile for the first views of an open
    (profile/stored.py's StoredProfile), when the open's loader, given ``symbols`` and
    ``tick_hz``, would build the profile it was made from; else None (no summary, an
    older one, other names or another tick rate), or the one line that says why not
    when a bound kept it out (stored.MAX_KEPT_STACKS)."""
    from .. import kinds
    from ..profile.stored import FORMAT, MAX_KEPT_STACKS, StoredProfile, same_frames

    kept = store.summary(session_id, VERSION)
    view = (kept or {}).get("view")
    if not view or view.get("format") != FORMAT:
        return None
    if "stacks_past" in view:
        return (
            f"session {session_id} has {view['stacks_past']:,} call paths, more than the "
            f"{MAX_KEPT_STACKS:,} its summary keeps (MAX_KEPT_STACKS): its views wait for "
            "its calls"
        )
    kind = kinds.get(store.get(session_id).kind)
    if kind.ticks_assumed and view.get("tick_hz") != tick_hz:
        return None
    if kind.names_from_elf and not same_frames(view, symbols):
        return None
    return StoredProfile(view)


def keep_summary(store: Store, session_id: int) -> None:
    """The summary of a session the CLI stored (import, ``qs scenario``), named by its
    own ELF and read at the server's default tick rate, as a dashboard serving that ELF
    opens it."""
    from ..sources.qs import DEFAULT_TICK_HZ

    keep(store, session_id, session_symbols(store, session_id), DEFAULT_TICK_HZ)


def keep_served(store: Store, session_id: int, symbols: Any, settings: Any) -> None:
    """The summary of a session the dashboard stored at Stop, read as that dashboard
    opens it: named by its symbols, at its QS tick rate when the session gives none."""
    keep(store, session_id, symbols, settings.qs_tick_hz)
