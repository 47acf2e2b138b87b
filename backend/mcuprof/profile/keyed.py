"""Calls a source names itself: frames by key, times on its own 64-bit clock.

A source whose stream carries its own names (QS: the target's dictionaries) hands the
model calls that point at frames by key, as speedscope's importers hand
``FrameInfo{key, name, file}`` to one builder: no addresses to resolve, and times
already unwrapped (``entry`` int64 ticks). MiniProfiler's records (RECORD_DTYPE:
addresses, 32-bit times) take the other door of ``Profile.add``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

# The model keeps a call's duration in a uint32 column (tables.py): a longer call
# (a 64-bit target clock) is kept this long, its entry unchanged (docs/limits.md).
MAX_CALL_TICKS = (1 << 32) - 1


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """A frame as its source names it: ``key`` is what makes two frames one (QS: level
    and name), ``name`` what the views show, ``file`` the field shown next to it."""

    key: Hashable
    name: str
    file: str | None = None


def _empty(dtype: type) -> np.ndarray:
    return np.empty(0, dtype)


@dataclass
class KeyedCalls:
    """Calls in stream order: ``entry`` (int64 ticks), ``dur`` (uint32 ticks), ``depth``
    (uint16) and ``frame`` (int32, an index into ``frames``). ``frames`` lists each
    frame the calls use, in order of first use: new keys get the model's ids in that
    order."""

    entry: np.ndarray = field(default_factory=lambda: _empty(np.int64))
    dur: np.ndarray = field(default_factory=lambda: _empty(np.uint32))
    depth: np.ndarray = field(default_factory=lambda: _empty(np.uint16))
    frame: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    frames: list[FrameInfo] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entry)

    @property
    def lo(self) -> int:
        """The earliest entry (calls not empty)."""
        return int(self.entry.min())

    @property
    def hi(self) -> int:
        """The latest exit (calls not empty)."""
        return int((self.entry + self.dur).max())

    @classmethod
    def concat(cls, parts: Sequence[KeyedCalls]) -> KeyedCalls:
        """The calls of ``parts`` one after the other, their frame lists joined (a frame
        listed twice is one key: the model interns it once)."""
        if len(parts) == 1:
            return parts[0]
        frames: list[FrameInfo] = []
        shifted = []
        for p in parts:
            shifted.append(p.frame + np.int32(len(frames)))
            frames.extend(p.frames)
        return cls(
            np.concatenate([p.entry for p in parts]),
            np.concatenate([p.dur for p in parts]),
            np.concatenate([p.depth for p in parts]),
            np.concatenate(shifted) if shifted else _empty(np.int32),
            frames,
        )


# What a source hands the model (``Profile.add``): MiniProfiler's records (RECORD_DTYPE)
# or keyed calls.
Records = np.ndarray | KeyedCalls
