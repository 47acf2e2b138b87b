"""Reading user-named files, with the one-line errors every command promises.

Only regular files are read, and never more than a cap: a path such as /dev/zero
would otherwise be read until memory runs out, and a FIFO would block for ever.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import UserError

MAX_FILE_BYTES = 1 << 30  # captures and imports: 1 GiB is 76 million records
MAX_ELF_BYTES = 256 << 20  # an ELF with full DWARF is tens of MiB; 256 leaves room

_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def file_error(path: str | os.PathLike[str], exc: OSError, kind: str = "file") -> UserError:
    """The one-line message for an OSError met while reading ``path``."""
    if isinstance(exc, FileNotFoundError):
        return UserError(f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return UserError(f"{path}: is a directory, not a {kind}")
    if isinstance(exc, PermissionError):
        return UserError(f"{path}: permission denied")
    return UserError(f"{path}: cannot read ({exc.strerror or exc})")


# What to do about a path that is not a regular file: the user's own, or the store's.
GIVE_A_FILE = "give a file saved on disk"


def _check_regular(path: Path, st: os.stat_result, kind: str, limit: int, hint: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: is a directory, not a {kind}")
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise UserError(f"{path}: is {what}, not a {kind}; {hint}")
    if st.st_size > limit:
        raise UserError(f"{path}: {kind} too large ({_over(st.st_size, limit)})")


def _over(size: int, limit: int) -> str:
    """The size and the limit, in bytes when MiB would print the same figure for both
    (a file one byte over 1 GiB is not "1,024 MiB; the limit is 1,024 MiB")."""
    shown, cap = _mib(size), _mib(limit)
    if shown == cap:
        shown, cap = f"{size:,} bytes", f"{limit:,} bytes"
    return f"{shown}; the limit is {cap}"


def open_regular_file(
    path: str | os.PathLike[str],
    kind: str = "file",
    limit: int = MAX_FILE_BYTES,
    hint: str = GIVE_A_FILE,
) -> BinaryIO:
    """A regular file opened for reading (the caller closes it), or a one-line UserError.
    Opened without blocking, so a FIFO is refused instead of waiting for a writer."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise file_error(p, exc, kind) from None
    try:
        _check_regular(p, os.fstat(fd), kind, limit, hint)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def open_regular(
    path: str | os.PathLike[str],
    kind: str = "file",
    limit: int = MAX_FILE_BYTES,
    hint: str = GIVE_A_FILE,
) -> Iterator[BinaryIO]:
    """``open_regular_file`` as a context manager."""
    with open_regular_file(path, kind, limit, hint) as f:
        yield f


def read_file(
    path: str | os.PathLike[str],
    kind: str = "file",
    limit: int = MAX_FILE_BYTES,
    hint: str = GIVE_A_FILE,
) -> bytes:
    """The bytes of a regular file no larger than ``limit``, or a one-line UserError."""
    with open_regular(path, kind, limit, hint) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise file_error(path, exc, kind) from None
    if len(data) > limit:  # it grew while we read it
        raise UserError(f"{path}: {kind} too large (the limit is {_mib(limit)})")
    return data


def iter_file(
    path: str | os.PathLike[str],
    chunk: int,
    kind: str = "file",
    limit: int = MAX_FILE_BYTES,
    hint: str = GIVE_A_FILE,
) -> Iterator[bytes]:
    """A regular file in chunks, for files too large to hold whole; same checks."""
    with open_regular(path, kind, limit, hint) as f:
        total = 0
        while True:
            try:
                data = f.read(chunk)
            except OSError as exc:
                raise file_error(path, exc, kind) from None
            if not data:
                return
            total += len(data)
            if total > limit:
                raise UserError(f"{path}: {kind} too large (the limit is {_mib(limit)})")
            yield data
