"""ELF symbols: function ranges, demangled names, DWARF file:line and the build-ID check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .buildid import BuildIdCheck, check_build_id
    from .elfparse import NO_SYMTAB_WARNING
    from .table import Function, SymbolTable

__all__ = ["NO_SYMTAB_WARNING", "BuildIdCheck", "Function", "SymbolTable", "check_build_id"]

# Imported on first use (PEP 562): the build-ID check that ``mcuprof info`` needs must
# not load the ELF parser, which costs more than the check's whole run.
_HOME = {
    "BuildIdCheck": "buildid",
    "check_build_id": "buildid",
    "NO_SYMTAB_WARNING": "elfparse",
    "Function": "table",
    "SymbolTable": "table",
}


__getattr__ = lazy_getattr(__name__, _HOME)
