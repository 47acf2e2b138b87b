"""QS (QP/Spy): run-to-completion steps become the Profile's records.

Each RTC step (qs/rtc.py) is a three-level stack, active object; state; signal, all
three spanning the step, so the flame graph, timeline, tables, call trees, exports and
compare show QS captures as they show function profiles. Frame names come from the
target's dictionaries through a synthetic symbol table (QSSymbols).

Time: QS timestamps count a target clock the host cannot know (QS_onGetTime); one
tick is taken as 1 µs unless the user says otherwise (``tick_hz``, ``--qs-tick-hz``;
qs/tickrate.py estimates it live). A target reset starts a new segment: its steps
follow the last segment's end (``breaks``), the time between the two runs left out.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..capture import QS_CHUNK
from ..protocol import RECORD_DTYPE, Metadata
from ..protocol.qs import QSConfig, QSDecoder, Record, encode_frame
from ..protocol.qs.decoder import DICT_CAPACITY
from ..protocol.qs.records import (
    ENUM_DICT,
    FUN_DICT,
    OBJ_DICT,
    SIG_DICT,
    TARGET_INFO,
    USR_DICT,
)
from ..qs.rtc import STEP_RECORDS, RtcStep, RtcTracker, StepColumns
from ..symbols.table import Function, SymbolTable
from .base import Batch

log = logging.getLogger("mcuprof.qs")

KIND = "qs"
DEFAULT_TICK_HZ = 1_000_000
LEVELS = ("object", "state", "signal")
# Distinct names per level (objects, states, signals) that get a synthetic function;
# later new names share one "other" function per level (OTHER), counted as
# ``names_lumped`` steps. QSPY holds at most 8,192 of each in its dictionaries.
MAX_NAMES_PER_LEVEL = 8192
OTHER = ("(other objects)", "(other states)", "(other signals)")
_DICT_RECORDS = {SIG_DICT, OBJ_DICT, FUN_DICT, USR_DICT, ENUM_DICT}
# The preamble (dictionary records kept to make a stored capture stand alone) keeps one
# record per dictionary key, and at most the entries the decoder's dictionaries hold
# (DICT_CAPACITY): a target that sends ever new entries or renames cannot grow it.
PREAMBLE_CAPACITY = {
    OBJ_DICT: DICT_CAPACITY["obj"],
    FUN_DICT: DICT_CAPACITY["fun"],
    SIG_DICT: DICT_CAPACITY["sig"],
    USR_DICT: DICT_CAPACITY["usr"],
    ENUM_DICT: DICT_CAPACITY["enum"],
}
_SPAN = 16  # synthetic bytes per symbol
_WRAP = 1 << 32
_MASK = _WRAP - 1


class QSSymbols(SymbolTable):
    """Names of QS frames as synthetic functions: symbol i spans addresses
    [16(i+1), 16(i+2)). Append-only, so indices handed out stay valid while the
    Profile (another thread) resolves them; lookup is arithmetic, no sorted arrays."""

    def __init__(self) -> None:
        super().__init__((), is_arm=False, build_id_note="QS target: names from its dictionaries")
        self.source = "QS dictionaries"
        self._ids: dict[tuple[int, str], int] = {}
        self._per_level = [0] * len(LEVELS)
        self.others: list[int] = []  # addresses of the "other" functions made so far

    def address(self, level: int, name: str) -> int:
        key = (level, name)
        i = self._ids.get(key)
        if i is None:
            if self._per_level[level] >= MAX_NAMES_PER_LEVEL:
                # A target with ever new pointers: one bucket, not a function each.
                return self._other(level)
            self._per_level[level] += 1
            i = len(self.functions)
            start = _SPAN * (i + 1)
            self.functions.append(Function(name, name, start, start + _SPAN, LEVELS[level]))
            self._ids[key] = i
        return _SPAN * (i + 1)

    def _other(self, level: int) -> int:
        key = (level, OTHER[level])
        i = self._ids.get(key)
        if i is None:
            log.warning(
                "QS: more than %d %s names; later ones are counted as %r",
                MAX_NAMES_PER_LEVEL,
                LEVELS[level],
                OTHER[level],
            )
            i = self._ids[key] = len(self.functions)
            start = _SPAN * (i + 1)
            self.functions.append(
                Function(OTHER[level], OTHER[level], start, start + _SPAN, LEVELS[level])
            )
            self.others.append(start)
        return _SPAN * (i + 1)

    def lumped(self, func_addr: np.ndarray) -> int:
        """Steps (three records each) with a name in an "other" function."""
        if not self.others or len(func_addr) == 0:
            return 0
        return int(np.isin(func_addr.reshape(-1, 3), self.others).any(axis=1).sum())

    def lookup(self, addrs: Any) -> np.ndarray:
        a = np.asarray(addrs).astype(np.int64)
        idx = a // _SPAN - 1
        idx[(idx < 0) | (idx >= len(self.functions))] = -1
        return idx

    def function_at(self, addr: int) -> Function | None:
        i = addr // _SPAN - 1
        return self.functions[i] if 0 <= i < len(self.functions) else None


class QSSource:
    """``events=False`` is for whole captures (import, export, compare, stored
    sessions): ``feed`` then gives the records only, decoded as columns
    (``QSDecoder.feed_select``, ``RtcTracker.feed_selected``) at framing speed, with
    the same records, metadata and stats."""

    kind = KIND

    def __init__(
        self,
        tick_hz: int = DEFAULT_TICK_HZ,
        config: QSConfig | None = None,
        dictionaries: Any = None,
        *,
        events: bool = True,
    ) -> None:
        self.tick_hz = int(tick_hz) if tick_hz else DEFAULT_TICK_HZ
        self.events = events
        self.decoder = QSDecoder(config, dictionaries)
        self.tracker = RtcTracker()
        self.symbols = QSSymbols()
        self.metadata: Metadata | None = None
        self.steps = 0
        self.names_lumped = 0  # steps named with an "other" function (MAX_NAMES_PER_LEVEL)
        self.last_seq: int | None = None
        self._end: int | None = None  # unwrapped end of the last step, in ticks
        # Raw end of the last step; None after a target reset: the next step starts a
        # new segment, placed right after the last one (its clock restarted, and the
        # time between the two runs is not the capture's).
        self._end_raw: int | None = 0
        self.breaks: list[int] = []  # unwrapped ticks where a segment ends, the next begins
        # Target info (key "info") and one dictionary record per (record, key); a
        # renamed entry replaces its record in place.
        self._preamble: dict[Any, Record] = {}
        self._preamble_sizes = dict.fromkeys(PREAMBLE_CAPACITY, 0)
        self.preamble_dropped = 0  # dictionary records past PREAMBLE_CAPACITY, not kept

    # ------------------------------------------------------------ stream

    def feed(self, data: bytes | bytearray | memoryview) -> Batch:
        if not self.events:
            return self._columns(data)
        return self._batch(self.decoder.feed(data))

    def close(self) -> Batch:
        return self._batch(self.decoder.close())

    def _batch(self, events: list[Any]) -> Batch:
        parts: list[np.ndarray] = []
        cut = 0
        for i, e in enumerate(events):
            if e.__class__ is not Record:
                continue
            self.last_seq = e.seq
            if self._control(e):
                # A target reset: its clock restarts, and a step open across it
                # never ends. Steps closed before it keep their times.
                parts.append(self._records(self.tracker.feed(events[cut:i])))
                cut = i
                self.tracker.unfinished += len(self.tracker.pending)
                self.tracker.pending.clear()
                self._end_raw = None
        parts.append(self._records(self.tracker.feed(events[cut:])))
        return Batch(parts[0] if len(parts) == 1 else np.concatenate(parts), events)

    def _control(self, e: Record) -> bool:
        """Keep what a dictionary or target-info record changes for what follows; True
        when it is a target reset."""
        if e.rec in _DICT_RECORDS:
            self._keep_dictionary(e)
        elif e.rec == TARGET_INFO:
            self._target_info(e)
            return bool(e.values[0])
        return False

    def _keep_dictionary(self, e: Record) -> None:
        v = e.values
        key = (e.rec, v[0]) if e.rec in (OBJ_DICT, FUN_DICT, USR_DICT) else (e.rec, v[0], v[1])
        if key not in self._preamble:
            if self._preamble_sizes[e.rec] >= PREAMBLE_CAPACITY[e.rec]:
                if not self.preamble_dropped:
                    log.warning(
                        "QS: more than %d dictionary entries of record %d; later new "
                        "ones are not kept for stored captures (dictionary_overflow)",
                        PREAMBLE_CAPACITY[e.rec],
                        e.rec,
                    )
                self.preamble_dropped += 1
                return
            self._preamble_sizes[e.rec] += 1
        self._preamble[key] = e

    def _columns(self, data: bytes | bytearray | memoryview) -> Batch:
        """``_batch`` without the events: only the frames that change what follows
        (target info, dictionaries) become Python objects."""
        if len(data) > QS_CHUNK:
            # Smaller pieces keep the framer's temporaries (several bytes per byte) small.
            view = memoryview(data)
            parts = [self._columns(view[i : i + QS_CHUNK]) for i in range(0, len(data), QS_CHUNK)]
            return Batch(np.concatenate([p.records for p in parts]), [])
        selected = self.decoder.feed_select(data, STEP_RECORDS)
        resets = []
        for e in selected.others:
            if e.__class__ is Record and self._control(e):
                resets.append(e.index)
        if selected.last_seq is not None:
            self.last_seq = selected.last_seq
        steps = self.tracker.feed_selected(selected, self.decoder.dicts, resets)
        return Batch(self._records_columns(steps, len(resets)), [])

    def _target_info(self, e: Record) -> None:
        if e.values[0]:
            self._preamble.clear()
            self._preamble_sizes = dict.fromkeys(PREAMBLE_CAPACITY, 0)
        self._preamble["info"] = e
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
            elif end_raw is None:  # the first step after a target reset
                self.breaks.append(end)
                end += s.duration
            else:
                end += (raw - end_raw) % wrap
            end_raw = raw % wrap
            entry = (end - s.duration) % _WRAP
            dur = min(s.duration, _WRAP - 1)
            for level, name in enumerate((s.obj, s.state, s.signal)):
                out[3 * k + level] = (address(level, name), entry, dur, level)
        self._end, self._end_raw = end, end_raw
        self.steps += len(steps)
        self.names_lumped += self.symbols.lumped(out["func_addr"])
        return out

    def _records_columns(self, steps: StepColumns, resets: int) -> np.ndarray:
        """``_records`` over columns, target resets in the chunk included (each sets the
        last raw end back to 0). Timestamps of more than 32 bits take the Python way."""
        n = len(steps)
        if n and (int(steps.start.max()) > _MASK or int(steps.duration.max()) > _MASK):
            seg = steps.reset_segment.tolist()
            objects = steps.steps()
            parts = []
            for r in range(resets + 1):
                parts.append(
                    self._records([s for s, g in zip(objects, seg, strict=True) if g == r])
                )
                if r < resets:
                    self._end_raw = None
            return np.concatenate(parts)
        out = np.empty(3 * n, RECORD_DTYPE)
        if n == 0:
            if resets:
                self._end_raw = None
            return out
        dur = steps.duration.astype(np.int64)
        raw = steps.start.astype(np.int64) + dur
        seg = steps.reset_segment
        prev = np.empty(n, dtype=np.int64)
        prev[0] = self._end_raw or 0
        prev[1:] = raw[:-1] & _MASK
        new_segment = np.empty(n, dtype=bool)
        new_segment[0] = seg[0] > 0 or self._end_raw is None
        new_segment[1:] = seg[1:] != seg[:-1]
        delta = (raw - prev) & _MASK
        delta[new_segment] = dur[new_segment]  # a new segment starts where the last ended
        base = self._end
        if base is None:
            base = 0
            delta[0] = raw[0]
            new_segment[0] = False
        end = np.cumsum(delta)
        self.breaks.extend((base + end[new_segment] - dur[new_segment]).tolist())
        entry = (end - dur + (base & _MASK)) & _MASK
        self._end = base + int(end[-1])
        self._end_raw = None if resets > int(seg[-1]) else int(raw[-1]) & _MASK
        # Symbols in order of first appearance, as _records hands them out.
        key = steps.names.key
        uniq, first = np.unique(key, return_index=True)
        addr = np.zeros((len(steps.names.triples), 3), dtype=np.int64)
        address = self.symbols.address
        for k in uniq[np.argsort(first)].tolist():
            for level, name in enumerate(steps.names.triples[k]):
                addr[k, level] = address(level, name)
        out["func_addr"] = addr[key].reshape(-1)
        out["entry_time"] = np.repeat(entry, 3)
        out["duration"] = np.repeat(dur, 3)
        out["depth"] = np.tile(np.arange(3, dtype=np.uint16), n)
        self.steps += n
        self.names_lumped += self.symbols.lumped(out["func_addr"])
        return out

    def breaks_on(self, last_exit: int | None) -> list[int]:
        """``breaks`` on the clock of a profile whose last record's unwrapped exit is
        ``last_exit``: that profile unwrapped the same 32-bit times from its own first
        record, so the two clocks differ by whole wraps, found from the ends."""
        if last_exit is None or self._end is None or not self.breaks:
            return []
        shift = round((self._end - last_exit) / _WRAP) * _WRAP
        return [b - shift for b in self.breaks]

    # ------------------------------------------------------------ for stored captures

    def preamble(self) -> bytes:
        """Target info and dictionaries seen so far, as frames numbered up to the last
        sequence number seen: a capture that starts with them decodes and names its
        records on its own, and its sequence numbers run on without a gap."""
        records = list(self._preamble.values())
        info = self._preamble.get("info")
        if info is not None:
            records.remove(info)
            records.insert(0, info)
        last = self.last_seq if self.last_seq is not None else len(records)
        first = last - len(records) + 1
        return b"".join(encode_frame(first + i, r.rec, r.raw[2:-1]) for i, r in enumerate(records))

    def stats(self) -> dict[str, Any]:
        fs = self.decoder.frame_stats
        qs = self.decoder.stats
        bad = fs.bad_checksum + fs.too_short + fs.too_long + fs.truncated
        return {
            "bytes": fs.bytes,
            "records": 3 * self.steps,
            "rtc_steps": self.steps,
            "unfinished_steps": self.tracker.unfinished + len(self.tracker.pending),
            "frames": fs.frames,
            "bad_frames": bad,
            "discontinuities": fs.discontinuities,
            "crc_errors": fs.bad_checksum,
            "malformed": fs.too_short + fs.too_long + fs.truncated + qs.malformed,
            "skipped_bytes": fs.skipped_bytes,
            "unsupported_version": 0,
            "qs_records": qs.records,
            "unknown_records": qs.unknown_records,
            "target_resets": qs.target_resets,
            "names_lumped": self.names_lumped,
            "dictionary_overflow": qs.dictionary_overflow,
            "packets": {"frames": fs.frames},
        }

    @staticmethod
    def looks_like(data: bytes) -> int:
        from . import _looks_like_qs

        return _looks_like_qs(data)
