"""Turn a call tree into Plotly icicle arrays, pruned to a node budget.

A browser stays responsive with a few thousand icicle cells, while a real capture can
have hundreds of thousands of distinct stacks. The biggest frames are kept, best first;
what does not fit under a kept parent is merged into one "other" cell per parent, so
every parent still adds up and nothing silently disappears.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..names import short_label

OTHER = "other"
# Plotly checks that children never exceed their parent; integer values make that exact.
_UNITS_PER_US = 1000


@dataclass
class Frame:
    """The shape the web layer needs from any call tree."""

    name: str
    self_us: float
    calls: int
    children: list[Frame] = field(default_factory=list)
    file: str | None = None
    line: int | None = None
    total_units: int = 0  # filled by ``settle``
    key: str = ""  # unique among siblings (static functions may share a name)
    fid: int = -1  # the profile's frame id: ties a cell to its Functions row


def settle(frame: Frame) -> int:
    """Recompute totals bottom-up as exact integers (iterative: stacks can be deep)."""
    order: list[Frame] = []
    stack = [frame]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        own = max(0, round(node.self_us * _UNITS_PER_US))
        node.total_units = own + sum(c.total_units for c in node.children)
    return frame.total_units


def prune(root: Frame, max_nodes: int) -> list[tuple[Frame | None, int, int]]:
    """Pick frames to show. Returns (frame or None for "other", parent index, value units)
    in parent-before-child order; index 0 is the root with parent -1."""
    max_nodes = max(2, max_nodes)
    kept: list[tuple[Frame | None, int, int]] = [(root, -1, root.total_units)]
    # Remaining (not kept) children per kept node: their sum becomes that node's "other".
    leftover: list[int] = [sum(c.total_units for c in root.children)]
    open_count: list[int] = [len(root.children)]
    others = 1 if root.children else 0
    heap: list[tuple[int, int, int, Frame]] = []
    serial = 0
    for child in root.children:
        heapq.heappush(heap, (-child.total_units, serial, 0, child))
        serial += 1
    while heap:
        neg, _, parent, node = heap[0]
        if -neg <= 0:
            break
        parent_closes = open_count[parent] == 1
        new_others = others - (1 if parent_closes else 0) + (1 if node.children else 0)
        if len(kept) + 1 + new_others > max_nodes:
            break
        heapq.heappop(heap)
        index = len(kept)
        kept.append((node, parent, node.total_units))
        leftover[parent] -= node.total_units
        open_count[parent] -= 1
        leftover.append(sum(c.total_units for c in node.children))
        open_count.append(len(node.children))
        others = new_others
        for child in node.children:
            heapq.heappush(heap, (-child.total_units, serial, index, child))
            serial += 1
    for index in range(len(kept)):
        if open_count[index] and leftover[index] > 0:
            kept.append((None, index, leftover[index]))
    return kept


def icicle_payload(
    root: Frame,
    max_nodes: int,
    root_label: str = "all",
    frame_count: Callable[[Frame], int] | None = None,
) -> dict[str, Any]:
    """Plotly-ready arrays. ``customdata`` per cell: [full name, total µs, self µs, calls,
    % of root, file:line]."""
    total = settle(root)
    kept = prune(root, max_nodes)
    ids: list[str] = []
    labels: list[str] = []
    parents: list[str] = []
    values: list[int] = []
    custom: list[Sequence[Any]] = []
    names: list[str] = []
    fids: list[int] = []
    seen: set[str] = set()
    for index, (frame, parent, value) in enumerate(kept):
        # Ids are hashes of the call path, so a zoomed-in frame keeps its id across updates.
        if parent < 0:
            ids.append("root")
            parents.append("")
        else:
            name = OTHER if frame is None else (frame.key or frame.name)
            seed = f"{ids[parent]}\0{name}\0{frame is None}"
            digest = hashlib.blake2b(seed.encode(), digest_size=8).hexdigest()
            n = 1
            while digest in seen:  # two symbols with one name under one parent
                n += 1
                digest = hashlib.blake2b(f"{seed}\0{n}".encode(), digest_size=8).hexdigest()
            seen.add(digest)
            ids.append(digest)
            parents.append(ids[parent])
        values.append(value)
        us = value / _UNITS_PER_US
        pct = 100.0 * value / total if total else 0.0
        fids.append(-1 if frame is None else frame.fid)
        if frame is None:
            labels.append(OTHER)
            names.append(OTHER)
            custom.append([f"{OTHER} (small frames merged)", us, None, None, pct, ""])
            continue
        name = root_label if index == 0 else frame.name
        labels.append(short_label(name))
        names.append(name)
        where = f"{frame.file}:{frame.line}" if frame.file and frame.line else frame.file or ""
        custom.append([name, us, frame.self_us, frame.calls, pct, where])
    return {
        "ids": ids,
        "labels": labels,
        "parents": parents,
        "values": values,
        "names": names,
        "fids": fids,
        "customdata": custom,
        "total_us": total / _UNITS_PER_US,
        "nodes": len(ids),
        "units_per_us": _UNITS_PER_US,
        "frames": count_frames(root) if frame_count is None else frame_count(root),
    }


def count_frames(root: Frame) -> int:
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children)
    return count
