"""Text rows built with array operations, for exports that write one JSON object per
call (millions of them): formatting each in Python costs ~1 µs, this a few tens of ns.

A row is a sequence of parts: constant bytes, or a column of variable-width text (one
item per row). Rows are grouped by the widths of their variable parts (a handful of
groups per chunk: numbers of one digit count, names of one length); each group is a
fixed-width block: the constants copied in once, each column stored as 32-bit words
(two digits' text looked up at a time would be slower than four) straight into its
place, and the block copied to the rows' offsets in the output. When a single column,
of numbers, varies in width (a trace's frame numbers), the rows form one block instead,
the numbers padded with the constant before them (``_padded``). The text is exactly
what joining the formatted strings would give.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_POW10 = [10**k for k in range(20)]
# Floats below this are integers exactly and repr prints them as digits + ".0".
_REPR_INT_LIMIT = 1e16


def _digit_words() -> np.ndarray:
    """ "0000".."9999" as little-endian 32-bit words (first character in the low byte)."""
    v = np.arange(10_000, dtype=np.uint32)
    word = np.zeros(10_000, np.uint32)
    for i, scale in enumerate((1000, 100, 10, 1)):
        word |= (v // scale % 10 + ord("0")) << (8 * i)
    return word


_T4 = _digit_words()
_HIGH = [0, 0xFF00_0000, 0xFFFF_0000, 0xFFFF_FF00, 0xFFFF_FFFF]  # the last k bytes of a word


@dataclass
class Ints:
    """Non-negative integers (< 2**63), as ``str(int)`` writes them; ``suffix`` follows
    each (".0" makes them the ``repr`` of whole floats)."""

    values: np.ndarray
    suffix: bytes = b""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def _unsigned(self) -> np.ndarray:
        if "u" not in self._cache:
            x = np.asarray(self.values)
            top = int(x.max()) if len(x) else 0
            low = int(x.min()) if len(x) else 0
            if low < 0:
                raise ValueError("Ints: negative value")
            # 32-bit division and comparison are about twice as fast as 64-bit.
            self._cache["u"] = x.astype(np.uint32 if top < 1 << 32 else np.uint64, copy=False)
            self._cache["top"], self._cache["low"] = top, low
        return self._cache["u"]

    def widths(self) -> np.ndarray | int:
        """Each value's digit count, or the count itself when all have the same one
        (the usual case in a chunk of times: a min and a max instead of a pass per digit)."""
        u = self._unsigned()
        digits = len(str(self._cache["top"]))
        if len(u) == 0 or len(str(self._cache["low"])) == digits:
            return digits
        w = np.ones(len(u), np.uint8)
        for k in range(1, digits):
            w += u >= u.dtype.type(_POW10[k])
        return w


@dataclass
class Table:
    """``strings[i]`` for each i of ``index``: per-item text from a small set."""

    strings: list[bytes]
    index: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def widths(self) -> np.ndarray | int:
        """Each item's length, or the length itself when all items have the same one."""
        if "len" not in self._cache:
            lengths = np.array([len(t) for t in self.strings], np.int64)
            self._cache["len"] = lengths
            self._cache["same"] = int(lengths[0]) if len(set(lengths.tolist())) == 1 else None
        if len(self.index) == 0:
            return 0
        if self._cache["same"] is not None:
            return self._cache["same"]
        w = np.take(self._cache["len"], self.index)
        lo, hi = int(w.min()), int(w.max())
        return lo if lo == hi else w

    def items(self, width: int) -> np.ndarray:
        """The strings as one array of ``V{width}`` (those of another length unused)."""
        if width not in self._cache:
            pad = b"\0" * width
            raw = b"".join(t if len(t) == width else pad for t in self.strings)
            self._cache[width] = np.frombuffer(raw, f"V{width}")
        return self._cache[width]


@dataclass
class Chars:
    """One byte per row."""

    values: np.ndarray  # uint8


Part = bytes | Ints | Table | Chars


_BLOCKS = 4  # templates whose blocks a scratch keeps filled


class Scratch:
    """Arrays reused from one chunk to the next: a fresh one costs a page fault per 4 kB
    (large blocks come straight from mmap), about a quarter of the formatting time."""

    def __init__(self) -> None:
        self._bufs: dict[str, np.ndarray] = {}
        # Per block: its buffer, the template and how many rows (from the first) hold it.
        self._rows: dict[str, tuple[np.ndarray, bytes, int]] = {}
        self._blocks: dict[bytes, str] = {}  # template -> its block's key, oldest use first

    def take(self, key: str, shape: tuple[int, ...], dtype: type | str = np.uint8) -> np.ndarray:
        dt = np.dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize  # np.prod: ~10 µs a call
        self._rows.pop(key, None)  # what it holds is the caller's from now on
        buf = self._bufs.get(key)
        if buf is None or len(buf) < nbytes:
            buf = self._bufs[key] = np.empty(max(nbytes, 1), np.uint8)
        return buf[:nbytes].view(dt).reshape(shape)

    def drop_blocks_but(self, row: bytes) -> None:
        """Frees the blocks of templates other than ``row``: a chunk formatted in one
        block (``_padded``) after chunks formatted in several would hold them all."""
        for held in [t for t in self._blocks if t != row]:
            key = self._blocks.pop(held)
            self._rows.pop(key, None)
            self._bufs.pop(key, None)

    def block(self, m: int, row: bytes) -> np.ndarray:
        """``m`` rows of ``row`` (uint8, m × len(row)), in a block kept for that template
        (a few are: a chunk's groups). The rows it held last time are left as they are:
        ``render_rows`` rewrites every variable byte of every row and keeps the
        constants, so the next chunk of a format (the same templates, mostly) skips the
        fill."""
        key = self._blocks.pop(row, None)
        if key is None:
            if len(self._blocks) < _BLOCKS:  # a name not in use (some may be dropped)
                used = set(self._blocks.values())
                key = next(f"block{i}" for i in range(_BLOCKS) if f"block{i}" not in used)
            else:  # the least recently used template's block
                key = self._blocks.pop(next(iter(self._blocks)))
        self._blocks[row] = key
        held_buf, held_row, held = self._rows.get(key, (None, b"", 0))
        block = self.take(key, (m, len(row)))
        if held_buf is not self._bufs[key] or held_row != row:
            held = 0
        if held < m:
            _fill(block[held:], row)
            held = m
        self._rows[key] = (self._bufs[key], row, held)
        return block


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


_VIEWS: dict[tuple[str, int, int], np.dtype] = {}  # (format, column, row width): its dtype
_TABLES: dict[tuple[int, int], np.ndarray] = {}  # (k, prefix): _T4's words for _store


def _cached(cache: dict, key: tuple, limit: int, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by ``make`` the first time; the cache is emptied past
    ``limit`` entries (a format uses a few: the bound is for unusual inputs only)."""
    got = cache.get(key)
    if got is None:
        if len(cache) > limit:
            cache.clear()
        got = cache[key] = make()
    return got


def _field(block: np.ndarray, col: int, fmt: str) -> np.ndarray:
    """Column ``col`` of a (rows, width) uint8 block seen as one ``fmt`` per row."""
    width = block.shape[1]
    # A structured dtype costs ~10 µs to build: once per layout.
    dt = _cached(
        _VIEWS,
        (fmt, col, width),
        4096,
        lambda: np.dtype({"names": ["a"], "formats": [fmt], "offsets": [col], "itemsize": width}),
    )
    return block.view(dt)["a"][:, 0]


def _store(block: np.ndarray, col: int, k: int, index: np.ndarray, row: bytes) -> None:
    """Write ``k`` (1..4) digits per row at ``col``: the last k bytes of ``_T4[index]``.
    With k < 4 the word is written 4 - k bytes earlier, over bytes that are either the
    template's constants (put back from the word: taken from ``row``, the template) or
    a column written after this one."""
    # np.take: a third faster than indexing (which checks and converts the indices
    # through an iterator); the digits' indices are < 10,000 by construction.
    if k == 4:
        _field(block, col, "<u4")[...] = np.take(_T4, index)
        return
    lead = 4 - k
    if col >= lead:
        prefix = int.from_bytes(row[col - lead : col] + b"\0" * k, "little")
        # 10,000 words (40 kB): built once per constant before a column, not per chunk.
        table = _cached(
            _TABLES, (k, prefix), 64, lambda: (_T4 & np.uint32(_HIGH[k])) | np.uint32(prefix)
        )
        _field(block, col - lead, "<u4")[...] = np.take(table, index)
        return
    w = np.take(_T4, index)
    for i in range(k):
        block[:, col + i] = (w >> np.uint32(8 * (lead + i))).astype(np.uint8)


def _put_digits(block: np.ndarray, col: int, width: int, v: np.ndarray, row: bytes) -> None:
    """The ``width``-digit numbers ``v`` (each exactly that long) at ``col``."""
    end = col + width
    ten4 = v.dtype.type(10_000)
    while end - col > 4:
        q = v // ten4
        r = v - q * ten4
        _store(block, end - 4, 4, r, row)
        v, end = q, end - 4
    if end - col == 1:  # one digit: its character straight into the column
        np.add(v, ord("0"), out=block[:, col], casting="unsafe")
        return
    _store(block, col, end - col, v, row)


def _template(atoms: list, widths: tuple[int, ...]) -> tuple[bytes, list[int]]:
    """The row of one group with its constants in place, and each atom's column."""
    out = bytearray()
    cols = []
    it = iter(widths)
    for atom in atoms:
        cols.append(len(out))
        if isinstance(atom, bytes):
            out += atom
        elif isinstance(atom, Chars):
            out += b"\0"
        else:
            out += b"\0" * next(it)
    return bytes(out), cols


def _fill(block: np.ndarray, row: bytes) -> None:
    """Every row of ``block`` set to ``row``: doubling copies (memcpy speed)."""
    flat = block.reshape(-1)
    m = len(row)
    flat[:m] = np.frombuffer(row, np.uint8)
    total = len(flat)
    while m < total:
        k = min(m, total - m)
        flat[m : m + k] = flat[:k]
        m += k


def _groups(
    n: int, fixed: int, widths: list[np.ndarray | int]
) -> tuple[list[tuple[np.ndarray | None, list[int]]], np.ndarray | None]:
    """The rows of each combination of the variable columns' widths (ascending row
    numbers; None for all rows when there is one combination) with those widths, and
    each row's offset in the text (n + 1 of them; None with one combination). A code
    numbers the combinations over the widths' ranges."""
    base = [w if isinstance(w, int) else 0 for w in widths]
    code: np.ndarray | None = None
    digits = []  # (column, lowest width, number of widths, scale)
    scale = 1
    for k, w in enumerate(widths):
        if isinstance(w, int):
            continue
        lo, hi = int(w.min()), int(w.max())
        if hi == lo:
            base[k] = lo
            continue
        digits.append((k, lo, hi - lo + 1, scale))
        part = w.astype(np.int64)
        part -= lo
        if scale > 1:
            part *= scale
            part += code
        code = part
        scale *= hi - lo + 1
    if code is None:
        return [(None, base)], None
    if scale > 1 << 16:  # many widths in several columns: number those present only
        names, code = np.unique(code, return_inverse=True)
    else:
        names = np.arange(scale)
    length = np.full(len(names), fixed + sum(base), np.int64)  # a row's length, per code
    for _, lo, count, sc in digits:
        length += lo + names // sc % count
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    np.cumsum(np.take(length, code), out=offsets[1:])
    counts = np.bincount(code, minlength=len(names))
    present = np.flatnonzero(counts)
    if len(present) <= 8:  # a comparison per group beats a sort of the codes
        rows = [np.flatnonzero(code == c) for c in present.tolist()]
    else:
        narrow = np.uint8 if len(names) <= 256 else np.uint16 if len(names) <= 65536 else None
        small = code if narrow is None else code.astype(narrow)
        order = np.argsort(small, kind="stable")  # a radix sort for 8 or 16 bits
        rows = np.split(order, np.cumsum(counts[present])[:-1].tolist())
    groups = []
    for r, c in zip(rows, names[present].tolist(), strict=True):
        group = list(base)
        for k, lo, count, sc in digits:
            group[k] = lo + c // sc % count
        groups.append((r, group))
    return groups, offsets


def _columns(
    block: np.ndarray,
    row: bytes,
    atoms: list,
    cols: list[int],
    widths: list[int],
    idx: np.ndarray | None,
    scratch: Scratch,
) -> None:
    """The variable parts of the rows ``idx`` (all when None) into ``block``, whose
    rows hold the template ``row`` (columns ``cols``, variable parts ``widths`` wide)."""
    it = iter(widths)
    per_atom = [next(it) if isinstance(a, Ints | Table) else 0 for a in atoms]
    # Right to left: a short column's word may spill over bytes on its left.
    for atom, col, w in reversed(list(zip(atoms, cols, per_atom, strict=True))):
        if isinstance(atom, bytes):
            continue
        if isinstance(atom, Ints):
            u = atom._unsigned()
            _put_digits(block, col, w, u if idx is None else np.take(u, idx), row)
        elif isinstance(atom, Table):
            if w == 0:
                continue
            index = atom.index if idx is None else np.take(atom.index, idx)
            # Gathered into a scratch buffer: a fresh one (a name per row, often past
            # malloc's mmap threshold) can cost a page fault per 4 kB, chunk after chunk.
            names = scratch.take("names", (len(index),), f"V{w}")
            np.take(atom.items(w), index, out=names, mode="clip")  # "raise" would buffer
            _field(block, col, f"V{w}")[...] = names
        else:
            values = np.asarray(atom.values, np.uint8)
            block[:, col] = values if idx is None else np.take(values, idx)


def _pre_words(pre: bytes) -> np.ndarray:
    """Per number below 10,000, the last 4 bytes of ``pre`` + its digits as a word."""
    pre = (b"\0" * 3 + pre)[-3:]  # the most a one-digit number's word holds

    def make() -> np.ndarray:
        v = np.arange(10_000)
        digits = 1 + (v >= 10).astype(np.intp) + (v >= 100) + (v >= 1000)
        high = np.array(_HIGH, np.uint32)
        lead = np.array(
            [
                int.from_bytes(pre[len(pre) - (4 - k) :] if k < 4 else b"", "little")
                for k in range(5)
            ],
            np.uint32,
        )
        return (_T4 & np.take(high, digits)) | np.take(lead, digits)

    return _cached(_TABLES, (0, int.from_bytes(pre, "little")), 64, make)


def _shifted(scratch: Scratch, key: str, values: np.ndarray) -> np.ndarray:
    """``values`` one row on (the next row's), the last repeated."""
    out = scratch.take(key, (len(values),), values.dtype)
    out[:-1] = values[1:]
    out[-1:] = values[-1:]
    return out


def _padded(
    n: int, atoms: list, variable: list, widths: list[np.ndarray | int], scratch: Scratch
) -> np.ndarray | None:
    """The rows when one column only, of numbers, varies in width and follows constant
    bytes (``pre``) as long as its widths differ by at least (else None: ``_groups``'s
    way, a gather of every column and a scatter per combination of widths).

    Each number is written as wide as the widest, padded on the left with the end of
    ``pre`` instead of zeros: the bytes the text has there. The rows are formatted all
    at once, rotated to start just before that column (the columns before it are those
    of the next row, ``pre`` split between the two ends), and scattered so that each
    ends where it ends in the text: its padding lands over the end of the row before,
    which holds the same bytes, so that the order of the writes does not matter. One
    scatter of whole rows; the first row's head is written apart."""
    vary = [k for k, w in enumerate(widths) if not isinstance(w, int)]
    if len(vary) != 1 or not isinstance(variable[vary[0]], Ints):
        return None
    ints = variable[vary[0]]
    at = next(k for k, atom in enumerate(atoms) if atom is ints)
    pre = atoms[at - 1] if at else None
    if not isinstance(pre, bytes):
        return None
    ints._unsigned()
    top = len(str(ints._cache["top"]))
    lead = top - len(str(ints._cache["low"]))
    # Bytes of ``pre`` ahead of the number in a rotated row: a number of 4 digits or
    # fewer is one word from a table, the end of ``pre`` in its first bytes.
    first = 4 - top if top <= 4 else 0
    if len(pre) < first + lead:
        return None
    width = {id(atom): w for atom, w in zip(variable, widths, strict=True)}
    head: list = []  # the columns before the number, of the next row
    for k, atom in enumerate(atoms[: at - 1]):
        if isinstance(atom, Chars):
            atom = Chars(_shifted(scratch, f"next{k}", np.asarray(atom.values, np.uint8)))
        elif isinstance(atom, Ints):
            w = width[id(atom)]
            atom = Ints(_shifted(scratch, f"next{k}", atom._unsigned()))
            width[id(atom)] = w
        elif isinstance(atom, Table):
            w = width[id(atom)]
            shifted = Table(atom.strings, _shifted(scratch, f"next{k}", atom.index))
            shifted._cache = atom._cache  # its strings' arrays
            atom = shifted
            width[id(atom)] = w
        head.append(atom)
    if len(pre) > first:
        head.append(pre[: len(pre) - first])
    # The number and the end of ``pre`` before it, a placeholder in the template (its
    # bytes differ from row to row), are written after the columns on their right (whose
    # words may reach left over them).
    others = [b"\0" * (first + top), *atoms[at + 1 :], *head]
    fixed = [width[id(atom)] for atom in others if isinstance(atom, Ints | Table)]
    row, cols = _template(others, tuple(fixed))
    size = len(row)
    scratch.drop_blocks_but(row)
    block = scratch.block(n, row)
    _columns(block, row, others, cols, fixed, None, scratch)
    v = ints._unsigned()
    pad = np.subtract(np.uint8(top), widths[vary[0]], dtype=np.uint8)
    if top <= 4:
        _field(block, 0, "<u4")[...] = np.take(_pre_words(pre), v)
    else:
        _put_digits(block, 0, top, v, row)
        for x in range(lead):  # the zeros ahead of shorter numbers: ``pre``'s end
            fill = [pre[len(pre) - p + x] if p > x else 0 for p in range(lead + 1)]
            np.copyto(block[:, x], np.take(np.array(fill, np.uint8), pad), where=pad > x)
    first_head = _first_head(atoms[: at - 1], pre[: len(pre) - first])  # the text's start
    ahead = len(first_head)  # as long as a rotated row's head: the same widths
    end = np.cumsum(pad, dtype=np.int64)  # bytes dropped up to each row's end
    total = n * size - int(end[-1])
    out = scratch.take("out", (ahead + total,))
    # Row r's start, for its end to be the text's: ahead + (r + 1)·size − end[r] − size.
    place = np.arange(ahead, ahead + n * size, size, dtype=np.int64)
    place -= end
    dst = np.ndarray(buffer=out, dtype=f"V{size}", shape=(len(out) - size + 1,), strides=(1,))
    dst[place] = block.view(f"V{size}").reshape(-1)
    out[:ahead] = np.frombuffer(first_head, np.uint8)
    return out[:total]


def _first_head(atoms: list, pre: bytes) -> bytes:
    """The first row's text before ``pre``, then ``pre``."""
    text = bytearray()
    for atom in atoms:
        if isinstance(atom, bytes):
            text += atom
        elif isinstance(atom, Chars):
            text.append(int(np.asarray(atom.values)[0]))
        elif isinstance(atom, Ints):
            text += str(int(atom._unsigned()[0])).encode()
        else:
            text += atom.strings[int(atom.index[0])]
    return bytes(text + pre)


def render_rows(n: int, parts: list[Part], scratch: Scratch | None = None) -> np.ndarray:
    """The ``n`` rows, each the concatenation of its parts, as one uint8 array of text
    (in ``scratch``'s buffers when given: valid until its next use)."""
    if scratch is None:
        scratch = Scratch()
    atoms: list = []
    for part in parts:
        if isinstance(part, Ints):
            atoms.append(part)
            if part.suffix:
                atoms.append(part.suffix)
        elif isinstance(part, bytes):
            if part:
                if atoms and isinstance(atoms[-1], bytes):
                    atoms[-1] += part
                else:
                    atoms.append(part)
        else:
            atoms.append(part)
    if n == 0:
        return np.zeros(0, np.uint8)
    variable = [a for a in atoms if isinstance(a, Ints | Table)]
    fixed = sum(
        len(a) if isinstance(a, bytes) else 1 for a in atoms if not isinstance(a, Ints | Table)
    )
    widths = [a.widths() for a in variable]
    padded = _padded(n, atoms, variable, widths, scratch)
    if padded is not None:
        return padded
    groups, offsets = _groups(n, fixed, widths)
    out = None if offsets is None else scratch.take("out", (int(offsets[-1]),))
    for idx, group_widths in groups:
        row, cols = _template(atoms, tuple(group_widths))
        m = n if idx is None else len(idx)
        block = scratch.block(m, row)
        _columns(block, row, atoms, cols, group_widths, idx, scratch)
        if out is None:
            return block.reshape(-1)
        dst = np.ndarray(
            buffer=out, dtype=f"V{len(row)}", shape=(len(out) - len(row) + 1,), strides=(1,)
        )
        dst[offsets[idx]] = block.view(f"V{len(row)}").reshape(-1)
    return out


def join_rows(n: int, parts: list[Part]) -> str:
    """The ``n`` rows, each the concatenation of its parts, one after the other."""
    return str(memoryview(render_rows(n, parts)), "ascii")
