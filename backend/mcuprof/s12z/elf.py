"""What an S12Z ELF tells the trace: function ranges (24-bit addresses) and the vector
table, whose entry at offset 2 x vector holds the ISR address."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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
    """Symbols and the vector table, both read by the hardened ELF reader in its capped
    child process (a compressed section may inflate a thousandfold): a table that is
    missing or unreadable costs the ISR names, with a warning, never the symbols."""
    if isinstance(source, bytes | bytearray):
        data, label = bytes(source), name or "upload"
    else:
        data, label = read_file(source, "ELF file"), name or Path(source).name
    want = {
        "base": vector_base,
        "names": list(VECTOR_SECTIONS),
        "default": DEFAULT_VECTOR_BASE,
        "length": VECTOR_COUNT * VECTOR_ENTRY,
    }
    symbols = SymbolTable.from_elf_bytes(data, label, vectors=want)
    symbols.source = label
    fw = Firmware(symbols, name=label, warnings=list(symbols.warnings))
    read = symbols.vector_read or {"error": "vector table not read"}
    if "error" in read:
        fw.warnings.append(read["error"])
    else:
        fw.vector_base, fw.vectors = read["base"], _entries(bytes.fromhex(read["hex"]), read["big"])
    return fw


def _entries(raw: bytes, big: bool) -> dict[int, int]:
    """{offset: ISR address} from the table's bytes (each entry's low 24 bits)."""
    vectors = {}
    for offset in range(0, len(raw) - VECTOR_ENTRY + 1, VECTOR_ENTRY):
        entry = raw[offset : offset + VECTOR_ENTRY]
        vectors[offset] = int.from_bytes(entry, "big" if big else "little") & 0xFFFFFF
    return vectors
