"""Raw captures: the device-to-host byte stream exactly as a serial logger saves it."""

from __future__ import annotations

import os
from collections.abc import Iterator

from .files import MAX_FILE_BYTES, file_error, iter_file, read_file

# Bytes read at a time by whole-capture commands that stream: big enough that per-read
# costs vanish, small beside the capture (a 30M-record capture is 436 MB).
CHUNK = 1 << 22
# Bytes of a QS stream fed to its decoder at a time, as a live link would feed it.
QS_CHUNK = 1 << 20


def read_capture(path: str | os.PathLike[str]) -> bytes:
    return read_file(path, "capture file")


def iter_capture(path: str | os.PathLike[str], chunk: int = CHUNK) -> tuple[int, Iterator[bytes]]:
    """The size of a capture and its bytes in chunks. The file is checked (regular,
    within the size cap) before this returns, so errors come before any work."""
    chunks = iter_file(path, chunk, "capture file", MAX_FILE_BYTES)
    first = next(chunks, b"")  # runs the checks and opens the file
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise file_error(path, exc, "capture file") from None

    def all_chunks() -> Iterator[bytes]:
        if first:
            yield first
        yield from chunks

    return max(size, len(first)), all_chunks()
