"""The one prune of a call tree to a node budget: the flame graph, the call tree and the
SVG export all keep what it picks.

The largest nodes (by total) are kept, ancestors first; what is cut under a kept node is
merged into one "other" node while the budget lasts (a tenth of it is reserved for
them). Nodes below ``min_fraction`` of the root's total are cut too. Any tree can be
pruned: ``kids(key)`` gives a node's children (keys) in falling total, ties in their
order; ``totals(keys)`` their totals; ``calls(keys)`` the calls of cut ones (0 when
None). Only the children of kept nodes are looked at, so a tree of a million stacks
costs what the kept few thousand cost.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(slots=True)
class Pruned:
    """What ``select`` keeps, as rows. Row 0 is the top (parent -1); every other kept
    row comes after its parent, siblings in falling total. ``others``: per "other" row,
    (parent row, total, calls), to be added after the kept rows in this order."""

    keys: list[Any]
    parent: list[int]
    others: list[tuple[int, float, int]] = field(default_factory=list)


def select(
    top: Any,
    top_total: float,
    kids: Callable[[Any], Sequence[Any]],
    totals: Callable[[Any], np.ndarray],
    max_nodes: int,
    min_fraction: float,
    calls: Callable[[Any], int] | None = None,
) -> Pruned:
    """The heap holds each parent's next child, with the key (falling total, then push
    order) that a heap of every child would give it: push order is the parent's pop
    order, then the child's place."""
    limit = max(2, max_nodes)
    keep_limit = limit - max(1, limit // 10)
    floor = top_total * min_fraction
    out = Pruned([top], [-1])
    # Per parent: its children, the row it got and the children's totals (an array: a
    # kept node of a million children costs 8 bytes each, not a Python float each).
    lists: list[tuple[Sequence[Any], int, np.ndarray]] = []
    heap: list[tuple[float, int, int, int]] = []

    def add(key: Any, row: int, seq: int) -> None:
        c = kids(key)
        if len(c):
            lists.append((c, row, np.asarray(totals(c), np.float64)))
            heapq.heappush(heap, (-float(lists[-1][2][0]), seq, 0, len(lists) - 1))

    add(top, 0, -1)
    seq = 0
    while heap:
        entry = heapq.heappop(heap)
        neg, pseq, i, li = entry
        if len(out.keys) >= keep_limit or -neg < floor:  # this and all left are cut
            out.others = _cut(lists, [entry, *sorted(heap)], limit - len(out.keys), calls)
            break
        c, row, vals = lists[li]
        if i + 1 < len(c):
            heapq.heappush(heap, (-float(vals[i + 1]), pseq, i + 1, li))
        out.keys.append(c[i])
        out.parent.append(row)
        add(c[i], len(out.keys) - 1, seq)
        seq += 1
    return out


def _cut(
    lists: list[tuple[Sequence[Any], int, np.ndarray]],
    left: list[tuple[float, int, int, int]],
    room: int,
    calls: Callable[[Any], int] | None,
) -> list[tuple[int, float, int]]:
    """Everything ``left`` in the heap (in pop order) is cut: each parent's remaining
    children become one "other" node (their totals summed in order, as a cumulative
    sum adds them), for the ``room`` parents that lose the most."""
    # np.cumsum adds in order, one after another, as a loop would (no pairwise sum).
    sums = [float(np.cumsum(lists[li][2][i:])[-1]) for _, _, i, li in left]
    out = []
    for g in sorted(range(len(left)), key=lambda g: -sums[g])[:room]:
        _, _, i, li = left[g]
        c, row, _ = lists[li]
        out.append((row, sums[g], calls(c[i:]) if calls else 0))
    return out
