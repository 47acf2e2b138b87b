"""Folded paths ("main;a;b") of the interned stacks, kept as arrays, never as strings.

A path is (parent path, name): stacks whose paths read the same (same-name statics, or
orphans at different depths) share one path id, and parents get smaller ids than their
children. Paths are interned one stack depth at a time with numpy; each holds a few
integers, so a chain D deep costs O(D) memory whatever its strings' lengths. Strings are
made only for output, many lines at a time (``lines``), or one at a time (``string``).

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
_SMALL = 256  # new keys kept in a dict (a live update) rather than merged into the arrays
_VEC_LEVELS = 64  # deeper lines are joined in Python, one by one
_CHUNK_BYTES = 1 << 21  # text built per chunk of lines, about this large at most
_TABLE_BYTES = 1 << 26  # the name table's size limit for the vectorised line builder


class Grow:
    """A 1-D numpy array with amortised appends."""

    def __init__(self, dtype: type, fill: float = 0) -> None:
        self.a = np.full(16, fill, dtype)
        self.n = 0
        self.fill = fill

    def resize(self, n: int) -> None:
        if n > len(self.a):
            size = max(n, int(len(self.a) * 1.5) + 16)
            # zeros come from the system as untouched pages: cheaper than a fill
            new = (
                np.zeros(size, self.a.dtype)
                if self.fill == 0
                else np.full(size, self.fill, self.a.dtype)
            )
            new[: self.n] = self.a[: self.n]
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

    def cuts(self, first: int, n: int) -> list[int]:
        """Where the depth changes among stacks [first, n), relative to first."""
        lo = bisect.bisect_right(self.starts, first)
        hi = bisect.bisect_left(self.starts, n)
        return [s - first for s in self.starts[lo:hi]]


def depth_cuts(depth: np.ndarray | Depths, first: int, n: int) -> list[int]:
    """The bounds of the runs of one depth among stacks [first, n), relative to first:
    0, each place where the depth changes, n - first."""
    if isinstance(depth, Depths):
        return [0, *depth.cuts(first, n), n - first]
    d = depth[first:n]
    return [0, *(np.flatnonzero(d[1:] != d[:-1]) + 1).tolist(), n - first]


class StackNames:
    """Folded paths of the interned stacks, kept up to date as stacks are added."""

    def __init__(self) -> None:
        self._ids = Grow(np.int32)  # per stack id: its path id
        self._parent = Grow(np.int32)  # per path id: parent path id, -1 at a root
        self._name = Grow(np.int32)  # per path id: name id
        self._level = Grow(np.int32)  # per path id: names in the path (1 at a root)
        self.names: list[str] = []  # name id -> name
        self._name_id: dict[str, int] = {}
        self._unknown = self._intern_name(UNKNOWN)
        # frame id -> name id, and last, for UNKNOWN_ID (-1), the name "[unknown]"
        self._frame_name = np.array([self._unknown], np.int32)
        # (parent path + 1) << 32 | name id -> path id: sorted arrays, and a dict of the
        # latest few (a live update adds a handful; merging each into the arrays would
        # cost O(paths)).
        self._keys = np.empty(0, np.int64)
        self._key_pids = np.empty(0, np.int32)
        self._recent: dict[int, int] = {}
        self._order = np.empty(0, np.int32)
        self._table: tuple[int, StringTable | None] | None = None  # (names, their table)
        # While no two stacks under one parent share a name, every stack is a path of its
        # own and path ids are stack ids: then neither the ids nor the keys are kept (on a
        # capture where every record has its own stack, 16 bytes per stack), and the
        # first stacks that would merge make them (_leave_same).
        self._same = True
        self._distinct = True  # no two frames share a name, and none is "[unknown]"
        self._under_unknown: set[int] = set()  # name ids of the stacks under stack 0

    def __len__(self) -> int:
        return self._parent.n

    @property
    def ids(self) -> np.ndarray:
        """Path id per stack id."""
        if self._same:
            return np.arange(len(self), dtype=np.int32)
        return self._ids.v

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

    def parent(self, pid: int) -> int:
        return int(self._parent.a[pid])

    def name(self, pid: int) -> str:
        return self.names[self._name.a[pid]]

    # ------------------------------------------------------------ interning

    def _intern_name(self, name: str) -> int:
        nid = self._name_id.get(name)
        if nid is None:
            nid = self._name_id[name] = len(self.names)
            self.names.append(name)
        return nid

    def _sync_frames(self, profile: Profile) -> np.ndarray:
        """Name id per frame id, with the last entry for UNKNOWN_ID (-1)."""
        frames = profile.frames
        have = len(self._frame_name) - 1
        if have < len(frames):
            known = len(self.names)
            new = [self._intern_name(f.name) for f in frames[have:]]
            if self._distinct:
                self._distinct = len(set(new)) == len(new) and min(new) >= known
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
        parent = st.parent[first:n]
        name = name_of[st.frame[first:n]]
        # Waves of one depth, in stack order: a stack's parent is in an earlier wave (or
        # an earlier update), so its path is known. New path ids go in stack order.
        bounds = depth_cuts(st.depth, first, n)
        if self._same:
            orphans = name[parent == 0].tolist()
            if (
                self._distinct
                and len(set(orphans)) == len(orphans)
                and self._under_unknown.isdisjoint(orphans)
            ):
                self._under_unknown.update(orphans)
                self._add_same(first, parent, name, bounds)
                return
            self._leave_same()
        self._ids.resize(n)
        for a, b in itertools.pairwise(bounds):
            if b - a <= 4:  # a chain: numpy's per-call cost would dominate
                for i in range(a, b):
                    self._one(first + i, int(parent[i]), int(name[i]))
            else:  # in pieces: one wave's temporaries stay small
                for c in range(a, b, _WAVE):
                    e = min(b, c + _WAVE)
                    self._wave(first + c, parent[c:e], name[c:e])

    def _add_same(
        self, first: int, parent: np.ndarray, name: np.ndarray, bounds: list[int]
    ) -> None:
        """New stacks that are paths of their own (path id = stack id)."""
        n = first + len(parent)
        for g in (self._parent, self._name, self._level):
            g.resize(n)
        self._parent.a[first:n] = parent
        self._name.a[first:n] = name
        level = self._level.a
        for a, b in itertools.pairwise(bounds):
            if b - a <= 4:  # a chain: numpy's per-call cost would dominate
                for i in range(a, b):
                    p = int(parent[i])
                    level[first + i] = 1 if p < 0 else level[p] + 1
            else:
                p = parent[a:b]
                lv = level[first + a : first + b]
                np.take(level, p, out=lv, mode="clip")  # clip: unbuffered; -1 reads 0
                lv += 1
                lv[p < 0] = 1

    def _leave_same(self) -> None:
        """Keep the ids and keys from now on: some stacks are about to share a path."""
        self._same = False
        n = len(self)
        self._ids.resize(n)
        self._ids.a[:n] = np.arange(n, dtype=np.int32)
        keys = self._parent.v.astype(np.int64)
        keys += 1
        keys <<= 32
        keys |= self._name.v
        order = np.argsort(keys)
        self._keys = keys[order]
        self._key_pids = order.astype(np.int32)

    def _one(self, stack: int, parent: int, name: int) -> None:
        up = -1 if parent < 0 else int(self._ids.a[parent])
        key = ((up + 1) << 32) | name
        pid = self._recent.get(key, -1)
        if pid < 0 and len(self._keys):
            at = int(np.searchsorted(self._keys, key))
            if at < len(self._keys) and self._keys[at] == key:
                pid = int(self._key_pids[at])
        if pid < 0:
            pid = len(self)
            self._parent.extend(np.array([up], np.int32))
            self._name.extend(np.array([name], np.int32))
            lvl = 1 if up < 0 else self._level.a[up] + 1
            self._level.extend(np.array([lvl], np.int32))
            self._add_keys(np.array([key], np.int64), np.array([pid], np.int32))
        self._ids.a[stack] = pid

    def _wave(self, start: int, parent: np.ndarray, name: np.ndarray) -> None:
        ids = self._ids.a
        up = np.full(len(parent), -1, np.int64)
        has = parent >= 0
        up[has] = ids[parent[has]]
        keys = ((up + 1) << 32) | name
        pids = self._lookup(keys)
        miss = np.flatnonzero(pids < 0)
        if len(miss):
            mk = keys[miss]
            base = len(self)
            if len(mk) < 2 or bool(np.all(mk[1:] > mk[:-1])):
                # Sorted and distinct already: the aggregator interns stacks in (parent,
                # frame) order, which is (parent path, name) order when no names merge.
                uk = born = mk
                new_pids = np.arange(base, base + len(mk), dtype=np.int32)
                pids[miss] = new_pids
            else:
                uk, first, inv = np.unique(mk, return_index=True, return_inverse=True)
                rank = np.empty(len(uk), np.int64)
                rank[np.argsort(first, kind="stable")] = np.arange(len(uk))
                new_pids = (base + rank).astype(np.int32)
                pids[miss] = new_pids[inv]
                born = uk[np.argsort(rank, kind="stable")]  # the new keys in id order
            p = (born >> 32) - 1
            nm = (born & 0xFFFFFFFF).astype(np.int32)
            lvl = np.where(p < 0, 1, self._level.a[np.maximum(p, 0)] + 1)
            self._parent.extend(p.astype(np.int32))
            self._name.extend(nm)
            self._level.extend(lvl)
            self._add_keys(uk, new_pids)
        ids[start : start + len(parent)] = pids

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        out = np.full(len(keys), -1, np.int32)
        if len(self._recent) and len(keys) > _SMALL:
            self._flush()
        if len(self._keys):
            pos = np.searchsorted(self._keys, keys)
            pos[pos == len(self._keys)] = 0
            hit = self._keys[pos] == keys
            out[hit] = self._key_pids[pos[hit]]
        if self._recent:
            get = self._recent.get
            for i in np.flatnonzero(out < 0).tolist():
                out[i] = get(int(keys[i]), -1)
        return out

    def _add_keys(self, keys: np.ndarray, pids: np.ndarray) -> None:
        """Sorted new keys and their path ids."""
        if len(keys) <= _SMALL:
            self._recent.update(zip(keys.tolist(), pids.tolist(), strict=True))
            if len(self._recent) <= max(4 * _SMALL, len(self._keys) // 8):
                return
            keys, pids = self._recent_arrays(keys[:0], pids[:0])
            self._recent = {}
        elif self._recent:
            keys, pids = self._recent_arrays(keys, pids)
            self._recent = {}
        at = np.searchsorted(self._keys, keys)
        self._keys = np.insert(self._keys, at, keys)
        self._key_pids = np.insert(self._key_pids, at, pids)

    def _recent_arrays(self, keys: np.ndarray, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.concatenate([keys, np.fromiter(self._recent.keys(), np.int64, len(self._recent))])
        p = np.concatenate([pids, np.fromiter(self._recent.values(), np.int32, len(self._recent))])
        o = np.argsort(k, kind="stable")
        return k[o], p[o]

    def _flush(self) -> None:
        keys, pids = self._recent_arrays(np.empty(0, np.int64), np.empty(0, np.int32))
        self._recent = {}
        at = np.searchsorted(self._keys, keys)
        self._keys = np.insert(self._keys, at, keys)
        self._key_pids = np.insert(self._key_pids, at, pids)

    # -------------------------------------------------------------- strings

    def string(self, pid: int) -> str:
        names, nm, par = self.names, self._name.a, self._parent.a
        out = []
        while pid >= 0:
            out.append(names[nm[pid]])
            pid = int(par[pid])
        return ";".join(reversed(out))

    def _name_table(self) -> StringTable | None:
        """The names as UTF-8 (the last row empty, for "no name"); None when a name
        holds NUL or the table would be huge."""
        if self._table is None or self._table[0] != len(self.names):
            raw = [n.encode("utf-8") for n in self.names]
            width = max((len(r) for r in raw), default=1)
            huge = (len(raw) + 1) * width > _TABLE_BYTES
            ok = not huge and not any(b"\0" in r for r in raw)
            self._table = (len(self.names), StringTable([*raw, b""]) if ok else None)
        return self._table[1]

    def lines(self, pids: np.ndarray, values: np.ndarray | None = None) -> Iterator[str]:
        """The strings of ``pids``, each followed by " value" (when given) and a newline,
        in pieces of text of about _CHUNK_BYTES."""
        for piece in self.lines_utf8(pids, values):
            yield str(piece, "utf-8")

    def lines_utf8(self, pids: np.ndarray, values: np.ndarray | None = None) -> Iterator[bytes]:
        """``lines`` as UTF-8: the bytes are made first, so no str is made for a file."""
        pids = np.asarray(pids)
        if values is not None:  # integers, converted a piece at a time
            values = np.asarray(values)
        table = self._name_table()
        level = self._level.a
        at, n = 0, len(pids)
        while at < n:
            # The next piece: lines one by one (no name table, or a run of deep lines),
            # else as many shallow lines as fit a chunk of text, made as arrays.
            fast = table is not None
            if table is None:
                end = min(n, at + 4096)
            else:
                rows = min(n - at, 1 << 16)
                lv = level[pids[at : at + rows]]
                deep = np.flatnonzero(lv > _VEC_LEVELS)
                if len(deep) and deep[0] == 0:
                    shallow = np.flatnonzero(lv <= _VEC_LEVELS)
                    end = at + (int(shallow[0]) if len(shallow) else rows)
                    fast = False
                else:
                    if len(deep):
                        rows = int(deep[0])
                    bound = int(lv[:rows].max()) * (table.width + 1) + 24
                    end = at + max(1, min(rows, _CHUNK_BYTES // bound))
            part = pids[at:end].astype(np.int64)
            vals = None if values is None else values[at:end]
            if fast:
                yield self._fast_lines(part, vals, table)
            else:
                yield self._slow_lines(part, vals).encode("utf-8")
            at = end

    def _slow_lines(self, pids: np.ndarray, values: np.ndarray | None) -> str:
        if values is None:
            return "".join(f"{self.string(p)}\n" for p in pids.tolist())
        return "".join(
            f"{self.string(p)} {v}\n" for p, v in zip(pids.tolist(), values.tolist(), strict=True)
        )

    def _fast_lines(self, pids: np.ndarray, values: np.ndarray | None, table: StringTable) -> bytes:
        """The lines of ``lines_utf8``, built as rows (textrows): per level, the name
        (the table's empty last row past a line's end) and a ";" where a name follows."""
        level = self._level.a[pids]
        depth = int(level.max())
        # names[i, k]: the name id at level k + 1 of line i
        names = np.full((len(pids), depth), len(table.lengths) - 1, np.int32)
        flat_names = names.reshape(-1)
        at = np.arange(len(pids), dtype=np.int64) * depth  # each live line's row start
        cur = pids
        while len(at):
            flat_names[at + (self._level.a[cur] - 1)] = self._name.a[cur]
            cur = self._parent.a[cur]
            live = cur >= 0
            if not live.all():
                at, cur = at[live], cur[live]
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
        """All path ids sorted by their strings' UTF-8 bytes (cached until paths are added)."""
        n, have = len(self), len(self._order)
        if have == n:
            return self._order
        if have and n - have < _SMALL:  # live: a few new paths
            old = self._order
            new = sorted(range(have, n), key=lambda p: self.string(p).encode("utf-8"))
            probe = _Strings(self, old)
            at = [bisect.bisect_right(probe, self.string(p).encode("utf-8")) for p in new]
            self._order = np.insert(old, at, np.array(new, np.int32))
        elif any(";" in name for name in self.names):  # the tree walk needs ";"-free names
            key = [self.string(p).encode("utf-8") for p in range(n)]
            self._order = np.array(sorted(range(n), key=key.__getitem__), np.int32)
        else:
            self._order = self._tree_order()
        return self._order

    def sorted(self, keep: np.ndarray) -> np.ndarray:
        """The path ids in ``keep`` (a bool mask) sorted by their strings' UTF-8 bytes."""
        order = self.order()
        return order[keep[order]]

    def _tree_order(self) -> np.ndarray:
        """``order`` by a walk of the path tree, a level at a time: a path's string sorts
        right after its parent's and before its parent's next sibling's, so each path's
        place is its parent's start plus the sizes of the siblings before it."""
        return _TreeOrder(self).order()


class _TreeOrder:
    """StackNames._tree_order's state: each path's place in the byte order (``pos``)
    and where the paths under each one begin (``start``), filled a level at a time."""

    def __init__(self, names: StackNames) -> None:
        n = self.n = len(names)
        self.parent, self.name, level = names._parent.v, names._name.v, names._level.v
        raw = [s.encode("utf-8") for s in names.names]
        keys = sorted(
            [(r, 0, i) for i, r in enumerate(raw)] + [(r + b";", 1, i) for i, r in enumerate(raw)]
        )
        # A name's byte-order rank: [0] as the path's last name, [1] with paths below it
        self.rank = np.empty((2, len(raw)), np.int32)
        for r, (_, kind, i) in enumerate(keys):
            self.rank[kind, i] = r
        self.span = 2 * len(raw)
        # Paths are interned a depth at a time, so usually already in level order.
        ordered = n < 2 or bool(np.all(level[1:] >= level[:-1]))
        self.by_level = None if ordered else _stable(level)
        in_order = level if self.by_level is None else level[self.by_level]
        top = int(level.max(initial=0)) + 2
        self.bounds = np.searchsorted(in_order, np.arange(1, top)).tolist()
        self.pos = np.empty(n, np.int32)  # each path's place in the order
        self.start = np.zeros(n, np.int32)  # where the paths under each path begin

    def order(self) -> np.ndarray:
        below = self._count_below()
        bounds = self.bounds
        for k in range(len(bounds) - 1):
            lo, hi = bounds[k], bounds[k + 1]
            if hi - lo == 1:  # alone under its parent: itself first, then what is below
                p = lo if self.by_level is None else int(self.by_level[lo])
                s = 0 if k == 0 else int(self.start[self.parent[p]])
                self.pos[p], self.start[p] = s, s + 1
            else:
                self._place_level(k, lo, hi, below)
        del below
        self.start = np.empty(0, np.int32)  # memory back before the order is made
        order = np.empty(self.n, np.int32)
        order[self.pos] = np.arange(self.n, dtype=np.int32)
        return order

    def _count_below(self) -> np.ndarray:
        """The number of paths under each path, deepest level first."""
        below = np.zeros(self.n, np.int32)
        parent, by_level, bounds = self.parent, self.by_level, self.bounds
        for k in range(len(bounds) - 2, 0, -1):
            lo, hi = bounds[k], bounds[k + 1]
            if hi - lo == 1:  # a chain: scalars cost less than numpy calls
                p = lo if by_level is None else int(by_level[lo])
                below[parent[p]] += below[p] + 1
            else:  # views when in level order
                ps = slice(lo, hi) if by_level is None else by_level[lo:hi]
                np.add.at(below, parent[ps], below[ps] + 1)
        return below

    def _place_level(self, k: int, lo: int, hi: int, below: np.ndarray) -> None:
        """Places of level k's paths (rows [lo, hi) in level order), and starts of those
        with paths under them. Entries: the paths themselves (the first m), then the
        places below those that have paths under them, sorted by (owner, byte rank);
        each array is built in place, one at a time, as a level can hold most of a
        capture's paths."""
        parent, name, by_level, n = self.parent, self.name, self.by_level, self.n
        # The level's paths: a slice (views, no copies) when in level order.
        sel = slice(lo, hi) if by_level is None else by_level[lo:hi]
        inner = np.flatnonzero(below[sel] > 0).astype(np.int32)
        if by_level is None:
            inner += lo
        else:
            inner = by_level[lo:hi][inner]
        m, size_all = hi - lo, hi - lo + len(inner)
        if len(inner):
            owner = np.concatenate([parent[sel], parent[inner]])
            nid = np.concatenate([name[sel], name[inner]])
            kind = np.zeros(size_all, np.int8)  # 0: the path itself, 1: below it
            kind[m:] = 1
        else:
            owner, nid, kind = parent[sel], name[sel], None
        # Paths are interned in (parent, name) order, often byte order: then no sort.
        o = None
        if not _increasing(owner, kind, nid, self.rank, self.span):
            o = np.argsort(_sort_key(owner, kind, nid, self.rank, self.span), kind="stable")
            o = o.astype(np.int32)
        del kind, nid
        if o is not None:
            owner = owner[o]
        at = self._offsets(owner, o, below[inner] if len(inner) else None, m)
        if k:
            at += self.start[owner]
        del owner
        if len(inner) == 0:  # the paths alone, none with paths under it
            if o is None:
                self.pos[sel] = at
            elif by_level is None:
                o += lo
                self.pos[o] = at
            else:
                self.pos[by_level[lo:hi][o]] = at
            return
        target = np.empty(size_all, np.int32)  # >= n: a start, not a place
        target[:m] = np.arange(lo, hi, dtype=np.int32) if by_level is None else sel
        target[m:] = inner
        target[m:] += n
        if o is not None:
            target = target[o]
        del o
        is_pos = target < n
        self.pos[target[is_pos]] = at[is_pos]
        np.logical_not(is_pos, out=is_pos)
        target = target[is_pos]
        target -= n
        self.start[target] = at[is_pos]

    @staticmethod
    def _offsets(
        owner: np.ndarray, o: np.ndarray | None, inner_sizes: np.ndarray | None, m: int
    ) -> np.ndarray:
        """Each sorted entry's offset below its owner: the sizes of the entries before
        it in its owner's group (a path: 1; the place below a path: its paths under)."""
        size_all = len(owner)
        new = np.empty(size_all, bool)
        new[:1] = True
        np.not_equal(owner[1:], owner[:-1], out=new[1:])
        if inner_sizes is not None:  # each entry's place: the sizes of those before it
            size = np.ones(size_all, np.int32)
            size[m:] = inner_sizes
            if o is not None:
                size = size[o]
            at = np.cumsum(size, dtype=np.int32)
            at -= size
            del size
        else:  # one place each
            at = np.arange(size_all, dtype=np.int32)
        # Less the place of its group's first entry.
        heads = np.flatnonzero(new)
        del new
        at -= np.repeat(at[heads], np.diff(heads, append=size_all))
        return at


_KEY_PIECE = 1 << 17  # sort keys checked at a time


def _sort_key(
    owner: np.ndarray, kind: np.ndarray | None, nid: np.ndarray, rank: np.ndarray, span: int
) -> np.ndarray:
    """(owner + 1) * span + rank[kind, nid]: the entries' order below their owner
    (``kind`` None: all 0)."""
    key = owner.astype(np.int64)
    key += 1
    key *= span
    key += rank[0][nid] if kind is None else rank[kind, nid]
    return key


def _increasing(
    owner: np.ndarray, kind: np.ndarray | None, nid: np.ndarray, rank: np.ndarray, span: int
) -> bool:
    """Whether ``_sort_key`` strictly increases, its keys made a piece at a time."""
    last = None
    for a in range(0, len(owner), _KEY_PIECE):
        b = min(len(owner), a + _KEY_PIECE)
        piece = None if kind is None else kind[a:b]
        key = _sort_key(owner[a:b], piece, nid[a:b], rank, span)
        if (last is not None and key[0] <= last) or not bool(np.all(key[1:] > key[:-1])):
            return False
        last = int(key[-1])
    return True


def _stable(key: np.ndarray) -> np.ndarray:
    return np.argsort(key, kind="stable").astype(np.int32)


class _Strings:
    """The UTF-8 strings of ``order``'s paths, as a sequence for bisect."""

    def __init__(self, names: StackNames, order: np.ndarray) -> None:
        self.names, self.order = names, order

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, i: int) -> bytes:
        return self.names.string(int(self.order[i])).encode("utf-8")
