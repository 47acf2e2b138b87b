"""QS (QP/Spy): run-to-completion steps become the Profile's records.

Each RTC step (qs/rtc.py) is a three-level stack, active object; state; signal, all
three spanning the step, so the flame graph, timeline, tables, call trees, exports and
compare show QS captures as they show function profiles. The calls name their frames by
key (level, name: QSFrames), with the target's dictionaries' names, and carry their
times on the capture's own 64-bit clock (profile/keyed.py): no addresses, no ELF.

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
from ..profile.keyed import MAX_CALL_TICKS, FrameInfo, KeyedCalls
from ..protocol import Metadata
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
from ..qs.rtc import STEP_RECORDS, RtcStep, RtcTracker, StepColumns, StepNames
from .base import Batch

log = logging.getLogger("mcuprof.qs")

KIND = "qs"
DEFAULT_TICK_HZ = 1_000_000
LEVELS = ("object", "state", "signal")
# Distinct names per level (objects, states, signals) that get a frame of their own;
# later new names share one "other" frame per level (OTHER), counted as
# ``names_lumped`` steps. QSPY holds at most 8,192 of each in its dictionaries.
MAX_NAMES_PER_LEVEL = 8192
OTHER = ("(other objects)", "(other states)", "(other signals)")
# Step names (object, state, signal) whose frames QSFrames remembers: past it the memo
# starts over (the frames stay; only the lookup is made again).
TRIPLE_MEMO = 4096
# The capture's clock starts where its first step starts on the target's clock, modulo
# 2**32 (MiniProfiler's records start so too): a clock of up to 32 bits keeps its times
# as they were, and a wide one counting from an epoch (8-byte ns since 1970, ~2**61)
# keeps the model's microseconds (float64) exact. Gaps after it are the clock's own.
ORIGIN_MASK = np.uint64((1 << 32) - 1)
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


class QSFrames:
    """The frames of QS steps, keyed (level, name); past MAX_NAMES_PER_LEVEL names a
    level gives its new names one "other" frame. Each frame is numbered by its place
    in ``seen``."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, str], FrameInfo] = {}  # at most the bound per level
        self._per_level = [0] * len(LEVELS)
        self._others: set[int] = set()  # levels whose "other" frame exists
        self.seen: list[FrameInfo] = []  # every frame handed out, in order of first use
        self._number: dict[Any, int] = {}  # frame key -> its place in ``seen``
        # (object, state, signal) -> its three frames' numbers and whether one is lumped
        self._triples: dict[tuple[str, str, str], tuple[tuple[int, int, int], bool]] = {}

    def frame(self, level: int, name: str) -> tuple[FrameInfo, bool]:
        """The frame of ``name`` at ``level``, and whether it was lumped into "other"."""
        info = self._known.get((level, name))
        if info is not None:
            return info, False
        if self._per_level[level] < MAX_NAMES_PER_LEVEL:
            self._per_level[level] += 1
            info = self._known[level, name] = FrameInfo((level, name), name, LEVELS[level])
            self._seen(info)
            return info, False
        other = FrameInfo((level, OTHER[level]), OTHER[level], LEVELS[level])
        if level not in self._others:
            # A target with ever new pointers: one frame, not a frame each.
            log.warning(
                "QS: more than %d %s names; later ones are counted as %r",
                MAX_NAMES_PER_LEVEL,
                LEVELS[level],
                OTHER[level],
            )
            self._others.add(level)
            self._seen(other)
        return other, True

    def _seen(self, info: FrameInfo) -> None:
        self._number[info.key] = len(self.seen)
        self.seen.append(info)

    def triple(self, names: tuple[str, str, str]) -> tuple[tuple[int, int, int], bool]:
        """The numbers of the frames of a step named ``names`` (object, state, signal),
        and whether one of them is lumped into "other"."""
        got = self._triples.get(names)
        if got is None:
            if len(self._triples) >= TRIPLE_MEMO:
                self._triples.clear()  # a target with ever new triples: start over
            infos = [self.frame(level, name) for level, name in enumerate(names)]
            numbers = tuple(self._number[info.key] for info, _ in infos)
            got = self._triples[names] = (numbers, any(other for _, other in infos))  # type: ignore[assignment]
        return got


class QSSource:
    """QS bytes in, the Profile's keyed calls out (``Batch.records``: profile/keyed.py).

    ``events=True`` (a live link) decodes every record into an event, as the QS
    monitors need them; ``events=False`` (whole captures: import, export, compare,
    stored sessions) decodes only what makes steps, as columns (``QSDecoder.feed_select``,
    ``RtcTracker.feed_selected``) at framing speed. Either way the steps go through
    one record path, ``_calls``, so the two give the same calls, metadata and stats."""

    kind = KIND
    own_names = True  # keyed calls, named from the target's dictionaries

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
        self.frames = QSFrames()
        self.metadata: Metadata | None = None
        self.steps = 0
        self.names_lumped = 0  # steps named with an "other" frame (MAX_NAMES_PER_LEVEL)
        self.last_seq: int | None = None
        self._end: int | None = None  # end of the last step on the capture's clock, in ticks
        # Raw end of the last step; None after a target reset: the next step starts a
        # new segment, placed right after the last one (its clock restarted, and the
        # time between the two runs is not the capture's).
        self._end_raw: int | None = 0
        self.breaks: list[int] = []  # ticks where a segment ends, the next begins
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
        steps: list[RtcStep] = []
        segment: list[int] = []
        cut = resets = 0
        for i, e in enumerate(events):
            if e.__class__ is not Record:
                continue
            self.last_seq = e.seq
            if self._control(e):
                # A target reset: its clock restarts, and a step open across it
                # never ends. Steps closed before it keep their times.
                closed = self.tracker.feed(events[cut:i])
                steps += closed
                segment += [resets] * len(closed)
                cut = i
                resets += 1
                self.tracker.unfinished += len(self.tracker.pending)
                self.tracker.pending.clear()
        closed = self.tracker.feed(events[cut:])
        steps += closed
        segment += [resets] * len(closed)
        if not steps:  # most reads of a live link: no columns to make
            return Batch(self._no_calls(resets), events)
        return Batch(self._calls(StepColumns.of(steps, segment), resets), events)

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
            return Batch(KeyedCalls.concat([p.records for p in parts]), [])
        selected = self.decoder.feed_select(data, STEP_RECORDS)
        resets = []
        for e in selected.others:
            if e.__class__ is Record and self._control(e):
                resets.append(e.index)
        if selected.last_seq is not None:
            self.last_seq = selected.last_seq
        steps = self.tracker.feed_selected(selected, self.decoder.dicts, resets)
        return Batch(self._calls(steps, len(resets)), [])

    def _target_info(self, e: Record) -> None:
        if e.values[0]:
            self._preamble.clear()
            self._preamble_sizes = dict.fromkeys(PREAMBLE_CAPACITY, 0)
        self._preamble["info"] = e
        version = e.values[2].version
        fw = f"QP {version // 100}.{version // 10 % 10}.{version % 10}"
        self.metadata = Metadata(0, self.tick_hz, 0, fw)

    def _calls(self, steps: StepColumns, resets: int) -> KeyedCalls:
        """The steps as calls on the capture's clock (from ORIGIN_MASK's origin): each
        step's end follows the last one's by their difference on the target's clock
        (modulo its wrap), and the
        first step after a target reset (``resets`` in the chunk, each setting the
        clock back) starts a new segment right where the last one ended."""
        n = len(steps)
        if n == 0:
            return self._no_calls(resets)
        mask = steps.clock_mask
        dur = steps.duration
        raw = (steps.start + dur) & mask  # uint64: a 64-bit clock wraps by itself
        seg = steps.reset_segment
        prev = np.empty(n, np.uint64)
        prev[0] = self._end_raw or 0
        prev[1:] = raw[:-1]
        new_segment = np.empty(n, dtype=bool)
        new_segment[0] = seg[0] > 0 or self._end_raw is None
        new_segment[1:] = seg[1:] != seg[:-1]
        delta = (raw - prev) & mask
        delta[new_segment] = dur[new_segment]  # a new segment starts where the last ended
        base = self._end
        if base is None:
            base = 0
            delta[0] = (steps.start[0] & ORIGIN_MASK) + dur[0]
            new_segment[0] = False
        end = np.cumsum(delta.view(np.int64)) + base
        entry = end - dur.view(np.int64)
        self.breaks.extend(entry[new_segment].tolist())
        self._end = int(end[-1])
        self._end_raw = None if resets > int(seg[-1]) else int(raw[-1])
        frame, frames = self._frames_of(steps.names)
        calls = KeyedCalls(
            np.repeat(entry, 3),
            np.repeat(np.minimum(dur, MAX_CALL_TICKS).astype(np.uint32), 3),
            np.tile(np.arange(3, dtype=np.uint16), n),
            frame[steps.names.key].reshape(-1),
            frames,
        )
        self.steps += n
        return calls

    def _no_calls(self, resets: int) -> KeyedCalls:
        """``_calls`` of a chunk that closed no step."""
        if resets:
            self._end_raw = None  # the next step starts a new segment
        return KeyedCalls()

    def _frames_of(self, names: StepNames) -> tuple[np.ndarray, list[FrameInfo]]:
        """Per (object, state, signal) of ``names``, its three frames as indices into the
        frames returned, listed in order of first use (the model numbers new frames so);
        steps with a lumped name counted in ``names_lumped``."""
        uniq, first = np.unique(names.key, return_index=True)
        number = np.zeros((len(names.triples), 3), dtype=np.int64)
        lumped = np.zeros(len(names.triples), dtype=bool)
        for k in uniq[np.argsort(first)].tolist():  # new frames numbered in order of use
            number[k], lumped[k] = self.frames.triple(names.triples[k])
        if lumped.any():
            self.names_lumped += int(lumped[names.key].sum())
        # The frames the steps use, in order of first use in this batch.
        used, at, inverse = np.unique(
            number[names.key].reshape(-1), return_index=True, return_inverse=True
        )
        order = np.argsort(at, kind="stable")
        rank = np.empty(len(used), np.int32)
        rank[order] = np.arange(len(used), dtype=np.int32)
        frame = np.zeros((len(names.triples), 3), dtype=np.int32)
        frame[names.key] = rank[inverse].reshape(-1, 3)
        seen = self.frames.seen
        return frame, [seen[i] for i in used[order].tolist()]

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
