"""Text rows built with array operations: the one row builder of every text export
(folded paths, callgrind's edges, speedscope's and Chrome's events). Formatting a row
in Python costs about 1 µs; these exports write millions of them.

A row is a sequence of parts: constant bytes, or a column with one item per row:
``Ints`` (non-negative integers as ``str(int)`` writes them), ``Strings`` (an item of
a ``StringTable`` per row, possibly empty) or ``Chars`` (one byte per row, 0 for none).

``build`` lays the rows out as a grid of n × width bytes: the constants in place, each
column as wide as its widest item in these rows, shorter items padded with NUL. Dropping
the NULs leaves each row's text, one row after the other: exactly what joining the
formatted strings would give. Text must therefore hold no NUL (``StringTable`` refuses
it; callers format such input one row at a time). The grid costs width bytes a row,
so callers build a chunk of rows at a time.

Neutral ground: the exports and the profile's paths both use it, and the profile
imports nothing from the exports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_POW10 = [10**k for k in range(20)]
# Floats below this are integers exactly and repr prints them as digits + ".0".
_REPR_INT_LIMIT = 1e16


@dataclass
class Ints:
    """Non-negative integers (< 2**63), as ``str(int)`` writes them."""

    values: np.ndarray


@dataclass
class Chars:
    """One byte per row (uint8); 0 writes nothing."""

    values: np.ndarray


class StringTable:
    """Byte strings (no NUL) as the rows of one NUL-padded array: built once, used for
    every chunk of rows."""

    def __init__(self, strings: list[bytes]) -> None:
        if any(b"\0" in s for s in strings):
            raise ValueError("StringTable: a string holds NUL")
        self.lengths = np.array([len(s) for s in strings], np.int64)
        self.width = max(1, int(self.lengths.max(initial=0)))
        self.raw = np.zeros((len(strings), self.width), np.uint8)
        for i, s in enumerate(strings):
            self.raw[i, : len(s)] = np.frombuffer(s, np.uint8)
        self._cut: dict[int, np.ndarray] = {}

    def cut(self, width: int) -> np.ndarray:
        """The strings' first ``width`` bytes, one ``V{width}`` item each: a long string
        that a chunk does not use costs it nothing."""
        got = self._cut.get(width)
        if got is None:
            got = self._cut[width] = np.ascontiguousarray(self.raw[:, :width]).view(f"V{width}")
            got = self._cut[width] = got[:, 0]
        return got


@dataclass
class Strings:
    """``table``'s string number ``index[i]`` in row i."""

    table: StringTable
    index: np.ndarray


Part = bytes | Ints | Chars | Strings


class Buffer:
    """A byte array kept from one chunk of rows to the next, grown as needed: a fresh
    grid per chunk would fault in its pages every time (large arrays come straight from
    mmap), which costs about a quarter of the formatting."""

    def __init__(self) -> None:
        self._a = np.empty(0, np.uint8)

    def take(self, size: int) -> np.ndarray:
        if len(self._a) < size:
            self._a = np.empty(size, np.uint8)
        return self._a[:size]


def whole_floats(v: np.ndarray) -> np.ndarray | None:
    """The floats as int64 when all are whole numbers in [0, 1e16), whose ``repr`` is
    then the integer's digits and ".0"; else None: the caller formats them one by one
    (others need the shortest round trip)."""
    v = np.asarray(v, np.float64)
    if len(v) and not (
        float(v.min()) >= 0.0
        and float(v.max()) < _REPR_INT_LIMIT
        and bool(np.all(v == np.floor(v)))
        and not bool(np.any(np.signbit(v)))  # -0.0 prints with its sign
    ):
        return None
    return v.astype(np.int64)


def _width(part: Part) -> int:
    """The grid columns ``part`` takes: its widest item."""
    if isinstance(part, bytes):
        return len(part)
    if isinstance(part, Chars):
        return 1
    if isinstance(part, Ints):
        return len(str(int(part.values.max()))) if len(part.values) else 0
    return int(part.table.lengths[part.index].max()) if len(part.index) else 0


def _put_ints(grid: np.ndarray, at: int, width: int, values: np.ndarray) -> None:
    """The numbers right-aligned in columns [at, at + width), leading zeros as NUL."""
    x = np.asarray(values)
    if len(x) and int(x.min()) < 0:
        raise ValueError("Ints: negative value")
    # 32-bit division is about twice as fast as 64-bit.
    rest = x.astype(np.uint32 if width <= 9 else np.uint64)
    ten = rest.dtype.type(10)
    for j in range(width):  # the j-th digit from the right
        q = rest // ten
        d = (rest - q * ten).astype(np.uint8)
        d += ord("0")
        if j:  # no leading zeros: those bytes are NUL
            d *= rest != 0
        grid[:, at + width - 1 - j] = d
        rest = q


def _template(parts: list[Part], widths: list[int]) -> np.ndarray:
    """One row of the grid: the constants in place, zeros in the columns."""
    row = b"".join(
        p if isinstance(p, bytes) else b"\0" * w for p, w in zip(parts, widths, strict=True)
    )
    return np.frombuffer(row, np.uint8)


def _fill(flat: np.ndarray, row: np.ndarray) -> None:
    """``flat`` filled with copies of ``row``: doubling copies, at memcpy speed (a
    broadcast into the grid's narrow strided columns costs several times more)."""
    m = len(row)
    flat[:m] = row
    while m < len(flat):
        k = min(m, len(flat) - m)
        flat[m : m + k] = flat[:k]
        m += k


def build(
    n: int, parts: list[Part], buf: Buffer | None = None, lengths: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The ``n`` rows' text, one row after the other (uint8), and with ``lengths`` each
    row's length in bytes as well. ``buf`` holds the grid (a fresh one when None)."""
    widths = [_width(p) for p in parts]
    width = sum(widths)
    flat = (buf or Buffer()).take(n * width)
    grid = flat.reshape(n, width)
    if len(flat):
        _fill(flat, _template(parts, widths))
    at = 0
    for part, w in zip(parts, widths, strict=True):
        if isinstance(part, Ints):
            _put_ints(grid, at, w, part.values)
        elif isinstance(part, Chars):
            grid[:, at] = part.values
        elif isinstance(part, Strings) and w:
            cut = part.table.cut(w)
            np.take(cut, part.index, out=grid[:, at : at + w].view(f"V{w}")[:, 0], mode="clip")
        at += w
    kept = flat != 0
    text = flat[kept]
    if not lengths:
        return text
    return text, kept.reshape(grid.shape).sum(axis=1)


def join_rows(n: int, parts: list[Part]) -> str:
    """The ``n`` rows as a str (the text is UTF-8)."""
    return str(memoryview(build(n, parts)), "utf-8")
