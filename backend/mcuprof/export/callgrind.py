"""Callgrind format for KCacheGrind/QCacheGrind: one cost, time in nanoseconds.

Functions are keyed by identity (frame) and shown by their display name (the folded
name: a static's file is in its ``fl=``); calls are aggregated per caller/callee pair
with their inclusive cost; positions are source lines where DWARF gave them (0 otherwise).
Calls at the root of a stack, and the "[unknown]" parent of orphans, are called by a
synthetic "[root]" of no self cost, so KCacheGrind and ``callgrind_annotate --inclusive``
count them (a function that runs at the root and nested, such as an ISR, included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID, stacks, sums
from ..profile.kernels import unique_inverse, unique_pairs
from ..textrows import Buffer, Ints, Part, Strings, StringTable, build
from .frames import CALLS_PER_STEP, frame_file_line, frame_name

_UNKNOWN_FILE = "???"
_BATCH = 1 << 20
ROOT_ID = -2  # the synthetic caller of root-level calls
_ROOT = "[root]"


def render(profile: Profile, window: Window = None, command: str = "mcuprof capture") -> str:
    parts: list[str] = []
    write(profile, parts.append, window, command)
    return "".join(parts)


def write(
    profile: Profile,
    out: Callable[[str], Any],
    window: Window = None,
    command: str = "mcuprof capture",
) -> None:
    write_utf8(profile, lambda b: out(str(b, "utf-8")), window, command)


def write_utf8(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    command: str = "mcuprof capture",
) -> None:
    """``write`` as UTF-8 bytes, made as bytes (no str between)."""
    with profile.lock:
        _write(profile, out, window, command)


def _write(profile: Profile, out: Callable[[bytes], Any], window: Window, command: str) -> None:
    """Every line is followed by a newline, except the last (empty) one: the file is
    the lines joined by newlines, as it always was."""
    s = sums(profile, window)
    ns = 1e9 / profile.timer_freq
    callers, callees, counts, costs = _edges(profile, window)
    # What the rows print, narrowed to int32 where every value fits (same numbers).
    counts = _narrow(counts, int(counts.max()) if len(counts) else 0)
    costs = _ns(costs, ns)
    used = _used(s.f_calls, callers)
    out(_header(command, round(float(s.f_self.sum()) * ns)))
    if not used:
        return
    out(b"\n")
    fr = _frames(profile, used)
    callers -= ROOT_ID  # in place: the columns are the edges' own
    callees -= ROOT_ID
    o = _block_order(fr.rank[callers])
    if o is not None:  # one column at a time: one spare copy alive
        callers = callers[o]
        callees = callees[o]
    per_block = np.bincount(fr.rank[callers], minlength=len(fr.blocks))
    fn, fl = _mentions(fr, callers, callees, per_block)
    heads = _heads(fr, fn, fl, s.f_self, ns)
    edges = _edge_rows(fr, fn, fl, callers, callees, o, counts, costs)
    _write_blocks(out, heads, np.cumsum(per_block).tolist(), edges)


def _block_order(by_block: np.ndarray) -> np.ndarray | None:
    """The edges' output order: by caller block (``by_block``), then (as the keys are
    sorted) by callee; None when they are in that order already (labels sorting as the
    frames do). The counts and costs are read through it, not permuted."""
    if len(by_block) < 2 or bool(np.all(by_block[1:] >= by_block[:-1])):
        return None
    return np.argsort(by_block, kind="stable").astype(np.int32)  # runs of one caller


def _header(command: str, summary_ns: int) -> bytes:
    return (
        "# callgrind format\n"
        "version: 1\n"
        "creator: mcuprof\n"
        f"cmd: {command}\n"
        "positions: line\n"
        # callgrind_annotate reads event: (long names) only before events:
        "event: ns : Time (nanoseconds)\n"
        "events: ns\n"
        f"summary: {summary_ns}\n"
    ).encode()


def _used(f_calls: np.ndarray, callers: np.ndarray) -> list[int]:
    """The frames with calls and the callers (ids >= ROOT_ID), ascending: np.union1d by
    marks."""
    mark = np.zeros(len(f_calls) - ROOT_ID, bool)
    mark[np.flatnonzero(f_calls) - ROOT_ID] = True
    mark[callers - ROOT_ID] = True
    return (np.flatnonzero(mark) + ROOT_ID).tolist()


@dataclass
class _Frames:
    """The used frames in block order (by label, then id), and per frame (indexed by
    fid - ROOT_ID): block rank, file id, line and label; the files by id."""

    blocks: list[int]
    rank: np.ndarray
    file_of: np.ndarray
    line_of: np.ndarray
    labels: list[bytes]
    files: list[bytes]


def _frames(profile: Profile, used: list[int]) -> _Frames:
    def label(fid: int) -> str:
        return _ROOT if fid == ROOT_ID else frame_name(profile, fid)

    blocks = sorted(used, key=lambda f: (label(f), f))
    size = max(blocks) - ROOT_ID + 1
    rank = np.zeros(size, np.int32)  # frame ids and counts of lines are int32
    rank[np.array(blocks) - ROOT_ID] = np.arange(len(blocks))
    file_ids: dict[str, int] = {}
    file_of = np.zeros(size, np.int32)
    line_of = np.zeros(size, np.int64)
    labels = [b""] * size
    for fid in blocks:
        file, line = (None, None) if fid == ROOT_ID else frame_file_line(profile, fid)
        file_of[fid - ROOT_ID] = file_ids.setdefault(file or _UNKNOWN_FILE, len(file_ids))
        line_of[fid - ROOT_ID] = line or 0
        labels[fid - ROOT_ID] = label(fid).encode("utf-8")
    files = [f.encode("utf-8") for f in file_ids]
    return _Frames(blocks, rank, file_of, line_of, labels, files)


Mentions = tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]


def _mentions(
    fr: _Frames, callers: np.ndarray, callees: np.ndarray, per_block: np.ndarray
) -> tuple[Mentions, Mentions]:
    """The first mentions (``_first_mentions``) of the functions and of the files.
    Names are compressed: "(n) name" the first time a file or function is mentioned,
    "(n)" after. Mentions, in file order: each block's caller, then its edges' callees."""
    head_at = np.arange(len(fr.blocks)) + np.cumsum(per_block) - per_block
    # Places in the file: int32 while they fit (a first mention's test gathers them)
    at_type = np.int32 if len(callers) + len(fr.blocks) < (1 << 31) - 1 else np.int64
    head_at = head_at.astype(at_type)
    edge_at = np.arange(1, len(callers) + 1, dtype=at_type)
    edge_at += fr.rank[callers]
    block_ids = np.array(fr.blocks) - ROOT_ID
    fn = _first_mentions(block_ids, head_at, callees, edge_at, len(fr.rank))
    fl = _first_mentions(
        fr.file_of[block_ids], head_at, fr.file_of[callees], edge_at, len(fr.files)
    )
    return fn, fl


def _heads(fr: _Frames, fn: Mentions, fl: Mentions, f_self: np.ndarray, ns: float) -> list[bytes]:
    """Each block's head: its file, its function, and its self cost."""
    (fn_no, (fn_first, _)), (fl_no, (fl_first, _)) = fn, fl
    texts = []
    for b, fid in enumerate(fr.blocks):
        k = fid - ROOT_ID
        file = fr.file_of[k]
        fl_text = f"({fl_no[file]})" + (f" {fr.files[file].decode()}" if fl_first[b] else "")
        fn_text = f"({fn_no[k]})" + (f" {fr.labels[k].decode()}" if fn_first[b] else "")
        self_ns = 0 if fid < 0 else round(float(f_self[fid]) * ns)
        texts.append(f"fl={fl_text}\nfn={fn_text}\n{fr.line_of[k]} {self_ns}\n".encode())
    return texts


def _edge_rows(
    fr: _Frames,
    fn: Mentions,
    fl: Mentions,
    callers: np.ndarray,
    callees: np.ndarray,
    o: np.ndarray | None,
    counts: np.ndarray,
    costs: np.ndarray,
) -> _EdgeRows:
    """The edges' four lines each: the callee's file and function, the calls and the
    callee's line, the caller's line and the inclusive cost."""
    (fn_no, (_, fn_first)), (fl_no, (_, fl_first)) = fn, fl
    file_tab = StringTable([b"", *(b" " + f for f in fr.files)])
    label_tab = StringTable([b"", *(b" " + t for t in fr.labels)])
    file_of, line_of = fr.file_of, fr.line_of

    def rows(sl: slice) -> list[Part]:
        """The parts of the edges' rows in ``sl``, made a chunk at a time."""
        callee, caller = callees[sl], callers[sl]
        sel = sl if o is None else o[sl]
        return [
            b"cfl=(",
            Ints(fl_no[file_of[callee]]),
            b")",
            Strings(file_tab, np.where(fl_first[sl], file_of[callee] + 1, 0)),
            b"\ncfn=(",
            Ints(fn_no[callee]),
            b")",
            Strings(label_tab, np.where(fn_first[sl], callee + 1, 0)),
            b"\ncalls=",
            Ints(counts[sel]),
            b" ",
            Ints(line_of[callee]),
            b"\n",
            Ints(line_of[caller]),
            b" ",
            Ints(costs[sel]),
            b"\n",
        ]

    return _EdgeRows(len(callers), rows)


def _write_blocks(
    out: Callable[[bytes], Any], heads: list[bytes], ends: list[int], edges: _EdgeRows
) -> None:
    """Each block's head and its edges (those up to ``ends[b]``), blocks apart by an
    empty line, handed out about _BATCH bytes at a time: a block's text is often short,
    and a write per piece costs more than joining them."""
    batch: list[bytes] = []
    size = 0
    for b, head in enumerate(heads):
        pieces = [head, *edges.take(ends[b])]
        if b + 1 < len(heads):
            pieces.append(b"\n")
        batch += pieces
        size += sum(len(p) for p in pieces)
        if size >= _BATCH:
            out(b"".join(batch))
            batch, size = [], 0
    if batch:
        out(b"".join(batch))


def _narrow(x: np.ndarray, top: int) -> np.ndarray:
    """Integers ``x`` (all in [0, top]) as int32 when they fit."""
    return x.astype(np.int32) if top < 2**31 else x.astype(np.int64)


def _ns(costs: np.ndarray, ns: float) -> np.ndarray:
    """np.rint(costs * ns).astype(np.int64), the costs in whole ns, made a piece at a
    time, in int32 when the largest fits (rint of a product is monotone in costs)."""
    top = float(np.rint(costs.max() * ns)) if len(costs) else 0.0
    out = np.empty(len(costs), np.int32 if 0 <= top < 2**31 else np.int64)
    for a in range(0, len(costs), 1 << 18):
        out[a : a + (1 << 18)] = np.rint(costs[a : a + (1 << 18)] * ns).astype(np.int64)
    return out


def _first_mentions(
    heads: np.ndarray, head_at: np.ndarray, edges: np.ndarray, edge_at: np.ndarray, size: int
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Ids (< size) mentioned by the block heads and the edges at the given places in
    the file: each id's number (1, 2, ... in order of first mention), and for the heads
    and the edges whether that mention is the id's first."""
    never = np.iinfo(edge_at.dtype).max
    first = np.full(size, never, edge_at.dtype)
    np.minimum.at(first, edges, edge_at)
    np.minimum.at(first, heads, head_at)
    seen = np.flatnonzero(first < never)
    number = np.zeros(size, np.int64)
    number[seen[np.argsort(first[seen], kind="stable")]] = np.arange(1, len(seen) + 1)
    return number, (first[heads] == head_at, first[edges] == edge_at)


class _EdgeRows:
    """The edges' four lines each, built a chunk of rows at a time, taken in order."""

    def __init__(self, n: int, rows: Callable[[slice], list[Part]]) -> None:
        self.rows = rows
        self.n = n
        self.done = 0  # rows handed out
        self.buf = np.empty(0, np.uint8)
        self.ends = np.empty(0, np.int64)  # per buffered row, its end in buf
        self.first = 0  # row index of buf's first row
        self.used = 0  # bytes of buf handed out
        self.grid = Buffer()

    def _fill(self) -> None:
        a = self.first = self.done
        b = min(self.n, a + CALLS_PER_STEP)
        self.buf, lengths = build(b - a, self.rows(slice(a, b)), self.grid, lengths=True)
        self.ends = np.cumsum(lengths)
        self.used = 0

    def take(self, upto: int) -> list[bytes]:
        """The text of rows [done, upto)."""
        out = []
        while self.done < upto:
            if self.done >= self.first + len(self.ends):
                self._fill()
            last = min(upto, self.first + len(self.ends))
            end = int(self.ends[last - self.first - 1])
            out.append(self.buf[self.used : end].tobytes())
            self.used, self.done = end, last
        return out


def _edges(
    profile: Profile, window: Window
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(caller frame, callee frame, calls, inclusive ticks) per distinct pair, sorted by
    (caller, callee); orphans are called by "[unknown]", and root-level calls and
    "[unknown]" by "[root]"."""
    if window is None and profile.t1_ticks < 2**53:
        return _stack_edges(profile)
    return _record_edges(profile, window)


def _stack_edges(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_edges`` of the whole capture from the interned stacks' sums: a stack is one
    caller/callee pair (its parent's frame, its own), so no pass over the records. The
    costs are whole ticks below 2**53, which float64 sums exactly in any order: the
    same numbers as adding record by record."""
    st = stacks(profile)
    s = sums(profile)
    n_st = st.size
    parent = st.parent[1:]  # stack 0 is "[unknown]", never a call of its own
    caller = np.where(parent < 0, ROOT_ID, st.frame[np.maximum(parent, 0)])
    orphan = parent == 0  # an orphan's "[unknown]" is called by [root] as often, as long
    del parent
    callers, callees, inv = unique_pairs(caller, st.frame[1:])
    del caller
    callers, callees = callers.astype(np.int32), callees.astype(np.int32)  # frame ids
    # Per stack, its pair (the last number: no pair, for stack 0): the sums' ``by``
    # reads the per-stack sums without copying them.
    pair = np.empty(n_st, np.int32)
    pair[0] = none = len(callers)
    pair[1:] = inv
    del inv
    counts = s.by(0, pair, none + 1)[:none]
    costs = s.by(1, pair, none + 1)[:none]
    if orphan.any():
        pair[1:][~orphan] = none
        pair[1:][orphan] = none + 1
        extra = (s.by(0, pair, none + 2)[none + 1], s.by(1, pair, none + 2)[none + 1])
        lo, hi = np.searchsorted(callers, [ROOT_ID, ROOT_ID + 1])  # [root]'s pairs
        at = int(lo) + int(np.searchsorted(callees[lo:hi], UNKNOWN_ID))
        if at < len(callers) and callers[at] == ROOT_ID and callees[at] == UNKNOWN_ID:
            counts[at] += extra[0]
            costs[at] += extra[1]
        else:
            callers = np.insert(callers, at, ROOT_ID)
            callees = np.insert(callees, at, UNKNOWN_ID)
            counts = np.insert(counts, at, extra[0])
            costs = np.insert(costs, at, extra[1])
    del pair, orphan
    keep = counts > 0  # pairs of stacks with no calls (none in a whole capture) are not shown
    if not keep.all():
        callers, callees, counts, costs = callers[keep], callees[keep], counts[keep], costs[keep]
    # int32 frame ids (from [root], -2): half the bytes of the edges' columns
    return callers, callees, counts.astype(np.int64, copy=False), costs


def _record_edges(
    profile: Profile, window: Window
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_edges`` record by record (a window cuts calls, so its costs are not whole ticks
    and their sums depend on the order), one depth at a time, so only one level's
    temporaries are alive at once."""
    lo = hi = 0.0
    if window is not None:
        a, b = sorted(window)
        lo, hi = profile.ticks(a), profile.ticks(b)
    keys: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    costs: list[np.ndarray] = []
    for d in sorted(profile.levels):
        caller, callee, cost = _depth_edges(profile, d, window, lo, hi)
        key = caller - ROOT_ID  # (caller, callee) as one int64 key
        key <<= 32
        key |= callee - ROOT_ID
        uniq, inv = unique_inverse(key, own=True)
        keys.append(uniq)
        counts.append(np.bincount(inv, minlength=len(uniq)))
        costs.append(np.bincount(inv, weights=cost, minlength=len(uniq)))
    if not keys:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, np.empty(0)
    uniq, inv = unique_inverse(np.concatenate(keys), own=True)
    n = np.bincount(inv, weights=np.concatenate(counts), minlength=len(uniq)).astype(np.int64)
    c = np.bincount(inv, weights=np.concatenate(costs), minlength=len(uniq))
    return (uniq >> 32) + ROOT_ID, (uniq & 0xFFFFFFFF) + ROOT_ID, n, c


def _depth_edges(
    profile: Profile, d: int, window: Window, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(caller, callee, cost) of each call of depth ``d`` in the window [lo, hi] ticks
    (all without one), and of the "[unknown]" parent of each orphan."""
    lv = profile.levels[d]
    frame_of = profile.frame_of
    if window is None and (lv.n == 0 or int(lv.entry.max()) + lv.max_dur < 2**53):
        cost = lv.dur.astype(np.float64)  # exit - entry, exact in float64 here
        use = slice(None)
    else:
        start = lv.entry.astype(np.float64)
        end = start + lv.dur
        if window is None:
            cost = end - start
            use = slice(None)
        else:
            cost = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0, None)
            use = np.flatnonzero((start <= hi) & (end >= lo))
    callee = frame_of[lv.addr[use]].astype(np.int64)
    cost = cost[use]
    if d == 0:
        return np.full(len(callee), ROOT_ID, np.int64), callee, cost
    p = lv.parent[use]
    up = profile.levels.get(d - 1)
    caller = np.full(len(callee), UNKNOWN_ID, np.int64)  # orphans
    has = p >= 0
    if up is not None and has.any():
        caller[has] = frame_of[up.addr[p[has]]]
    orphans = int(np.count_nonzero(~has))
    if orphans:  # each orphan has an "[unknown]" parent of its own, called by [root]
        caller = np.concatenate([caller, np.full(orphans, ROOT_ID, np.int64)])
        callee = np.concatenate([callee, np.full(orphans, UNKNOWN_ID, np.int64)])
        cost = np.concatenate([cost, cost[~has]])
    return caller, callee, cost
