"""Importing a raw capture into either store (SQLite plus files, or PostgreSQL): the
stream is decoded as it is copied in, a chunk at a time, so it is never whole in memory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from .. import kinds
from ..capture import CHUNK
from ..errors import UserError
from ..files import iter_file
from ..loss import LossChunks
from ..profile.span import CaptureSpan
from .model import SessionInfo

ElfInput = str | os.PathLike[str] | bytes | None


def import_capture(
    store: Any,
    name: str,
    data: bytes | str | os.PathLike[str],
    elf: ElfInput = None,
    *,
    elf_name: str | None = None,
    notes: str = "",
    kind: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    tags: dict[str, str] | None = None,
) -> SessionInfo:
    """Store a raw capture (bytes, or a file path read in chunks) as a finished session;
    metadata and link statistics are decoded from it, so it looks like a recording.
    ``kind`` ('miniprofiler', 'qs') is told from the stream's start when not given.
    ``progress(bytes done, records so far)`` is called after each chunk."""
    chunks = _chunks(data)
    first = next(chunks, b"")
    found = kinds.resolve(kind) if kind else kinds.detect(first) or kinds.DEFAULT
    kind = found.name
    source = found.new_source()
    span = CaptureSpan()
    done = records = 0
    loss = LossChunks(found.counts_loss)

    def take(batch: Any, size: int) -> None:
        nonlocal done, records
        if len(batch.records):
            span.add(batch.records)
            records += len(batch.records)
        span.metadata = source.metadata
        done += size

    # The metadata normally leads the stream; decode the first chunk before creating
    # the session so the row has it from the start.
    take(source.feed(first), len(first))
    writer = store.create(
        name,
        elf if found.names_from_elf else None,
        span.metadata,
        elf_name=elf_name,
        source="import",
        notes=notes,
        kind=kind,
        tags=tags,
    )
    try:
        writer.append(first)
        loss.feed(first)
        for chunk in chunks:
            take(source.feed(chunk), len(chunk))
            writer.append(chunk)
            loss.feed(chunk)
            if progress is not None:
                progress(done, records)
        take(source.close(), 0)
        stats = source.stats()
        if progress is not None:
            progress(done, records)
        if not sum(stats["packets"].values()):
            # Random bytes or a README are not a capture: refuse, store nothing.
            raise UserError(
                f"{name}: not a {found.nothing_found} in {stats['bytes']:,} bytes; "
                "nothing was stored"
            )
        if span.metadata is not None:
            writer.set_metadata(span.metadata)
    except BaseException:
        store._discard(writer)
        raise
    return writer.finish(stats, duration_us=span.duration_us, loss=loss.result())


def _chunks(data: bytes | str | os.PathLike[str]) -> Iterator[bytes]:
    if isinstance(data, bytes | bytearray | memoryview):
        view = memoryview(data)
        for i in range(0, len(view), CHUNK):
            yield bytes(view[i : i + CHUNK])
        return
    yield from iter_file(data, CHUNK, "capture file")
