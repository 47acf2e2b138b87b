"""Read an ELF into plain data: function ranges, the .text CRC, DWARF file:line and, for
ARM, the static call graph.

pyelftools raises almost anything (AssertionError, KeyError, construct errors, ...) on
malformed files and can loop forever on hostile ones, so ``loader.py`` runs this module in a
child process it can kill. That is why it imports nothing from the package: it also runs as
a plain script (``python -I elfparse.py BUDGET`` with the ELF on stdin, JSON on stdout).
"""

from __future__ import annotations

import bisect
import contextlib
import io
import itertools
import json
import posixpath
import signal
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAGIC = b"\x7fELF"
# Bytes of one section's contents read (a compressed one inflated); an ELF file itself is
# at most 256 MiB (files.MAX_ELF_BYTES), and no real section is larger uncompressed.
MAX_SECTION_BYTES = 256 << 20
NO_SYMTAB_WARNING = "ELF has no .symtab; addresses shown in hex"
_EHDR_SIZE = {1: 52, 2: 64}
_SHDR_SIZE = {32: 40, 64: 64}  # keyed by ELFFile.elfclass
# At one address, a global name beats a weak alias, which beats a file-local name.
_BIND_RANK = {"STB_GLOBAL": 0, "STB_WEAK": 1, "STB_LOCAL": 2}
# DIEs that can hold function definitions below them (C++ namespaces, Fortran modules).
_SCOPE_TAGS = {"DW_TAG_namespace", "DW_TAG_module"}


class ElfProblem(Exception):
    """Why a file is not a readable ELF. The message is one line."""


@dataclass(slots=True)
class Candidate:
    """One defined STT_FUNC symbol, before aliases are merged and ranges computed."""

    name: str
    start: int
    size: int
    bind: str
    section: tuple[int, int] | None  # [lo, hi) of the allocated section holding it
    unit: str | None  # STT_FILE name preceding a local symbol


def precheck(data: bytes) -> None:
    """The checks that need no parser; cheap enough to run in the parent first."""
    if not data:
        raise ElfProblem("file is empty")
    if not data.startswith(MAGIC):
        if MAGIC.startswith(data):
            raise ElfProblem("truncated: file ends inside the ELF header")
        raise ElfProblem("no ELF magic number")
    if len(data) < 16:
        raise ElfProblem("truncated: file ends inside the ELF header")
    elf_class, order = data[4], data[5]
    if elf_class not in _EHDR_SIZE:
        raise ElfProblem(f"unsupported ELF class {elf_class}; only 32-bit and 64-bit are read")
    if order not in (1, 2):
        raise ElfProblem(f"unsupported ELF byte order {order}")
    if len(data) < _EHDR_SIZE[elf_class]:
        raise ElfProblem("truncated: file ends inside the ELF header")


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 160:
        text = text[:157] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text(raw: str | bytes) -> str:
    # pyelftools decodes names as latin-1; real toolchains write UTF-8. Control characters
    # would break the one-line promise of every message that shows a name.
    b = raw.encode("latin-1", "replace") if isinstance(raw, str) else raw
    s = b.decode("utf-8", "replace")
    return "".join(c if c >= " " and c != "\x7f" else "?" for c in s)


def _within(offset: int, size: int, length: int) -> bool:
    return offset >= 0 and size >= 0 and offset + size <= length


def _check_section_table(elf: Any, length: int) -> None:
    n = elf.num_sections()
    if n == 0:
        return
    entsize = elf["e_shentsize"]
    if entsize != _SHDR_SIZE[elf.elfclass]:
        raise ElfProblem(f"bad section header size {entsize}")
    if not _within(elf["e_shoff"], n * entsize, length):
        raise ElfProblem("truncated: section headers end past the end of the file")


def _section_bytes(section: Any, what: str, length: int) -> bytes:
    if not _within(section["sh_offset"], section["sh_size"], length):
        raise ElfProblem(f"truncated: {what} ends past the end of the file")
    _check_inflated(section, what)
    data = section.data()
    if len(data) != section["sh_size"]:
        raise ElfProblem(f"truncated: {what} is shorter than its header says")
    return data


def _check_inflated(section: Any, what: str) -> None:
    # A compressed section says how large it inflates (or, NOBITS, how many zeros it
    # stands for); pyelftools would make that many bytes.
    if section.data_size > MAX_SECTION_BYTES:
        raise ElfProblem(
            f"{what} would be {section.data_size:,} bytes uncompressed; "
            f"the limit is {MAX_SECTION_BYTES:,}"
        )


def section_slice(section: Any, data: bytes, start: int, n: int) -> bytes:
    """Up to ``n`` bytes at ``start`` of a section's contents, inflating no further than
    ``start + n`` when it is compressed (a 2 MB zlib section can stand for 2 GB)."""
    if not _within(section["sh_offset"], section["sh_size"], len(data)):
        raise ElfProblem(f"ELF section {section.name} ends past the end of the file")
    if start + n > MAX_SECTION_BYTES:
        raise ElfProblem(
            f"ELF section {section.name}: offset {start:,} is past the {MAX_SECTION_BYTES:,} "
            "bytes read of a section"
        )
    stored = data[section["sh_offset"] : section["sh_offset"] + section["sh_size"]]
    if not section.compressed:
        return stored[start : start + n]
    chdr = section.elffile.structs.Elf_Chdr
    header = chdr.sizeof()
    kind = chdr.parse(stored[:header])["ch_type"]
    if kind != "ELFCOMPRESS_ZLIB":
        raise ElfProblem(f"ELF section {section.name}: compression {kind} unknown")
    out = zlib.decompressobj().decompress(stored[header:], start + n)
    return out[start : start + n]


def vector_bytes(elf: Any, data: bytes, want: dict[str, Any]) -> dict[str, Any]:
    """The S12Z vector table's bytes, read here (in the capped child) because a section
    may be compressed. ``want``: base (None: find it), names (sections that are vector
    tables), default (the base when none is named), length (bytes of the table)."""
    sections = [
        s for s in elf.iter_sections() if s["sh_flags"] & 0x2 and s["sh_type"] != "SHT_NOBITS"
    ]
    chosen = None
    base = want["base"]
    if base is None:
        chosen = next((s for s in sections if s.name in want["names"]), None)
        base = chosen["sh_addr"] if chosen is not None else want["default"]
    if chosen is None:
        # The section's address range as inflated: data_size, not the stored sh_size.
        chosen = next(
            (s for s in sections if s["sh_addr"] <= base < s["sh_addr"] + s.data_size), None
        )
        if chosen is None:
            if want["base"] is None:
                return {"base": None, "hex": "", "big": False}
            return {"error": f"no section of the ELF holds the vector table at 0x{base:06x}"}
    raw = section_slice(chosen, data, base - chosen["sh_addr"], want["length"])
    return {"base": base, "hex": raw.hex(), "big": not elf.little_endian}


def text_crc(elf: Any, length: int) -> tuple[int | None, str | None]:
    """zlib CRC-32 of the .text bytes (the firmware's elf_build_id), or why there is none."""
    text = elf.get_section_by_name(".text")
    if text is None:
        return None, "ELF has no .text section"
    if text["sh_type"] == "SHT_NOBITS":
        return None, "ELF .text section holds no bytes"
    return zlib.crc32(_section_bytes(text, ".text", length)) & 0xFFFFFFFF, None


def _find_symtab(elf: Any) -> Any | None:
    for section in elf.iter_sections():
        if section["sh_type"] == "SHT_SYMTAB":
            return section
    return None


def read_candidates(elf: Any, is_arm: bool, length: int) -> tuple[list[Candidate], list[int]]:
    """Defined function symbols, and every address that ends a zero-size function."""
    symtab = _find_symtab(elf)
    if symtab is None:
        return [], []
    if symtab["sh_entsize"] != (16 if elf.elfclass == 32 else 24):
        raise ElfProblem(f"bad .symtab entry size {symtab['sh_entsize']}")
    _section_bytes(symtab, ".symtab", length)
    strtab = elf.get_section(symtab["sh_link"])
    if strtab["sh_type"] != "SHT_STRTAB":
        raise ElfProblem(".symtab is not linked to a string table")
    _section_bytes(strtab, ".strtab", length)

    sections: dict[int, tuple[int, int]] = {}
    for index, section in enumerate(elf.iter_sections()):
        if section["sh_flags"] & 0x2:  # SHF_ALLOC: occupies addresses at run time
            sections[index] = (section["sh_addr"], section["sh_addr"] + section["sh_size"])

    candidates: list[Candidate] = []
    boundaries: list[int] = []
    unit: str | None = None
    for sym in symtab.iter_symbols():
        kind = sym["st_info"]["type"]
        bind = sym["st_info"]["bind"]
        shndx = sym["st_shndx"]
        if kind == "STT_FILE":
            unit = posixpath.basename(_text(sym.name)) or None
            continue
        if shndx == "SHN_UNDEF" or kind not in ("STT_FUNC", "STT_OBJECT"):
            continue
        value = sym["st_value"]
        if kind == "STT_OBJECT":
            boundaries.append(value)
            continue
        start = value & ~1 if is_arm else value  # bit 0 of an ARM function is the Thumb bit
        boundaries.append(start)
        name = _text(sym.name)
        if not name:
            continue
        section = sections.get(shndx) if isinstance(shndx, int) else None
        local = bind == "STB_LOCAL"
        candidates.append(
            Candidate(name, start, sym["st_size"], bind, section, unit if local else None)
        )
    return candidates, boundaries


def build_ranges(
    candidates: list[Candidate], boundaries: list[int], address_bits: int = 32
) -> list[dict[str, Any]]:
    """Merge aliases and give every function a [start, end) range, sorted, non-overlapping.

    At one address the name comes from the global symbol if any, else a weak one, else a
    local one (ties: sized before zero-size, then by name), so aliases resolve the same way
    every time. A zero-size symbol (hand-written assembly) runs up to the next symbol or
    the end of its section, whichever comes first.
    """
    top = 1 << address_bits
    by_start: dict[int, list[Candidate]] = {}
    for c in candidates:
        by_start.setdefault(c.start, []).append(c)
    bounds = sorted(set(boundaries))
    out: list[dict[str, Any]] = []
    for start in sorted(by_start):
        group = by_start[start]
        best = min(group, key=lambda c: (_BIND_RANK.get(c.bind, 3), c.size == 0, c.name))
        sizes = [c.size for c in group if c.size > 0]
        if sizes:
            end = start + max(sizes)
        else:
            limits = []
            i = bisect.bisect_right(bounds, start)
            if i < len(bounds):
                limits.append(bounds[i])
            if best.section is not None and best.section[0] <= start < best.section[1]:
                limits.append(best.section[1])
            end = min(limits) if limits else start + 1
        end = min(end, top)
        out.append(
            {
                "raw_name": best.name,
                "start": start,
                "end": end,
                "is_static": best.bind == "STB_LOCAL",
                "unit": best.unit,
                "file": None,
                "line": None,
            }
        )
    for here, after in itertools.pairwise(out):
        here["end"] = min(here["end"], after["start"])
    return out


class _OutOfTime(Exception):
    pass


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        if self.remaining() <= 0:
            raise _OutOfTime


@contextlib.contextmanager
def _alarm(budget: _Budget) -> Iterator[None]:
    """Interrupt pyelftools even inside one call that spins on a hostile DIE chain; the
    per-DIE checks alone only run between calls. Signals work only in the main thread."""
    if threading.current_thread() is not threading.main_thread() or budget.remaining() <= 0:
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, budget.remaining())
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _FileNames:
    """Turns a DWARF file index into a short name, per line program (cached)."""

    def __init__(self, dwarf: Any) -> None:
        self.dwarf = dwarf
        self.cache: dict[int, Any] = {}

    def program(self, cu: Any) -> Any:
        key = cu.cu_offset
        if key not in self.cache:
            self.cache[key] = self.dwarf.line_program_for_CU(cu)
        return self.cache[key]

    def name(self, cu: Any, index: int) -> str | None:
        lp = self.program(cu)
        if lp is None:
            return None
        v5 = lp["version"] >= 5
        entries = lp["file_entry"]
        i = index if v5 else index - 1
        if not 0 <= i < len(entries):
            return None
        entry = entries[i]
        name = _text(entry.name)
        dirs = lp["include_directory"]
        d = entry.dir_index if v5 else entry.dir_index - 1
        # Directory 0 is the compilation directory: absolute, so it adds nothing useful.
        if d > 0 and d < len(dirs):
            directory = _text(dirs[d])
            if not posixpath.isabs(directory):
                name = posixpath.join(directory, name)
        # Tables want something short: a relative path inside the project as written, else
        # the basename (absolute paths and ../../ climbs out of some build directory).
        name = posixpath.normpath(name)
        if posixpath.isabs(name) or name.startswith("../"):
            return posixpath.basename(name)
        return name


def _subprogram_decl(die: Any) -> tuple[Any, int | None, int | None]:
    """(DIE holding decl_file, decl_file, decl_line), following specification/origin links."""
    file = line = None
    holder = file_die = die
    for _ in range(4):
        attrs = holder.attributes
        if line is None and "DW_AT_decl_line" in attrs:
            line = attrs["DW_AT_decl_line"].value
        if file is None and "DW_AT_decl_file" in attrs:
            file = attrs["DW_AT_decl_file"].value
            file_die = holder
        if file is not None and line is not None:
            return file_die, file, line
        link = next(
            (a for a in ("DW_AT_specification", "DW_AT_abstract_origin") if a in attrs), None
        )
        if link is None:
            break
        holder = holder.get_DIE_from_attribute(link)
    return file_die, file, line


def _iter_definitions(top: Any, budget: _Budget) -> Iterator[Any]:
    stack = [top]
    while stack:
        for die in stack.pop().iter_children():
            budget.check()
            if die.tag == "DW_TAG_subprogram":
                yield die
            elif die.tag in _SCOPE_TAGS:
                stack.append(die)


def dwarf_lines(
    elf: Any, starts: set[int], is_arm: bool, budget: _Budget
) -> dict[int, tuple[str | None, int | None]]:
    """file:line per function start: from subprogram DIEs, else from the line program."""
    if elf.get_section_by_name(".debug_info") is None:
        return {}
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)
    names = _FileNames(dwarf)
    found: dict[int, tuple[str | None, int | None]] = {}
    mask = ~1 if is_arm else ~0
    for cu in dwarf.iter_CUs():
        budget.check()
        for die in _iter_definitions(cu.get_top_DIE(), budget):
            low = die.attributes.get("DW_AT_low_pc")
            if low is None or not isinstance(low.value, int):
                continue
            start = low.value & mask
            if start not in starts or start in found:
                continue
            holder, file_index, line = _subprogram_decl(die)
            file = names.name(holder.cu, file_index) if isinstance(file_index, int) else None
            if file is not None or line is not None:
                found[start] = (file, line)
    missing = starts - found.keys()
    if missing:
        found.update(_line_program_starts(dwarf, names, missing, mask, budget))
    return found


def _line_program_starts(
    dwarf: Any, names: _FileNames, wanted: set[int], mask: int, budget: _Budget
) -> dict[int, tuple[str | None, int | None]]:
    # Assembly built with -g has line rows but no subprogram DIEs. Decoding line programs
    # is the slow part of DWARF, so only the units that aranges says cover a wanted address.
    aranges = dwarf.get_aranges()
    if aranges is None:
        units = list(dwarf.iter_CUs())
    else:
        offsets = {aranges.cu_offset_at_addr(a) for a in wanted} - {None}
        units = [dwarf.get_CU_at(o) for o in sorted(offsets)]
    found: dict[int, tuple[str | None, int | None]] = {}
    for cu in units:
        lp = names.program(cu)
        if lp is None:
            continue
        for entry in lp.get_entries():
            budget.check()
            state = entry.state
            if state is None or state.end_sequence:
                continue
            addr = state.address & mask
            if addr in wanted and addr not in found:
                found[addr] = (names.name(cu, state.file), state.line)
    return found


def bl_targets(code: bytes, addr: int) -> tuple[Any, Any]:
    """(instruction address, target) of every halfword pair in ``code`` (little-endian
    Thumb code loaded at ``addr``) that decodes as a Thumb-2 BL, as int64 arrays."""
    import numpy as np  # deferred: only ARM files with functions need it

    n = len(code) // 2
    if n < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    hw = np.frombuffer(code, dtype="<u2", count=n).astype(np.int64)
    first, second = hw[:-1], hw[1:]
    at = np.flatnonzero(((first & 0xF800) == 0xF000) & ((second & 0xD000) == 0xD000))
    h1, h2 = first[at], second[at]
    s = (h1 >> 10) & 1
    i1 = 1 - (((h2 >> 13) & 1) ^ s)
    i2 = 1 - (((h2 >> 11) & 1) ^ s)
    imm = (s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3FF) << 12) | ((h2 & 0x7FF) << 1)
    imm -= s << 25  # sign-extend the 25-bit offset
    insn = addr + 2 * at
    return insn, insn + 4 + imm


def thumb_calls(elf: Any, functions: list[dict[str, Any]], length: int) -> list[list[int]]:
    """(caller, callee) index pairs into ``functions`` from the Thumb-2 BL instructions.

    Every halfword offset of the executable sections is tried, so literal pools and data
    can decode as a BL too; keeping only targets that are exactly a function's start
    throws nearly all of those away.
    """
    import numpy as np

    if not functions or not elf.little_endian:
        return []
    starts = np.array([f["start"] for f in functions], dtype=np.int64)
    ends = np.array([f["end"] for f in functions], dtype=np.int64)
    pairs: list[Any] = []
    for section in elf.iter_sections():
        if not section["sh_flags"] & 0x4 or section["sh_type"] != "SHT_PROGBITS":
            continue  # not SHF_EXECINSTR, or no bytes in the file
        if not _within(section["sh_offset"], section["sh_size"], length):
            continue
        insn, target = bl_targets(section.data(), section["sh_addr"])
        caller = np.searchsorted(starts, insn, side="right") - 1
        callee = np.searchsorted(starts, target, side="left")
        ok = (caller >= 0) & (callee < len(starts))
        caller, callee, insn, target = caller[ok], callee[ok], insn[ok], target[ok]
        ok = (insn + 4 <= ends[caller]) & (starts[callee] == target)
        pairs.append(np.stack([caller[ok], callee[ok]], axis=1))
    if not pairs:
        return []
    edges = np.unique(np.concatenate(pairs), axis=0)
    return [[int(a), int(b)] for a, b in edges]


def parse(
    data: bytes, dwarf_budget_s: float = 5.0, vectors: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything the symbol table needs, as JSON-ready plain data. Raises on a bad ELF.
    With ``vectors`` (see vector_bytes), also the S12Z vector table's bytes."""
    from elftools.elf.elffile import ELFFile

    # The DWARF budget counts from here: slow symbols leave less time for line info, so the
    # whole parse stays inside the parent's timeout and only file:line is lost.
    budget = _Budget(dwarf_budget_s)
    precheck(data)
    elf = ELFFile(io.BytesIO(data))
    _check_section_table(elf, len(data))
    is_arm = elf["e_machine"] == "EM_ARM"
    warnings: list[str] = []
    build_id, build_id_note = text_crc(elf, len(data))
    candidates, boundaries = read_candidates(elf, is_arm, len(data))
    if _find_symtab(elf) is None:
        warnings.append(NO_SYMTAB_WARNING)
    functions = build_ranges(candidates, boundaries, elf.elfclass)
    if functions:
        try:
            with _alarm(budget):
                lines = dwarf_lines(elf, {f["start"] for f in functions}, is_arm, budget)
        except _OutOfTime:
            lines = {}
            warnings.append("DWARF debug info took too long to read; no file:line shown")
        except Exception as exc:  # bad debug info costs file:line, not the symbols
            lines = {}
            warnings.append(f"DWARF debug info unreadable ({one_line(exc)}); no file:line shown")
        for f in functions:
            f["file"], f["line"] = lines.get(f["start"], (None, None))
    calls: list[list[int]] = []
    if is_arm and functions:
        try:
            calls = thumb_calls(elf, functions, len(data))
        except Exception as exc:  # bad code bytes cost the call graph, not the symbols
            warnings.append(f"call graph unreadable ({one_line(exc)})")
    result: dict[str, Any] = {}
    if vectors is not None:
        try:
            result["vectors"] = vector_bytes(elf, data, vectors)
        except ElfProblem as exc:
            result["vectors"] = {"error": str(exc)}
        except Exception as exc:  # a bad table costs the ISR names, not the symbols
            result["vectors"] = {"error": f"vector table unreadable ({one_line(exc)})"}
    return {
        **result,
        "is_arm": is_arm,
        "build_id": build_id,
        "build_id_note": build_id_note,
        "functions": functions,
        "calls": calls,
        "warnings": warnings,
    }


def _limit_memory(extra: int) -> None:
    try:
        import resource
    except ImportError:  # not on POSIX: rely on the parent's timeout alone
        return
    limit = (2 << 30) + extra
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str]) -> int:
    budget = float(argv[1]) if len(argv) > 1 else 5.0
    vectors = json.loads(argv[2]) if len(argv) > 2 else None
    data = sys.stdin.buffer.read()
    _limit_memory(16 * len(data))
    try:
        result: dict[str, Any] = {"ok": True, **parse(data, budget, vectors)}
    except ElfProblem as exc:
        result = {"ok": False, "error": str(exc)}
    except (Exception, MemoryError) as exc:  # whatever pyelftools throws is the file's fault
        result = {"ok": False, "error": one_line(exc)}
    sys.stdout.buffer.write(json.dumps(result).encode())
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
