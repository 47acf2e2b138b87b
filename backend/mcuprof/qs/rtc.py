"""Run-to-completion steps from decoded QS records: pure functions, no I/O.

A step starts at a dispatch (QS_QEP_DISPATCH: object, signal, current state, time) and
ends at the object's next record that closes it: a transition, an internal transition or
an ignored event (each timestamped). QS_QEP_UNHANDLED (no timestamp) only says the event
went up to a superstate on the way; the step goes on. Steps are kept per object, so an
active object preempted by another (QK) still gets its own step. A dispatch that never
ends (cut stream, lost frames) is counted as unfinished, never timed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..protocol.qs import QSEvent, Record
from .text import Names, names_for

DISPATCH, INTERN, TRAN, IGNORED, UNHANDLED = 8, 5, 6, 7, 9
OUTCOME = {INTERN: "internal", TRAN: "transition", IGNORED: "ignored"}
# What the column path needs: dispatches and the records that close a step.
STEP_RECORDS = (DISPATCH, INTERN, TRAN, IGNORED)
_DISPATCH_NAMES = ("ts", "sig", "obj", "state")


@dataclass(frozen=True, slots=True)
class RtcStep:
    """One RTC step; ``duration`` is in target timestamp units (wrap-around handled)."""

    obj: str
    state: str
    signal: str
    start: int
    duration: int
    outcome: str
    unhandled: int  # superstates the event passed through unhandled
    index: int  # stream index of the dispatch
    wrap: int = 1 << 32  # where the target's timestamps wrap (2 ** bits of its clock)


@dataclass
class RtcSteps:
    steps: list[RtcStep] = field(default_factory=list)
    unfinished: int = 0


class RtcTracker:
    """``rtc_steps`` fed in batches (live streams): each ``feed`` returns the steps its
    events closed; a dispatch still open waits for the next batch."""

    def __init__(self) -> None:
        self.pending: dict[int, tuple[Record, int]] = {}
        self.unfinished = 0  # dispatches a second dispatch of the same object overtook

    def feed(self, events: Iterable[QSEvent]) -> list[RtcStep]:
        out: list[RtcStep] = []
        pending = self.pending
        for e in events:
            if e.__class__ is not Record:
                continue
            rec = e.rec
            if rec == DISPATCH:
                _, sig, obj, state = e.values
                if obj in pending:
                    self.unfinished += 1
                pending[obj] = (e, 0)
            elif rec == UNHANDLED:
                obj = e.values[1]
                if obj in pending:
                    start, hops = pending[obj]
                    pending[obj] = (start, hops + 1)
            elif rec in OUTCOME:
                obj = e.values[2]
                began = pending.pop(obj, None)
                if began is None:
                    continue
                start, hops = began
                _, sig, _, state = start.values
                names = names_for(start)
                wrap = 1 << (8 * start.config.tstamp_size)
                out.append(
                    RtcStep(
                        names.obj(obj),
                        names.fun(state),
                        names.sig(sig, obj),
                        start.timestamp,
                        (e.timestamp - start.timestamp) % wrap,
                        OUTCOME[rec],
                        hops,
                        start.index,
                        wrap,
                    )
                )
        return out

    def feed_selected(
        self, selected: Any, dicts_after: Any, resets: Sequence[int] = ()
    ) -> StepColumns:
        """``feed`` for a chunk decoded by ``QSDecoder.feed_select(data, STEP_RECORDS)``:
        the same steps, as columns, with no Python object per record. ``dicts_after``
        are the decoder's dictionaries after the chunk; ``resets`` the stream indices of
        target resets, at which dispatches still open are dropped as unfinished (as
        QSSource does). A dispatch left open waits in ``pending`` as a Record (without
        its raw bytes or sequence number), so ``feed`` and this mix."""
        ctx = _Contexts()
        d_parts: list[tuple] = []
        c_parts: list[tuple] = []
        for config, tables in selected.segments:
            wrap_mask = np.uint64((1 << (8 * config.tstamp_size)) - 1)
            for rec, cols in tables.items():
                f = cols.fields
                index = cols.index.astype(np.int64)
                if rec == DISPATCH:
                    epoch, epochs = selected.dictionaries_at(index, dicts_after)
                    ids = ctx.ids(epoch, epochs, config)
                    sig, obj, state = (f[k].astype(np.uint64) for k in _DISPATCH_NAMES[1:])
                    ts = f["ts"].astype(np.uint64)
                    mask = np.full(len(index), wrap_mask, dtype=np.uint64)
                    d_parts.append((index, ts, obj, sig, state, ids, mask))
                else:
                    rid = np.full(len(index), rec, dtype=np.int8)
                    c_parts.append(
                        (index, f["ts"].astype(np.uint64), f["obj"].astype(np.uint64), rid)
                    )
        carried = list(self.pending.values())
        for obj, (start, _hops) in self.pending.items():
            _, sig, _, state = start.values
            mask = np.uint64((1 << (8 * start.config.tstamp_size)) - 1)
            one = ctx.ids(np.zeros(1, np.int64), [start.dicts], start.config)
            d_parts.append(
                (np.array([start.index], np.int64), *(np.array([v], np.uint64) for v in
                 (start.timestamp, obj, sig, state)), one, np.array([mask], np.uint64))
            )  # fmt: skip
        d = _concat(d_parts, 7)
        c = _concat(c_parts, 4)
        nd = len(d[0])
        idx = np.concatenate((d[0], c[0]))
        obj = np.concatenate((d[2], c[2]))
        is_close = np.zeros(len(idx), dtype=bool)
        is_close[nd:] = True
        reset_at = np.asarray(sorted(resets), dtype=np.int64)
        rseg = np.searchsorted(reset_at, idx, side="right")
        # Records per object (since the last reset), in stream order.
        objects, obj_id = np.unique(obj, return_inverse=True)
        group = rseg * len(objects) + obj_id.reshape(-1)
        order = _group_order(group, idx)
        k = is_close[order]
        g = group[order]
        same = np.zeros(len(order), dtype=bool)
        same[1:] = g[1:] == g[:-1]
        # A close whose previous record of the same object (since the last reset) is a
        # dispatch ends that dispatch's step; any other close finds nothing open.
        step_at = np.flatnonzero(k[1:] & same[1:] & ~k[:-1]) + 1
        same_next = np.append(same[1:], False)
        opens = ~k
        overtaken = opens & same_next & np.append(~k[1:], False)
        last_open = opens & ~same_next
        seg_of = rseg[order]
        dropped = last_open & (seg_of < len(reset_at))
        self.unfinished += int(overtaken.sum() + dropped.sum())
        still = order[last_open & ~dropped]
        self.pending = {}
        first_carried = nd - len(carried)
        for j in still.tolist():
            kept = carried[j - first_carried] if j >= first_carried else None
            self.pending[int(d[2][j])] = kept or (_pending_record(d, j, ctx), 0)
        closes = order[step_at] - nd
        starts = order[step_at - 1]
        by_close = np.argsort(c[0][closes], kind="stable")
        closes, starts = closes[by_close], starts[by_close]
        duration = (c[1][closes] - d[1][starts]) & d[6][starts]
        return StepColumns(
            d[1][starts],
            duration,
            ctx.names_of(d[5][starts], d[2][starts], d[4][starts], d[3][starts]),
            c[3][closes],
            c[0][closes],
            d[0][starts],
            np.searchsorted(reset_at, c[0][closes], side="right"),
            d[6][starts],
        )


class StepNames:
    """Names of steps: ``key`` per step into ``triples`` (object, state, signal)."""

    __slots__ = ("key", "triples")

    def __init__(self, key: np.ndarray, triples: list[tuple[str, str, str]]) -> None:
        self.key = key
        self.triples = triples


class StepColumns:
    """RTC steps as columns, in the order they closed (as ``feed`` returns them):
    ``start`` and ``duration`` in target ticks, names, the record id that closed each
    step, the stream indices of its close (-1 when made ``of`` RtcSteps) and its
    dispatch, how many target resets in the chunk came before it, and the mask of the
    target's clock (its timestamps wrap at ``clock_mask + 1``)."""

    __slots__ = (
        "clock_mask", "close_index", "duration", "names", "outcome", "reset_segment", "start",
        "start_index",
    )  # fmt: skip

    def __init__(
        self, start, duration, names, outcome, close_index, start_index, reset_segment, clock_mask
    ) -> None:
        self.start: np.ndarray = start
        self.duration: np.ndarray = duration
        self.names: StepNames = names
        self.outcome: np.ndarray = outcome
        self.close_index: np.ndarray = close_index
        self.start_index: np.ndarray = start_index
        self.reset_segment: np.ndarray = reset_segment
        self.clock_mask: np.ndarray = clock_mask

    @classmethod
    def of(cls, steps: Sequence[RtcStep], reset_segment: Sequence[int]) -> StepColumns:
        """The steps ``feed`` returned (events decoded one by one, as a live link has
        them), as columns: one record path for both (sources/qs.py)."""
        ids: dict[tuple[str, str, str], int] = {}
        key = [ids.setdefault((s.obj, s.state, s.signal), len(ids)) for s in steps]
        rec_of = {name: rec for rec, name in OUTCOME.items()}

        def u64(values: Iterable[int]) -> np.ndarray:
            return np.fromiter(values, np.uint64, len(steps))

        return cls(
            u64(s.start for s in steps),
            u64(s.duration for s in steps),
            StepNames(np.array(key, np.int64), list(ids)),
            np.array([rec_of[s.outcome] for s in steps], np.int8),
            np.full(len(steps), -1, np.int64),
            np.array([s.index for s in steps], np.int64),
            np.array(reset_segment, np.int64),
            u64(s.wrap - 1 for s in steps),
        )

    def __len__(self) -> int:
        return len(self.start)

    def steps(self) -> list[RtcStep]:
        """One RtcStep each (superstates passed unhandled are not counted here)."""
        triples = self.names.triples
        return [
            RtcStep(*triples[k], start, dur, OUTCOME[rec], 0, index, mask + 1)
            for k, start, dur, rec, index, mask in zip(
                self.names.key.tolist(), self.start.tolist(), self.duration.tolist(),
                self.outcome.tolist(), self.start_index.tolist(), self.clock_mask.tolist(),
                strict=True,
            )
        ]  # fmt: skip


class _Contexts:
    """The (dictionaries, sizes) pairs dispatches were named with, numbered."""

    def __init__(self) -> None:
        self.pairs: list[tuple[Any, Any]] = []
        self._ids: dict[tuple[int, int], int] = {}

    def ids(self, epoch: np.ndarray, epochs: list[Any], config: Any) -> np.ndarray:
        out = np.empty(len(epoch), dtype=np.uint64)
        for e in np.unique(epoch).tolist():
            dicts = epochs[e]
            key = (id(dicts), id(config))
            i = self._ids.get(key)
            if i is None:
                i = self._ids[key] = len(self.pairs)
                self.pairs.append((dicts, config))
            out[epoch == e] = i
        return out

    def names_of(self, ctx, obj, state, sig) -> StepNames:
        if len(ctx) == 0:
            return StepNames(np.empty(0, dtype=np.int64), [])
        # One small number per distinct value, then one per distinct combination.
        columns = [np.unique(col, return_inverse=True) for col in (ctx, obj, state, sig)]
        if np.prod([float(len(v)) for v, _ in columns]) >= 2.0**62:
            return self._names_of_rows(np.stack((ctx, obj, state, sig), axis=1))
        combined = np.zeros(len(ctx), dtype=np.int64)
        for values, inverse in columns:
            combined = combined * len(values) + inverse.reshape(-1)
        uniq, key = np.unique(combined, return_inverse=True)
        rows = []
        for code in uniq.tolist():
            row = []
            for values, _ in reversed(columns):
                code, i = divmod(code, len(values))
                row.append(int(values[i]))
            rows.append(row[::-1])
        return StepNames(key.reshape(-1).astype(np.int64), self._triples(rows))

    def _names_of_rows(self, rows: np.ndarray) -> StepNames:
        """The same for more distinct values than one int64 key can combine."""
        uniq, key = np.unique(rows, axis=0, return_inverse=True)
        return StepNames(key.reshape(-1).astype(np.int64), self._triples(uniq.tolist()))

    def _triples(self, rows: Iterable[Sequence[int]]) -> list[tuple[str, str, str]]:
        namers = [Names(SimpleNamespace(dicts=d, config=c)) for d, c in self.pairs]  # type: ignore[arg-type]
        triples = []
        for c_id, o, st, sg in rows:
            n = namers[c_id]
            triples.append((n.obj(o), n.fun(st), n.sig(sg, o)))
        return triples


def _group_order(group: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Positions sorted by group, then stream index: one sort on a combined key."""
    if len(idx) == 0:
        return np.empty(0, dtype=np.int64)
    lo = int(idx.min())
    span = int(idx.max()) - lo + 1
    if (int(group.max()) + 1) * span < 1 << 62:
        return np.argsort(group * span + (idx - lo))
    return np.lexsort((idx, group))


def _concat(parts: list[tuple], width: int) -> tuple:
    if not parts:
        kinds = [np.int64] + [np.uint64] * (width - 1)
        if width == 4:
            kinds[-1] = np.int8
        return tuple(np.empty(0, dtype=t) for t in kinds)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(width))


def _pending_record(d: tuple, j: int, ctx: _Contexts) -> Record:
    index, ts, obj, sig, state, c_id = (int(col[j]) for col in d[:6])
    dicts, config = ctx.pairs[c_id]
    values = (ts, sig, obj, state)
    return Record(index, -1, DISPATCH, ts, _DISPATCH_NAMES, values, config, dicts, b"")


def rtc_steps(events: Iterable[QSEvent]) -> RtcSteps:
    tracker = RtcTracker()
    steps = tracker.feed(events)
    return RtcSteps(steps, tracker.unfinished + len(tracker.pending))


@dataclass(frozen=True, slots=True)
class RtcRow:
    obj: str
    state: str
    signal: str
    count: int
    total: int
    min: int
    max: int
    outcomes: tuple[tuple[str, int], ...]

    @property
    def mean(self) -> float:
        return self.total / self.count


def rtc_table(steps: Iterable[RtcStep]) -> list[RtcRow]:
    """Per (object, state, signal): count and total/min/max time; largest total first."""
    groups: dict[tuple[str, str, str], list[RtcStep]] = {}
    for s in steps:
        groups.setdefault((s.obj, s.state, s.signal), []).append(s)
    rows = []
    for (obj, state, signal), group in groups.items():
        durations = [s.duration for s in group]
        outcomes = Counter(s.outcome for s in group)
        rows.append(
            RtcRow(
                obj,
                state,
                signal,
                len(group),
                sum(durations),
                min(durations),
                max(durations),
                tuple(sorted(outcomes.items())),
            )
        )
    rows.sort(key=lambda r: (-r.total, r.obj, r.state, r.signal))
    return rows


# (object, state, signal) rows a running tally keeps; steps of further rows are counted
# only (docs/limits.md): a target naming ever new objects cannot grow it.
MAX_RTC_ROWS = 10_000


class RtcTally:
    """``rtc_table`` kept as steps arrive, without keeping the steps: per (object, state,
    signal) the count, total, min, max and outcomes. ``rows()`` equals ``rtc_table`` of
    every step added, while at most ``limit`` rows; steps of rows past it are counted in
    ``untallied``."""

    def __init__(self, limit: int = MAX_RTC_ROWS) -> None:
        self.limit = limit
        self.steps = 0
        self.untallied = 0
        self._rows: dict[tuple[str, str, str], list[Any]] = {}

    def add(self, steps: Iterable[RtcStep]) -> None:
        rows = self._rows
        for s in steps:
            self.steps += 1
            key = (s.obj, s.state, s.signal)
            row = rows.get(key)
            if row is None:
                if len(rows) >= self.limit:
                    self.untallied += 1
                    continue
                rows[key] = [1, s.duration, s.duration, s.duration, Counter((s.outcome,))]
                continue
            row[0] += 1
            row[1] += s.duration
            row[2] = min(row[2], s.duration)
            row[3] = max(row[3], s.duration)
            row[4][s.outcome] += 1

    def rows(self) -> list[RtcRow]:
        out = [
            RtcRow(*key, count, total, low, high, tuple(sorted(outcomes.items())))
            for key, (count, total, low, high, outcomes) in self._rows.items()
        ]
        out.sort(key=lambda r: (-r.total, r.obj, r.state, r.signal))
        return out


def rtc_table_columns(parts: Iterable[StepColumns]) -> tuple[list[RtcRow], int]:
    """``rtc_table`` of steps given as columns (``feed_selected``), and their number."""
    parts = list(parts)
    ids: dict[tuple[str, str, str], int] = {}
    gids, durations, outcomes = [], [], []
    for p in parts:
        local = np.array([ids.setdefault(t, len(ids)) for t in p.names.triples], dtype=np.int64)
        gids.append(local[p.names.key])
        durations.append(p.duration)
        outcomes.append(p.outcome)
    if not ids:
        return [], 0
    gid = np.concatenate(gids)
    duration = np.concatenate(durations)
    outcome = np.concatenate(outcomes)
    if int(duration.max()) >= 1 << 40:  # sums that could leave int64: Python ints
        return rtc_table([s for p in parts for s in p.steps()]), len(gid)
    dur = duration.astype(np.int64)
    order = np.argsort(gid, kind="stable")
    g, d = gid[order], dur[order]
    edges = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    counts = np.diff(np.r_[edges, len(g)])
    totals = np.add.reduceat(d, edges)
    lows = np.minimum.reduceat(d, edges)
    highs = np.maximum.reduceat(d, edges)
    per_outcome = {
        name: np.bincount(gid[outcome == rec], minlength=len(ids))
        for rec, name in sorted(OUTCOME.items(), key=lambda item: item[1])
    }
    triples = list(ids)
    rows = []
    for i, group in enumerate(g[edges].tolist()):
        seen = tuple((name, int(c[group])) for name, c in per_outcome.items() if c[group])
        rows.append(
            RtcRow(
                *triples[group], int(counts[i]), int(totals[i]), int(lows[i]), int(highs[i]), seen
            )
        )
    rows.sort(key=lambda r: (-r.total, r.obj, r.state, r.signal))
    return rows, len(gid)


def folded(rows: Iterable[RtcRow]) -> Iterator[str]:
    """``object;state;signal total`` lines: flamegraph.pl and speedscope read them."""
    for r in rows:
        frames = ";".join(part.replace(";", ":") for part in (r.obj, r.state, r.signal))
        yield f"{frames} {r.total}"
