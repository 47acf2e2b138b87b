"""What commands say on stderr besides their output: one line each."""

from __future__ import annotations

import re
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .symbols import SymbolTable


# Text from outside (session names, notes, firmware strings, symbol names) must not
# drive the terminal: C0 and C1 controls (ESC starts a control sequence, CR overwrites a
# line), DEL, bidirectional overrides and isolates (which reorder what is shown), BOM
# and lone surrogates are printed as visible escapes. Newline and tab are kept in
# multi-line text.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
_UNSAFE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\t\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: object, limit: int | None = None, *, multiline: bool = False) -> str:
    """``text`` safe to print: control and reordering characters shown as escapes, cut
    to ``limit`` characters (with an ellipsis) for a table column."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "\u2026"
    return (_UNSAFE if multiline else _UNSAFE_LINE).sub(_escape, s)


class TerminalText:
    """A text stream that escapes what for_terminal escapes, newlines and tabs kept:
    installed on stdout when it is a terminal, so no command's output, whatever names
    it prints, can drive the terminal. Pipes and files get the bytes unchanged."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(for_terminal(text, multiline=True))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def warn(message: str) -> None:
    print(f"mcuprof: warning: {for_terminal(message)}", file=sys.stderr)


def load_elf(path: str) -> SymbolTable:
    """An ELF named on the command line, its warnings (no .symtab, bad DWARF) said once."""
    from .symbols import SymbolTable  # deferred: commands without --elf skip pyelftools

    table = SymbolTable.from_elf(path)
    for warning in table.warnings:
        warn(f"{path}: {warning}")
    return table
