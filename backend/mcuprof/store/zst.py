"""Raw captures compressed with zstandard, written a block per append, read as a stream.

The format is plain zstd (RFC 8878): one or more frames, one after the other. A live
session is one frame; every append ends a block (ZSTD_e_flush), so once its one write(2)
returns, everything appended so far can be decoded from the file without the frame's end:
a process killed mid-capture loses nothing it had appended. The frame's end is written at
Stop. A reader decodes every frame and every complete block; a final block cut short (a
power cut inside a write, a disk that filled) is dropped without error, as a tail that
never arrived.

The compression keeps a window across blocks, so a block per append costs little: on the
simulator's capture, appends of ~2 KB take 3.9 bytes a record against 3.8 for one block
per 128 KB (bench/store.py).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterable, Iterator

import zstandard

from ..errors import UserError

# The library's default level: ~4 bytes a record at a few % of a core for 700 KB/s.
# Higher levels gain 10% for 3x the CPU on the reader thread (bench/store.py).
ZSTD_LEVEL = 3
# Compressed bytes read from a file at a time.
READ_BYTES = 1 << 16
# Compressed bytes fed to the decoder at a time. What a step can produce is bounded by it,
# not by the file: a zstd block holds at most 128 KiB and takes at least 4 bytes (a run of
# one byte), so a step makes at most FEED_BYTES / 4 * 128 KiB = 64 MiB (a few KB usually).
FEED_BYTES = 1 << 11
MAGIC = b"\x28\xb5\x2f\xfd"  # every zstd frame starts so (RFC 8878, 3.1.1)


class BlockCompressor:
    """One zstd frame, grown a complete block at a time."""

    def __init__(self, level: int = ZSTD_LEVEL) -> None:
        self._obj = zstandard.ZstdCompressor(level=level).compressobj()

    def block(self, data: bytes | bytearray | memoryview) -> bytes:
        """``data`` as compressed bytes that end a block: decodable once written."""
        return self._obj.compress(data) + self._obj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def end(self) -> bytes:
        """The frame's end (a last, empty block); the compressor is done after."""
        return self._obj.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)


def compress_frame(data: bytes | bytearray | memoryview, level: int = ZSTD_LEVEL) -> bytes:
    """``data`` as one whole frame (a PostgreSQL chunk row)."""
    return zstandard.ZstdCompressor(level=level).compress(data)


def inflate(compressed: Iterable[bytes], chunk: int, label: str) -> Iterator[bytes]:
    """The bytes of consecutive zstd frames, in pieces of ``chunk`` bytes (the last may
    be shorter): a reader's step, as a plain file would give it.

    A frame cut short ends the stream quietly after its last complete block (each call
    gives all the output its input allows: zstd's stream_reader keeps back what did not
    fit its last read when the input ends mid-frame); bytes that are not zstd at all
    raise a one-line UserError naming ``label``."""
    dctx = zstandard.ZstdDecompressor()
    obj = dctx.decompressobj()
    held = bytearray()
    for data in _fed(compressed):
        while data:
            try:
                held += obj.decompress(data)
            except zstandard.ZstdError as exc:
                raise UserError(f"{label} is damaged: {exc}") from None
            data = obj.unused_data if obj.eof else b""
            if obj.eof:
                obj = dctx.decompressobj()
        if len(held) >= chunk:
            whole = len(held) - len(held) % chunk
            with memoryview(held) as view:
                pieces = [bytes(view[i : i + chunk]) for i in range(0, whole, chunk)]
            del held[:whole]
            yield from pieces
    if held:
        yield bytes(held)


def _fed(compressed: Iterable[bytes]) -> Iterator[bytes]:
    for data in compressed:
        with memoryview(data) as view:
            for start in range(0, len(view), FEED_BYTES):
                yield bytes(view[start : start + FEED_BYTES])


def read_ahead(pieces: Generator[bytes, None, None]) -> Iterator[bytes]:
    """``pieces`` produced on a thread of their own, one piece ahead of the consumer: the
    next piece is read and decompressed (zstd lets go of the GIL) while the reader decodes
    this one, so decompressing adds no time to an Open on two cores (bench/store.py).
    Errors come out where the piece would have. A consumer that stops early (closed or
    dropped) lets the thread end, and ``pieces`` is closed on it."""
    box: queue.Queue[tuple[bytes | None, BaseException | None]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            for piece in pieces:
                box.put((piece, None))
                if stop.is_set():
                    return
            box.put((None, None))
        except BaseException as exc:  # handed to the consumer, raised there
            box.put((None, exc))
        finally:
            pieces.close()

    threading.Thread(target=produce, name="mcuprof-raw-read-ahead", daemon=True).start()
    try:
        while True:
            piece, exc = box.get()
            if exc is not None:
                raise exc
            if piece is None:
                return
            yield piece
    finally:
        stop.set()
        while True:  # a producer waiting to put gets its room, then sees ``stop``
            try:
                box.get_nowait()
            except queue.Empty:
                break
