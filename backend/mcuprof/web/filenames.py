"""Export file names: one definition for the live capture, an opened stored session and a
stored session exported from its row (the page, the session rows and the QS flow views),
and the one header that makes a response a download of that name."""

from __future__ import annotations

import time
from typing import Any


def file_safe(text: str) -> str:
    """``text`` for a file name: letters, digits and ``.-_`` kept, anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in text)


def file_stem(fw_version: str | None, when: float, opened: dict[str, Any] | None) -> str:
    """``mcuprof-FIRMWARE-YYYYmmdd-HHMMSS``, the capture's own local time; a stored session
    adds ``-sessionID-NAME`` (its name cut to 60 characters)."""
    safe = file_safe(fw_version or "") or "unknown"
    stem = f"mcuprof-{safe}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(when))}"
    if opened is not None:
        name = file_safe(opened["name"])
        stem += f"-session{opened['id']}-{name[:60]}".rstrip("-_")
    return stem


def stored_stem(info: Any) -> str:
    """The stem of a stored session (store.SessionInfo), as when it is opened."""
    return file_stem(
        info.metadata.fw_version if info.metadata else None,
        stored_time(info),
        {"id": info.id, "name": info.name},
    )


def stored_time(info: Any) -> float:
    """A stored session's capture time: when it started, else when it was stored."""
    return info.started_at if info.started_at is not None else info.created_at


def disposition(filename: str) -> dict[str, str]:
    """The header that makes a response a download named ``filename``."""
    return {"Content-Disposition": f'attachment; filename="{filename}"'}
