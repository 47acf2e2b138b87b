"""Function ranges from an ELF, and address -> function lookup for millions of addresses."""

from __future__ import annotations

import bisect
import itertools
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..files import MAX_ELF_BYTES, read_file
from .demangle import demangle_all
from .loader import parse_elf_bytes


@dataclass(frozen=True, slots=True)
class Function:
    name: str  # demangled as c++filt prints it
    raw_name: str  # as in .symtab
    start: int  # Thumb bit cleared
    end: int  # exclusive
    file: str | None = None  # DWARF source file, relative path or basename
    line: int | None = None
    is_static: bool = False  # STB_LOCAL
    unit: str | None = None  # translation unit (STT_FILE) a static function came from

    @property
    def label(self) -> str:
        """The name, plus where a static function lives: two files may each have a
        ``static int helper()`` and tables must not merge them."""
        if not self.is_static:
            return self.name
        where = self.file or self.unit
        if where is None:
            where = f"0x{self.start:08x}"
        elif self.file and self.unit and posixpath.basename(self.file) != self.unit:
            # a static defined in a header: one copy per including unit
            where = f"{self.file}, {self.unit}"
        return f"{self.name} [{where}]"

    @property
    def location(self) -> str | None:
        """``file:line`` for tooltips, or just the file, or None."""
        if self.file is None:
            return None
        return self.file if self.line is None else f"{self.file}:{self.line}"


class SymbolTable:
    """Functions sorted by start, non-overlapping. Build with ``from_elf`` or
    ``from_elf_bytes`` (a bad file raises a one-line UserError), ``from_functions`` or
    ``empty``."""

    def __init__(
        self,
        functions: Sequence[Function] = (),
        *,
        is_arm: bool = True,
        build_id: int | None = None,
        build_id_note: str | None = None,
        warnings: Sequence[str] = (),
        source: str | None = None,
        calls: Sequence[tuple[int, int]] = (),
    ) -> None:
        order = sorted(range(len(functions)), key=lambda i: (functions[i].start, functions[i].end))
        funcs = [functions[i] for i in order]
        for f in funcs:
            if not 0 <= f.start < f.end:
                raise ValueError(f"{f.raw_name}: empty or negative range")
        for a, b in itertools.pairwise(funcs):
            if b.start < a.end:
                raise ValueError(f"{a.raw_name} and {b.raw_name} overlap")
        self.functions: list[Function] = funcs
        # Static call edges (caller, callee) as indices into ``functions``; given in terms
        # of the order passed in, so renumbered after sorting.
        new_index = {old: new for new, old in enumerate(order)}
        edges = set()
        for caller, callee in calls:
            if caller not in new_index or callee not in new_index:
                raise ValueError(f"call edge ({caller}, {callee}) names no function")
            edges.add((new_index[caller], new_index[callee]))
        self.calls: list[tuple[int, int]] = sorted(edges)
        self.is_arm = is_arm
        self.build_id = build_id
        # why build_id is None, for the "unknown" verdict
        self.build_id_note = build_id_note if build_id is None else None
        self.warnings: list[str] = list(warnings)
        self.source = source
        self.vector_read: dict[str, Any] | None = None  # S12Z only, see from_elf_bytes
        self._py_starts = [f.start for f in funcs]
        self._starts64 = np.array(self._py_starts, dtype=np.uint64)
        self._lasts64 = np.array([f.end - 1 for f in funcs], dtype=np.uint64)
        # Firmware addresses are 32-bit; searching uint32 keys in a uint32 table avoids
        # widening millions of addresses on every call.
        self._narrow = not funcs or funcs[-1].end - 1 <= 0xFFFFFFFF
        if self._narrow:
            self._starts32 = self._starts64.astype(np.uint32)
            self._lasts32 = self._lasts64.astype(np.uint32)

    @classmethod
    def from_elf(cls, path: str | os.PathLike[str], timeout_s: float = 10.0) -> SymbolTable:
        data = read_file(path, "ELF file", MAX_ELF_BYTES)
        table = cls.from_elf_bytes(data, name=str(path), timeout_s=timeout_s)
        table.source = Path(path).name
        return table

    @classmethod
    def from_elf_bytes(
        cls,
        data: bytes,
        name: str = "upload",
        timeout_s: float = 10.0,
        vectors: dict[str, Any] | None = None,
    ) -> SymbolTable:
        """The table; with ``vectors``, what the child read of the S12Z vector table is
        kept in ``vector_read`` (see elfparse.vector_bytes)."""
        parsed = parse_elf_bytes(bytes(data), name, timeout_s, vectors)
        table = cls._from_parsed(parsed, source=name)
        table.vector_read = parsed.get("vectors")
        return table

    @classmethod
    def _from_parsed(cls, parsed: dict[str, Any], source: str | None) -> SymbolTable:
        rows = parsed["functions"]
        names = demangle_all([r["raw_name"] for r in rows])
        functions = [
            Function(
                name=name,
                raw_name=r["raw_name"],
                start=r["start"],
                end=r["end"],
                file=r["file"],
                line=r["line"],
                is_static=r["is_static"],
                unit=r["unit"],
            )
            for name, r in zip(names, rows, strict=True)
        ]
        return cls(
            functions,
            is_arm=parsed["is_arm"],
            build_id=parsed["build_id"],
            build_id_note=parsed["build_id_note"],
            warnings=parsed["warnings"],
            source=source,
            calls=[(int(a), int(b)) for a, b in parsed.get("calls", [])],
        )

    @classmethod
    def empty(cls) -> SymbolTable:
        return cls((), is_arm=True, build_id_note="no ELF given")

    @classmethod
    def from_functions(
        cls,
        functions: list[Function],
        is_arm: bool = True,
        build_id: int | None = None,
        calls: Sequence[tuple[int, int]] = (),
    ) -> SymbolTable:
        return cls(functions, is_arm=is_arm, build_id=build_id, calls=calls)

    def __len__(self) -> int:
        return len(self.functions)

    def __repr__(self) -> str:
        return f"<SymbolTable {self.source or '?'}: {len(self.functions)} functions>"

    def lookup(self, addrs: Any) -> np.ndarray:
        """Index into ``functions`` of the function containing each address (int64), -1 for
        none. An address may be a function's entry or any return address inside its body."""
        a = np.asarray(addrs)
        if a.dtype.kind not in "ui":
            if a.size:
                raise TypeError(f"addresses must be integers, not {a.dtype}")
            a = a.astype(np.uint64)
        if not self.functions:
            return np.full(a.shape, -1, dtype=np.int64)
        negative = a < 0 if a.dtype.kind == "i" else None
        if self._narrow and a.dtype.kind == "u" and a.dtype.itemsize <= 4:
            keys = a.astype(np.uint32, copy=False)
            starts, lasts = self._starts32, self._lasts32
        else:
            keys = a.astype(np.uint64, copy=False)
            starts, lasts = self._starts64, self._lasts64
        if self.is_arm:  # bit 0 is the Thumb bit
            keys = keys & keys.dtype.type(np.iinfo(keys.dtype).max - 1)
        idx = np.searchsorted(starts, keys, side="right").astype(np.int64, copy=False)
        idx -= 1
        below = idx < 0
        idx[below] = 0
        hit = keys <= lasts[idx]
        hit &= ~below
        if negative is not None:
            hit &= ~negative
        idx[~hit] = -1
        return idx

    def function_at(self, addr: int) -> Function | None:
        key = addr & ~1 if self.is_arm else addr
        i = bisect.bisect_right(self._py_starts, key) - 1
        if i >= 0 and addr >= 0 and key < self.functions[i].end:
            return self.functions[i]
        return None

    def name_of(self, addr: int) -> str:
        """The demangled name, or ``0x%08x`` of the raw address as received."""
        f = self.function_at(addr)
        return f.name if f is not None else f"0x{addr:08x}"

    def names_of(self, addrs: Any) -> list[str]:
        """``name_of`` for many addresses, resolving each distinct address once."""
        a = np.asarray(addrs)
        uniq, inverse = np.unique(a, return_inverse=True)
        names = [self.name_of(int(x)) for x in uniq]
        return [names[i] for i in inverse.ravel()]
