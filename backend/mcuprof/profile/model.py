"""The profile: a columnar record store with incremental call-tree reconstruction."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..protocol import DEFAULT_TIMER_FREQ, RECORD_DTYPE
from . import kernels
from .columns import Spill, release_free_memory
from .frames import AddressTable, Frame
from .incremental import Aggregator
from .kernels import depth_groups, distinct, is_sorted, sort_entries
from .levels import Level, confirm_parents, find_parents
from .span import RECORD_PIECE  # records unwrapped, or parented, at a time
from .timebase import place

Window = tuple[float, float] | None
_CATCH_UP = 1 << 18  # records: a spilled profile folds its aggregates at least this often
# Records an add may leave staged (not yet merged into the levels) until a read: a batch
# entered before the records held merges into the middle of the levels and re-parents
# what it may contain, work that grows with the records held; staged, that work is done
# once per read (or per this many records), not once per add.
_STAGE = 1 << 18

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


class Profile:
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
        # Added but not yet in the levels: (entry, duration, address id, depth) per add.
        self._staged: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._n_staged = 0
        self.n_records = 0
        self.generation = 0
        self._last_exit: int | None = None
        self._t0: int | None = None
        self._t1: int | None = None
        self._cache: dict[Any, Any] = {}
        self.lock = threading.RLock()
        self.aggregator = Aggregator(spill)

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

    def us(self, ticks: Any) -> Any:
        """Ticks (scalar or array) to microseconds."""
        return ticks * (1e6 / self.timer_freq)

    def ticks(self, us: float) -> float:
        return us * self.timer_freq / 1e6

    @property
    def t0_ticks(self) -> int:
        return self._t0 or 0

    @property
    def t1_ticks(self) -> int:
        return self._t1 or 0

    @property
    def t0_us(self) -> float:
        return float(self.us(self.t0_ticks))

    @property
    def t1_us(self) -> float:
        return float(self.us(self.t1_ticks))

    @property
    def duration_us(self) -> float:
        return self.t1_us - self.t0_us

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
        staged = sum(a.nbytes for batch in self._staged for a in batch)
        return store + staged + self._addrs.nbytes + self.aggregator.nbytes

    # ------------------------------------------------------------------ ingest

    @_locked
    def add(self, records: np.ndarray) -> None:
        """Append records (RECORD_DTYPE or any array with its fields), in stream order.

        Time and addresses are taken in at once; the records themselves are staged and
        merged into the levels (with their parents) at the next read of ``levels``, or
        once _STAGE records wait: a reconstruction does not depend on how the records
        were split into adds, so one merge of many adds equals the adds one by one."""
        recs = np.asarray(records)
        if recs.dtype != RECORD_DTYPE:
            recs = recs.astype(RECORD_DTYPE)
        k = len(recs)
        if k == 0:
            return
        entry, dur, self._last_exit, lo, hi = place(recs, self._last_exit)
        self.aggregator.check(lo)
        self._t0 = lo if self._t0 is None else min(self._t0, lo)
        self._t1 = hi if self._t1 is None else max(self._t1, hi)
        # Interned now, per add, so frame ids come in the order of the adds.
        addr = self._addrs.ids(recs["func_addr"])
        self._staged.append((entry, dur, addr, recs["depth"].copy()))
        self._n_staged += k
        self.n_records += k
        self._changed()
        if self._n_staged >= _STAGE:
            self._settle()
        if self.spill is not None and self.n_records - self.aggregator.aggregated >= _CATCH_UP:
            # Keep the aggregates' tail short even when nobody asks (a page with no
            # flame graph open): the first query after a long backlog would otherwise
            # fold all of it at once, with temporaries of ~100 bytes per record.
            from .aggregate import stacks

            stacks(self)
            release_free_memory()

    def address_ids(self, raw: np.ndarray) -> np.ndarray:
        """The address id of each raw address (u32), new ones interned in ascending order."""
        return self._addrs.ids(raw)

    @_locked
    def adopt(
        self,
        levels: dict[int, Level],
        span: tuple[int | None, int | None],
        last_exit: int | None,
        n_records: int,
    ) -> None:
        """Take ``levels`` (parented; their address ids from ``address_ids``) as this
        empty profile's records: what Builder makes. ``span``: first entry and last exit
        (ticks), ``last_exit`` as timebase.place leaves it."""
        if self.n_records:
            raise ValueError("adopt fills an empty profile")
        self._levels = levels
        self._t0, self._t1 = span
        self._last_exit = last_exit
        self.n_records = n_records
        if n_records:
            self.aggregator.check(self.t0_ticks)
        self._changed()

    def settle(self) -> None:
        """Merge what ``add`` staged into the levels now (reads of ``levels`` do it)."""
        if self._staged:
            self._settle()

    @_locked
    def _settle(self) -> None:
        """Merge the staged records into the levels and re-parent what they may change."""
        staged, self._staged, self._n_staged = self._staged, [], 0
        if not staged:
            return
        if len(staged) == 1:
            entry, dur, addr, depth = staged[0]
        else:
            entry, dur, addr, depth = (np.concatenate(c) for c in zip(*staged, strict=True))
        del staged
        levels = self._levels
        new_pos: dict[int, np.ndarray] = {}
        span: dict[int, tuple[int, int]] = {}
        for idx in depth_groups(depth):
            d = int(depth[idx[0]])
            level = levels.get(d)
            if level is None:
                level = levels[d] = Level(self.spill)
            e = entry[idx]
            du = dur[idx]
            pos, points = level.insert(e, du, addr[idx])
            below = levels.get(d + 1)
            if points is not None and below is not None:
                below.shift_parents(points)
            new_pos[d] = pos
            span[d] = int(e.min()), int((e + du).max())
        todo = {d for d in new_pos if d > 0} | {d + 1 for d in span if d + 1 in levels}
        for d in sorted(todo):
            self._reparent(d, new_pos.get(d), span.get(d - 1))

    def _reparent(self, d: int, fresh: np.ndarray | None, up_span: tuple[int, int] | None) -> None:
        """Recompute parents at depth d for every record whose answer may have changed:
        the new ones, and (when depth d-1 got records entered from E, exiting by X)
        those entered in [E, X], since only they can be contained by the newcomers."""
        level = self._levels[d]
        if up_span is None:
            targets = fresh
        else:
            entries = level.entry
            start = int(np.searchsorted(entries, up_span[0], side="left"))
            stop = int(np.searchsorted(entries, up_span[1], side="right"))
            targets = np.arange(start, stop)
            if fresh is not None and len(fresh):
                # ``fresh`` is ascending: the new records outside [start, stop) go either side.
                a, b = np.searchsorted(fresh, (start, stop))
                if a or b < len(fresh):
                    targets = np.concatenate([fresh[:a], targets, fresh[b:]])
        if targets is None or len(targets) == 0:
            return
        up = self._levels.get(d - 1)
        parent = level.parent
        if up is None:
            parent[targets] = -1
            return
        c_entry = level.entry[targets]
        c_exit = c_entry + level.dur[targets]
        parent[targets] = find_parents(up, c_entry, c_exit)

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
        snap._last_exit, snap._t0, snap._t1 = self._last_exit, self._t0, self._t1
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


class Builder:
    """A new in-RAM Profile from records in stream order, built as one ``Profile.add`` of
    them all would build it, but without holding the records twice or re-parenting: the
    records are unwrapped into whole-capture columns as they come (sized once from
    ``capacity``, the most records expected, when known), then at ``finish`` split by
    depth with one stable radix sort of the depths, each depth sorted by entry when time
    went back, and parented a piece at a time.

    ``end_batch`` marks where ``Profile.add`` would have been called: addresses are
    interned per batch, so frame ids come out in the same order as with those adds."""

    def __init__(self, profile: Profile, capacity: int = 0) -> None:
        if profile.n_records or profile.spill is not None:
            raise ValueError("Builder fills an empty in-RAM profile")
        self.profile = profile
        self.n_records = 0
        self._last_exit: int | None = None  # as Profile's: see timebase.place
        self._t0: int | None = None
        self._t1: int | None = None
        self._mark = 0  # records whose addresses are interned
        self._cap = 0
        self._entry = np.empty(0, np.int64)
        self._dur = np.empty(0, np.uint32)
        self._raw = np.empty(0, np.uint32)
        self._depth = np.empty(0, np.uint16)
        self._reserve(capacity)

    def _reserve(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, int(self._cap * 1.5) + 1024)
        if self._cap == 0:
            # np.empty: pages the records never reach cost address space, not RSS.
            self._entry = np.empty(cap, np.int64)
            self._dur = np.empty(cap, np.uint32)
            self._raw = np.empty(cap, np.uint32)
            self._depth = np.empty(cap, np.uint16)
        else:
            for a in (self._entry, self._dur, self._raw, self._depth):
                a.resize(cap, refcheck=False)  # nothing else refers to these arrays
        self._cap = cap

    def add(self, records: np.ndarray) -> None:
        recs = np.asarray(records)
        if recs.dtype != RECORD_DTYPE:
            recs = recs.astype(RECORD_DTYPE)
        self._reserve(self.n_records + len(recs))
        at = self.n_records
        for start in range(0, len(recs), RECORD_PIECE):
            piece = recs[start : start + RECORD_PIECE]
            k = len(piece)
            _, _, self._last_exit, lo, hi = place(
                piece, self._last_exit, self._entry[at : at + k], self._dur[at : at + k]
            )
            self._t0 = lo if self._t0 is None else min(self._t0, lo)
            self._t1 = hi if self._t1 is None else max(self._t1, hi)
            self._raw[at : at + k] = piece["func_addr"]
            self._depth[at : at + k] = piece["depth"]
            at += k
        self.n_records = at

    def end_batch(self) -> None:
        """Intern the addresses added since the last call, as one ``add`` would (the
        batch's new addresses get ids in ascending order), and replace them with their
        ids in place while the batch is fresh in the cache."""
        n = self.n_records
        if n <= self._mark:
            return
        intern = self.profile.address_ids
        raw = self._raw[self._mark : n]
        ids = raw.view(np.int32)
        self._mark = n
        if len(raw) <= kernels.ID_PIECE:
            ids[:] = intern(raw)
            return
        # In pieces, once the batch's addresses are interned: through a table over their
        # range when it is small, else by AddressTable's search.
        present = distinct(raw)
        known = intern(present)
        lo, hi = int(present[0]), int(present[-1])
        table = None
        if hi - lo < 2 * len(raw) + 4096:
            table = np.empty(hi - lo + 1, np.int32)
            table[present - np.uint32(lo)] = known
        for a in range(0, len(raw), kernels.ID_PIECE):
            piece = raw[a : a + kernels.ID_PIECE]
            if table is None:
                ids[a : a + kernels.ID_PIECE] = intern(piece)
            else:
                ids[a : a + kernels.ID_PIECE] = table[np.subtract(piece, lo, dtype=np.intp)]

    def finish(self) -> Profile:
        self.end_batch()
        n = self.n_records
        entry, dur, raw, depth = (a[:n] for a in (self._entry, self._dur, self._raw, self._depth))
        self._entry = self._dur = self._raw = self._depth = np.empty(0)
        self._cap = 0
        ids = raw.view(np.int32)  # end_batch replaced every address with its id
        del raw
        groups = {int(depth[idx[0]]): idx for idx in depth_groups(depth)} if n else {}
        # Each depth's records in stream order, then by entry where time went back.
        # One column at a time, each gathered for every depth before its whole-capture
        # array goes: the temporaries stay one column's worth.
        entries: dict[int, np.ndarray] = {}
        in_order: set[int] = set()
        present = sorted(groups)
        for d in present:
            idx = groups[d]
            e = entry[idx]
            if is_sorted(e):
                in_order.add(d)
            else:
                e, perm = sort_entries(e)
                groups[d] = idx[perm]
                del idx, perm
            entries[d] = e
        del entry
        # Parent guesses from the stream (see stream_candidates) where a depth and the one
        # above stayed in stream order (positions are then stream ranks); made once the
        # entry column is gone, so they add nothing to the peak.
        cands = {
            d: stream_candidates(depth, d - 1, groups[d])
            for d in present
            if d in in_order and d - 1 in in_order and worth_guessing(len(groups[d]), n)
        }
        del depth
        durs = {d: dur[groups[d]] for d in present}
        del dur
        addrs = {d: ids[groups.pop(d)] for d in present}
        del ids
        levels: dict[int, Level] = {}
        for d in present:
            level = levels[d] = Level.of(entries.pop(d), durs.pop(d), addrs.pop(d))
            up = levels.get(d - 1)
            if d > 0 and up is not None:
                set_parents(up, level.entry, level.dur, cands.pop(d, None), level.parent)
        self.profile.adopt(levels, (self._t0, self._t1), self._last_exit, n)
        self.n_records = 0
        return self.profile


def set_parents(
    up: Level, entry: np.ndarray, dur: np.ndarray, guess: np.ndarray | None, out: np.ndarray
) -> None:
    """``out``: the parent in ``up`` of each record (``entry``, ``dur``), sorted by entry.
    ``guess`` (``stream_candidates``, or None) is confirmed while most guesses are right,
    and searched past where they stop being (time that keeps going back). RECORD_PIECE records
    at a time: the exits are made a piece at a time."""
    for lo in range(0, len(entry), RECORD_PIECE):
        c_entry = entry[lo : lo + RECORD_PIECE]
        c_exit = c_entry + dur[lo : lo + RECORD_PIECE]
        if guess is None:
            out[lo : lo + RECORD_PIECE] = find_parents(up, c_entry, c_exit)
        elif not confirm_parents(
            up, c_entry, c_exit, guess[lo : lo + RECORD_PIECE], out[lo : lo + RECORD_PIECE]
        ):
            guess = None


# A depth's records have their parents guessed from the stream when the depth holds at
# least 1/_WORTH of the records (a guess costs a pass over every record's depth; a
# binary search per record costs ~20 steps).
_WORTH = 16
_COUNT = 1 << 16  # records counted at a time


def worth_guessing(at_depth: int, records: int) -> bool:
    """Whether ``stream_candidates`` pays for a depth holding ``at_depth`` of ``records``."""
    return at_depth * _WORTH >= records


def stream_candidates(depth: np.ndarray, up: int, idx: np.ndarray) -> np.ndarray:
    """For the records at stream positions ``idx`` (ascending), how many records of depth
    ``up`` come before each in the stream: the stream rank of the first ``up`` record
    after it, which in a sane trace is its caller (a call is recorded when it returns,
    so the caller's record is the next one shallower). As int32; the count of ``up``
    records means none follows. Counted a piece of the stream at a time, in buffers
    that stay in the cache."""
    out = np.empty(len(idx), np.int32)
    n = len(depth)
    step = min(n, _COUNT)
    counts = np.empty(step, np.int32)
    hit = np.empty(step, bool)
    at = np.empty(step, np.intp)
    carry = 0
    k0 = 0
    for a in range(0, n, _COUNT):
        b = min(n, a + _COUNT)
        c, h = counts[: b - a], hit[: b - a]
        # Widened, then summed in place: a cumsum that casts (dtype=) is ~5x slower.
        np.equal(depth[a:b], up, out=h)
        np.copyto(c, h)
        np.cumsum(c, out=c)
        k1 = k0 + int(np.searchsorted(idx[k0 : k0 + (b - a)], b))
        if k1 > k0:
            where = at[: k1 - k0]
            np.subtract(idx[k0:k1], a, out=where)
            got = out[k0:k1]
            np.take(c, where, out=got)
            got += carry  # the records of depth ``up`` in the pieces before
        carry += int(c[-1])
        k0 = k1
    return out
