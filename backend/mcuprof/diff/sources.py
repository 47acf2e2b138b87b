"""What ``compare`` and ``sessions`` accept as a capture: a raw capture file, or the id of
a stored session (``7`` or ``session:7``; an existing file of that name wins over a bare id)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..capture import read_capture
from ..errors import UserError
from ..store import SessionStore

_SESSION = re.compile(r"(?:session:|#)?(\d{1,18})")


@dataclass
class Source:
    label: str  # how reports name it: the file path, or "session 7 (name)"
    data: bytes
    elf: bytes | None = None  # the ELF stored with the session, if any
    elf_name: str | None = None
    session_id: int | None = None


def session_id_of(text: str) -> int | None:
    m = _SESSION.fullmatch(text.strip())
    return int(m.group(1)) if m else None


def resolve_source(text: str, open_store: StoreOpener) -> Source:
    path = Path(text)
    explicit = text.startswith(("session:", "#"))
    if not explicit and path.exists():
        return Source(label=text, data=read_capture(path))
    sid = session_id_of(text)
    if sid is None:
        raise UserError(f"{text}: no such capture file or session id")
    store = open_store()
    info = store.get(sid)
    return Source(
        label=f"session {sid} ({info.name})",
        data=store.raw(sid),
        elf=store.elf_bytes(sid),
        elf_name=info.elf_name,
        session_id=sid,
    )


class StoreOpener:
    """Opens the store on first use, so comparing two files never touches the data dir."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)
        self._store: SessionStore | None = None

    def __call__(self) -> SessionStore:
        if self._store is None:
            self._store = SessionStore(self.data_dir, autoflush=False)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
