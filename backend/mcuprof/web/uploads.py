"""Streaming uploads with a hard size cap checked while the bytes arrive.

Content-Length is only a hint (a chunked body has none, and a client may lie), so the
cap is enforced on the bytes actually read; the partial file is removed on any failure.

Every upload file is held with a shared ``flock`` for as long as a server uses it.
Files nobody holds were left by a server that died (kill -9, power loss); ``sweep``
removes them at start-up, without touching files another live server holds.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import Request

from ..errors import UserError

try:
    import fcntl
except ImportError:  # not POSIX: no holds, so no start-up sweep either
    fcntl = None  # type: ignore[assignment]


class UploadTooLarge(UserError):
    pass


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB"


_held: dict[Path, int] = {}
_held_lock = threading.Lock()


def hold(path: Path) -> None:
    """Mark ``path`` as in use by this server until ``release`` (idempotent)."""
    if fcntl is None:
        return
    with _held_lock:
        if path in _held:
            return
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _held[path] = fd


def release(path: Path) -> None:
    with _held_lock:
        fd = _held.pop(path, None)
    if fd is not None:
        os.close(fd)


def _unused(path: Path) -> bool:
    """Whether no server (this one included) holds ``path``."""
    if fcntl is None:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def discard(path: Path) -> None:
    """Stop using ``path``; remove it unless another server still holds it."""
    release(path)
    if _unused(path):
        path.unlink(missing_ok=True)


def sweep(folder: Path) -> list[Path]:
    """Remove the upload files no live server holds. Returns what was removed."""
    if fcntl is None or not folder.is_dir():
        return []
    removed = []
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink() and _unused(path):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


async def receive_file(request: Request, dest_dir: Path, limit: int, suffix: str = ".elf") -> Path:
    """Write the request body to a new file with a generated name under ``dest_dir``.
    The file is held (see ``hold``); ``discard`` it when done."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise UploadTooLarge(f"file too large: the limit is {_mib(limit)}")
        except ValueError:
            raise UserError("bad Content-Length header") from None
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"{secrets.token_hex(16)}{suffix}"
    size = 0
    ok = False
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        hold(path)  # before the first byte, so a starting server's sweep leaves it alone
        with os.fdopen(fd, "wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise UploadTooLarge(f"file too large: the limit is {_mib(limit)}")
                out.write(chunk)
        if size == 0:
            raise UserError("empty upload: choose an ELF file")
        ok = True
        return path
    finally:
        if not ok:
            release(path)
            path.unlink(missing_ok=True)


async def receive_bytes(request: Request, limit: int, what: str) -> bytes:
    """A small body (a budgets file) read whole, capped on the bytes actually received."""
    too_large = f"{what}: over {limit:,} bytes, at most {limit:,}"
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise UploadTooLarge(too_large)
        except ValueError:
            raise UserError("bad Content-Length header") from None
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise UploadTooLarge(too_large)
    return bytes(data)


def adopt(path: Path, final: Path) -> Path:
    """Give the held upload ``path`` the name ``final`` (a content hash): an upload
    already stored under that name is reused and the new copy removed."""
    if path == final:
        return final
    for _ in range(3):
        with contextlib.suppress(FileExistsError):
            os.link(path, final)
        try:
            hold(final)
            break
        except FileNotFoundError:
            continue  # another server removed its copy between the two steps: link again
    else:
        raise UserError("could not store the upload (the upload folder keeps changing)")
    release(path)
    path.unlink(missing_ok=True)
    return final


MAX_CAPTURE_BYTES = 512 * 1024 * 1024


@contextlib.asynccontextmanager
async def received_capture(
    request: Request, elf: str | None, data_dir: Path
) -> AsyncIterator[tuple[Path, Path | None, str | None]]:
    """A capture posted as the request body, streamed to disk under the capture size cap,
    and the ELF (an id from /api/elfs) to keep with it: ``(path, elf_path, elf_name)``.
    The file is discarded on leaving, whatever happened."""
    state = request.app.state
    settings = getattr(state, "settings", None)
    elf_path = elf_name = None
    if elf:
        catalog = getattr(state, "catalog", None)
        if catalog is None:
            raise UserError("no ELF catalog in this server")
        choice = catalog.get(elf)
        elf_path, elf_name = choice.path, choice.label
    limit = getattr(settings, "max_capture_bytes", MAX_CAPTURE_BYTES)
    upload_dir = getattr(settings, "upload_dir", data_dir / "uploads")
    path = await receive_file(request, upload_dir, limit, suffix=".bin")
    try:
        yield path, elf_path, elf_name
    finally:
        discard(path)
