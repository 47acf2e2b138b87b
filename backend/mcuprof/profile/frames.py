"""Raw addresses and frame keys -> frames (functions). Each distinct raw address, and each
frame key a source names itself (keyed.py), is stored once under an id; a frame is a
function of the symbol table, a raw address that resolves to none, or a keyed frame."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import kernels
from .kernels import distinct
from .keyed import FrameInfo

UNKNOWN = "[unknown]"


@dataclass(frozen=True, slots=True)
class Frame:
    name: str  # folded/flame frame: demangled name or "0x%08x" of the raw address
    label: str  # unique among functions with the same name (statics carry their file)
    file: str | None
    line: int | None
    start: int  # function start, or the raw address for unresolved frames
    symbol: int  # index into SymbolTable.functions, -1 when unresolved

    @property
    def where(self) -> str | None:
        """The file shown next to the name (see ``where``)."""
        return where(self.name, self.label, self.file)


UNKNOWN_FRAME = Frame(UNKNOWN, UNKNOWN, None, None, 0, -1)


def where(name: str, label: str, file: str | None) -> str | None:
    """A function's file, as the views and exports show it next to its one display
    name: for a static, what its label adds to the name (its file; or file and unit
    for a copy from a header; or its unit or address without DWARF), so two statics
    of one name stay told apart by this field alone; else its source file."""
    if label != name and label.startswith(name + " [") and label.endswith("]"):
        return label[len(name) + 2 : -1]
    return file


class AddressTable:
    """Interns raw u32 addresses, and frame keys, to dense int32 ids, and maps ids to frame
    ids. A keyed id has no address (0 in ``addrs``) and never resolves through symbols."""

    def __init__(self, symbols: Any | None = None) -> None:
        self.symbols = symbols
        self.addrs = np.empty(0, np.uint32)  # by id
        self._sorted = np.empty(0, np.uint32)
        self._sorted_ids = np.empty(0, np.int32)
        self.frame_of = np.empty(0, np.int32)  # by id
        self.frames: list[Frame] = []
        self._frame_key: dict[Any, int] = {}
        self._key_ids: dict[Hashable, int] = {}  # frame key -> id
        self._keyed: dict[int, FrameInfo] = {}  # id -> the frame it names

    @property
    def nbytes(self) -> int:
        return (
            self.addrs.nbytes + self._sorted.nbytes + self._sorted_ids.nbytes + self.frame_of.nbytes
        )

    def copy(self) -> AddressTable:
        """An independent copy (arrays are replaced, never written, so they are shared)."""
        out = AddressTable(self.symbols)
        out.addrs, out._sorted, out._sorted_ids = self.addrs, self._sorted, self._sorted_ids
        out.frame_of = self.frame_of
        out.frames = list(self.frames)
        out._frame_key = dict(self._frame_key)
        out._key_ids, out._keyed = dict(self._key_ids), dict(self._keyed)
        return out

    @classmethod
    def of_addresses(cls, symbols: Any | None, addrs: np.ndarray) -> AddressTable:
        """A table whose ids are ``addrs`` (distinct) in the order given, as a loader that
        met them in that order interned them (a kept aggregate's check of its frames)."""
        table = cls(symbols)
        if len(addrs):
            table._grow(np.asarray(addrs, np.uint32))
        return table

    def ids(self, raw: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The id of each raw address (int32, into ``out`` when given, which may be
        ``raw``'s own memory), new ones interned in ascending order. Firmware addresses
        span a range about their count: looked up through a table over it rather than by
        a binary search each, kernels.ID_PIECE addresses at a time (bounded temporaries)."""
        raw = np.asarray(raw, np.uint32)
        if out is None:
            out = np.empty(len(raw), np.int32)
        if len(raw) == 0:
            return out
        present = distinct(raw)
        pos = np.searchsorted(self._sorted, present)
        known = pos < len(self._sorted)
        known[known] = self._sorted[pos[known]] == present[known]
        if not known.all():
            self._grow(present[~known])
        lo, hi = int(present[0]), int(present[-1])
        table = None
        if hi - lo < 2 * len(raw) + 4096:
            table = np.empty(hi - lo + 1, np.int32)
            present_ids = self._sorted_ids[np.searchsorted(self._sorted, present)]
            table[present - np.uint32(lo)] = present_ids
        step = kernels.ID_PIECE
        for a in range(0, len(raw), step):
            piece = raw[a : a + step]
            if table is None:
                out[a : a + step] = self._sorted_ids[np.searchsorted(self._sorted, piece)]
            else:
                out[a : a + step] = table[np.subtract(piece, lo, dtype=np.intp)]
        return out

    def key_ids(self, frames: Sequence[FrameInfo]) -> np.ndarray:
        """The id of each frame (by its key), new keys interned in the order given."""
        out = np.empty(len(frames), np.int32)
        first = len(self.addrs)
        new: list[FrameInfo] = []
        for i, f in enumerate(frames):
            got = self._key_ids.get(f.key)
            if got is None:
                got = self._key_ids[f.key] = first + len(new)
                self._keyed[got] = f
                new.append(f)
            out[i] = got
        if new:
            self.addrs = np.concatenate([self.addrs, np.zeros(len(new), np.uint32)])
            self.frame_of = np.concatenate([self.frame_of, self._frames_for(first, len(new))])
        return out

    def _grow(self, new: np.ndarray) -> None:
        first = len(self.addrs)
        new_ids = np.arange(first, first + len(new), dtype=np.int32)
        self.addrs = np.concatenate([self.addrs, new])
        merged = np.concatenate([self._sorted, new])
        merged_ids = np.concatenate([self._sorted_ids, new_ids])
        order = np.argsort(merged, kind="stable")
        self._sorted, self._sorted_ids = merged[order], merged_ids[order]
        self.frame_of = np.concatenate([self.frame_of, self._frames_for(first, len(new))])

    def set_symbols(self, symbols: Any | None) -> None:
        self.symbols = symbols
        self.frames = []
        self._frame_key = {}
        self.frame_of = self._frames_for(0, len(self.addrs))

    def _frames_for(self, first: int, n: int) -> np.ndarray:
        """The frame ids of ids [first, first + n), new frames made as needed."""
        if n == 0:
            return np.empty(0, np.int32)
        addrs = self.addrs[first : first + n]
        if self.symbols is None:
            idx = np.full(n, -1, np.int64)
        else:
            idx = np.asarray(self.symbols.lookup(addrs.astype(np.uint32)), np.int64)
        out = np.empty(n, np.int32)
        functions = self.symbols.functions if self.symbols is not None else []
        for i, (a, s) in enumerate(zip(addrs.tolist(), idx.tolist(), strict=True)):
            info = self._keyed.get(first + i)
            if info is not None:
                out[i] = self._frame_named(info)
                continue
            key = (s, 0) if s >= 0 else (-1, a)
            fid = self._frame_key.get(key)
            if fid is None:
                fid = len(self.frames)
                self._frame_key[key] = fid
                if s >= 0:
                    f = functions[s]
                    label = getattr(f, "label", f.name)
                    frame = Frame(f.name, label, f.file, f.line, int(f.start), s)
                else:
                    name = f"0x{a:08x}"
                    frame = Frame(name, name, None, None, a, -1)
                self.frames.append(frame)
            out[i] = fid
        return out

    def _frame_named(self, info: FrameInfo) -> int:
        """The frame id of a keyed frame (one frame per key)."""
        key = ("key", info.key)
        fid = self._frame_key.get(key)
        if fid is None:
            fid = self._frame_key[key] = len(self.frames)
            self.frames.append(Frame(info.name, info.name, info.file, None, 0, -1))
        return fid
