"""QS (QP/Spy): run-to-completion steps become the Profile's records.

Each RTC step (qs/rtc.py) is a three-level stack, active object; state; signal, all
three spanning the step, so the flame graph, timeline, tables, call trees, exports and
compare show QS captures as they show function profiles. Frame names come from the
target's dictionaries through a synthetic symbol table (QSSymbols).

Time: QS timestamps count a target clock the host cannot know (QS_onGetTime); one
tick is taken as 1 µs unless the user says otherwise (``tick_hz``, ``--qs-tick-hz``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import RECORD_DTYPE, Metadata
from ..protocol.qs import QSConfig, QSDecoder, Record, encode_frame
from ..protocol.qs.records import (
    ENUM_DICT,
    FUN_DICT,
    OBJ_DICT,
    SIG_DICT,
    TARGET_INFO,
    USR_DICT,
)
from ..qs.rtc import RtcStep, RtcTracker
from ..symbols.table import Function, SymbolTable
from .base import Batch

KIND = "qs"
DEFAULT_TICK_HZ = 1_000_000
LEVELS = ("object", "state", "signal")
_DICT_RECORDS = {SIG_DICT, OBJ_DICT, FUN_DICT, USR_DICT, ENUM_DICT}
_SPAN = 16  # synthetic bytes per symbol
_WRAP = 1 << 32


class QSSymbols(SymbolTable):
    """Names of QS frames as synthetic functions: symbol i spans addresses
    [16(i+1), 16(i+2)). Append-only, so indices handed out stay valid while the
    Profile (another thread) resolves them; lookup is arithmetic, no sorted arrays."""

    def __init__(self) -> None:
        super().__init__((), is_arm=False, build_id_note="QS target: names from its dictionaries")
        self.source = "QS dictionaries"
        self._ids: dict[tuple[int, str], int] = {}

    def address(self, level: int, name: str) -> int:
        key = (level, name)
        i = self._ids.get(key)
        if i is None:
            i = len(self.functions)
            start = _SPAN * (i + 1)
            self.functions.append(Function(name, name, start, start + _SPAN, LEVELS[level]))
            self._ids[key] = i
        return _SPAN * (i + 1)

    def lookup(self, addrs: Any) -> np.ndarray:
        a = np.asarray(addrs).astype(np.int64)
        idx = a // _SPAN - 1
        idx[(idx < 0) | (idx >= len(self.functions))] = -1
        return idx

    def function_at(self, addr: int) -> Function | None:
        i = addr // _SPAN - 1
        return self.functions[i] if 0 <= i < len(self.functions) else None


class QSSource:
    kind = KIND

    def __init__(
        self,
        tick_hz: int = DEFAULT_TICK_HZ,
        config: QSConfig | None = None,
        dictionaries: Any = None,
    ) -> None:
        self.tick_hz = int(tick_hz) if tick_hz else DEFAULT_TICK_HZ
        self.decoder = QSDecoder(config, dictionaries)
        self.tracker = RtcTracker()
        self.symbols = QSSymbols()
        self.metadata: Metadata | None = None
        self.steps = 0
        self.last_seq: int | None = None
        self._end: int | None = None  # unwrapped end of the last step, in ticks
        self._end_raw = 0
        self._preamble: dict[bytes, Record] = {}  # target info and dictionary records

    # ------------------------------------------------------------ stream

    def feed(self, data: bytes | bytearray | memoryview) -> Batch:
        return self._batch(self.decoder.feed(data))

    def close(self) -> Batch:
        return self._batch(self.decoder.close())

    def _batch(self, events: list[Any]) -> Batch:
        steps: list[RtcStep] = []
        cut = 0
        for i, e in enumerate(events):
            if e.__class__ is not Record:
                continue
            self.last_seq = e.seq
            rec = e.rec
            if rec in _DICT_RECORDS:
                self._preamble[e.raw[1:-1]] = e
            elif rec == TARGET_INFO:
                self._target_info(e)
                if e.values[0]:
                    # A target reset: its clock restarts, and a step open across it
                    # never ends. Steps closed before it keep their times.
                    steps += self.tracker.feed(events[cut:i])
                    cut = i
                    self.tracker.unfinished += len(self.tracker.pending)
                    self.tracker.pending.clear()
                    self._end_raw = 0
        steps += self.tracker.feed(events[cut:])
        return Batch(self._records(steps), events)

    def _target_info(self, e: Record) -> None:
        if e.values[0]:
            self._preamble.clear()
        self._preamble[b"info"] = e
        version = e.values[2].version
        fw = f"QP {version // 100}.{version // 10 % 10}.{version % 10}"
        self.metadata = Metadata(0, self.tick_hz, 0, fw)

    def _records(self, steps: list[RtcStep]) -> np.ndarray:
        out = np.empty(3 * len(steps), RECORD_DTYPE)
        if not steps:
            return out
        address = self.symbols.address
        end, end_raw = self._end, self._end_raw
        for k, s in enumerate(steps):
            wrap = _WRAP if s.duration < _WRAP else 1 << 64
            raw = s.start + s.duration
            if end is None:
                end = raw
            else:
                end += (raw - end_raw) % wrap
            end_raw = raw % wrap
            entry = (end - s.duration) % _WRAP
            dur = min(s.duration, _WRAP - 1)
            for level, name in enumerate((s.obj, s.state, s.signal)):
                out[3 * k + level] = (address(level, name), entry, dur, level)
        self._end, self._end_raw = end, end_raw
        self.steps += len(steps)
        return out

    # ------------------------------------------------------------ for stored captures

    def preamble(self) -> bytes:
        """Target info and dictionaries seen so far, as frames numbered up to the last
        sequence number seen: a capture that starts with them decodes and names its
        records on its own, and its sequence numbers run on without a gap."""
        records = list(self._preamble.values())
        info = self._preamble.get(b"info")
        if info is not None:
            records.remove(info)
            records.insert(0, info)
        last = self.last_seq if self.last_seq is not None else len(records)
        first = last - len(records) + 1
        return b"".join(encode_frame(first + i, r.rec, r.raw[2:-1]) for i, r in enumerate(records))

    def stats(self) -> dict[str, Any]:
        fs = self.decoder.frame_stats
        qs = self.decoder.stats
        bad = fs.bad_checksum + fs.too_short + fs.too_long
        return {
            "bytes": fs.bytes,
            "records": 3 * self.steps,
            "rtc_steps": self.steps,
            "unfinished_steps": self.tracker.unfinished + len(self.tracker.pending),
            "frames": fs.frames,
            "bad_frames": bad,
            "discontinuities": fs.discontinuities,
            "crc_errors": fs.bad_checksum,
            "malformed": fs.too_short + fs.too_long + qs.malformed,
            "skipped_bytes": fs.skipped_bytes,
            "unsupported_version": 0,
            "qs_records": qs.records,
            "unknown_records": qs.unknown_records,
            "target_resets": qs.target_resets,
            "packets": {"frames": fs.frames},
        }

    @staticmethod
    def looks_like(data: bytes) -> int:
        decoder = QSDecoder()
        decoder.feed(data)
        return int(decoder.frame_stats.frames)
