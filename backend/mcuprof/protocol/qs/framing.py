"""QS framing: HDLC-like frames, escapes, checksums and sequence numbers.

Rules (CLARIFICATIONS.md, QS section, which follows QSPY 7.4): one 0x7E flag ends each
frame; 0x7D escapes whatever byte follows it (XOR 0x20), even 0x7E; the unstuffed bytes
(sequence number, record id, data, checksum) sum to 0xFF modulo 256. The first good
frame starts the stream: whatever came before it is skipped silently. A frame that
grows past MAX_FRAME is reported "too long" once, as soon as it does (a target that
never sends the flag is still reported), and is dropped without being kept.

The framer works on whole chunks with numpy (escape parity, flag positions, checksums
by segment sums) and gives the good frames as columns (FrameBatch); Python objects
per frame are made only when events are asked for. Bytes after
the last flag wait in ``_tail`` for the next chunk, so every split of a stream gives
the same frames.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

FLAG = 0x7E
ESC = 0x7D
ESC_XOR = 0x20
GOOD_CHECKSUM = 0xFF
EMPTY_RECORD = 0
# QSPY's record buffer; longer frames are dropped as "too long". The framer holds
# at most one unfinished frame of this many unstuffed bytes (twice that on the wire).
MAX_FRAME = 512


class QSFrame(NamedTuple):
    """One good frame: ``raw`` is the whole unstuffed frame (sequence number, record
    id, data, checksum); ``index`` counts good frames from 0."""

    index: int
    seq: int
    rec: int
    raw: bytes

    @property
    def payload(self) -> bytes:
        return self.raw[2:-1]


class BadFrame(NamedTuple):
    """A dropped frame: ``kind`` is "checksum", "too_short", "too_long" or "truncated"
    (cut short by the end of the stream). ``seq`` is
    the sequence number of the last good frame (QSPY reports that one), ``raw`` the
    unstuffed bytes (none for a frame too long to keep)."""

    kind: str
    seq: int
    raw: bytes


class Discontinuity(NamedTuple):
    """Good frames ``prev_seq`` then ``seq`` were not consecutive: frames were lost."""

    index: int
    prev_seq: int
    seq: int


FramerEvent = QSFrame | BadFrame | Discontinuity


class FrameStats:
    __slots__ = (
        "bad_checksum",
        "bytes",
        "discontinuities",
        "frames",
        "skipped_bytes",
        "tail_bytes",
        "too_long",
        "too_short",
        "truncated",
    )

    def __init__(self) -> None:
        self.bytes = 0
        self.frames = 0
        self.bad_checksum = 0
        self.too_short = 0
        self.too_long = 0
        # A frame the end of the stream cut short (no closing flag), once started.
        self.truncated = 0
        self.discontinuities = 0
        self.skipped_bytes = 0
        # Bytes after the last flag when the stream closed: not a frame.
        self.tail_bytes = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in sorted(self.__slots__)}


_new_frame = tuple.__new__


def _unstuff(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (the bytes with escapes undone and the real flags kept, the positions of
    those flags in them, the flags' positions in ``arr``).

    Escapes are rare, so the work is done on their positions only: in a run of
    consecutive 0x7D bytes every other one is an escape, starting with the first
    (the run starts after a byte that is not 0x7D, so nothing escapes its first byte).
    """
    n = len(arr)
    esc = np.flatnonzero(arr == ESC)
    k = np.arange(len(esc))
    run_start = np.ones(len(esc), dtype=bool)
    run_start[1:] = esc[1:] != esc[:-1] + 1
    first = np.maximum.accumulate(np.where(run_start, k, 0))
    escape = esc[(k - first) % 2 == 0]
    escaped = escape + 1
    escaped = escaped[escaped < n]
    is_flag = arr == FLAG
    is_flag[escaped] = False  # a flag right after an escape is data
    flags = np.flatnonzero(is_flag)
    keep = np.ones(n, dtype=bool)
    keep[escape] = False
    u = arr[keep]
    u[escaped - np.arange(1, len(escaped) + 1)] ^= ESC_XOR
    # Escapes before each flag: each escape counts from the first flag after it.
    before = np.bincount(np.searchsorted(flags, escape), minlength=len(flags) + 1)
    ends = flags - np.cumsum(before)[: len(flags)]
    return u, ends, flags


class FrameBatch:
    """The good frames of one chunk as numpy columns, plus the rare problems.

    ``u`` is the unstuffed chunk; good frame ``i`` is ``u[starts[i]:ends[i]]`` with
    sequence number ``seqs[i]`` and record id ``recs[i]``; its stream index is
    ``first_index + i``. ``problems`` lists (i, BadFrame | Discontinuity): each comes
    just before good frame ``i`` (``i == len(self)`` means after the last one).
    ``wire_ends[i]`` is where good frame ``i`` ends in the stream as fed (one past its
    flag), so a reader can cut the wire bytes at frames (the QS replay does).
    """

    __slots__ = (
        "buf", "ends", "first_index", "problems", "recs", "seqs", "starts", "u", "wire_ends",
    )  # fmt: skip

    def __init__(
        self, buf, u, starts, ends, seqs, recs, first_index, problems, wire_ends=None
    ) -> None:
        self.buf: bytes = buf
        self.u: np.ndarray = u
        self.starts: np.ndarray = starts
        self.ends: np.ndarray = ends
        self.seqs: np.ndarray = seqs
        self.recs: np.ndarray = recs
        self.first_index: int = first_index
        self.problems: list[tuple[int, BadFrame | Discontinuity]] = problems
        self.wire_ends: np.ndarray = starts[:0] if wire_ends is None else wire_ends

    def __len__(self) -> int:
        return len(self.starts)

    def frames(self) -> list[QSFrame]:
        buf = self.buf
        n = len(self.starts)
        raws = [buf[s:e] for s, e in zip(self.starts.tolist(), self.ends.tolist(), strict=True)]
        base = self.first_index
        return list(
            map(
                _new_frame,
                [QSFrame] * n,
                zip(
                    range(base, base + n), self.seqs.tolist(), self.recs.tolist(), raws, strict=True
                ),
            )
        )

    def events(self) -> list[FramerEvent]:
        frames = self.frames()
        if not self.problems:
            return frames  # type: ignore[return-value]
        out: list[FramerEvent] = []
        prev = 0
        for i, problem in self.problems:
            out.extend(frames[prev:i])
            out.append(problem)
            prev = i
        out.extend(frames[prev:])
        return out


_NO_INT = np.empty(0, dtype=np.int64)


class Framer:
    """Sans-IO framer: ``feed`` bytes, get QSFrame / BadFrame / Discontinuity back;
    ``feed_batch`` gives the same as numpy columns (a FrameBatch)."""

    def __init__(self) -> None:
        self._tail = b""
        self._pending = 0  # wire bytes since the last flag (the tail may be cut short)
        self._overlong = False
        self.started = False
        self.last_seq = 0
        self.index = 0
        self.stats = FrameStats()

    def feed(self, data: bytes | bytearray | memoryview) -> list[FramerEvent]:
        return self.feed_batch(data).events()

    def close(self) -> list[FramerEvent]:
        """End of stream (disconnect, Stop, end of file): a tail with no closing flag is
        not a frame, but once the stream has started it is a frame cut short, and is
        judged: "truncated" (unless it was already reported "too long"). Feeding may go
        on after it, as after a flag."""
        self.stats.tail_bytes = self._pending
        out: list[FramerEvent] = []
        if self._pending and self.started and not self._overlong:
            self.stats.truncated += 1
            out.append(BadFrame("truncated", self.last_seq, _unstuff_tail(self._tail)))
        self._tail = b""
        self._pending = 0
        self._overlong = False
        return out

    def feed_batch(self, data: bytes | bytearray | memoryview) -> FrameBatch:
        data = bytes(data)
        self.stats.bytes += len(data)
        buf = self._tail + data if self._tail else data
        last = _last_flag(buf)
        if last < 0:
            self._pending += len(data)
            return self._empty(self._hold(buf))
        tail = buf[last + 1 :]
        self._pending = len(tail)
        arr = np.frombuffer(buf, dtype=np.uint8, count=last + 1)
        if buf.find(b"\x7d", 0, last + 1) < 0:
            unstuffed = buf  # frames index it as they index arr: no copy
            u = arr
            ends = wire_ends = np.flatnonzero(arr == FLAG)
        else:
            u, ends, wire_ends = _unstuff(arr)
            unstuffed = u.tobytes()
        # With the flags kept, each frame starts right after the previous flag.
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        batch = self._frames(unstuffed, u, starts, ends, wire_ends)
        if len(batch):  # from the chunk's flags to the stream's bytes (tail included)
            batch.wire_ends = batch.wire_ends + (self.stats.bytes - len(buf) + 1)
        problem = self._hold(tail)
        if problem is not None:
            batch.problems.append((len(batch), problem))
        return batch

    def _empty(self, problem: BadFrame | None = None) -> FrameBatch:
        problems: list[tuple[int, BadFrame | Discontinuity]] = []
        if problem is not None:
            problems.append((0, problem))
        return FrameBatch(b"", _NO_INT, _NO_INT, _NO_INT, _NO_INT, _NO_INT, self.index, problems)

    def _hold(self, buf: bytes) -> BadFrame | None:
        """Keep an unfinished frame. Once it is past MAX_FRAME it can only be dropped:
        it is reported now, once, and only the parity of the escapes at its end is
        kept (it decides whether the next byte is data), so a flood without a flag
        costs neither memory nor time per byte held."""
        problem = None
        if not self._overlong and len(buf) > MAX_FRAME and _unstuffed_length(buf) > MAX_FRAME:
            self._overlong = True
            if self.started:
                self.stats.too_long += 1
                problem = BadFrame("too_long", self.last_seq, b"")
        if self._overlong:
            run = len(buf) - len(buf.rstrip(b"\x7d"))
            keep = b"\x7d" if run % 2 else b""
            if not self.started:
                self.stats.skipped_bytes += len(buf) - len(keep)
            buf = keep
        self._tail = buf
        return problem

    def _frames(
        self,
        unstuffed: bytes,
        u: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        wire_ends: np.ndarray,
    ) -> FrameBatch:
        stats = self.stats
        lengths = ends - starts
        good_sum = _checksums(u, starts, ends, lengths) == GOOD_CHECKSUM
        ok = good_sum & (lengths >= 3) & (lengths <= MAX_FRAME)
        overlong = self._overlong
        self._overlong = False
        if overlong:
            ok[0] = False
        good = np.flatnonzero(ok)
        if not self.started:
            # Skipped bytes are counted on the wire, escapes and flags included.
            if len(good) == 0:
                stats.skipped_bytes += int(wire_ends[-1]) + 1
                return self._empty()
            skip = int(good[0])
            stats.skipped_bytes += int(wire_ends[skip - 1]) + 1 if skip else 0
            ok[:skip] = True  # before the stream starts nothing counts as bad
            overlong = overlong and skip == 0
        g_starts, g_ends = starts[good], ends[good]
        seqs = u[g_starts].astype(np.int64)
        recs = u[g_starts + 1].astype(np.int64)
        problems: list[tuple[int, BadFrame | Discontinuity]] = []
        n = len(good)
        if n:
            # A gap is a good frame whose number is not the previous good one's plus 1.
            prev = np.empty(n, dtype=np.int64)
            prev[0] = self.last_seq
            prev[1:] = seqs[:-1]
            gaps = (((prev + 1) & 0xFF) != seqs) & (recs != EMPTY_RECORD)
            if not self.started:
                gaps[0] = False
                self.started = True
            for i in np.flatnonzero(gaps).tolist():
                problems.append((i, Discontinuity(self.index + i, int(prev[i]), int(seqs[i]))))
            stats.discontinuities += int(gaps.sum())
        bad = np.flatnonzero(~ok)
        if len(bad):
            positions = np.searchsorted(good, bad)
            for b, pos in zip(bad.tolist(), positions.tolist(), strict=True):
                after = int(seqs[pos - 1]) if pos else self.last_seq
                raw = unstuffed[int(starts[b]) : int(ends[b])]
                if overlong and b == 0:
                    continue  # reported when it grew too long
                if lengths[b] > MAX_FRAME:
                    kind, raw = "too_long", b""
                    stats.too_long += 1
                elif not good_sum[b]:
                    kind = "checksum"
                    stats.bad_checksum += 1
                else:
                    kind = "too_short"
                    stats.too_short += 1
                problems.append((pos, BadFrame(kind, after, raw)))
            # Stable: at one position, a bad frame came before the gap it caused.
            problems.sort(key=lambda item: (item[0], item[1].__class__ is Discontinuity))
        batch = FrameBatch(
            unstuffed, u, g_starts, g_ends, seqs, recs, self.index, problems, wire_ends[good]
        )
        if n:
            self.index += n
            self.last_seq = int(seqs[-1])
            stats.frames += n
        return batch


def _checksums(u: np.ndarray, starts: np.ndarray, ends: np.ndarray, lengths: np.ndarray):
    """Each frame's byte sum modulo 256 (uint8 arithmetic wraps, which is the modulo).
    ``u`` holds the flags: each segment from one start to the next includes exactly
    one flag, taken off again."""
    n = len(u)
    if int(starts[-1]) >= n:  # empty frames at the very end: give them a byte to sum
        u = np.concatenate((u, np.zeros(1, dtype=np.uint8)))
    sums = np.add.reduceat(u, starts, dtype=np.uint8)
    if n > int(ends[-1]):  # the flags are still in u
        sums -= np.uint8(FLAG)
    sums[lengths == 0] = 0
    return sums


def _last_flag(buf: bytes) -> int:
    """Position of the last 0x7E in ``buf`` that is a flag, not escaped data; -1 if none.
    ``buf`` starts outside any escape."""
    last = buf.rfind(b"\x7e")
    if last < 0 or not _escaped_at_end(buf, last):
        return last
    # That one is data. Looking back one 0x7E at a time would be quadratic on a flood
    # of 7D 7E pairs: find all the real flags at once instead.
    flags = _unstuff(np.frombuffer(buf, dtype=np.uint8, count=last))[2]
    return int(flags[-1]) if len(flags) else -1


def _unstuff_tail(buf: bytes) -> bytes:
    """The unstuffed bytes of an unfinished frame (an escape at its end awaits its byte)."""
    out = bytearray()
    esc = False
    for b in buf:
        if esc:
            out.append(b ^ ESC_XOR)
            esc = False
        elif b == ESC:
            esc = True
        else:
            out.append(b)
    return bytes(out)


def _unstuffed_length(buf: bytes) -> int:
    """How many bytes ``buf`` (no flags, starting outside any escape) unstuffs to: a run
    of r escape bytes holds ceil(r / 2) escapes; an escape at the end awaits its byte."""
    if b"\x7d" not in buf:
        return len(buf)
    is_esc = np.zeros(len(buf) + 2, dtype=bool)
    is_esc[1:-1] = np.frombuffer(buf, dtype=np.uint8) == ESC
    edges = np.flatnonzero(is_esc[1:] != is_esc[:-1])
    runs = edges[1::2] - edges[0::2]
    return len(buf) - int(((runs + 1) // 2).sum())


def _escaped_at_end(buf: bytes, pos: int) -> bool:
    """Is the 0x7E at ``pos`` escaped, i.e. preceded by an odd run of 0x7D bytes?
    Looks at a short window first: copying the whole chunk costs more than the test."""
    window = buf[max(0, pos - 64) : pos]
    kept = len(window.rstrip(b"\x7d"))
    if kept == 0 and pos > 64:
        kept = len(buf[:pos].rstrip(b"\x7d")) - (pos - 64)
    run = len(window) - kept
    return run % 2 == 1


class ByteFramer:
    """The same framing one byte at a time, the way QSPY's C parser does it. It is the
    baseline in bench/qs.py and the oracle in the property tests."""

    def __init__(self) -> None:
        self.record = bytearray()
        self.chksum = 0
        self.esc = False
        self.started = False
        self.last_seq = 0
        self.index = 0
        self.overlong = False

    def feed(self, data: bytes) -> list[FramerEvent]:
        out: list[FramerEvent] = []
        for b in data:
            if self.esc:
                self.esc = False
                b ^= ESC_XOR
            elif b == ESC:
                self.esc = True
                continue
            elif b == FLAG:
                self._end(out)
                continue
            if self.overlong:
                continue
            self.chksum = (self.chksum + b) & 0xFF
            self.record.append(b)
            if len(self.record) > MAX_FRAME:
                # Reported as soon as it cannot be a frame any more, and not kept.
                self.overlong = True
                self.record = bytearray()
                if self.started:
                    out.append(BadFrame("too_long", self.last_seq, b""))
        return out

    def close(self) -> list[FramerEvent]:
        out: list[FramerEvent] = []
        if (self.record or self.esc) and self.started and not self.overlong:
            out.append(BadFrame("truncated", self.last_seq, bytes(self.record)))
        self.record = bytearray()
        self.chksum = 0
        self.esc = False
        self.overlong = False
        return out

    def _end(self, out: list[FramerEvent]) -> None:
        rec = bytes(self.record)
        n = len(rec)
        good = self.chksum == GOOD_CHECKSUM and n >= 3 and not self.overlong
        if good:
            seq, rid = rec[0], rec[1]
            if self.started and rid != EMPTY_RECORD and seq != (self.last_seq + 1) & 0xFF:
                out.append(Discontinuity(self.index, self.last_seq, seq))
            self.started = True
            out.append(QSFrame(self.index, seq, rid, rec))
            self.index += 1
            self.last_seq = seq
        elif self.started and not self.overlong:
            kind = "checksum" if self.chksum != GOOD_CHECKSUM else "too_short"
            out.append(BadFrame(kind, self.last_seq, rec))
        self.record = bytearray()
        self.chksum = 0
        self.overlong = False


def encode_frame(seq: int, rec: int, payload: bytes = b"") -> bytes:
    """One frame as a target sends it: checksum, escapes, closing flag."""
    body = bytes((seq & 0xFF, rec)) + bytes(payload)
    body += bytes(((~sum(body)) & 0xFF,))
    return body.replace(b"\x7d", b"\x7d\x5d").replace(b"\x7e", b"\x7d\x5e") + b"\x7e"
