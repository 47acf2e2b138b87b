"""The sans-IO QS decoder: bytes in, typed records out, no I/O.

``feed`` takes any chunk of the stream and returns the events it completes. Target
info and dictionary records are applied as they pass, in stream order, so each record
is decoded with the sizes in force when it was sent and carries the dictionaries of
that moment. Nothing the target sends raises: bad frames, gaps, records that do not
fit their layout and unknown records become events and counts in ``stats``.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .config import QSConfig, parse_target_info
from .dictionaries import Dictionaries, clean_name
from .events import Malformed, QSEvent, Record
from .framing import BadFrame, Discontinuity, FrameBatch, Framer, QSFrame
from .records import (
    ENUM_DICT,
    FUN_DICT,
    OBJ_DICT,
    PEEK_DATA,
    QF_RUN,
    QUERY_DATA,
    SIG_DICT,
    TARGET_INFO,
    USER_FIRST,
    USR_DICT,
    Compiled,
    compile_layouts,
)
from .user import decode_user

_new = tuple.__new__
_ARGS = ("args",)
_USER_CACHE = 4096
# Entries per dictionary, as QSPY 7.4 holds them.
DICT_CAPACITY = {"obj": 2048, "fun": 8192, "sig": 8192, "usr": 128, "enum": 8 * 256}
_DICT_KIND = {OBJ_DICT: "obj", FUN_DICT: "fun"}
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}
# QS_QUERY_DATA object kinds (QSPY's SM, AO, MP, EQ, TE, AP).
QUERY_KINDS = ("SM", "AO", "MP", "EQ", "TE", "AP", "SM_AO", "EP")


@dataclass
class QSStats:
    """Counts of everything the decoder saw; framing counts are in ``frame_stats``."""

    records: int = 0
    malformed: int = 0
    unknown_records: int = 0
    target_resets: int = 0
    dictionary_entries: int = 0
    # Signal dictionary entries naming an object no object dictionary entry names.
    orphan_signal_entries: int = 0
    # New dictionary entries dropped because the dictionary was full.
    dictionary_overflow: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class QSDecoder:
    """Decode a QS stream. ``config`` holds the sizes used until target info arrives
    (QSPY's -T -O -F -S -E -Q -P -B -C); ``dictionaries`` (e.g. from a .dic file) are
    known from the start and again after every target reset, as QSPY's -d does."""

    def __init__(
        self, config: QSConfig | None = None, dictionaries: Dictionaries | None = None
    ) -> None:
        self.framer = Framer()
        self.preset = dictionaries
        self.dicts = Dictionaries.initial()
        if dictionaries is not None:
            self.dicts = self.dicts.merged(dictionaries)
        self.stats = QSStats()
        self._set_config(config or QSConfig())
        # The dictionaries when QS_QF_RUN arrived: QSPY saves its .dic file then.
        self.run_dicts: Dictionaries | None = None

    @property
    def frame_stats(self):
        return self.framer.stats

    def _set_config(self, config: QSConfig) -> None:
        self.config = config
        self._layouts = compile_layouts(config)
        code = _UINT.get(config.tstamp_size)
        self._ts = struct.Struct("<" + code) if code else None
        self._user_cache: dict[bytes, tuple] = {}

    def feed(self, data: bytes | bytearray | memoryview) -> list[QSEvent]:
        batch = self.framer.feed_batch(data)
        out: list[QSEvent] = []
        n = len(batch)
        if n == 0:
            out.extend(problem for _, problem in batch.problems)
            return out
        append = out.append
        layouts = self._layouts
        config, dicts = self.config, self.dicts
        buf = batch.buf
        problems = batch.problems
        next_problem = problems[0][0] if problems else n
        p = 0
        records = 0
        first = batch.first_index
        rows = zip(
            batch.seqs.tolist(), batch.recs.tolist(), batch.starts.tolist(), batch.ends.tolist(),
            strict=True,
        )  # fmt: skip
        for i, (seq, rid, start, end) in enumerate(rows):
            while i >= next_problem:
                append(problems[p][1])
                p += 1
                next_problem = problems[p][0] if p < len(problems) else n
            raw = buf[start:end]
            lay = layouts.get(rid)
            # The common case inline: a fixed layout that the frame fits exactly.
            if lay.__class__ is Compiled and lay.tail is None and end - start - 3 == lay.size:
                values = lay.struct.unpack_from(raw, 2)
                ts = values[0] if lay.has_ts else None
                append(
                    _new(Record, (first + i, seq, rid, ts, lay.names, values, config, dicts, raw))
                )
                records += 1
                if rid == QF_RUN:
                    self.run_dicts = dicts
            else:
                for ev in self._decode_other(_new(QSFrame, (first + i, seq, rid, raw))):
                    append(ev)
                    records += ev.__class__ is Record
                layouts = self._layouts
                config, dicts = self.config, self.dicts
        out.extend(problem for _, problem in problems[p:])
        self.stats.records += records
        return out

    def feed_columns(self, data: bytes | bytearray | memoryview) -> ColumnBatch:
        """Like ``feed``, but records with a fixed layout come back as numpy columns,
        one structured array per record id, without a Python object per record. All
        other frames (dictionaries, target info, strings, application records, misfits)
        and every problem go through ``feed``'s path, in stream order, into ``others``.
        """
        batch = self.framer.feed_batch(data)
        n = len(batch)
        out = ColumnBatch({}, [], batch.wire_ends)
        problems = batch.problems
        p = 0
        if n == 0:
            out.others.extend(problem for _, problem in problems)
            return out
        recs = batch.recs
        lengths = batch.ends - batch.starts
        index = np.arange(batch.first_index, batch.first_index + n)
        pieces: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        # The sizes may change at each target-info frame: decode segment by segment.
        cuts = np.flatnonzero(recs == TARGET_INFO).tolist()
        bounds = [0, *[c for c in cuts if c > 0], n]
        others = out.others

        def slow(i: int) -> None:
            nonlocal p
            while p < len(problems) and problems[p][0] <= i:
                others.append(problems[p][1])
                p += 1
            s, e = int(batch.starts[i]), int(batch.ends[i])
            frame = (int(index[i]), int(batch.seqs[i]), int(recs[i]), batch.buf[s:e])
            others.extend(self._decode_other(_new(QSFrame, frame)))

        for lo, hi in pairwise(bounds):
            start = lo
            if recs[lo] == TARGET_INFO:
                slow(lo)  # its sizes apply to the rest of the segment
                start += 1
            columnar = np.zeros(hi - start, dtype=bool)
            self._columns(batch, start, hi, lengths, index, columnar, pieces)
            for i in (np.flatnonzero(~columnar) + start).tolist():
                slow(i)
        out.others.extend(problem for _, problem in problems[p:])
        for rec, parts in pieces.items():
            out.tables[rec] = RecordColumns(
                rec,
                np.concatenate([part[0] for part in parts]),
                np.concatenate([part[1] for part in parts]),
            )
        columnar_count = sum(len(t.index) for t in out.tables.values())
        self.stats.records += columnar_count + sum(1 for e in others if e.__class__ is Record)
        return out

    def _columns(self, batch, lo, hi, lengths, index, columnar, pieces) -> None:
        """Decode the fixed-layout frames in [lo, hi) column-wise; mark them."""
        if hi <= lo:
            return
        recs = batch.recs
        # Group the frames by (record id, length) with one stable sort.
        key = recs[lo:hi] * 1024 + lengths[lo:hi]
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        edges = [0, *(np.flatnonzero(np.diff(sorted_key)) + 1).tolist(), hi - lo]
        for a, b in pairwise(edges):
            rec, length = divmod(int(sorted_key[a]), 1024)
            lay = self._layouts.get(rec)
            if lay.__class__ is not Compiled or lay.tail is not None or lay.size == 0:
                continue
            if length != lay.size + 3:
                continue
            local = order[a:b]
            columnar[local] = True
            sel = local + lo
            # Rows of a zero-copy sliding window: one index per record, not per byte.
            window = sliding_window_view(batch.u, lay.size)
            rows = window[batch.starts[sel] + 2]
            fields = rows.view(_dtype(lay, self.config)).reshape(len(sel))
            pieces.setdefault(rec, []).append((index[sel], fields))

    def feed_select(
        self, data: bytes | bytearray | memoryview, wanted: Collection[int]
    ) -> Selected:
        """``feed`` for whole captures when only a few record ids matter: the records
        with an id in ``wanted`` that fit their fixed layout come back as numpy columns, one
        table per target-info segment (their sizes may differ); the other records that
        fit a fixed layout and the application records are counted and checked without
        a Python object each. Frames with side effects or odd shapes (target info,
        dictionaries, QS_QF_RUN, strings, unknown or misfit records) and every framing
        problem go through ``feed``'s path one by one into ``others``, in stream order.
        Counts in ``stats`` and ``frame_stats`` end up as ``feed`` leaves them."""
        batch = self.framer.feed_batch(data)
        n = len(batch)
        problems = batch.problems
        out = Selected([], [], None)
        if n == 0:
            out.others.extend(problem for _, problem in problems)
            return out
        recs = batch.recs
        lengths = batch.ends - batch.starts
        p = 0
        others = out.others
        records = 0
        last = (-1, 0)  # (frame position, seq) of the last record decoded as columns

        def slow(positions: Iterable[int]) -> None:
            nonlocal p
            for i in positions:
                while p < len(problems) and problems[p][0] <= i:
                    others.append(problems[p][1])
                    p += 1
                s, e = int(batch.starts[i]), int(batch.ends[i])
                frame = (batch.first_index + i, int(batch.seqs[i]), int(recs[i]), batch.buf[s:e])
                others.extend(self._decode_other(_new(QSFrame, frame)))

        cuts = np.flatnonzero(recs == TARGET_INFO).tolist()
        bounds = [0, *[c for c in cuts if c > 0], n]
        wanted_ids = np.array(sorted(wanted), dtype=np.int64)
        for lo, hi in pairwise(bounds):
            start = lo
            if recs[lo] == TARGET_INFO:
                slow((lo,))  # its sizes apply to the rest of the segment
                start += 1
            if hi <= start:
                continue
            seg_recs = recs[start:hi]
            fits = self._fixed_lengths()[seg_recs] == lengths[start:hi]
            user = ~fits & (seg_recs >= USER_FIRST)
            n_user, user_rows = self._check_user(batch, start, user)
            fast = fits | user_rows
            records += int(fits.sum()) + n_user
            if fast.any():
                k = int(np.flatnonzero(fast)[-1]) + start
                last = (k, int(batch.seqs[k]))
            table = {}
            pick = fits & np.isin(seg_recs, wanted_ids)
            if pick.any():
                table = self._select_columns(batch, start, np.flatnonzero(pick) + start)
            out.segments.append((self.config, table))
            slow((np.flatnonzero(~fast) + start).tolist())
        others.extend(problem for _, problem in problems[p:])
        records += sum(1 for e in others if e.__class__ is Record)
        self.stats.records += records
        last_other = next((e for e in reversed(others) if e.__class__ is Record), None)
        if last_other is not None and last_other.index >= batch.first_index + last[0]:
            out = out._replace(last_seq=last_other.seq)
        elif last[0] >= 0:
            out = out._replace(last_seq=last[1])
        return out

    def _fixed_lengths(self) -> np.ndarray:
        """Per record id: the frame length of its fixed layout, or -1 when its frames
        need a look of their own (no layout, a string or rest field, no data at all)."""
        table = getattr(self, "_fixed", None)
        if table is None or table[0] is not self._layouts:
            lengths = np.full(256, -1, dtype=np.int64)
            for rec, lay in self._layouts.items():
                if lay.__class__ is Compiled and lay.tail is None and lay.size > 0:
                    lengths[rec] = lay.size + 3
            table = self._fixed = (self._layouts, lengths)
        return table[1]

    def _check_user(
        self, batch: FrameBatch, start: int, user: np.ndarray
    ) -> tuple[int, np.ndarray]:
        """Application records at ``start + flatnonzero(user)``: how many decode to a
        record, and which of them need no look of their own (they carry their
        timestamp and their data elements decode). Each distinct payload is decoded
        once, as ``_decode_user`` caches it."""
        rows = np.zeros(len(user), dtype=bool)
        if self._ts is None or not user.any():
            return 0, rows
        size = self.config.tstamp_size
        at = np.flatnonzero(user)
        s = batch.starts[at + start]
        e = batch.ends[at + start]
        long_enough = e - s - 1 >= 2 + size
        at, s, e = at[long_enough], s[long_enough], e[long_enough]
        buf = batch.buf
        bodies = [buf[a + 2 + size : b - 1] for a, b in zip(s.tolist(), e.tolist(), strict=True)]
        bad = {body for body in set(bodies) if self._user_args(body)[1] is not None}
        if bad:
            ok = np.fromiter((body not in bad for body in bodies), dtype=bool, count=len(bodies))
            at = at[ok]
        rows[at] = True
        return len(at), rows

    def _user_args(self, body: bytes) -> tuple:
        cached = self._user_cache.get(body)
        if cached is None:
            cfg = self.config
            try:
                cached = decode_user(body, 0, cfg.sig_size, cfg.obj_ptr_size, cfg.fun_ptr_size)
            except KeyError:
                cached = ((), "unsupported signal or pointer size in the configuration")
            if len(self._user_cache) >= _USER_CACHE:
                self._user_cache.clear()
            self._user_cache[body] = cached
        return cached

    def _select_columns(
        self, batch: FrameBatch, start: int, rows: np.ndarray
    ) -> dict[int, RecordColumns]:
        out = {}
        recs = batch.recs[rows]
        for rec in np.unique(recs).tolist():
            lay = self._layouts[rec]
            sel = rows[recs == rec]
            window = sliding_window_view(batch.u, lay.size)
            fields = window[batch.starts[sel] + 2].view(_dtype(lay, self.config)).reshape(len(sel))
            out[rec] = RecordColumns(rec, sel + batch.first_index, fields)
        return out

    def close(self) -> list[QSEvent]:
        """End of stream. A tail with no closing flag is not a frame (CLARIFICATIONS)."""
        return self.framer.close()

    # ------------------------------------------------------------ the rest

    def _record(self, ev: QSFrame, ts: int | None, names: tuple, values: tuple) -> Record:
        return Record(ev.index, ev.seq, ev.rec, ts, names, values, self.config, self.dicts, ev.raw)

    def _malformed(self, ev: QSFrame, message: str) -> Malformed:
        self.stats.malformed += 1
        return Malformed(ev.index, ev.seq, ev.rec, message, ev.raw)

    def _decode_other(self, ev: QSFrame) -> list[QSEvent]:
        rec = ev.rec
        if rec >= USER_FIRST:
            return self._decode_user(ev)
        if rec == TARGET_INFO:
            return self._target_info(ev)
        if rec == QUERY_DATA:
            return self._guard(ev, self._query)
        if rec == PEEK_DATA:
            return self._guard(ev, self._peek)
        lay = self._layouts.get(rec)
        if lay is None:
            self.stats.unknown_records += 1
            return [self._record(ev, None, ("data",), (ev.payload,))]
        if isinstance(lay, str):
            return [self._malformed(ev, f"{lay} in the configuration")]
        data = ev.raw[:-1]
        pos = 2
        n_fixed = lay.size
        if len(data) - pos < n_fixed:
            need = n_fixed - (len(data) - pos)
            return [self._malformed(ev, f"{need} bytes needed")]
        values = lay.struct.unpack_from(data, pos)
        pos += n_fixed
        if lay.tail is not None:
            _, kind = lay.tail
            if kind == "rest":
                values += (data[pos:],)
                pos = len(data)
            else:
                end = data.find(0, pos)
                if end < 0:
                    return [self._malformed(ev, "string without its terminating NUL")]
                values += (clean_name(data[pos:end]),)
                pos = end + 1
        if pos != len(data):
            return [self._malformed(ev, f"{len(data) - pos} bytes unused")]
        record = self._record(ev, values[0] if lay.has_ts else None, lay.names, values)
        self._apply(record)
        return [record]

    def _apply(self, record: Record) -> None:
        """Side effects of dictionary records and QS_QF_RUN; the record itself keeps
        the dictionaries from before it."""
        rec = record.rec
        v = record.values
        if rec in _DICT_KIND:
            self._put(_DICT_KIND[rec], v[0], v[1])
        elif rec == SIG_DICT:
            if v[1] and v[1] not in self.dicts.obj:
                self.stats.orphan_signal_entries += 1
            self._put("sig", (v[0], v[1]), v[2])
        elif rec == USR_DICT:
            self._put("usr", v[0], v[1])
        elif rec == ENUM_DICT:
            self._put("enum", (v[1] & 0x7, v[0]), v[2])
        elif rec == QF_RUN:
            self.run_dicts = self.dicts

    def _put(self, kind: str, key: object, name: str) -> None:
        self.stats.dictionary_entries += 1
        table = getattr(self.dicts, kind)
        if table.get(key) == name:
            return  # targets repeat their dictionaries; nothing changes
        if key not in table and len(table) >= DICT_CAPACITY[kind]:
            # QSPY's capacities; past them a runaway target cannot make each new
            # snapshot ever more expensive.
            self.stats.dictionary_overflow += 1
            return
        self.dicts = self.dicts.with_entry(kind, key, name)

    def _target_info(self, ev: QSFrame) -> list[QSEvent]:
        try:
            is_reset, word, config = parse_target_info(ev.payload)
        except ValueError as exc:
            return [self._malformed(ev, str(exc))]
        first = not self.config.from_target
        changed = self.config.sizes_differ(config)
        self._set_config(config)
        record = self._record(
            ev, None, ("is_reset", "version_word", "target"), (is_reset, word, config)
        )
        # QSPY forgets its dictionaries on a reset, and when the sizes change.
        if is_reset or (changed and not first):
            self.stats.target_resets += int(is_reset)
            self.dicts = Dictionaries.initial()
            if self.preset is not None:
                self.dicts = self.dicts.merged(self.preset)
        return [record]

    def _decode_user(self, ev: QSFrame) -> list[QSEvent]:
        cfg = self.config
        raw = ev.raw
        if self._ts is None:
            return [self._malformed(ev, f"unsupported timestamp size {cfg.tstamp_size}")]
        size = cfg.tstamp_size
        if len(raw) - 1 < 2 + size:
            return [self._malformed(ev, f"{2 + size - len(raw) + 1} bytes needed")]
        (ts,) = self._ts.unpack_from(raw, 2)
        # Application records repeat the same few payloads (a state, a counter...):
        # their decoded elements are immutable, so decode each payload once.
        args, error = self._user_args(raw[2 + size : -1])
        record = _new(Record, (ev.index, ev.seq, ev.rec, ts, _ARGS, (args,), cfg, self.dicts, raw))
        if error is None:
            return [record]
        return [record, self._malformed(ev, error)]

    def _guard(self, ev: QSFrame, fn) -> list[QSEvent]:
        try:
            return [fn(ev)]
        except (struct.error, KeyError, IndexError, ValueError) as exc:
            message = str(exc) if isinstance(exc, ValueError) else "bytes needed"
            return [self._malformed(ev, message)]

    def _read(self, data: bytes, pos: int, *sizes: int) -> tuple[tuple[int, ...], int]:
        st = struct.Struct("<" + "".join(_UINT[s] for s in sizes))
        return st.unpack_from(data, pos), pos + st.size

    def _query(self, ev: QSFrame) -> Record:
        cfg = self.config
        data = ev.raw[:-1]
        (ts, kind, obj), pos = self._read(data, 2, cfg.tstamp_size, 1, cfg.obj_ptr_size)
        names: tuple[str, ...] = ("ts", "kind", "obj")
        values: tuple = (ts, kind, obj)
        kind_name = QUERY_KINDS[kind] if kind < len(QUERY_KINDS) else str(kind)
        extra: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
            "SM": (("state",), (cfg.fun_ptr_size,)),
            "AO": (("state",), (cfg.fun_ptr_size,)),
            "MP": (("free", "min"), (cfg.pool_ctr_size, cfg.pool_ctr_size)),
            "EQ": (("free", "min"), (cfg.queue_ctr_size, cfg.queue_ctr_size)),
            "TE": (
                ("ao", "tim", "interval", "sig", "flags"),
                (cfg.obj_ptr_size, cfg.tevt_ctr_size, cfg.tevt_ctr_size, cfg.sig_size, 1),
            ),
        }
        if kind_name in extra:
            more_names, sizes = extra[kind_name]
            more, pos = self._read(data, pos, *sizes)
            names += more_names
            values += more
        if pos != len(data):
            raise ValueError(f"{len(data) - pos} bytes unused")
        return self._record(ev, ts, names, values)

    def _peek(self, ev: QSFrame) -> Record:
        cfg = self.config
        data = ev.raw[:-1]
        (ts, offset, size, num), pos = self._read(data, 2, cfg.tstamp_size, 2, 1, 1)
        if size not in (1, 2, 4):
            raise ValueError(f"peek element size {size}")
        items = struct.unpack_from(f"<{num}{_UINT[size]}", data, pos)
        pos += num * size
        if pos != len(data):
            raise ValueError(f"{len(data) - pos} bytes unused")
        return self._record(
            ev, ts, ("ts", "offset", "size", "items"), (ts, offset, size, tuple(items))
        )


class RecordColumns(NamedTuple):
    """All records of one id from a chunk: stream ``index`` and typed ``fields``."""

    rec: int
    index: np.ndarray
    fields: np.ndarray


class Selected(NamedTuple):
    """What ``feed_select`` gives: per target-info segment of the chunk, the sizes in
    force and the wanted records' columns (record id -> RecordColumns); the events of
    the frames decoded one by one; the sequence number of the last record, if any."""

    segments: list[tuple[QSConfig, dict[int, RecordColumns]]]
    others: list[QSEvent]
    last_seq: int | None

    def dictionaries_at(self, index: np.ndarray, after: Dictionaries) -> tuple[np.ndarray, list]:
        """The dictionaries each record at stream ``index`` saw, as (epoch per record,
        epochs): those carried by the next record decoded one by one (dictionaries
        change only there), else ``after`` (the decoder's after the chunk)."""
        marks = [(e.index, e.dicts) for e in self.others if e.__class__ is Record]
        at = np.array([m[0] for m in marks], dtype=np.int64)
        return np.searchsorted(at, index, side="right"), [m[1] for m in marks] + [after]


class ColumnBatch(NamedTuple):
    tables: dict[int, RecordColumns]
    others: list[QSEvent]
    # Stream offset one past each good frame's flag (FrameBatch.wire_ends).
    wire_ends: np.ndarray = np.empty(0, np.int64)


_DTYPES: dict[tuple, np.dtype] = {}


def _dtype(lay: Compiled, config: QSConfig) -> np.dtype:
    key = (lay.struct.format, lay.names)
    dtype = _DTYPES.get(key)
    if dtype is None:
        codes = lay.struct.format.lstrip("<")
        sizes = {"B": 1, "H": 2, "I": 4, "Q": 8}
        dtype = np.dtype({"names": list(lay.names), "formats": [f"<u{sizes[c]}" for c in codes]})
        _DTYPES[key] = dtype
    return dtype


def decode_capture(
    data: bytes, config: QSConfig | None = None, dictionaries: Dictionaries | None = None
) -> tuple[list[QSEvent], QSDecoder]:
    """Decode a whole capture at once."""
    decoder = QSDecoder(config, dictionaries)
    events = decoder.feed(data)
    events += decoder.close()
    return events, decoder


__all__ = [
    "BadFrame",
    "Discontinuity",
    "QSDecoder",
    "QSStats",
    "decode_capture",
]
