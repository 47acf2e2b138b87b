"""rows.py's row builder for text that may hold UTF-8 and must be cut row by row:
the rows' bytes and each row's length, so a caller can interleave other text."""

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
    """rows.Table with its table built beforehand (``prebuilt``)."""

    table: np.ndarray
    index: np.ndarray

    def formats(self) -> list[str]:
        return [self.table.dtype.str.lstrip("|")]

    def fill(self, fields: list[np.ndarray]) -> None:
        fields[0][...] = self.table[self.index]


@dataclass
class PaddedInts:
    """Non-negative integers (< 2**63) as ``str(int)`` writes them, each left-aligned in
    NUL-padded 64-bit words: the grid layout of ``row_bytes``, where NULs are dropped.
    (rows.Ints writes packed rows of exact width instead.)"""

    values: np.ndarray
    suffix: bytes = b""

    def _digits(self) -> int:
        top = int(self.values.max()) if len(self.values) else 0
        return len(str(top))

    def formats(self) -> list[str]:
        words = -(-(self._digits() + len(self.suffix)) // 8)
        return ["<u8"] * words

    def fill(self, fields: list[np.ndarray]) -> None:
        x = np.asarray(self.values, np.int64)
        w = self._digits()
        chars = np.zeros((len(x), 8 * len(fields)), np.uint8)
        wide = len(x) and int(x.max()) >= 1 << 32
        rest = x.astype(np.uint64 if wide else np.uint32)  # 32-bit division is faster
        ten = rest.dtype.type(10)
        for j in range(w):  # j-th digit from the right, at byte position w - 1 - j
            q = rest // ten
            d = (rest - q * ten).astype(np.uint8)
            d += ord("0")
            if j:  # no leading zeros: those bytes stay 0
                d *= x >= _POW10[j]
            chars[:, w - 1 - j] = d
            rest = q
        if self.suffix:
            chars[:, w : w + len(self.suffix)] = np.frombuffer(self.suffix, np.uint8)
        words = chars.view("<u8")
        for k, field in enumerate(fields):
            field[...] = words[:, k]


GridPart = bytes | PaddedInts | Prebuilt


def row_bytes(n: int, parts: list[GridPart]) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` rows' bytes, one row after the other, and each row's length. As
    ``rows.join_rows``, parts are left NUL-padded and text parts must hold no NUL."""
    formats: list[str] = []
    owners: list[int] = []
    for i, part in enumerate(parts):
        f = [f"S{len(part)}"] if isinstance(part, bytes) else part.formats()
        formats += f
        owners += [i] * len(f)
    names = [f"f{k}" for k in range(len(formats))]
    rows = np.zeros(n, np.dtype({"names": names, "formats": formats}))
    for i, part in enumerate(parts):
        fields = [rows[names[k]] for k in range(len(names)) if owners[k] == i]
        if isinstance(part, bytes):
            fields[0][...] = part
        else:
            part.fill(fields)
    grid = rows.view(np.uint8).reshape(n, -1)
    used = grid != 0
    return grid[used], np.count_nonzero(used, axis=1)
