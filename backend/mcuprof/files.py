"""Reading user-named files, with the one-line errors every command promises."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import UserError


def file_error(path: str | os.PathLike[str], exc: OSError, kind: str = "file") -> UserError:
    """The one-line message for an OSError met while reading ``path``."""
    if isinstance(exc, FileNotFoundError):
        return UserError(f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return UserError(f"{path}: is a directory, not a {kind}")
    if isinstance(exc, PermissionError):
        return UserError(f"{path}: permission denied")
    return UserError(f"{path}: cannot read ({exc.strerror or exc})")


def read_file(path: str | os.PathLike[str], kind: str = "file") -> bytes:
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        return p.read_bytes()
    except OSError as exc:
        raise file_error(p, exc, kind) from None
