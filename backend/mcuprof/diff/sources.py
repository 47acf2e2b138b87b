"""What ``compare`` and ``sessions`` accept as a capture: a raw capture file, or the id of
a stored session (``7`` or ``session:7``; an existing file of that name wins over a bare id).
A file is read as it is reduced, in chunks, never held whole."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..capture import (
    CHUNK,  # bytes of a capture decoded at a time
    iter_capture,
)
from ..errors import UserError
from ..protocol import Metadata
from .reduce import Reduced, reduce_profile

if TYPE_CHECKING:
    from ..store import Store

_SESSION = re.compile(r"(?:session:|#)?([0-9]{1,18})")  # ASCII: \d takes any script's

Progress = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)


@dataclass
class CompareInput:
    label: str  # how reports name it: the file path, or "session 7 (name)"
    data: bytes | None = None  # a session's capture; None for a file (read in chunks)
    elf: bytes | None = None  # the ELF stored with the session, if any
    elf_name: str | None = None
    session_id: int | None = None
    size: int = 0  # bytes
    path: Path | None = None  # a file's

    def chunks(self) -> Iterator[bytes]:
        """The capture's bytes in chunks; a file's are read as they are asked for."""
        if self.path is not None:
            return iter_capture(self.path)[1]
        view = memoryview(self.data or b"")
        return (view[i : i + CHUNK] for i in range(0, len(view), CHUNK))  # type: ignore[misc]


def session_id_of(text: str) -> int | None:
    m = _SESSION.fullmatch(text.strip())
    return int(m.group(1)) if m else None


def resolve_source(text: str, open_store: StoreOpener) -> CompareInput:
    path = Path(text)
    explicit = text.startswith(("session:", "#"))
    if not explicit and path.exists():
        # Checks the file now (errors before any work); its bytes are read when reduced,
        # so a compare does not hold the second capture's first chunk while reducing the
        # first (4 MB, 4 bytes per record of a 1M-record capture).
        size, _ = iter_capture(path)
        return CompareInput(label=text, size=size, path=path)
    sid = session_id_of(text)
    if sid is None:
        raise UserError(f"{text}: no such capture file or session id")
    store = open_store()
    info = store.get(sid)
    data = store.raw(sid)
    return CompareInput(
        label=f"session {sid} ({info.name})",
        data=data,
        elf=store.elf_bytes(sid),
        elf_name=info.elf_name,
        session_id=sid,
        size=len(data),
    )


def reduce_source(
    src: CompareInput,
    symbols: Any,
    *,
    folded: bool = False,
    progress: Progress | None = None,
    calls: bool = False,
) -> tuple[Reduced, Metadata | None]:
    """A capture of any kind (MiniProfiler, QS: told from its first bytes) reduced to
    what a comparison reads, through the loader and tables every command uses
    (``sources.load_stream``, then the profile's aggregates); its records are gone when
    this returns. ``calls`` keeps every call's times too (they are kept anyway when the
    device's counters say records were lost)."""
    from .. import kinds
    from ..loss import LossChunks
    from ..sources import load_stream, peek_kind

    kind, chunks = peek_kind(src.chunks())
    loss = LossChunks(kinds.get(kind).counts_loss)

    def read(pieces: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in pieces:  # the device's counters read from the same pieces
            loss.feed(chunk)
            yield chunk

    cap = load_stream(kind, read(chunks), src.size, symbols, progress=progress)
    del chunks
    src.data = None  # a session's raw bytes: decoded, not needed any more
    reduced = reduce_profile(cap.profile, folded)
    reduced.loss = loss.result()
    lossy = reduced.loss is not None and bool(reduced.loss["stretches"] or reduced.loss["lost"])
    if calls or lossy:  # every call's times: a percentile, or the stretches with loss
        from .gate import per_call

        reduced.calls = per_call(cap.profile)
    return reduced, cap.metadata


class StoreOpener:
    """Opens the store on first use, so comparing two files never touches the data dir."""

    def __init__(self, data_dir: str | Path, store_url: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.store_url = store_url
        self._store: Store | None = None

    def __call__(self) -> Store:
        if self._store is None:
            from ..store import open_store  # (SQLite: only when a session id is read)

            self._store = open_store(self.data_dir, self.store_url, autoflush=False)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
