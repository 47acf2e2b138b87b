"""ELF symbols: function ranges, demangled names, DWARF file:line and the build-ID check."""

from .buildid import BuildIdCheck, check_build_id
from .elfparse import NO_SYMTAB_WARNING
from .table import Function, SymbolTable

__all__ = ["NO_SYMTAB_WARNING", "BuildIdCheck", "Function", "SymbolTable", "check_build_id"]
