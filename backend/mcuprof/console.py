"""What commands say on stderr besides their output: one line each."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .symbols import SymbolTable


def warn(message: str) -> None:
    print(f"mcuprof: warning: {message}", file=sys.stderr)


def load_elf(path: str) -> SymbolTable:
    """An ELF named on the command line, its warnings (no .symtab, bad DWARF) said once."""
    from .symbols import SymbolTable  # deferred: commands without --elf skip pyelftools

    table = SymbolTable.from_elf(path)
    for warning in table.warnings:
        warn(f"{path}: {warning}")
    return table
