"""The profile model: two columnar tables, built once from the records, that every view,
export and ``compare`` reads (as the Firefox Profiler's processed profile holds its call
and stack tables). This docstring is their one description.

Ids (plain ints, or numpy int32 columns of them):

- ``AddressId``: a distinct raw function address, or a frame key of a source that names
  its frames itself (keyed.py), in the order they were first added
  (``Profile.address_ids``, ``AddressTable.key_ids``); ``Profile.frame_of[addr]`` is its frame.
- ``FrameId``: a function (``Profile.frames[f]``: name, label, file, line). Addresses
  inside one function share a frame. ``UNKNOWN_ID`` (-1) is the synthetic "[unknown]".
- ``StackId``: a distinct path of frames from a root, interned: two calls with the same
  frames from the root down have the same stack. Stack 0 is "[unknown]", the parent of
  orphans (calls whose caller was never recorded); a parent's id is below its children's.
- ``Depth``: a call's nesting depth as the device sent it (0: a root).
- ``CallIndex``: a call's position in its depth's table (``Profile.levels[depth]``).

**CallTable** (``Profile.levels``: one ``levels.Level`` per depth, each sorted by entry
then stream position). Per call: ``entry`` (unwrapped ticks, int64), ``dur`` (ticks,
uint32), ``addr`` (AddressId; its frame via ``Profile.frame_of``), ``parent`` (the
CallIndex of its caller in the depth above, -1 for a root or an orphan: the call of the
depth above that contains it and was entered last, ``levels.find_parents``), and its
``stack`` (StackId, ``StackTable.per_level[depth]``). ``Profile.table()`` is the same
calls as one depth-major table, parents as rows of it. Built one way: ``Profile.add``
stages records (a whole capture in a few adds, a live one in many), and ``Profile._settle``
alone turns them into levels, so any split gives the same tables.

**StackTable** (``aggregate.Stacks``, made by ``incremental.Aggregator``). Per stack:
``parent`` (StackId, -1 at a root), ``frame`` (FrameId), ``depth`` and ``nested`` (its
frame also appears further up: recursion, whose time counts once in a frame's total).
Its sums per window (``aggregate.Sums``, declared once in ``aggregate.SUMS`` and counted
one way, ``aggregate.depth_calls`` into ``Sums.add``): ``calls``, ``total`` (inclusive ticks) and
``self_`` per stack, and per frame ``f_calls``, ``f_total``, ``f_self``, ``f_sum``,
``f_min``, ``f_max``. Folded paths (``paths.StackNames``) are the stacks merged by name,
as flamegraph.pl merges them.

Worked example: a 5-call capture. ``main`` (0x100) runs 100 ticks from tick 0 and calls
``a`` (0x200, ticks 10-40, which calls ``b`` at 15-25), ``b`` (0x300, 50-60) and ``c``
(0x400, 70-90). A call is recorded when it returns, so the device sends them in exit
order, as (address, entry, duration, depth)::

    (0x300, 15, 10, 2)  (0x200, 10, 30, 1)  (0x300, 50, 10, 1)  (0x400, 70, 20, 1)
    (0x100,  0, 100, 0)

Frames: 0 main, 1 a, 2 b, 3 c (one add: its new addresses get ids in ascending order).
CallTable::

    depth 0   index 0: main  entry 0   dur 100  parent -1  stack 1
    depth 1   index 0: a     entry 10  dur 30   parent 0   stack 2
              index 1: b     entry 50  dur 10   parent 0   stack 3
              index 2: c     entry 70  dur 20   parent 0   stack 4
    depth 2   index 0: b     entry 15  dur 10   parent 0   stack 5   (parent: a)

StackTable (whole capture)::

    stack  parent  frame      depth  calls  total  self
    0      -1      [unknown]  -1     0      0      0
    1      -1      main       0      1      100    40
    2      1       a          1      1      30     20
    3      1       b          1      1      10     10
    4      1       c          1      1      20     20
    5      2       b          2      1      10     10

Per frame: main 1 call, total 100, self 40; a 1, 30, 20; b 2 calls, total 20, self 20;
c 1, 20, 20. The folded export is then ``main 40``, ``main;a 20``, ``main;a;b 10``,
``main;b 10``, ``main;c 20`` (µs at a 1 MHz timer).
"""

from __future__ import annotations

from typing import NewType

AddressId = NewType("AddressId", int)
FrameId = NewType("FrameId", int)
StackId = NewType("StackId", int)
Depth = NewType("Depth", int)
CallIndex = NewType("CallIndex", int)
