"""rows.py's row builder for text that may hold UTF-8 and must be cut row by row:
the rows' bytes and each row's length, so a caller can interleave other text."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rows import Part


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


def row_bytes(n: int, parts: list[Part | Prebuilt]) -> tuple[np.ndarray, np.ndarray]:
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
