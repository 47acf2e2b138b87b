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

from collections.abc import Iterable, Iterator

import zstandard

from ..errors import UserError

# The library's default level: ~4 bytes a record at a few % of a core for 700 KB/s.
# Higher levels gain 10% for 3x the CPU on the reader thread (bench/store.py).
ZSTD_LEVEL = 3
# Compressed bytes fed to the decoder at a time: bounds what one step can produce.
READ_BYTES = 1 << 16
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
    """The bytes of consecutive zstd frames, in pieces of at most ``chunk`` bytes.

    A frame cut short ends the stream quietly after its last complete block; bytes that
    are not zstd at all raise a one-line UserError naming ``label``."""
    dctx = zstandard.ZstdDecompressor()
    obj = dctx.decompressobj()
    for data in compressed:
        while data:
            try:
                out = obj.decompress(data)
            except zstandard.ZstdError as exc:
                raise UserError(f"{label} is damaged: {exc}") from None
            yield from _pieces(out, chunk)
            data = obj.unused_data if obj.eof else b""
            if obj.eof:
                obj = dctx.decompressobj()


def _pieces(data: bytes, chunk: int) -> Iterator[bytes]:
    if len(data) <= chunk:
        if data:
            yield data
        return
    view = memoryview(data)
    for start in range(0, len(view), chunk):
        yield bytes(view[start : start + chunk])
