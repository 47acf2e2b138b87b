"""QS framing: HDLC-like frames, escapes, checksums and sequence numbers.

Rules (CLARIFICATIONS.md, QS section, which follows QSPY 7.4): one 0x7E flag ends each
frame; 0x7D escapes whatever byte follows it (XOR 0x20), even 0x7E; the unstuffed bytes
(sequence number, record id, data, checksum) sum to 0xFF modulo 256. The first good
frame starts the stream: whatever came before it is skipped silently.

The framer works on whole chunks with numpy (escape parity, flag positions, checksums
by cumulative sums) and touches Python objects only once per good frame. Bytes after
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
# QSPY's record buffer; longer frames are dropped as "too long".
MAX_FRAME = 512
# A frame of MAX_FRAME unstuffed bytes takes at most twice that on the wire.
_MAX_STUFFED = 2 * MAX_FRAME + 2


class Frame(NamedTuple):
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
    """A dropped frame: ``kind`` is "checksum", "too_short" or "too_long". ``seq`` is
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


FramerEvent = Frame | BadFrame | Discontinuity


class FrameStats:
    __slots__ = (
        "bad_checksum",
        "bytes",
        "discontinuities",
        "frames",
        "skipped_bytes",
        "too_long",
        "too_short",
    )

    def __init__(self) -> None:
        self.bytes = 0
        self.frames = 0
        self.bad_checksum = 0
        self.too_short = 0
        self.too_long = 0
        self.discontinuities = 0
        self.skipped_bytes = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in sorted(self.__slots__)}


_new_frame = tuple.__new__


def _unstuff(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (unstuffed bytes, positions in them where each real flag stood)."""
    is_esc = arr == ESC
    n = len(arr)
    idx = np.arange(n)
    # In a run of 0x7D bytes every other one is an escape, starting with the first:
    # the run starts after a byte that is not 0x7D, so nothing escapes its first byte.
    run_start = is_esc.copy()
    run_start[1:] &= ~is_esc[:-1]
    first = np.maximum.accumulate(np.where(run_start, idx, 0))
    escape = is_esc & ((idx - first) % 2 == 0)
    escaped = np.zeros(n, dtype=bool)
    escaped[1:] = escape[:-1]
    flag = (arr == FLAG) & ~escaped
    keep = ~(escape | flag)
    values = arr ^ (escaped.astype(np.uint8) * ESC_XOR)
    kept_before = np.cumsum(keep)
    return values[keep], kept_before[flag]


class Framer:
    """Sans-IO framer: ``feed`` bytes, get Frame / BadFrame / Discontinuity back."""

    def __init__(self) -> None:
        self._tail = b""
        self._overlong = False
        self.started = False
        self.last_seq = 0
        self.index = 0
        self.stats = FrameStats()

    def feed(self, data: bytes | bytearray | memoryview) -> list[FramerEvent]:
        data = bytes(data)
        self.stats.bytes += len(data)
        buf = self._tail + data if self._tail else data
        last = buf.rfind(b"\x7e")
        while last >= 0 and _escaped_at_end(buf, last):
            last = buf.rfind(b"\x7e", 0, last)
        if last < 0:
            self._hold(buf)
            return []
        whole, tail = buf[: last + 1], buf[last + 1 :]
        arr = np.frombuffer(whole, dtype=np.uint8)
        if whole.find(b"\x7d") < 0:
            unstuffed = whole
            u = arr
            ends = np.flatnonzero(arr == FLAG)
            starts = np.empty_like(ends)
            starts[0] = 0
            starts[1:] = ends[:-1] + 1
        else:
            u, ends = _unstuff(arr)
            unstuffed = u.tobytes()
            starts = np.empty_like(ends)
            starts[0] = 0
            starts[1:] = ends[:-1]
        out = self._frames(unstuffed, u, starts, ends)
        self._hold(tail)
        return out

    def _hold(self, buf: bytes) -> None:
        """Keep an unfinished frame; past the longest legal frame, keep only the run
        of escapes at its end (their parity still matters) and remember to drop it."""
        if len(buf) > _MAX_STUFFED:
            self._overlong = True
            stripped = buf.rstrip(b"\x7d")
            buf = buf[len(stripped) :]
        self._tail = buf

    def _frames(
        self, unstuffed: bytes, u: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> list[FramerEvent]:
        sums = np.zeros(len(u) + 1, dtype=np.int64)
        np.cumsum(u, out=sums[1:])
        lengths = ends - starts
        good_sum = ((sums[ends] - sums[starts]) & 0xFF) == GOOD_CHECKSUM
        ok = good_sum & (lengths >= 3) & (lengths <= MAX_FRAME)
        if self._overlong:
            ok[0] = False
        out: list[FramerEvent] = []
        stats = self.stats
        if not self.started:
            first = np.flatnonzero(ok)
            if len(first) == 0:
                stats.skipped_bytes += len(unstuffed)
                self._overlong = False
                return out
            skip = int(first[0])
            stats.skipped_bytes += int(starts[skip])
            starts, ends, lengths, good_sum, ok = (
                starts[skip:],
                ends[skip:],
                lengths[skip:],
                good_sum[skip:],
                ok[skip:],
            )
            self._overlong = False
        if ok.all():
            self._good_run(unstuffed, u, starts, ends, out)
            self._overlong = False
            return out
        # Mixed chunk: runs of good frames between the bad ones.
        bad = np.flatnonzero(~ok)
        prev = 0
        for b in bad.tolist():
            if b > prev:
                self._good_run(unstuffed, u, starts[prev:b], ends[prev:b], out)
            raw = unstuffed[int(starts[b]) : int(ends[b])]
            if self._overlong or lengths[b] > MAX_FRAME:
                kind, raw = "too_long", b""
                stats.too_long += 1
            elif not good_sum[b]:
                kind = "checksum"
                stats.bad_checksum += 1
            else:
                kind = "too_short"
                stats.too_short += 1
            self._overlong = False
            out.append(BadFrame(kind, self.last_seq, raw))
            prev = b + 1
        if prev < len(ok):
            self._good_run(unstuffed, u, starts[prev:], ends[prev:], out)
        return out

    def _good_run(
        self,
        unstuffed: bytes,
        u: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        out: list[FramerEvent],
    ) -> None:
        n = len(starts)
        seqs = u[starts].astype(np.int64)
        recs = u[starts + 1]
        # Expected sequence number of each frame: the previous one plus one.
        prev = np.empty(n, dtype=np.int64)
        prev[0] = self.last_seq
        prev[1:] = seqs[:-1]
        gaps = ((prev + 1) & 0xFF) != seqs
        gaps &= recs != EMPTY_RECORD
        if not self.started:
            gaps[0] = False
            self.started = True
        base = self.index
        seq_list = seqs.tolist()
        rec_list = recs.tolist()
        raws = [unstuffed[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
        if gaps.any():
            prev_list = prev.tolist()
            gap_list = gaps.tolist()
            for i in range(n):
                if gap_list[i]:
                    out.append(Discontinuity(base + i, prev_list[i], seq_list[i]))
                    self.stats.discontinuities += 1
                out.append(_new_frame(Frame, (base + i, seq_list[i], rec_list[i], raws[i])))
        else:
            out.extend(
                map(
                    _new_frame,
                    [Frame] * n,
                    zip(range(base, base + n), seq_list, rec_list, raws, strict=True),
                )
            )
        self.index = base + n
        self.last_seq = seq_list[-1]
        self.stats.frames += n


def _escaped_at_end(buf: bytes, pos: int) -> bool:
    """Is the 0x7E at ``pos`` escaped, i.e. preceded by an odd run of 0x7D bytes?"""
    run = pos - len(buf[:pos].rstrip(b"\x7d"))
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
            self.chksum = (self.chksum + b) & 0xFF
            if len(self.record) < _MAX_STUFFED:
                self.record.append(b)
            else:
                self.overlong = True
        return out

    def _end(self, out: list[FramerEvent]) -> None:
        rec = bytes(self.record)
        n = len(rec)
        good = self.chksum == GOOD_CHECKSUM and 3 <= n <= MAX_FRAME and not self.overlong
        if good:
            seq, rid = rec[0], rec[1]
            if self.started and rid != EMPTY_RECORD and seq != (self.last_seq + 1) & 0xFF:
                out.append(Discontinuity(self.index, self.last_seq, seq))
            self.started = True
            out.append(Frame(self.index, seq, rid, rec))
            self.index += 1
            self.last_seq = seq
        elif self.started:
            if self.overlong or n > MAX_FRAME:
                kind = "too_long"
            elif self.chksum != GOOD_CHECKSUM:
                kind = "checksum"
            else:
                kind = "too_short"
            out.append(BadFrame(kind, self.last_seq, b"" if kind == "too_long" else rec))
        self.record = bytearray()
        self.chksum = 0
        self.overlong = False
