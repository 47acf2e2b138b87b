"""The profile: a columnar record store with incremental call-tree reconstruction.

One loader for every consumer: ``Profile.add`` stages records (MiniProfiler's: time
unwrapped, addresses interned per add; a source's keyed calls: its own 64-bit times,
frames interned by key) and ``_settle`` merges them into the per-depth levels at the next read.
A whole capture (``load_capture``: ``reserve``, then adds) is one merge whose levels are
made whole; a live tail merges into the same levels, re-parenting only the records the
newcomers may contain. Either way the levels equal those of merging each add at once.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..protocol import DEFAULT_TIMER_FREQ, RECORD_DTYPE
from .buckets import Counts
from .columns import Spill, release_free_memory
from .frames import AddressTable, Frame
from .incremental import Aggregator
from .kernels import depth_groups, is_sorted, sort_entries
from .keyed import KeyedCalls, Records
from .levels import Level, find_parents
from .span import RECORD_PIECE  # records unwrapped, or parented, at a time
from .timebase import TickClock, place

Window = tuple[float, float] | None
_CATCH_UP = 1 << 18  # records: a spilled profile folds its aggregates at least this often
# Records an add may leave staged (not yet merged into the levels) until a read: a batch
# entered before the records held merges into the middle of the levels and re-parents
# what it may contain, work that grows with the records held; staged, that work is done
# once per read (or per this many records), not once per add.
_STAGE = 1 << 18
_EMPTY_STAGE = tuple(np.empty(0, t) for t in (np.int64, np.uint32, np.int32, np.uint16))

F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """The link's reader thread adds while the web layer queries: one lock per profile."""

    @functools.wraps(method)
    def wrapper(self: Profile, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            self._calls += 1
            try:
                return method(self, *args, **kwargs)
            finally:
                self._calls -= 1
                if self._calls == 0 and self.spill is not None:
                    # What this call touched of the on-disk columns leaves RSS.
                    self.spill.drop()

    return wrapper  # type: ignore[return-value]


class Profile(TickClock):
    """Records in, call tree and aggregates out: the tables of tables.py.

    ``add`` takes records in stream order, in any split: the reconstruction after any
    sequence of ``add`` calls equals the one of a single call with all records.
    Aggregates are computed on demand and cached until the next change (``generation``);
    whole-capture ones are maintained incrementally (see incremental.py), so a live
    query costs about the records added since the last one. Windows are (t0_us, t1_us)
    on the same clock as ``t0_us``/``t1_us``. Every public method holds ``lock``.

    With ``spill`` the per-record columns (and the aggregator's stack per record) live in
    memory-mapped files (columns.py); RAM then holds the timeline's levels of detail,
    the aggregates and whatever one call touches. Every answer is the same either way.
    """

    def __init__(
        self,
        symbols: Any | None = None,
        timer_freq: int = DEFAULT_TIMER_FREQ,
        spill: Spill | None = None,
    ) -> None:
        self.spill = spill
        self._calls = 0
        self._addrs = AddressTable(symbols)
        self.timer_freq = int(timer_freq) if timer_freq else DEFAULT_TIMER_FREQ
        self._levels: dict[int, Level] = {}
        # Added but not yet in the levels: entry, duration, address id and depth columns
        # (``add``), the first _n_staged rows used; merged at reads or _stage_limit rows.
        self._stage = _EMPTY_STAGE
        self._n_staged = 0
        self._stage_limit = _STAGE
        self.n_records = 0
        self.generation = 0
        self._last_exit: int | None = None
        self._t0: int | None = None
        self._t1: int | None = None
        self._max_dur = 0  # the longest call added, in ticks
        # Ticks (this profile's clock) where the target's clock restarted: one run of it
        # ends and the next begins (a QS target reset); the timeline draws them.
        self.breaks: list[int] = []
        self._cache: dict[Any, Any] = {}
        self.lock = threading.RLock()
        self.aggregator = Aggregator(spill)
        # Every call's (address, duration bucket), counted as it is settled: the live
        # percentiles past distribution.EXACT_CALLS (buckets.py).
        self.buckets = Counts()

    # ------------------------------------------------------------------ settings

    @property
    def symbols(self) -> Any | None:
        return self._addrs.symbols

    @_locked
    def set_symbols(self, symbols: Any | None) -> None:
        self._addrs.set_symbols(symbols)
        self.aggregator.reset()
        self._changed()

    @_locked
    def set_timer_freq(self, hz: int) -> None:
        hz = int(hz) if hz else DEFAULT_TIMER_FREQ
        if hz != self.timer_freq:
            self.timer_freq = hz
            self._changed()

    def _changed(self) -> None:
        self.generation += 1
        self._cache.clear()

    # ------------------------------------------------------------------ time

    # us, ticks, t0_us, t1_us and duration_us: TickClock's.

    @property
    def t0_ticks(self) -> int:
        return self._t0 or 0

    @property
    def t1_ticks(self) -> int:
        return self._t1 or 0

    # ------------------------------------------------------------------ frames

    @property
    def levels(self) -> dict[int, Level]:
        """The records per depth, staged adds merged in first (see ``add``)."""
        self.settle()
        return self._levels

    @property
    def frames(self) -> list[Frame]:
        return self._addrs.frames

    @property
    def frame_of(self) -> np.ndarray:
        """The frame id of each address id (a level's ``addr`` column)."""
        return self._addrs.frame_of

    def frame_ids(self, level: Level, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Frame id of the level's records [lo, hi) (all of them by default)."""
        return self._addrs.frame_of[level.addr[lo:hi]]

    def raw_addrs(self, level: Level) -> np.ndarray:
        return self._addrs.addrs[level.addr]

    @property
    def max_depth(self) -> int:
        return max(self.levels, default=-1)

    @property
    def nbytes(self) -> int:
        """Bytes held in RAM for the records: the store (capacity included), the address
        table and the aggregator's stack id per record (columns on disk excluded), and
        the records staged by ``add`` and not yet merged."""
        store = sum(lv.nbytes for lv in self._levels.values())
        staged = sum(a.nbytes for a in self._stage)
        return store + staged + self._addrs.nbytes + self.aggregator.nbytes

    # ------------------------------------------------------------------ ingest

    @_locked
    def reserve(self, records: int) -> None:
        """Size the staging columns for ``records`` at once and merge them only at the
        next read (a whole capture: one merge, its levels made whole).
        np.empty: pages the records never reach cost address space, not RSS."""
        self._stage_limit = max(_STAGE, records)
        self._grow(records)

    def _grow(self, need: int) -> None:
        if need <= len(self._stage[0]):
            return
        cap = max(need, int(len(self._stage[0]) * 1.5) + 1024)
        if self._n_staged == 0:
            self._stage = tuple(np.empty(cap, a.dtype) for a in self._stage)
        else:
            for a in self._stage:
                a.resize(cap, refcheck=False)  # nothing else refers to these arrays

    @_locked
    def add(self, records: Records | list[Records]) -> None:
        """Append records in stream order: RECORD_DTYPE (or any array with its fields),
        or calls a source names by key (``KeyedCalls``, keyed.py), or a list of either
        kind: one add of them all.

        Time and frames are taken in at once, into the staging columns; the records
        are merged into the levels (with their parents) at the next read of ``levels``,
        or once _STAGE records (or those ``reserve``d) wait: a reconstruction does not
        depend on how the records were split into merges, so one merge of many adds
        equals the adds merged one by one."""
        given = records if isinstance(records, list) else [records]
        if given and isinstance(given[0], KeyedCalls):
            self._add_keyed(given)  # type: ignore[arg-type]
            return
        parts = [np.asarray(r) for r in given]
        at = first = self._n_staged
        self._grow(at + sum(len(r) for r in parts))
        entry, dur, ids, depth = self._stage
        for recs in parts:
            if recs.dtype != RECORD_DTYPE:
                recs = recs.astype(RECORD_DTYPE)
            for start in range(0, len(recs), RECORD_PIECE):
                piece = recs[start : start + RECORD_PIECE]
                k = len(piece)
                _, _, self._last_exit, lo, hi = place(
                    piece, self._last_exit, entry[at : at + k], dur[at : at + k]
                )
                self.aggregator.check(lo)
                self._max_dur = max(self._max_dur, int(dur[at : at + k].max()))
                self._t0 = lo if self._t0 is None else min(self._t0, lo)
                self._t1 = hi if self._t1 is None else max(self._t1, hi)
                ids[at : at + k].view(np.uint32)[:] = piece["func_addr"]
                depth[at : at + k] = piece["depth"]
                at += k
        if at == first:
            return
        # Interned per add, so frame ids come in the order of the adds.
        self._intern(ids[first:at].view(np.uint32))
        self._staged(first, at)

    def _add_keyed(self, parts: list[KeyedCalls]) -> None:
        """``add`` for calls named by key: their times are the source's own (64-bit, no
        unwrapping), their frames interned by key in the order each part lists them."""
        at = first = self._n_staged
        self._grow(at + sum(len(c) for c in parts))
        entry, dur, ids, depth = self._stage
        for calls in parts:
            if not isinstance(calls, KeyedCalls):
                raise TypeError("one add takes records or keyed calls, not both")
            k = len(calls)
            if k == 0:
                continue
            entry[at : at + k] = calls.entry
            dur[at : at + k] = calls.dur
            ids[at : at + k] = self._addrs.key_ids(calls.frames)[calls.frame]
            depth[at : at + k] = calls.depth
            exits = calls.entry + calls.dur
            lo, hi = int(calls.entry.min()), int(exits.max())
            self._last_exit = int(exits[-1])
            self.aggregator.check(lo)
            self._max_dur = max(self._max_dur, int(calls.dur.max()))
            self._t0 = lo if self._t0 is None else min(self._t0, lo)
            self._t1 = hi if self._t1 is None else max(self._t1, hi)
            at += k
        if at > first:
            self._staged(first, at)

    def _staged(self, first: int, at: int) -> None:
        """Rows [first, at) of the staging columns were filled by an add."""
        self._n_staged = at
        self.n_records += at - first
        self._changed()
        if self._n_staged >= self._stage_limit:
            self._settle()
        if self.spill is not None and self.n_records - self.aggregator.aggregated >= _CATCH_UP:
            # Keep the aggregates' tail short even when nobody asks (a page with no
            # flame graph open): the first query after a long backlog would otherwise
            # fold all of it at once, with temporaries of ~100 bytes per record.
            from .aggregate import stacks

            stacks(self)
            release_free_memory()

    @_locked
    def lands_behind(self, records: Records) -> bool:
        """Whether ``records``, the next in stream order, enter before the records held end,
        less twice the longest call (the aggregates' commit horizon): a timer restart (a
        board in a reset loop, captures joined with ``cat``). Merging such records passes
        over what they land among and rebuilds the aggregates, work that grows with the
        records held. A stream whose clock only goes forward never lands behind."""
        if self._t1 is None or len(records) == 0:
            return False
        if isinstance(records, KeyedCalls):
            lo, longest = records.lo, max(self._max_dur, int(records.dur.max()))
        else:
            batch = place(np.asarray(records), self._last_exit)
            lo, longest = batch.lo, max(self._max_dur, int(batch.duration.max()))
        return lo < self._t1 - (2 * longest + 1)

    def _intern(self, raw: np.ndarray) -> None:
        """Replace raw addresses (u32) with their address ids in place, new ones interned
        in ascending order."""
        self._addrs.ids(raw, out=raw.view(np.int32))

    def address_ids(self, raw: np.ndarray) -> np.ndarray:
        """The address id of each raw address (u32), new ones interned in ascending order."""
        return self._addrs.ids(raw)

    def settle(self) -> None:
        """Merge what ``add`` staged into the levels now (reads of ``levels`` do it)."""
        if self._n_staged:
            self._settle()

    @_locked
    def _settle(self) -> None:
        """Merge the staged records into the levels: split by depth, each depth sorted by
        entry where time went back, then made a level of its own, appended or merged
        into its level; then the parents of every record whose answer may have changed.
        One column at a time, each gathered for every depth before its staging column
        goes: the temporaries stay one column's worth."""
        n, self._n_staged = self._n_staged, 0
        entry, dur, ids, depth = (a[:n] for a in self._stage)
        self._stage, self._stage_limit = _EMPTY_STAGE, _STAGE
        self.buckets.add(ids, dur)
        groups = {int(depth[idx[0]]): idx for idx in depth_groups(depth)}
        del depth
        entries: dict[int, np.ndarray] = {}
        for d, idx in groups.items():
            e = entry[idx]
            if not is_sorted(e):  # by entry, equal entries in stream order
                e, perm = sort_entries(e)
                groups[d] = idx[perm]
            entries[d] = e
        del entry
        durs = {d: dur[idx] for d, idx in groups.items()}
        del dur
        addrs = {d: ids[idx] for d, idx in groups.items()}
        del ids, groups
        levels = self._levels
        built = {d for d in entries if d not in levels}  # levels whose records are all new
        new_pos: dict[int, np.ndarray] = {}
        span: dict[int, tuple[int, int]] = {}
        for d in sorted(entries):
            e, du, a = entries.pop(d), durs.pop(d), addrs.pop(d)
            span[d] = int(e[0]), int((e + du).max())
            if d in built and self.spill is None:
                levels[d] = Level.of(e, du, a)  # the arrays become its columns
                continue
            if d in built:
                levels[d] = Level(self.spill)
            new_pos[d], points = levels[d].insert(e, du, a)
            below = levels.get(d + 1)
            if points is not None and below is not None:
                below.shift_parents(points)
        for d in sorted({d for d in span if d > 0} | {d + 1 for d in span if d + 1 in levels}):
            level, up = levels[d], levels.get(d - 1)
            if up is None:  # no level above, ever: every parent stays -1
                continue
            if d in built:
                set_parents(up, level.entry, level.dur, level.parent)
                continue
            targets = _changed_parents(level, new_pos.get(d), span.get(d - 1))
            found = np.empty(len(targets), np.int32)
            set_parents(up, level.entry[targets], level.dur[targets], found)
            level.parent[targets] = found

    @_locked
    def snapshot(self) -> Profile:
        """A copy of the records as they are now, for work that grows with the capture
        (exports): it costs a copy of the columns under the lock (file to file in the
        kernel when they are on disk), and the work itself then runs on the copy
        without holding this profile's lock."""
        spill = None if self.spill is None else Spill(self.spill.dir)
        snap = Profile(None, self.timer_freq, spill)
        snap._addrs = self._addrs.copy()
        snap._levels = {d: lv.copy(spill) for d, lv in self.levels.items()}
        snap.n_records = self.n_records
        snap.buckets = self.buckets.copy()
        snap._last_exit, snap._t0, snap._t1 = self._last_exit, self._t0, self._t1
        snap.breaks = list(self.breaks)
        if spill is not None:
            spill.drop()
        return snap

    # ------------------------------------------------------------------ views

    @_locked
    def table(self) -> dict[str, np.ndarray]:
        """Every record with its reconstructed parent, depth-major then by entry:
        depth, entry (unwrapped ticks), duration (ticks), func_addr (raw), frame,
        parent (row in this table, -1 for roots and orphans), orphan (bool)."""
        cols: dict[str, list[np.ndarray]] = {
            k: [] for k in ("depth", "entry", "duration", "func_addr", "frame", "parent", "orphan")
        }
        base: dict[int, int] = {}
        row = 0
        for d in sorted(self.levels):
            base[d] = row
            row += self.levels[d].n
        for d in sorted(self.levels):
            lv = self.levels[d]
            p = lv.parent.astype(np.int64)
            has = p >= 0
            glob = np.where(has, p + base.get(d - 1, 0), -1)
            cols["depth"].append(np.full(lv.n, d, np.int64))
            cols["entry"].append(lv.entry.copy())
            cols["duration"].append(lv.dur.astype(np.int64))
            cols["func_addr"].append(self.raw_addrs(lv))
            cols["frame"].append(self.frame_ids(lv))
            cols["parent"].append(glob)
            cols["orphan"].append(~has if d > 0 else np.zeros(lv.n, bool))
        empty = {"func_addr": np.uint32, "orphan": bool, "frame": np.int32}
        return {
            k: np.concatenate(v) if v else np.empty(0, empty.get(k, np.int64))
            for k, v in cols.items()
        }

    @property
    @_locked
    def n_orphans(self) -> int:
        return sum(int(np.count_nonzero(lv.parent < 0)) for d, lv in self.levels.items() if d > 0)

    # Aggregates live in their own modules; these are the stable entry points.

    @_locked
    def folded(self, window: Window = None) -> dict[str, int]:
        from .aggregate import folded

        return folded(self, window)

    @_locked
    def function_stats(self, window: Window = None) -> list[Any]:
        from .aggregate import function_stats

        return function_stats(self, window)

    @_locked
    def top_down(self, window: Window = None) -> Any:
        from .trees import top_down

        return top_down(self, window)

    @_locked
    def bottom_up(self, window: Window = None) -> Any:
        from .trees import bottom_up

        return bottom_up(self, window)

    @_locked
    def timeline(self, t0_us: float, t1_us: float, width_px: int) -> dict[str, Any]:
        from .timeline import timeline

        return timeline(self, t0_us, t1_us, width_px)

    @_locked
    def cached(self, key: Any, compute: Any) -> Any:
        """Memoise ``compute()`` until the profile changes."""
        if key not in self._cache:
            if len(self._cache) > 32:
                self._cache.clear()
            self._cache[key] = compute()
        return self._cache[key]


def _changed_parents(
    level: Level, fresh: np.ndarray | None, up_span: tuple[int, int] | None
) -> np.ndarray:
    """Positions in ``level`` whose parent may have changed in a merge: the new records
    (``fresh``, ascending), and (when the level above got records entered from E,
    exiting by X) those entered in [E, X], since only they can be contained by the
    newcomers."""
    if up_span is None:
        return np.empty(0, np.intp) if fresh is None else fresh
    start = int(np.searchsorted(level.entry, up_span[0], side="left"))
    stop = int(np.searchsorted(level.entry, up_span[1], side="right"))
    targets = np.arange(start, stop)
    if fresh is not None and len(fresh):
        # The new records outside [start, stop) go either side.
        a, b = np.searchsorted(fresh, (start, stop))
        if a or b < len(fresh):
            targets = np.concatenate([fresh[:a], targets, fresh[b:]])
    return targets


def set_parents(up: Level, entry: np.ndarray, dur: np.ndarray, out: np.ndarray) -> None:
    """``out``: the parent in ``up`` of each record (``entry``, ``dur``), by find_parents,
    RECORD_PIECE records at a time: the exits and the search's temporaries are made a
    piece at a time."""
    for lo in range(0, len(entry), RECORD_PIECE):
        c_entry = entry[lo : lo + RECORD_PIECE]
        out[lo : lo + RECORD_PIECE] = find_parents(
            up, c_entry, c_entry + dur[lo : lo + RECORD_PIECE]
        )
