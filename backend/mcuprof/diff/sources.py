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
from ..protocol import DEFAULT_TIMER_FREQ, Metadata, ProfileData, ResponseDecoder
from .reduce import RecordReducer, Reduced, reduce_profile

if TYPE_CHECKING:
    from ..profile.frames import AddressTable
    from ..store import SessionStore

_SESSION = re.compile(r"(?:session:|#)?([0-9]{1,18})")  # ASCII: \d takes any script's

Progress = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)


@dataclass
class Source:
    label: str  # how reports name it: the file path, or "session 7 (name)"
    data: bytes | None = None  # a session's capture; None for a file (read in chunks)
    elf: bytes | None = None  # the ELF stored with the session, if any
    elf_name: str | None = None
    session_id: int | None = None
    size: int = 0  # bytes
    path: Path | None = None  # a file's
    _chunks: Iterator[bytes] | None = None  # a file's, opened and checked

    def chunks(self) -> Iterator[bytes]:
        """The capture's bytes in chunks; a file's are read as they are asked for."""
        if self._chunks is not None:  # the first pass: the file checked and opened
            chunks, self._chunks = self._chunks, None
            return chunks
        if self.path is not None:
            return iter_capture(self.path)[1]
        view = memoryview(self.data or b"")
        return (view[i : i + CHUNK] for i in range(0, len(view), CHUNK))  # type: ignore[misc]


def session_id_of(text: str) -> int | None:
    m = _SESSION.fullmatch(text.strip())
    return int(m.group(1)) if m else None


def resolve_source(text: str, open_store: StoreOpener) -> Source:
    path = Path(text)
    explicit = text.startswith(("session:", "#"))
    if not explicit and path.exists():
        size, chunks = iter_capture(path)  # checks the file now: errors before any work
        return Source(label=text, size=size, path=path, _chunks=chunks)
    sid = session_id_of(text)
    if sid is None:
        raise UserError(f"{text}: no such capture file or session id")
    store = open_store()
    info = store.get(sid)
    data = store.raw(sid)
    return Source(
        label=f"session {sid} ({info.name})",
        data=data,
        elf=store.elf_bytes(sid),
        elf_name=info.elf_name,
        session_id=sid,
        size=len(data),
    )


def reduce_source(
    src: Source,
    symbols: Any,
    *,
    folded: bool = False,
    progress: Progress | None = None,
    table: AddressTable | None = None,
) -> tuple[Reduced, Metadata | None]:
    """A capture of any kind (MiniProfiler, QS: told from its first bytes) reduced to
    what a comparison reads; its records are gone when this returns. ``table``: an
    address table (of ``symbols``) to share with another capture's reduction."""
    from ..sources import MiniProfilerSource, peek_kind

    kind, chunks = peek_kind(src.chunks())
    if kind != MiniProfilerSource.kind or folded:
        # Folded stacks come from the profile's aggregates, as every export's do.
        return _by_profile(kind, chunks, src.size, symbols, folded, progress)
    # Runs of packets as the decoder cuts them: the reducer takes records in any split,
    # so joining them first would only be a copy.
    decoder = ResponseDecoder(batch=True, merge=False)
    reducer = RecordReducer(symbols, table)
    metadata: Metadata | None = None

    def take(events: list[object]) -> None:
        nonlocal metadata
        for event in events:
            if isinstance(event, ProfileData):
                reducer.add(event.records)
            elif isinstance(event, Metadata):
                metadata = event

    done = 0
    for piece in chunks:
        take(decoder.feed(piece))
        done += len(piece)
        if progress is not None:
            progress(min(done, src.size), src.size, reducer.n_records)
    take(decoder.close())
    del chunks
    # The timer rate of the last METADATA packet applies to the whole capture, as in a
    # Profile (set_timer_freq).
    freq = metadata.timer_freq if metadata is not None and metadata.timer_freq else 0
    reduced = reducer.finish(int(freq) or DEFAULT_TIMER_FREQ)
    if reduced is None:  # past float64's exact range: the Profile's order of sums
        return _by_profile(kind, src.chunks(), src.size, symbols, False, progress)
    if progress is not None:
        progress(src.size, src.size, reduced.n_records)
    src.data = None  # a session's raw bytes: decoded, not needed any more
    return reduced, metadata


def _by_profile(
    kind: str,
    chunks: Iterator[bytes],
    size: int,
    symbols: Any,
    folded: bool,
    progress: Progress | None,
) -> tuple[Reduced, Metadata | None]:
    from ..sources import load_stream

    cap = load_stream(kind, chunks, size, symbols, progress=progress)
    del chunks
    return reduce_profile(cap.profile, folded), cap.metadata


class StoreOpener:
    """Opens the store on first use, so comparing two files never touches the data dir."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)
        self._store: SessionStore | None = None

    def __call__(self) -> SessionStore:
        if self._store is None:
            from ..store import SessionStore  # (SQLite: only when a session id is read)

            self._store = SessionStore(self.data_dir, autoflush=False)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
