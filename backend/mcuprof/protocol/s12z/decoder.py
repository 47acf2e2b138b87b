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
    COF_BITS,
    FORMAT_MASK,
    HAS_COFS,
    LENGTH_BY_INFO,
    MAX_LINE,
    RESERVED_BIT,
    TBOVF,
    TERM,
    TSOVF,
    LineFormat,
    by_info,
    cut,
)

_BLOCK = 2048
# Steps every walk takes before walks of one block that met are merged.
_MERGE_AFTER = 8
_SLICE = 1 << 15
_PIECE = 1 << 21
_LENGTH_BYTES = bytes(LENGTH_BY_INFO.astype(np.uint8).tolist())
# Bad lines kept as events per decoder; past this they are counted (``stats.unlisted``)
# but not kept, so garbage costs its count, not an object (~200 bytes) per byte.
MAX_BAD_EVENTS = 4096
_FORMATS = {f.value: f.name for f in LineFormat}


_INFO = np.arange(256)
_FORMAT_OF = _INFO & FORMAT_MASK
_KNOWN = by_info(lambda i, f: f in _FORMATS, bool)
_HAS_COFS = by_info(lambda i, f: f in HAS_COFS, bool)
# Reserved formats, and INFO[7] set outside PTW: bad whatever the rest of the line says.
_BAD_INFO = by_info(
    lambda i, f: f not in _FORMATS or (i & RESERVED_BIT and f != LineFormat.PTW), bool
)


@dataclass
class TraceStats:
    """What the decoder has seen. ``lines`` counts good lines by format name; every INFO
    byte read is in exactly one of ``lines``, ``reserved``, ``malformed``, ``truncated``."""

    bytes: int = 0
    unlisted: int = 0  # bad lines counted but not kept as events (past MAX_BAD_EVENTS)
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
            "unlisted": self.unlisted,
        }


def line_starts(data: bytes) -> np.ndarray:
    """Offsets of the lines in ``data`` when the first starts at 0, up to the end (the
    last line may run past it). Pieces of a few MiB at a time: the walks' reads then stay
    in the CPU cache."""
    out = []
    at = 0
    while at < len(data):
        piece = _piece_starts(data[at : at + _PIECE])
        out.append(piece + at)
        last = at + int(piece[-1])
        at = last + int(LENGTH_BY_INFO[data[last]])
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


def _piece_starts(data: bytes) -> np.ndarray:
    n = len(data)
    nb = -(-n // _BLOCK)
    # Lengths by byte, padded so that walks may run a line past the last block.
    lengths = np.frombuffer(
        (data + bytes(nb * _BLOCK - n + MAX_LINE)).translate(_LENGTH_BYTES), np.uint8
    )
    ends = np.arange(1, nb + 1, dtype=np.int64) * _BLOCK
    first = ends - _BLOCK
    # Pass 1: from each of the first 8 bytes of every block, walk to the block's exit.
    # Walks that have met go on as one. On real traces 4 or 5 of the 8 stay apart: a walk
    # that starts inside a line reads its data bytes as INFO and rarely falls back in step.
    pos = (first[:, None] + np.arange(MAX_LINE, dtype=np.int64)).ravel()
    stop = np.repeat(ends, MAX_LINE)
    for _ in range(_MERGE_AFTER):
        np.add(pos, lengths[pos], out=pos, where=pos < stop)
    key = (
        pos
        + np.repeat(np.arange(nb, dtype=np.int64), MAX_LINE) * (2 * _BLOCK)
        - np.repeat(first, MAX_LINE)
    )
    _, which, inverse = np.unique(key, return_index=True, return_inverse=True)
    exits = _walk(pos[which], stop[which], lengths)[inverse.ravel()]
    exits = (exits.reshape(nb, MAX_LINE) - ends[:, None]).tolist()
    # Chain: block b+1 is entered where block b's walk from its own entry left it.
    entry = [0] * nb
    e = 0
    for b in range(nb - 1):
        e = exits[b][e]
        entry[b + 1] = e
    # Pass 2: walk once per block from its entry and mark every start on the way. A walk
    # that is done stays on its exit, the next block's entry, which is a start too.
    marks = np.zeros(len(lengths), dtype=bool)
    p = first + np.asarray(entry, dtype=np.int64)
    s = ends
    while len(p):
        for _ in range(8):
            marks[p] = True
            np.add(p, lengths[p], out=p, where=p < s)
        keep = p < s
        p, s = p[keep], s[keep]
    return np.flatnonzero(marks[:n])


def _walk(pos: np.ndarray, stop: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Advance every walk one line per step until it reaches its ``stop``; walks that are
    done drop out every few steps so the arrays shrink with the work left."""
    out = pos.copy()
    idx = np.arange(len(pos))
    p, s = out.copy(), stop
    while len(idx):
        for _ in range(8):
            np.add(p, lengths[p], out=p, where=p < s)
        out[idx] = p
        keep = p < s
        idx, p, s = idx[keep], p[keep], s[keep]
    return out


def _fields(w: np.ndarray, lines: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """Fill ``lines`` (all but the offset) and ``bad`` from the lines' first 8 bytes; return
    how many good lines each INFO byte value started."""
    info, word, address, vector, stamp = cut(w)
    fmt = info & FORMAT_MASK
    # bit_length(word) - 1 is the number of COFs below the stop bit; frexp is exact here.
    count = np.maximum(np.frexp(word)[1] - 1, 0)
    np.logical_and(word == 0, _HAS_COFS[info], out=bad)
    bad |= _BAD_INFO[info]
    bad |= (fmt == LineFormat.PTHF) & (count != COF_BITS)
    lines["info"] = info
    lines["format"] = fmt
    lines["cofs"] = count
    lines["cof_word"] = word
    lines["address"] = address
    lines["vector"] = vector
    lines["stamp"] = stamp
    return np.bincount(info[~bad] if bad.any() else info, minlength=256)


class LineDecoder:
    """Feed bytes, get ``Lines`` batches and ``BadLine`` events in stream order. At most
    one incomplete line (7 bytes) is held between feeds; ``close`` reports it as truncated.
    Only the first ``max_bad`` bad lines become events; the rest are counted."""

    def __init__(self, max_bad: int = MAX_BAD_EVENTS) -> None:
        self._max_bad = max_bad
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
        starts = line_starts(buf)
        # The last line may not have arrived whole yet.
        used = n
        if len(starts) and starts[-1] + LENGTH_BY_INFO[buf[starts[-1]]] > n:
            used = int(starts[-1])
            starts = starts[:-1]
        events = self._decode(buf + bytes(MAX_LINE), starts, buf)
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

    def _decode(self, padded: bytes, starts: np.ndarray, buf: bytes) -> list[LineEvent]:
        if not len(starts):
            return []
        # Each line's 8 bytes as one little-endian word (byte k in bits 8k..8k+7), read
        # unaligned; layout.cut takes the fields out of it.
        words = np.ndarray((len(padded) - MAX_LINE + 1,), "<u8", padded, 0, (1,))
        lines = np.empty(len(starts), dtype=LINE_DTYPE)
        bad = np.empty(len(starts), dtype=bool)
        # Slices small enough that every temporary stays in the CPU cache.
        infos = np.zeros(256, dtype=np.int64)
        for at in range(0, len(starts), _SLICE):
            s = starts[at : at + _SLICE]
            infos += _fields(words[s], lines[at : at + _SLICE], bad[at : at + _SLICE])
        self._count(infos)
        lines["offset"] = starts
        if self._offset:
            lines["offset"] += self._offset
        if not bad.any():
            lines.flags.writeable = False
            return [Lines(lines)]
        return self._events(lines, ~bad, buf)

    def _count(self, infos: np.ndarray) -> None:
        """Add good lines to the stats from how many each INFO byte value started."""
        st = self.stats
        for value, name in _FORMATS.items():
            st.lines[name] += int(infos[value == _FORMAT_OF].sum())
        flagged = infos * (_FORMAT_OF != LineFormat.PTW)
        st.tsovf += int(flagged[_INFO & TSOVF > 0].sum())
        st.tbovf += int(flagged[_INFO & TBOVF > 0].sum())
        st.term += int(flagged[_INFO & TERM > 0].sum())

    def _events(self, lines: np.ndarray, good: np.ndarray, buf: bytes) -> list[LineEvent]:
        out: list[LineEvent] = []
        at = 0
        st = self.stats
        room = max(0, self._max_bad - (st.reserved + st.malformed + st.truncated))
        bad_at = np.flatnonzero(~good)
        for i in bad_at[:room].tolist():
            if i > at:
                out.append(_frozen(lines[at:i]))
            out.append(self._bad(lines[i], buf))
            at = i + 1
        if len(bad_at) > room:
            # Past the cap: the rest's good lines go out as one batch, the bad ones counted.
            rest = lines[at:]
            unknown = ~_KNOWN[rest["info"][~good[at:]]]
            st.reserved += int(unknown.sum())
            st.malformed += int(len(unknown) - unknown.sum())
            st.unlisted += len(unknown)
            rest = rest[good[at:]]
            rest.flags.writeable = False
            if len(rest):
                out.append(Lines(rest))
        elif at < len(lines):
            out.append(_frozen(lines[at:]))
        return out

    def _bad(self, row: np.void, buf: bytes) -> BadLine:
        offset = int(row["offset"])
        info = int(row["info"])
        local = offset - self._offset
        if not _KNOWN[info]:
            self.stats.reserved += 1
            reason = f"INFO 0x{info:02x}: reserved line format {info & 15}"
            return BadLine(offset, "reserved", reason, buf[local : local + 1])
        self.stats.malformed += 1
        name = _FORMATS[info & FORMAT_MASK]
        size = int(LENGTH_BY_INFO[info])
        if info & RESERVED_BIT:
            why = f"{name} line with INFO[7] set (INFO 0x{info:02x})"
        elif int(row["cof_word"]) == 0:
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
