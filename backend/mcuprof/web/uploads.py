"""Streaming uploads with a hard size cap checked while the bytes arrive.

Content-Length is only a hint (a chunked body has none, and a client may lie), so the
cap is enforced on the bytes actually read; the partial file is removed on any failure.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from fastapi import Request

from ..errors import UserError


class UploadTooLarge(UserError):
    pass


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB"


async def receive_file(request: Request, dest_dir: Path, limit: int, suffix: str = ".elf") -> Path:
    """Write the request body to a new file with a generated name under ``dest_dir``."""
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
            path.unlink(missing_ok=True)
