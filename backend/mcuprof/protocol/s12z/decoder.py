"""Sans-IO S12Z line decoder: ``feed`` bytes in any split, get frozen line events back.

Each line's length follows from its INFO byte, so where line k+1 starts depends on every
line before it. Finding the starts is the only sequential part, and it is done in numpy:
the stream is cut into blocks; since no line is longer than 8 bytes, a walk enters a block
at one of its first 8 bytes, so all 8 walks of every block advance together, one line per
step. Chaining the blocks' exits then gives each block's true entry, and a second pass
marks the starts. Fields are then cut for all lines at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .events import LINE_DTYPE, BadLine, LineEvent, Lines
from .layout import (
    ADDRESS_MASK,
    COF_AT,
    COF_BITS,
    DEST_AT,
    FORMAT_MASK,
    LENGTH_BY_INFO,
    MAX_LINE,
    PTS_PC_AT,
    RESERVED_BIT,
    STAMP_AT,
    TBOVF,
    TERM,
    TSOVF,
    VECTOR_AT,
    LineFormat,
)

_BLOCK = 512
_FORMATS = {f.value: f.name for f in LineFormat}
_KNOWN = np.zeros(256, dtype=bool)
_KNOWN[[i for i in range(256) if i & FORMAT_MASK in _FORMATS]] = True


@dataclass
class TraceStats:
    """What the decoder has seen. ``lines`` counts good lines by format name; every INFO
    byte read is in exactly one of ``lines``, ``reserved``, ``malformed``, ``truncated``."""

    bytes: int = 0
    lines: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_FORMATS.values(), 0))
    reserved: int = 0
    malformed: int = 0
    truncated: int = 0
    tsovf: int = 0
    tbovf: int = 0
    term: int = 0

    @property
    def good(self) -> int:
        return sum(self.lines.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "lines": dict(self.lines),
            "reserved": self.reserved,
            "malformed": self.malformed,
            "truncated": self.truncated,
            "tsovf": self.tsovf,
            "tbovf": self.tbovf,
            "term": self.term,
        }


def line_starts(buf: np.ndarray, n: int) -> np.ndarray:
    """Offsets of the lines that start below ``n`` when the first starts at 0. ``buf`` is
    the stream padded with at least MAX_LINE + _BLOCK bytes (their lengths are ignored)."""
    if n == 0:
        return np.empty(0, dtype=np.int64)
    nb = -(-n // _BLOCK)
    lengths = LENGTH_BY_INFO[buf[: nb * _BLOCK + MAX_LINE]]
    ends = np.arange(1, nb + 1, dtype=np.int64) * _BLOCK
    # Pass 1: from each of the first 8 bytes of every block, walk to the block's exit.
    pos = (ends - _BLOCK)[:, None] + np.arange(MAX_LINE, dtype=np.int64)
    stop = np.broadcast_to(ends[:, None], pos.shape)
    pos = _walk(pos.ravel(), stop.ravel(), lengths).reshape(nb, MAX_LINE)
    exits = (pos - ends[:, None]).tolist()
    # Chain: block b+1 is entered where block b's walk from its own entry left it.
    entry = [0] * nb
    e = 0
    for b in range(nb - 1):
        e = exits[b][e]
        entry[b + 1] = e
    # Pass 2: walk once per block from its entry and mark every start on the way.
    marks = np.zeros(nb * _BLOCK + MAX_LINE, dtype=bool)
    _walk(ends - _BLOCK + np.asarray(entry, dtype=np.int64), ends, lengths, marks)
    return np.flatnonzero(marks[:n])


def _walk(
    pos: np.ndarray, stop: np.ndarray, lengths: np.ndarray, marks: np.ndarray | None = None
) -> np.ndarray:
    """Advance every walk one line per step until it reaches its ``stop``; walks that are
    done drop out every few steps so the arrays shrink with the work left."""
    out = pos.copy()
    idx = np.arange(len(pos))
    while len(idx):
        p, s = out[idx], stop[idx]
        for _ in range(8):
            live = p < s
            if marks is not None:
                marks[p[live]] = True
            p = np.where(live, p + lengths[p], p)
        out[idx] = p
        keep = p < s
        idx = idx[keep]
    return out


class LineDecoder:
    """Feed bytes, get ``Lines`` batches and ``BadLine`` events in stream order. At most
    one incomplete line (7 bytes) is held between feeds; ``close`` reports it as truncated."""

    def __init__(self) -> None:
        self._tail = b""
        self._offset = 0  # stream offset of self._tail[0]
        self.stats = TraceStats()

    @property
    def buffered(self) -> int:
        return len(self._tail)

    def feed(self, data: bytes | bytearray | memoryview) -> list[LineEvent]:
        data = bytes(data)
        self.stats.bytes += len(data)
        buf = self._tail + data if self._tail else data
        n = len(buf)
        if n == 0:
            return []
        arr = np.zeros(n + _BLOCK + MAX_LINE, dtype=np.uint8)
        arr[:n] = np.frombuffer(buf, dtype=np.uint8)
        starts = line_starts(arr, n)
        # The last line may not have arrived whole yet.
        used = n
        if len(starts) and starts[-1] + LENGTH_BY_INFO[arr[starts[-1]]] > n:
            used = int(starts[-1])
            starts = starts[:-1]
        events = self._decode(arr, starts, buf)
        self._tail = buf[used:]
        self._offset += used
        return events

    def close(self) -> list[LineEvent]:
        """End of stream: a line still waiting for its bytes is truncated."""
        if not self._tail:
            return []
        tail, self._tail = self._tail, b""
        self.stats.truncated += 1
        need = int(LENGTH_BY_INFO[tail[0]])
        event = BadLine(
            self._offset,
            "truncated",
            f"{_FORMATS[tail[0] & FORMAT_MASK]} line needs {need} bytes, the stream ends "
            f"after {len(tail)}",
            tail,
        )
        self._offset += len(tail)
        return [event]

    def _decode(self, arr: np.ndarray, starts: np.ndarray, buf: bytes) -> list[LineEvent]:
        if not len(starts):
            return []
        info = arr[starts]
        fmt = info & FORMAT_MASK
        s = starts
        word = (
            arr[s + COF_AT].astype(np.uint32)
            | arr[s + COF_AT + 1].astype(np.uint32) << 8
            | arr[s + COF_AT + 2].astype(np.uint32) << 16
            | arr[s + COF_AT + 3].astype(np.uint32) << 24
        )
        has_cofs = (fmt >= LineFormat.PTIB) & (fmt <= LineFormat.PTVB)
        word[~has_cofs] = 0
        # bit_length(word) - 1 is the number of COFs below the stop bit; frexp is exact here.
        count = np.frexp(word.astype(np.float64))[1].astype(np.int64) - 1
        count[~has_cofs] = 0
        known = _KNOWN[info]
        bad_bit = (info & RESERVED_BIT).astype(bool) & (fmt != LineFormat.PTW)
        no_stop = has_cofs & (word == 0)
        not_full = (fmt == LineFormat.PTHF) & (word != 0) & (count != COF_BITS)
        bad = ~known | bad_bit | no_stop | not_full
        good = ~bad

        def at24(k: int) -> np.ndarray:
            return (
                arr[s + k].astype(np.uint32)
                | arr[s + k + 1].astype(np.uint32) << 8
                | arr[s + k + 2].astype(np.uint32) << 16
            ) & ADDRESS_MASK

        address = np.where(
            fmt == LineFormat.PTS,
            at24(PTS_PC_AT),
            np.where(fmt == LineFormat.PTIB, at24(DEST_AT), 0),
        )
        ptvb = fmt == LineFormat.PTVB
        lines = np.empty(len(s), dtype=LINE_DTYPE)
        lines["offset"] = s + self._offset
        lines["info"] = info
        lines["format"] = fmt
        lines["cofs"] = count
        lines["vector"] = np.where(ptvb, arr[s + VECTOR_AT], 0)
        lines["stamp"] = np.where(
            ptvb,
            arr[s + STAMP_AT].astype(np.uint16) | arr[s + STAMP_AT + 1].astype(np.uint16) << 8,
            0,
        )
        lines["cof_word"] = word
        lines["address"] = address
        self._count(lines[good])
        return self._events(lines, good, known, bad_bit, no_stop, buf)

    def _count(self, good: np.ndarray) -> None:
        st = self.stats
        fmt = good["format"]
        found = np.bincount(fmt, minlength=16)
        for value, name in _FORMATS.items():
            st.lines[name] += int(found[value])
        flagged = good["info"][fmt != LineFormat.PTW]
        st.tsovf += int(np.count_nonzero(flagged & TSOVF))
        st.tbovf += int(np.count_nonzero(flagged & TBOVF))
        st.term += int(np.count_nonzero(flagged & TERM))

    def _events(
        self,
        lines: np.ndarray,
        good: np.ndarray,
        known: np.ndarray,
        bad_bit: np.ndarray,
        no_stop: np.ndarray,
        buf: bytes,
    ) -> list[LineEvent]:
        out: list[LineEvent] = []
        at = 0
        for i in np.flatnonzero(~good).tolist():
            if i > at:
                out.append(_frozen(lines[at:i]))
            out.append(self._bad(lines[i], bool(known[i]), bool(bad_bit[i]), bool(no_stop[i]), buf))
            at = i + 1
        if at < len(lines):
            out.append(_frozen(lines[at:]))
        return out

    def _bad(self, row: np.void, known: bool, bad_bit: bool, no_stop: bool, buf: bytes) -> BadLine:
        offset = int(row["offset"])
        info = int(row["info"])
        local = offset - self._offset
        if not known:
            self.stats.reserved += 1
            return BadLine(
                offset,
                "reserved",
                f"INFO 0x{info:02x}: reserved line format {info & 15}",
                buf[local : local + 1],
            )
        self.stats.malformed += 1
        name = _FORMATS[info & FORMAT_MASK]
        size = int(LENGTH_BY_INFO[info])
        if bad_bit:
            why = f"{name} line with INFO[7] set (INFO 0x{info:02x})"
        elif no_stop:
            why = f"{name} line with no stop bit (direct COF bytes all 0)"
        else:
            why = f"PTHF line with its stop bit at bit {int(row['cofs'])}, not 31"
        return BadLine(offset, "malformed", why, buf[local : local + size])


def _frozen(rows: np.ndarray) -> Lines:
    rows = rows.copy()
    rows.flags.writeable = False
    return Lines(rows)


def decode_trace(data: bytes) -> tuple[list[LineEvent], TraceStats]:
    """Decode a whole capture at once."""
    decoder = LineDecoder()
    events = decoder.feed(data)
    events += decoder.close()
    return events, decoder.stats
