"""A minimal ELF32 writer for S12Z-like firmware images: enough for the tests and the
sample to carry real sections and symbols that pyelftools (and readelf) read.

Big-endian like the S12Z, ``e_machine`` EM_S12Z (92), sections ``.text``, ``.vectors``,
``.symtab``, ``.strtab``, ``.shstrtab``; no program headers, no debug info.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

EM_S12Z = 92
VECTOR_ENTRY = 4  # each vector: one unused byte, then the 24-bit ISR address
VECTOR_COUNT = 128


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    address: int
    size: int
    kind: str = "func"  # "func" or "object"
    local: bool = False


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    address: int
    data: bytes
    executable: bool = False


def vector_table(entries: dict[int, int], default: int, count: int = VECTOR_COUNT) -> bytes:
    """``count`` 4-byte big-endian entries; ``entries`` maps a vector's offset in the
    table (the trace's vector byte times 2) to its ISR address."""
    table = bytearray()
    for i in range(count):
        table += struct.pack(">I", entries.get(i * VECTOR_ENTRY, default) & 0xFFFFFF)
    for offset in entries:
        if offset % VECTOR_ENTRY or not 0 <= offset < count * VECTOR_ENTRY:
            raise ValueError(f"vector offset 0x{offset:x} is not an entry of the table")
    return bytes(table)


def write_elf(sections: Sequence[Section], symbols: Sequence[Symbol]) -> bytes:
    """The ELF image, deterministic byte for byte."""
    shstr = bytearray(b"\0")
    strtab = bytearray(b"\0")

    def name_in(table: bytearray, name: str) -> int:
        at = len(table)
        table += name.encode() + b"\0"
        return at

    all_names = [s.name for s in sections] + [".symtab", ".strtab", ".shstrtab"]
    name_off = [name_in(shstr, n) for n in all_names]

    # Symbols: the null one, locals, then globals (sh_info = first global).
    ordered = sorted(symbols, key=lambda s: not s.local)
    syms = bytearray(16)
    for sym in ordered:
        index = next(
            (
                i + 1
                for i, sec in enumerate(sections)
                if sec.address <= sym.address < sec.address + max(len(sec.data), 1)
            ),
            0xFFF1,  # SHN_ABS
        )
        bind = 0 if sym.local else 1
        stype = 2 if sym.kind == "func" else 1
        syms += struct.pack(
            ">IIIBBH",
            name_in(strtab, sym.name),
            sym.address,
            sym.size,
            bind << 4 | stype,
            0,
            index,
        )
    first_global = 1 + sum(1 for s in ordered if s.local)

    body = bytearray()
    offsets = []
    header_size = 52
    for blob in [s.data for s in sections] + [bytes(syms), bytes(strtab), bytes(shstr)]:
        while (header_size + len(body)) % 4:
            body.append(0)
        offsets.append(header_size + len(body))
        body += blob
    while (header_size + len(body)) % 4:
        body.append(0)
    shoff = header_size + len(body)
    n_sec = len(sections)
    shnum = n_sec + 4
    headers = bytearray(40)  # SHT_NULL
    for i, sec in enumerate(sections):
        flags = 0x2 | (0x4 if sec.executable else 0)  # SHF_ALLOC, SHF_EXECINSTR
        headers += struct.pack(
            ">IIIIIIIIII", name_off[i], 1, flags, sec.address, offsets[i], len(sec.data), 0, 0, 1, 0
        )
    strtab_index = n_sec + 2
    headers += struct.pack(
        ">IIIIIIIIII",
        name_off[n_sec],
        2,  # SHT_SYMTAB
        0,
        0,
        offsets[n_sec],
        len(syms),
        strtab_index,
        first_global,
        4,
        16,
    )
    for j, off_index in ((1, n_sec + 1), (2, n_sec + 2)):
        headers += struct.pack(
            ">IIIIIIIIII",
            name_off[n_sec + j],
            3,  # SHT_STRTAB
            0,
            0,
            offsets[off_index],
            len(strtab) if j == 1 else len(shstr),
            0,
            0,
            1,
            0,
        )
    ident = b"\x7fELF" + bytes([1, 2, 1, 0]) + bytes(8)  # ELF32, big-endian, version 1
    ehdr = ident + struct.pack(
        ">HHIIIIIHHHHHH",
        2,  # ET_EXEC
        EM_S12Z,
        1,
        sections[0].address if sections else 0,
        0,  # no program headers
        shoff,
        0,
        header_size,
        0,
        0,
        40,
        shnum,
        shnum - 1,  # .shstrtab is last
    )
    return bytes(ehdr + body + headers)
