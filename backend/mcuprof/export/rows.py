"""Text rows built with array operations, for exports that write one JSON object per
call (millions of them): formatting each in Python costs ~1 µs, this a few tens of ns.

A row is a sequence of parts: constant bytes, or a column of variable-width ASCII (one
item per row). Each row is a record of a structured dtype, one field per part, so a
part is written with one array operation (a digit string is packed into 64-bit words
first); bytes a part does not use are left 0, and the rows are read out in order without
their zeros: the text is exactly what joining the formatted strings would give. Text
parts must not hold NUL bytes of their own (JSON escapes them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_POW10 = [10**k for k in range(20)]
# Floats below this are integers exactly and repr prints them as digits + ".0".
_REPR_INT_LIMIT = 1e16


@dataclass
class Ints:
    """Non-negative integers (< 2**63), as ``str(int)`` writes them; ``suffix`` follows
    each (".0" makes them the ``repr`` of whole floats)."""

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
            q = rest // ten  # by a scalar: a multiplication, not a division
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


@dataclass
class Table:
    """``strings[i]`` for each i of ``index``: per-item text from a small set."""

    strings: list[bytes]
    index: np.ndarray

    def formats(self) -> list[str]:
        return [f"V{max(1, max((len(t) for t in self.strings), default=1))}"]

    def fill(self, fields: list[np.ndarray]) -> None:
        (field,) = fields
        table = np.zeros(len(self.strings), field.dtype)
        raw = table.view(np.uint8).reshape(len(self.strings), -1)
        for i, t in enumerate(self.strings):
            raw[i, : len(t)] = np.frombuffer(t, np.uint8)
        field[...] = table[self.index]


@dataclass
class Chars:
    """One byte per row."""

    values: np.ndarray  # uint8

    def formats(self) -> list[str]:
        return ["u1"]

    def fill(self, fields: list[np.ndarray]) -> None:
        fields[0][...] = self.values


Part = bytes | Ints | Table | Chars


def whole_floats(v: np.ndarray) -> Ints | None:
    """The ``repr`` of each float when all are whole numbers in [0, 1e16) ("12.0"), else
    None: the caller formats them one by one (others need the shortest round trip)."""
    v = np.asarray(v, np.float64)
    if len(v) and not (
        float(v.min()) >= 0.0
        and float(v.max()) < _REPR_INT_LIMIT
        and bool(np.all(v == np.floor(v)))
        and not bool(np.any(np.signbit(v)))  # -0.0 prints with its sign
    ):
        return None
    return Ints(v.astype(np.int64), b".0")


def join_rows(n: int, parts: list[Part]) -> str:
    """The ``n`` rows, each the concatenation of its parts, one after the other."""
    formats: list[str] = []
    owners: list[int] = []
    for i, part in enumerate(parts):
        f = [f"S{len(part)}"] if isinstance(part, bytes) else part.formats()
        formats += f
        owners += [i] * len(f)
    names = [f"f{k}" for k in range(len(formats))]
    rows = np.zeros(n, np.dtype({"names": names, "formats": formats}))  # packed: no gaps
    for i, part in enumerate(parts):
        fields = [rows[names[k]] for k in range(len(names)) if owners[k] == i]
        if isinstance(part, bytes):
            fields[0][...] = part
        else:
            part.fill(fields)
    flat = rows.view(np.uint8)
    return str(memoryview(flat[flat != 0]), "ascii")  # no bytes copy in between
