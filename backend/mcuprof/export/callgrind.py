"""Callgrind format for KCacheGrind/QCacheGrind: one cost, time in nanoseconds.

Functions are keyed by identity (frame) and shown by their display name (the page's
short demangled name: a static's file is in its ``fl=``; the format has no field for
the full signature); calls are aggregated per caller/callee pair
with their inclusive cost; positions are source lines where DWARF gave them (0 otherwise).
Calls at the root of a stack, and the "[unknown]" parent of orphans, are called by a
synthetic "[root]" of no self cost, so KCacheGrind and ``callgrind_annotate --inclusive``
count them (a function that runs at the root and nested, such as an ISR, included).

A stack is one caller/callee pair (its parent's frame, its own), so the pairs' sums are
the window's per-stack sums grouped: no pass over the records. The file is laid out in
blocks, one per function (by name, then frame id): its head, then its calls' edges,
made as text rows a chunk at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import Sums, stacks, sums
from ..profile.kernels import unique_pairs
from ..textrows import Buffer, Ints, Part, Strings, StringTable, build
from .frames import CALLS_PER_STEP, frame_file_line, frame_name

_UNKNOWN_FILE = "???"
ROOT_ID = -2  # the synthetic caller of root-level calls
_ROOT = "[root]"


def render(profile: Profile, window: Window = None, command: str = "mcuprof capture") -> str:
    parts: list[bytes] = []
    _write(profile, parts.append, window, command)
    return b"".join(parts).decode("utf-8")


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: tuple[str, str] | None = None,
) -> None:
    """The export contract (export/__init__.py): UTF-8, a chunk of edges at a time."""
    _write(profile, out, window)


def _write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    command: str = "mcuprof capture",
) -> None:
    """The file as UTF-8 bytes, handed to ``out`` a chunk of edges at a time. Every line
    is followed by a newline, except the last (empty) one: the file is the lines joined
    by newlines, as it always was."""
    with profile.lock:
        s = sums(profile, window)
        ns = 1e9 / profile.timer_freq
        callers, callees, counts, costs = _edges(profile, s)
        out(_header(command, round(float(s.f_self.sum()) * ns)))
        used = np.union1d(np.flatnonzero(s.f_calls), callers).tolist()
        if not used:
            return
        out(b"\n")
        fr = _frames(profile, used)
        # The edge columns are read through the file's order, not copied in it.
        order, per_block = _order(fr, callers)
        starts = np.cumsum(per_block) - per_block  # each block's first edge
        names = _mentions(fr, starts, per_block, callees[order] - ROOT_ID)
        heads = _heads(fr, names, starts, s.f_self, ns)
        file_tab = StringTable([b"", *(b" " + f for f in fr.files)])
        label_tab = StringTable([b"", *(b" " + t for t in fr.labels)])

        def rows(sl: slice) -> list[Part]:
            """The edges' four lines each: the callee's file and function, the calls
            and the callee's line, the caller's line and the inclusive cost."""
            at = order[sl]
            caller, callee = callers[at] - ROOT_ID, callees[at] - ROOT_ID
            place = np.arange(sl.start, sl.stop) + fr.rank[caller] + 1  # in the file
            file = fr.file_of[callee]
            return [
                b"cfl=(",
                Ints(names.fl_no[file]),
                b")",
                Strings(file_tab, np.where(names.fl_at[file] == place, file + 1, 0)),
                b"\ncfn=(",
                Ints(names.fn_no[callee]),
                b")",
                Strings(label_tab, np.where(names.fn_at[callee] == place, callee + 1, 0)),
                b"\ncalls=",
                Ints(counts[at].astype(np.int64)),
                b" ",
                Ints(fr.line_of[callee]),
                b"\n",
                Ints(fr.line_of[caller]),
                b" ",
                Ints(np.rint(costs[at] * ns).astype(np.int64)),
                b"\n",
            ]

        _write_blocks(out, heads, starts.tolist(), len(callers), rows)


def _order(fr: _Frames, callers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edges' order in the file, and the number of edges per block: each caller's
    edges are a run (the pairs are sorted by caller, then callee), taken in block order."""
    blocks = np.array(fr.blocks, callers.dtype)
    lo = np.searchsorted(callers, blocks).tolist()
    hi = np.searchsorted(callers, blocks, side="right").tolist()
    runs = [np.arange(a, b, dtype=np.int32) for a, b in zip(lo, hi, strict=True)]
    return np.concatenate(runs), np.subtract(hi, lo)


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


def _edges(profile: Profile, s: Sums) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(caller frame, callee frame, calls, inclusive ticks) per distinct pair with calls,
    sorted by (caller, callee): the sums of its stacks, in stack-id order (float64)."""
    st = stacks(profile)
    callers, callees, pair = unique_pairs(
        np.where(st.parent < 0, ROOT_ID, st.frame[np.maximum(st.parent, 0)]), st.frame
    )
    callers, callees = callers.astype(np.int32), callees.astype(np.int32)  # frame ids
    n = len(callers)
    counts, costs = s.by(0, pair, n), s.by(1, pair, n)
    # Pair 0 is stack 0's ([root], [unknown]): no calls of its own, one per orphan (its
    # children), for as long.
    orphans = st.parent == 0
    if orphans.any():
        counts[0], costs[0] = (s.by(k, np.where(orphans, 0, 1), 2)[0] for k in (0, 1))
    keep = counts > 0  # left out: pair 0 without orphans, pairs a window leaves no calls
    if keep[1:].all():  # no copies: at most pair 0 goes
        keep = slice(0 if keep[0] else 1, None)
    return callers[keep], callees[keep], counts[keep], costs[keep]


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
    rank = np.zeros(size, np.int32)
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


@dataclass
class _Names:
    """Per function (fid - ROOT_ID) and per file: its number, and the place in the file
    (a block head's or an edge's, in file order) of its first mention."""

    fn_no: np.ndarray
    fn_at: np.ndarray
    fl_no: np.ndarray
    fl_at: np.ndarray


def _mentions(
    fr: _Frames, starts: np.ndarray, per_block: np.ndarray, callees: np.ndarray
) -> _Names:
    """Names are compressed: "(n) name" the first time a file or function is mentioned,
    "(n)" after, numbered in order of first mention. Mentions, in file order: each
    block's function and file, then its edges' (``callees``, in file order). Every
    function mentioned has a block, so each function's first mention is its head or its
    first edge; each file's is its functions' first."""
    ids = np.array(fr.blocks) - ROOT_ID
    fn_at = np.zeros(len(fr.rank), np.int64)
    fn_at[ids] = starts + np.arange(len(ids))  # the heads' places
    first = np.full(len(fr.rank), len(callees))
    # The values in first's dtype: ufunc.at casting them takes a loop about 15x slower.
    np.minimum.at(first, callees, np.arange(len(callees), dtype=first.dtype))
    k = np.flatnonzero(first < len(callees))
    edge_at = first[k] + np.searchsorted(starts + per_block, first[k], side="right") + 1
    fn_at[k] = np.minimum(fn_at[k], edge_at)
    fl_at = np.full(len(fr.files), np.iinfo(np.int64).max)
    np.minimum.at(fl_at, fr.file_of[ids], fn_at[ids])
    return _Names(_numbers(ids, fn_at), fn_at, _numbers(np.arange(len(fl_at)), fl_at), fl_at)


def _numbers(ids: np.ndarray, first_at: np.ndarray) -> np.ndarray:
    """1, 2, ... for ``ids`` in the order of their first mentions (distinct places)."""
    number = np.zeros(len(first_at), np.int64)
    number[ids[np.argsort(first_at[ids])]] = np.arange(1, len(ids) + 1)
    return number


def _heads(
    fr: _Frames, names: _Names, starts: np.ndarray, f_self: np.ndarray, ns: float
) -> list[bytes]:
    """Each block's head: its file, its function, and its self cost."""
    texts = []
    for b, fid in enumerate(fr.blocks):
        k, at = fid - ROOT_ID, starts[b] + b  # the head's place in the file
        file = fr.file_of[k]
        fl_text = f"({names.fl_no[file]})" + (
            f" {fr.files[file].decode()}" if names.fl_at[file] == at else ""
        )
        fn_text = f"({names.fn_no[k]})" + (
            f" {fr.labels[k].decode()}" if names.fn_at[k] == at else ""
        )
        self_ns = 0 if fid < 0 else round(float(f_self[fid]) * ns)
        texts.append(f"fl={fl_text}\nfn={fn_text}\n{fr.line_of[k]} {self_ns}\n".encode())
    return texts


def _write_blocks(
    out: Callable[[bytes], Any],
    heads: list[bytes],
    starts: list[int],
    n: int,
    rows: Callable[[slice], list[Part]],
) -> None:
    """The ``n`` edges' rows, CALLS_PER_STEP at a time, with each block's head before
    its first edge (``starts[b]``), blocks apart by an empty line."""
    grid = Buffer()
    b = 0
    for a in range(0, max(n, 1), CALLS_PER_STEP):
        z = min(n, a + CALLS_PER_STEP)
        text, lengths = build(z - a, rows(slice(a, z)), grid, lengths=True)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        pieces, done = [], 0
        while b < len(heads) and (starts[b] < z or z == n):
            cut = offsets[starts[b] - a]
            pieces += [text[done:cut].tobytes(), b"\n" if b else b"", heads[b]]
            done, b = cut, b + 1
        pieces.append(text[done:].tobytes())
        out(b"".join(pieces))
