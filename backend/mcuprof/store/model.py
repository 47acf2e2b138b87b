"""What the store hands out: plain, immutable descriptions of sessions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from ..protocol import LinkStats, Metadata

RECORDING = "recording"
COMPLETE = "complete"
INTERRUPTED = "interrupted"

MAX_NAME = 200
MAX_NOTES = 20_000


class SessionNotFound(UserError):
    """No session with that id (the web layer turns this into a 404)."""


class SessionBusy(UserError):
    """The session is being recorded right now (the web layer turns this into a 409)."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: int
    name: str
    notes: str
    status: str  # recording | complete | interrupted
    source: str  # live | import | anything the caller passed to create()
    created_at: float  # wall-clock seconds since the epoch
    started_at: float | None
    stopped_at: float | None
    raw_bytes: int  # bytes known to be on disk (fsync'd), or the file length once reconciled
    elf_sha256: str | None
    elf_name: str | None
    metadata: Metadata | None
    link_stats: dict[str, Any] | None
    duration_us: float | None = None  # the capture's own time span (first entry to last exit)
    kind: str = "miniprofiler"  # what the raw bytes are: miniprofiler | s12z
    tags: dict[str, str] = field(default_factory=dict)  # store/tags.py: build, board...

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "notes": self.notes,
            "status": self.status,
            "source": self.source,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "stopped_at": self.stopped_at,
            "raw_bytes": self.raw_bytes,
            "elf_sha256": self.elf_sha256,
            "elf_name": self.elf_name,
            "metadata": metadata_to_dict(self.metadata),
            "link_stats": self.link_stats,
            "duration_us": self.duration_us,
            "kind": self.kind,
            "tags": dict(self.tags),
        }


def metadata_to_dict(meta: Metadata | None) -> dict[str, Any] | None:
    if meta is None:
        return None
    return {
        "mcu_clock_hz": meta.mcu_clock_hz,
        "timer_freq": meta.timer_freq,
        "elf_build_id": meta.elf_build_id,
        "fw_version": meta.fw_version,
    }


def metadata_to_json(meta: Metadata | None) -> str | None:
    d = metadata_to_dict(meta)
    return None if d is None else json.dumps(d)


def metadata_from_json(text: str | None) -> Metadata | None:
    if not text:
        return None
    d = json.loads(text)
    return Metadata(
        int(d["mcu_clock_hz"]), int(d["timer_freq"]), int(d["elf_build_id"]), str(d["fw_version"])
    )


def stats_to_json(stats: LinkStats | dict[str, Any] | None) -> str | None:
    if stats is None:
        return None
    if isinstance(stats, LinkStats):
        return json.dumps(stats.as_dict())
    return json.dumps(stats, default=str)


def clean_name(name: str) -> str:
    text = " ".join(str(name).split())
    if not text:
        raise UserError("session name must not be empty")
    if len(text) > MAX_NAME:
        raise UserError(f"session name is longer than {MAX_NAME} characters")
    return text


def clean_notes(notes: str) -> str:
    text = str(notes)
    if len(text) > MAX_NOTES:
        raise UserError(f"notes are longer than {MAX_NOTES} characters")
    # Keep newlines and tabs, drop other control characters that would garble a terminal.
    return "".join(ch for ch in text if ch in "\n\t" or ch >= " ")
