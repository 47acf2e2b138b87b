"""Folded paths ("main;a;b") of the interned stacks, kept as arrays, never as strings.

A path is (parent path, name): stacks whose paths read the same (same-name statics, or
orphans at different depths) share one path id, and parents get smaller ids than their
children. Each path holds a few integers, so a chain D deep costs O(D) memory whatever
its strings' lengths. While no two frames share a name and no stack is an orphan, every
stack is a path of its own (path id = stack id); from the first update where that may
fail, stacks are interned a depth at a time against the sorted (parent path, name) keys,
16 bytes more a stack. Strings are made only for output, many lines at a time
(``lines``), or one at a time (``string``).

Byte order of the strings is computed on the tree: below a common prefix, the path
"P;x" itself sorts by the key "x" and everything under it by "x;" (when no name holds
";"), so the sorted order is a walk of that tree with each node's entries sorted by key.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..textrows import Chars, Ints, Part, Strings, StringTable, build
from .frames import UNKNOWN

if TYPE_CHECKING:
    from .aggregate import Stacks
    from .model import Profile

_WAVE = 1 << 16  # stacks interned at a time
_CHUNK_BYTES = 1 << 21  # text built per chunk of lines, about this large at most
_CHUNK_ROWS = 1 << 16  # lines per chunk at most
_TABLE_BYTES = 1 << 26  # the name table's size limit for the array line builder
_NO_KEY = np.iinfo(np.int64).max  # the last of the sorted keys: above every key


class Grow:
    """A 1-D numpy array with amortised appends."""

    def __init__(self, dtype: type, fill: float = 0) -> None:
        self.a = np.full(16, fill, dtype)
        self.n = 0
        self.fill = fill

    def resize(self, n: int) -> None:
        if n > len(self.a):
            size = max(n, int(len(self.a) * 1.5) + 16)
            new = np.zeros(size, self.a.dtype)  # untouched pages: cheaper than a fill
            new[: self.n] = self.a[: self.n]
            if self.fill:
                new[self.n :] = self.fill
            self.a = new
        self.n = max(self.n, n)

    def extend(self, values: np.ndarray) -> None:
        n = self.n
        self.resize(n + len(values))
        self.a[n : self.n] = values

    @property
    def v(self) -> np.ndarray:
        return self.a[: self.n]


class DepthRuns:
    """Depth per stack id, kept as runs of consecutive ids of one depth (the aggregator
    interns a depth's new stacks together): a few integers per update instead of four
    bytes a stack. ``upto(n)`` is what ``Stacks.depth`` holds."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.depths: list[int] = []
        self.n = 0

    def add(self, start: int, end: int, depth: int) -> None:
        """Stacks [start, end), of one depth, after the last ones added."""
        assert start == self.n
        if end > start and not (self.depths and self.depths[-1] == depth):
            self.starts.append(start)
            self.depths.append(depth)
        self.n = max(self.n, end)

    def upto(self, n: int) -> Depths:
        k = bisect.bisect_left(self.starts, n)
        return Depths(self.starts[:k], self.depths[:k], n)


class Depths:
    """The depths of stacks [0, n), as runs (``DepthRuns``); indexing makes an array."""

    def __init__(self, starts: list[int], depths: list[int], n: int) -> None:
        self.starts, self.depths, self.n = starts, depths, n

    def __len__(self) -> int:
        return self.n

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        lengths = np.diff(np.array([*self.starts, self.n], np.int64))
        return np.repeat(np.array(self.depths, dtype or np.int32), lengths)

    def __getitem__(self, key: Any) -> Any:
        return np.asarray(self)[key]


def depth_cuts(depth: np.ndarray | Depths, first: int, n: int) -> list[int]:
    """The bounds of the runs of one depth among stacks [first, n), relative to first:
    0, each place where the depth changes, n - first."""
    if isinstance(depth, Depths):
        starts = depth.starts[bisect.bisect_right(depth.starts, first) :]
        return [0, *(s - first for s in starts[: bisect.bisect_left(starts, n)]), n - first]
    d = depth[first:n]
    return [0, *(np.flatnonzero(d[1:] != d[:-1]) + 1).tolist(), n - first]


def _key(parent: np.ndarray, name: np.ndarray) -> np.ndarray:
    """A path's key among all paths: (parent path + 1) << 32 | name id."""
    key = parent.astype(np.int64)
    key += 1
    key <<= 32
    key |= name
    return key


class StackNames:
    """Folded paths of the interned stacks, kept up to date as stacks are added."""

    def __init__(self) -> None:
        self._ids = Grow(np.int32)  # per stack id: its path id
        self._parent = Grow(np.int32)  # per path id: parent path id, -1 at a root
        self._name = Grow(np.int32)  # per path id: name id
        self._level = Grow(np.int32)  # per path id: names in the path (1 at a root)
        self.names: list[str] = [UNKNOWN]  # name id -> name
        self._name_id: dict[str, int] = {UNKNOWN: 0}
        # frame id -> name id, and last, for UNKNOWN_ID (-1), the name "[unknown]"
        self._frame_name = np.array([0], np.int32)
        self._keys, self._key_pids = np.empty(0, np.int64), np.empty(0, np.int32)  # _leave_same
        self._same = True  # every stack a path of its own so far: path id = stack id
        self._distinct = True  # no two frames share a name, and none is "[unknown]"
        self._order = np.empty(0, np.int32)
        self._table: tuple[int, StringTable | None, int] = (0, None, 0)  # _name_table

    def __len__(self) -> int:
        return self._parent.n

    @property
    def ids(self) -> np.ndarray:
        """Path id per stack id."""
        return np.arange(len(self), dtype=np.int32) if self._same else self._ids.v

    @property
    def ids_or_none(self) -> np.ndarray | None:
        """``ids``, or None while every stack is a path of its own (path id = stack id)."""
        return None if self._same else self._ids.v

    @property
    def parents(self) -> np.ndarray:
        return self._parent.v

    @property
    def name_ids(self) -> np.ndarray:
        return self._name.v

    @property
    def levels(self) -> np.ndarray:
        return self._level.v

    # ------------------------------------------------------------ interning

    def _sync_frames(self, profile: Profile) -> np.ndarray:
        """Name id per frame id, with the last entry for UNKNOWN_ID (-1)."""
        frames = profile.frames
        have = len(self._frame_name) - 1
        if have < len(frames):
            known, ids = len(self.names), self._name_id
            new = [ids.setdefault(f.name, len(ids)) for f in frames[have:]]
            self.names += list(ids)[known:]
            self._distinct &= len(set(new)) == len(new) and min(new) >= known
            self._frame_name = np.concatenate(
                [self._frame_name[:-1], np.array(new, np.int32), self._frame_name[-1:]]
            )
        return self._frame_name

    def update(self, profile: Profile, st: Stacks) -> None:
        """Name the stacks added since the last update. Stacks are interned (no two share
        parent, frame and depth), so only names shared by frames, or one frame orphaned
        at several depths, can make two stacks one path."""
        first, n = (len(self) if self._same else self._ids.n), st.size
        if n <= first:
            return
        name_of = self._sync_frames(profile)
        parent, name = st.parent[first:n], name_of[st.frame[first:n]]
        cuts = list(itertools.pairwise(depth_cuts(st.depth, first, n)))
        # While no two frames share a name and no stack is an orphan (under stack 0), no
        # two stacks share a path: path ids are stack ids, and neither ids nor keys are
        # kept (16 bytes a stack, on a capture where each record has a stack of its own).
        if self._same and self._distinct and not bool(np.any(parent == 0)):
            for a, b in cuts:  # a depth at a time: the parents' levels are known
                self._add(parent[a:b], name[a:b])
            return
        if self._same:
            self._leave_same()
        self._ids.resize(n)
        # Waves of one depth, in stack order: a stack's parent is in an earlier wave (or
        # an earlier update), so its path is known. New path ids go in stack order.
        for a, b in cuts:
            for c in range(a, b, _WAVE):  # in pieces: temporaries stay small
                e = min(b, c + _WAVE)
                self._wave(first + c, parent[c:e], name[c:e])

    def _add(self, parent: np.ndarray, name: np.ndarray) -> None:
        """New paths, after the last: their parent paths and name ids."""
        self._parent.extend(parent)
        self._name.extend(name)
        self._level.extend(np.where(parent < 0, 1, self._level.a[parent] + 1))

    def _leave_same(self) -> None:
        """Keep the ids and keys from now on, as some stacks may share a path: the keys
        ((parent path + 1) << 32 | name id, ``_key``) sorted, then _NO_KEY, and the path
        id of each, then -1."""
        self._same = False
        self._ids.extend(np.arange(len(self), dtype=np.int32))
        keys = _key(self._parent.v, self._name.v)
        order = np.argsort(keys)
        self._keys = np.append(keys[order], _NO_KEY)
        self._key_pids = np.append(order.astype(np.int32), np.int32(-1))

    def _wave(self, start: int, parent: np.ndarray, name: np.ndarray) -> None:
        """Path ids for stacks [start, start + len(parent)), all of one depth."""
        up = np.where(parent < 0, -1, self._ids.a[parent])
        keys = _key(up, name)
        at = np.searchsorted(self._keys, keys)
        pids = self._key_pids[at]
        pids[self._keys[at] != keys] = -1
        miss = np.flatnonzero(pids < 0)
        if len(miss):
            new, seen, inv = np.unique(keys[miss], return_index=True, return_inverse=True)
            new_pids = np.empty(len(new), np.int32)  # numbered as they first appear
            new_pids[np.argsort(seen)] = np.arange(len(self), len(self) + len(new))
            pids[miss] = new_pids[inv]
            born = miss[np.sort(seen)]  # the stacks that make them, in stack order
            self._add(up[born], name[born])
            at = np.searchsorted(self._keys, new)
            self._keys = np.insert(self._keys, at, new)
            self._key_pids = np.insert(self._key_pids, at, new_pids)
        self._ids.a[start : start + len(pids)] = pids

    # -------------------------------------------------------------- strings

    def string(self, pid: int) -> str:
        names, nm, par = self.names, self._name.a, self._parent.a
        out = []
        while pid >= 0:
            out.append(names[nm[pid]])
            pid = int(par[pid])
        return ";".join(reversed(out))

    def _name_table(self) -> tuple[StringTable | None, int]:
        """The names as UTF-8 (the last row empty, for "no name"), or None when a name
        holds NUL or the table would be huge; and the longest name's length."""
        if self._table[0] != len(self.names):
            raw = [n.encode("utf-8") for n in self.names]
            widest = max(map(len, raw))
            ok = (len(raw) + 1) * widest <= _TABLE_BYTES and b"\0" not in b"".join(raw)
            self._table = (len(raw), StringTable([*raw, b""]) if ok else None, widest)
        return self._table[1], self._table[2]

    def lines(self, pids: np.ndarray, values: np.ndarray | None = None) -> Iterator[str]:
        """The strings of ``pids``, each followed by " value" (when given) and a newline,
        in pieces of text of about _CHUNK_BYTES."""
        for piece in self.lines_utf8(pids, values):
            yield str(piece, "utf-8")

    def lines_utf8(self, pids: np.ndarray, values: np.ndarray | None = None) -> Iterator[bytes]:
        """``lines`` as UTF-8, made as bytes (no str is made for a file): as arrays
        (``_rows``) a chunk at a time, or one ``string`` at a time when the names hold
        NUL or are too many and long for a table."""
        pids = np.asarray(pids)
        values = None if values is None else np.asarray(values)  # integers
        table, widest = self._name_table()
        at = 0
        while at < len(pids):
            # as many lines as fit _CHUNK_BYTES, each as wide as the deepest so far
            part = pids[at : at + _CHUNK_ROWS]
            deepest = np.maximum.accumulate(self._level.a[part].astype(np.int64))
            width = deepest * (widest + 1) + 24
            width *= np.arange(1, len(part) + 1)
            end = at + max(1, int(np.searchsorted(width, _CHUNK_BYTES, side="right")))
            vals = None if values is None else values[at:end]
            if table is None:
                yield self._strings(pids[at:end], vals).encode("utf-8")
            else:
                yield self._rows(pids[at:end].astype(np.int64), vals, table)
            at = end

    def _strings(self, pids: np.ndarray, values: np.ndarray | None) -> str:
        """The plain reference of ``_rows``: one ``string`` at a time."""
        ends = ["\n"] * len(pids) if values is None else [f" {v}\n" for v in values.tolist()]
        return "".join(self.string(p) + e for p, e in zip(pids.tolist(), ends, strict=True))

    def _rows(self, pids: np.ndarray, values: np.ndarray | None, table: StringTable) -> bytes:
        """The lines of ``lines_utf8``, built as rows (textrows): per level, the name
        (the table's empty last row past a line's end) and a ";" where a name follows."""
        level = self._level.a[pids]
        depth = int(level.max())
        # names[i, k]: the name id at level k + 1 of line i, filled from the leaves up
        names = np.full((len(pids), depth), len(table.lengths) - 1, np.int32)
        row, cur = np.arange(len(pids)), pids
        while len(cur):
            names[row, self._level.a[cur] - 1] = self._name.a[cur]
            cur = self._parent.a[cur]
            row, cur = row[cur >= 0], cur[cur >= 0]
        parts: list[Part] = []
        for k in range(depth):
            parts.append(Strings(table, names[:, k]))
            if k < depth - 1:
                parts.append(Chars(np.where(level > k + 1, np.uint8(ord(";")), np.uint8(0))))
        if values is not None:
            parts += [b" ", Ints(values)]
        return build(len(pids), [*parts, b"\n"]).tobytes()

    def texts(self, pids: np.ndarray) -> list[str]:
        """The strings of ``pids``."""
        if any("\n" in name for name in self.names):
            return [self.string(p) for p in np.asarray(pids).tolist()]
        out: list[str] = []
        for piece in self.lines(pids):
            out += piece.split("\n")[:-1]
        return out

    # ----------------------------------------------------------------- order

    def order(self) -> np.ndarray:
        """All path ids sorted by their strings' UTF-8 bytes (cached until paths are added):
        a walk of the tree (``tree_order``), or, when a name holds ";", a sort of the
        strings themselves (the plain reference)."""
        if len(self._order) != len(self):
            if any(";" in name for name in self.names):
                key = [self.string(p).encode("utf-8") for p in range(len(self))]
                self._order = np.array(sorted(range(len(self)), key=key.__getitem__), np.int32)
            else:
                names = [name.encode("utf-8") for name in self.names]
                self._order = tree_order(self.parents, self.name_ids, self.levels, names)
        return self._order

    def sorted(self, keep: np.ndarray) -> np.ndarray:
        """The path ids in ``keep`` (a bool mask) sorted by their strings' UTF-8 bytes."""
        order = self.order()
        return order[keep[order]]


def tree_order(
    parent: np.ndarray, name: np.ndarray, level: np.ndarray, names: list[bytes]
) -> np.ndarray:
    """Path ids sorted by their strings' bytes (no name holds ";"), by a walk of the tree.

    Below its parent, a path has two entries: itself, sorted by its name's key "x", of
    size 1, and the paths under it (if any), sorted by "x;", of the size of its subtree.
    Each entry's offset is the sizes of the entries before it under the same parent; a
    path's place is where its parent's block starts plus its own entry's offset."""
    n = len(parent)
    levels, inner, offset = _offsets(parent, name, level, names)
    start = np.zeros(n + 1, np.int32)  # where the paths under each path begin (roots: -1)
    start[inner] = offset[n:]
    for ids in levels[1:]:  # from offsets below the parent to places
        start[ids] += start[parent[ids]]
    offset[:n] += start[parent]  # each path's place
    order = np.empty(n, np.int32)
    order[offset[:n]] = np.arange(n, dtype=np.int32)
    return order


def _inner(
    parent: np.ndarray, level: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """The paths with paths under them, a level at a time and all, how many paths each
    has under it, and how many entries (a child, or the block under a child) each path
    that has some holds, in path id order (the roots' first)."""
    owners, groups = np.unique(parent, return_counts=True)  # their children; -1: roots
    inner = owners[owners >= 0]
    below = np.zeros(len(parent), np.int32)
    below[inner] = groups[len(owners) - len(inner) :]
    up, blocks = np.unique(parent[inner], return_counts=True)
    groups[np.searchsorted(owners, up)] += blocks  # and the blocks under those with some
    inner = inner[np.argsort(level[inner], kind="stable")]
    top = int(level.max(initial=0)) + 1
    levels = np.split(inner, np.searchsorted(level[inner], np.arange(2, top)))
    for ids in reversed(levels[1:]):  # from children to all paths below, deepest first
        np.add.at(below, parent[ids], below[ids])
    return levels, inner, below[inner], groups


def _ranks(names: list[bytes]) -> np.ndarray:
    """A name's byte rank: [0] as a path's last name, [1] with the paths below it."""
    both = [*names, *(name + b";" for name in names)]  # no two alike: no name holds ";"
    rank = np.empty(len(both), np.int32)
    rank[sorted(range(len(both)), key=both.__getitem__)] = np.arange(len(both), dtype=np.int32)
    return rank.reshape(2, len(names))


def _offsets(
    parent: np.ndarray, name: np.ndarray, level: np.ndarray, names: list[bytes]
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The paths with paths under them (``_inner``), and each entry's offset below its
    parent: the paths themselves (the first n), then the blocks under those paths."""
    n = len(parent)
    levels, inner, sizes, groups = _inner(parent, level)
    o = np.argsort(_entry_keys(parent, name, inner, _ranks(names)), kind="stable")
    o = o.astype(np.int32)
    size = np.concatenate([np.ones(n, np.int32), sizes])[o]
    at = np.cumsum(size, dtype=np.int32)
    at -= size  # less where the parent's entries begin:
    at -= np.repeat(at[np.cumsum(groups) - groups], groups)
    offset = np.empty(len(o), np.int32)
    offset[o] = at
    return levels, inner, offset


def _entry_keys(
    parent: np.ndarray, name: np.ndarray, inner: np.ndarray, rank: np.ndarray
) -> np.ndarray:
    """The entries' sort keys: (parent + 1, the name's byte rank as the entry's kind)."""
    key = np.concatenate([parent, parent[inner]]).astype(np.int64)
    key += 1
    key *= rank.size
    key[: len(parent)] += rank[0, name]
    key[len(parent) :] += rank[1, name[inner]]
    return key
