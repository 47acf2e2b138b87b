"""What an S12Z ELF tells the trace: function ranges (24-bit addresses) and the vector
table, whose entry at offset 2 x vector holds the ISR address."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..files import read_file
from ..symbols import SymbolTable
from .elfwrite import VECTOR_COUNT, VECTOR_ENTRY

# IVBR's reset value 0x7FFF puts the vector table at 0xFFFE00.
DEFAULT_VECTOR_BASE = 0xFFFE00
VECTOR_SECTIONS = (".vectors", ".vectortable", ".vects")


@dataclass
class Firmware:
    symbols: SymbolTable
    vector_base: int | None = None
    # vector table offset -> ISR address, for the entries the ELF holds
    vectors: dict[int, int] = field(default_factory=dict)
    name: str | None = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def none(cls) -> Firmware:
        return cls(SymbolTable((), is_arm=False, build_id_note="no ELF given"))

    def function_name(self, addr: int) -> str:
        f = self.symbols.function_at(addr)
        return f.label if f is not None else f"0x{addr:06x}"

    def isr_of(self, vector: int) -> int | None:
        return self.vectors.get(vector * 2)


def load_firmware(
    source: str | os.PathLike[str] | bytes, vector_base: int | None = None, name: str | None = None
) -> Firmware:
    """Symbols through the hardened ELF reader; the vector table read here: a table that is
    missing or unreadable costs the ISR names, with a warning, never the symbols."""
    if isinstance(source, bytes | bytearray):
        data, label = bytes(source), name or "upload"
    else:
        data, label = read_file(source, "ELF file"), name or Path(source).name
    symbols = SymbolTable.from_elf_bytes(data, label)
    symbols.source = label
    fw = Firmware(symbols, name=label, warnings=list(symbols.warnings))
    try:
        fw.vector_base, fw.vectors = read_vectors(data, vector_base)
    except UserError as exc:
        fw.warnings.append(str(exc))
    except Exception as exc:  # whatever pyelftools throws is the file's fault
        fw.warnings.append(f"vector table unreadable ({type(exc).__name__}: {exc})")
    return fw


def read_vectors(data: bytes, vector_base: int | None) -> tuple[int | None, dict[int, int]]:
    """(base, {offset: ISR address}). With no base given, a section named like a vector
    table, else the reset default 0xFFFE00 when a section holds it."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    big = not elf.little_endian
    sections = [
        s for s in elf.iter_sections() if s["sh_flags"] & 0x2 and s["sh_type"] != "SHT_NOBITS"
    ]
    chosen = None
    base = vector_base
    if base is None:
        chosen = next((s for s in sections if s.name in VECTOR_SECTIONS), None)
        base = chosen["sh_addr"] if chosen is not None else DEFAULT_VECTOR_BASE
    if chosen is None:
        chosen = next(
            (s for s in sections if s["sh_addr"] <= base < s["sh_addr"] + s["sh_size"]), None
        )
        if chosen is None:
            if vector_base is None:
                return None, {}
            raise UserError(f"no section of the ELF holds the vector table at 0x{base:06x}")
    start = base - chosen["sh_addr"]
    if chosen["sh_offset"] + chosen["sh_size"] > len(data):
        raise UserError(f"ELF section {chosen.name} ends past the end of the file")
    raw = chosen.data()[start : start + VECTOR_COUNT * VECTOR_ENTRY]
    vectors = {}
    for offset in range(0, len(raw) - VECTOR_ENTRY + 1, VECTOR_ENTRY):
        entry = raw[offset : offset + VECTOR_ENTRY]
        vectors[offset] = int.from_bytes(entry, "big" if big else "little") & 0xFFFFFF
    return base, vectors
