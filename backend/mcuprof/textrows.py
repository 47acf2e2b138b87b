"""A row builder for text that may hold UTF-8 and must be cut row by row (export/rows.py's
kind): the rows' bytes and each row's length, so a caller can interleave other text.
Neutral ground: the exports (callgrind) and the profile's paths both use it, and the
profile imports nothing from the exports."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_POW10 = [10**k for k in range(20)]


def prebuilt(strings: list[bytes]) -> np.ndarray:
    """``strings`` as a table for ``Prebuilt``: built once, used for every chunk."""
    width = max(1, max((len(t) for t in strings), default=1))
    table = np.zeros(len(strings), f"V{width}")
    raw = table.view(np.uint8).reshape(len(strings), width)
    for i, t in enumerate(strings):
        raw[i, : len(t)] = np.frombuffer(t, np.uint8)
    return table


@dataclass
class Prebuilt:
    """``table[index]`` per row (a table made by ``prebuilt``), cut to the longest of
    the rows' strings: a long string that a chunk does not use costs it nothing."""

    table: np.ndarray
    index: np.ndarray

    def __post_init__(self) -> None:
        raw = self.table.view(np.uint8).reshape(len(self.table), -1)
        # NULs are dropped from the text: a string counts its other bytes
        self._kept = np.count_nonzero(raw, axis=1)
        self._end = (raw != 0).shape[1] - np.argmax((raw != 0)[:, ::-1], axis=1)
        self._end[self._kept == 0] = 0
        self.width = int(self._end[self.index].max()) if len(self.index) else 0

    def write(self, grid: np.ndarray, at: int, length: np.ndarray) -> None:
        w = self.width
        if w:
            raw = self.table.view(np.uint8).reshape(len(self.table), -1)
            cut = np.ascontiguousarray(raw[:, :w]).view(f"V{w}")[:, 0]
            grid[:, at : at + w].view(f"V{w}")[:, 0] = cut[self.index]
        length += self._kept[self.index]


@dataclass
class PaddedInts:
    """Non-negative integers (< 2**63) as ``str(int)`` writes them, each left-aligned
    in a NUL-padded column as wide as the longest: the grid layout of ``row_bytes``,
    where NULs are dropped. (rows.Ints writes packed rows of exact width instead.)"""

    values: np.ndarray
    suffix: bytes = b""

    def __post_init__(self) -> None:
        self.top = int(self.values.max()) if len(self.values) else 0
        self.digits = len(str(self.top))
        self.width = self.digits + len(self.suffix)

    def write(self, grid: np.ndarray, at: int, length: np.ndarray | None = None) -> None:
        """The numbers into columns [at, at + width) of the uint8 ``grid``, and each
        one's length added to ``length`` (when given)."""
        x = np.asarray(self.values, np.int64)
        w = self.digits
        wide = self.top >= 1 << 32
        rest = x.astype(np.uint64 if wide else np.uint32)  # 32-bit division is faster
        ten = rest.dtype.type(10)
        if length is not None:
            length += 1 + len(self.suffix)
        for j in range(w):  # j-th digit from the right, at byte position w - 1 - j
            q = rest // ten
            d = (rest - q * ten).astype(np.uint8)
            d += ord("0")
            if j:  # no leading zeros: those bytes stay 0
                more = x >= _POW10[j]
                d *= more
                if length is not None:
                    length += more
            grid[:, at + w - 1 - j] = d
            rest = q
        if self.suffix:
            grid[:, at + w : at + w + len(self.suffix)] = np.frombuffer(self.suffix, np.uint8)


GridPart = bytes | PaddedInts | Prebuilt


def row_bytes(
    n: int, parts: list[GridPart], buf: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` rows' bytes, one row after the other, and each row's length. As
    ``rows.join_rows``, parts are left NUL-padded and text parts must hold no NUL.
    ``buf`` (uint8, reused from one call to the next to spare page faults) holds the
    grid when it is large enough."""
    width = sum(len(p) if isinstance(p, bytes) else p.width for p in parts)
    size = n * width
    if buf is None or len(buf) < size:
        buf = np.empty(size, np.uint8)  # every byte of the grid is written below
    flat = buf[:size]
    grid = flat.reshape(n, width)
    # The constants first, all rows at once by doubling copies (a broadcast into
    # narrow strided columns costs several times more); the columns go over them.
    row = b"".join(p if isinstance(p, bytes) else b"\0" * p.width for p in parts)
    fixed = sum(len(p) for p in parts if isinstance(p, bytes))
    if size:
        flat[:width] = np.frombuffer(row, np.uint8)
        done = width
        while done < size:
            k = min(done, size - done)
            flat[done : done + k] = flat[:k]
            done += k
    length = np.full(n, fixed, np.int64)
    at = 0
    for part in parts:
        if not isinstance(part, bytes):
            part.write(grid, at, length)
        at += len(part) if isinstance(part, bytes) else part.width
    return flat[flat != 0], length
