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
from typing import Any

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID, stacks, sums
from ..profile.columns import release_free_memory
from ..profile.kernels import unique_inverse, unique_pairs
from ..textrows import GridPart, PaddedInts, Prebuilt, prebuilt, row_bytes
from .frames import frame_file_line, frame_name

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
    release_free_memory()  # the pairs' temporaries, before the rows' are made
    # np.union1d of the frames with calls and the callers (ids >= ROOT_ID), by marks
    mark = np.zeros(len(s.f_calls) - ROOT_ID, bool)
    mark[np.flatnonzero(s.f_calls) - ROOT_ID] = True
    mark[callers - ROOT_ID] = True
    used = (np.flatnonzero(mark) + ROOT_ID).tolist()
    del mark
    out(
        "# callgrind format\n"
        "version: 1\n"
        "creator: mcuprof\n"
        f"cmd: {command}\n"
        "positions: line\n"
        # callgrind_annotate reads event: (long names) only before events:
        "event: ns : Time (nanoseconds)\n"
        "events: ns\n"
        f"summary: {round(float(s.f_self.sum()) * ns)}\n".encode()
    )
    if not used:
        return
    out(b"\n")

    def label(fid: int) -> str:
        return _ROOT if fid == ROOT_ID else frame_name(profile, fid)

    def file_line(fid: int) -> tuple[str, int]:
        if fid == ROOT_ID:
            return _UNKNOWN_FILE, 0
        file, line = frame_file_line(profile, fid)
        return file or _UNKNOWN_FILE, line or 0

    blocks = sorted(used, key=lambda f: (label(f), f))
    # Per used frame (indexed by fid - ROOT_ID): block rank, file id, line, label.
    size = max(blocks) - ROOT_ID + 1
    rank = np.zeros(size, np.int32)  # frame ids and counts of lines are int32
    rank[np.array(blocks) - ROOT_ID] = np.arange(len(blocks))
    file_ids: dict[str, int] = {}
    file_of = np.zeros(size, np.int32)
    line_of = np.zeros(size, np.int64)
    labels = [b""] * size
    for fid in blocks:
        file, line = file_line(fid)
        file_of[fid - ROOT_ID] = file_ids.setdefault(file, len(file_ids))
        line_of[fid - ROOT_ID] = line
        labels[fid - ROOT_ID] = label(fid).encode("utf-8")
    files = [f.encode("utf-8") for f in file_ids]
    # Edges in output order: by caller block, then (as the keys are sorted) by callee.
    callers -= ROOT_ID  # in place: the columns are the edges' own
    callees -= ROOT_ID
    by_block = rank[callers]
    # The edges' order, when not in block order already (labels sorting as the frames
    # do): the frame columns are permuted, the counts and costs read through it.
    o = None
    if len(by_block) > 1 and not bool(np.all(by_block[1:] >= by_block[:-1])):
        o = np.argsort(by_block, kind="stable").astype(np.int32)  # runs of one caller
        callers = callers[o]  # one column at a time: one spare copy alive
        callees = callees[o]
    del by_block
    per_block = np.bincount(rank[callers], minlength=len(blocks))
    ends = np.cumsum(per_block)
    # Names are compressed: "(n) name" the first time a file or function is mentioned,
    # "(n)" after. Mentions, in file order: each block's caller, then its edges' callees.
    head_at = np.arange(len(blocks)) + ends - per_block
    # Places in the file: int32 while they fit (a first mention's test gathers them)
    at_type = np.int32 if len(callers) + len(blocks) < (1 << 31) - 1 else np.int64
    head_at = head_at.astype(at_type)
    edge_at = np.arange(1, len(callers) + 1, dtype=at_type)
    edge_at += rank[callers]
    block_ids = np.array(blocks) - ROOT_ID
    fn_no, fn_first = _first_mentions(block_ids, head_at, callees, edge_at, size)
    fl_no, fl_first = _first_mentions(
        file_of[block_ids], head_at, file_of[callees], edge_at, len(files)
    )
    texts = []
    for b, fid in enumerate(blocks):
        k = fid - ROOT_ID
        fl = f"({fl_no[file_of[k]]})" + (f" {files[file_of[k]].decode()}" if fl_first[0][b] else "")
        fn = f"({fn_no[k]})" + (f" {labels[k].decode()}" if fn_first[0][b] else "")
        self_ns = 0 if fid < 0 else round(float(s.f_self[fid]) * ns)
        texts.append(f"fl={fl}\nfn={fn}\n{line_of[k]} {self_ns}\n".encode())
    del head_at, edge_at
    release_free_memory()  # the first mentions' temporaries, before the rows'
    file_tab = prebuilt([b"", *(b" " + f for f in files)])
    label_tab = prebuilt([b"", *(b" " + t for t in labels)])

    def rows(sl: slice) -> list[GridPart]:
        """The parts of the edges' rows in ``sl``, made a chunk at a time."""
        callee, caller = callees[sl], callers[sl]
        sel = sl if o is None else o[sl]
        return [
            b"cfl=(",
            PaddedInts(fl_no[file_of[callee]]),
            b")",
            Prebuilt(file_tab, np.where(fl_first[1][sl], file_of[callee] + 1, 0)),
            b"\ncfn=(",
            PaddedInts(fn_no[callee]),
            b")",
            Prebuilt(label_tab, np.where(fn_first[1][sl], callee + 1, 0)),
            b"\ncalls=",
            PaddedInts(counts[sel]),
            b" ",
            PaddedInts(line_of[callee]),
            b"\n",
            PaddedInts(line_of[caller]),
            b" ",
            PaddedInts(costs[sel]),
            b"\n",
        ]

    edge_text = _EdgeRows(len(callers), rows)
    # Handed out about _BATCH bytes at a time: a block's text is often short, and a
    # write per piece costs more than joining them.
    batch: list[bytes] = []
    size = 0
    ends_list = ends.tolist()
    for b in range(len(blocks)):
        batch.append(texts[b])
        pieces = edge_text.take(ends_list[b])
        batch += pieces
        size += len(texts[b]) + sum(len(p) for p in pieces)
        if b + 1 < len(blocks):
            batch.append(b"\n")
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

    CHUNK = 1 << 15

    def __init__(self, n: int, rows: Callable[[slice], list[GridPart]]) -> None:
        self.rows = rows
        self.n = n
        self.done = 0  # rows handed out
        self.buf = np.empty(0, np.uint8)
        self.ends = np.empty(0, np.int64)  # per buffered row, its end in buf
        self.first = 0  # row index of buf's first row
        self.used = 0  # bytes of buf handed out
        self.grid = np.empty(0, np.uint8)  # row_bytes' grid, reused chunk after chunk

    def _fill(self) -> None:
        a = self.first = self.done
        b = min(self.n, a + self.CHUNK)
        parts = self.rows(slice(a, b))
        width = sum(len(p) if isinstance(p, bytes) else p.width for p in parts)
        if len(self.grid) < (b - a) * width:
            self.grid = np.empty((b - a) * width, np.uint8)
        self.buf, lengths = row_bytes(b - a, parts, self.grid)
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
    frame_of = profile.frame_of
    for d in sorted(profile.levels):
        lv = profile.levels[d]
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
            del start, end
        callee = frame_of[lv.addr[use]].astype(np.int64)
        p = lv.parent[use]
        cost = cost[use]
        if d == 0:
            caller = np.full(len(callee), ROOT_ID, np.int64)
        else:
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
        key = caller - ROOT_ID  # in place from here: one record-long temporary at a time
        del caller, p
        key <<= 32
        callee -= ROOT_ID
        key |= callee
        del callee
        uniq, inv = unique_inverse(key, own=True)
        del key
        keys.append(uniq)
        counts.append(np.bincount(inv, minlength=len(uniq)))
        costs.append(np.bincount(inv, weights=cost, minlength=len(uniq)))
    if not keys:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, np.empty(0)
    uniq, inv = unique_inverse(np.concatenate(keys), own=True)
    del keys
    n = np.bincount(inv, weights=np.concatenate(counts), minlength=len(uniq)).astype(np.int64)
    c = np.bincount(inv, weights=np.concatenate(costs), minlength=len(uniq))
    return (uniq >> 32) + ROOT_ID, (uniq & 0xFFFFFFFF) + ROOT_ID, n, c
