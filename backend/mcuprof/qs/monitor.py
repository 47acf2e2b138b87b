"""The dashboard's QS views, kept up to date as decoded events arrive.

``QsMonitor`` listens to a QS source (``qs_events``/``qs_reset``) and keeps what the QS
tab shows: QSPY's text lines tagged for filtering, queue and pool margins over time,
numeric application-record series and the counts of a summary. Memory is bounded
whatever the run's length: the log keeps its last lines and counts the dropped ones;
series halve their resolution (keeping each bucket's lowest and highest value) when
they fill up. Text and margins reuse text.py and margins.py, so every line and number
agrees with `mcuprof qs decode` and `mcuprof qs margins`.
"""

from __future__ import annotations

import collections
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import UserError
from ..protocol.qs import USER_FIRST, BadFrame, Discontinuity, Malformed, QSEvent, Record
from ..protocol.qs.records import record_group
from .clock import SeriesClock
from .flowlog import FLOW_ITEMS_MAX, STATE_SPANS_MAX, FlowLog, FlowSnapshot
from .margins import margin_sample
from .text import event_lines, names_for, record_line

MAX_LINES = 20_000  # log lines kept (the oldest go first)
MAX_POINTS = 2_000  # points per series before it halves its resolution
MAX_MARGINS = 256  # queues and pools tracked
MAX_SERIES = 256  # (application record, argument) series tracked
MAX_NAMES = 4_096  # distinct objects and signals counted for the filter chips
MAX_PAGE = 2_000  # log lines per answer
SUMMARY_NAMES = 200  # objects and signals listed in a summary (polled every second)
# A log line's text, in UTF-8 bytes, marker included: QSPY's lines are a few hundred
# bytes at most, but names from the target (escaped to 4 characters a byte) and
# application strings have no limit of their own.
MAX_LINE_BYTES = 1024
# A name on a line's tags (object, signal, queue): at most this many characters, so a
# cut name still fits a filter value (web/routes/qs.py MAX_VALUE) and can be filtered by.
MAX_TAG_CHARS = 256
# A text download (log.txt), in bytes: past it the rest is left out and said so.
MAX_TEXT_BYTES = 32 << 20
_NOTE_ROOM = 128  # bytes kept for the line that says a download was cut
_PIECE = 1 << 16  # bytes of a text download handed on at a time

_OBJ_FIELDS = ("obj", "sender", "ao", "queue")
_NUMERIC = frozenset(("I8", "U8", "I16", "U16", "I32", "U32", "F32", "F64", "I64", "U64", "HEX32"))
# Records whose signal belongs to no object (QSPY looks them up with Obj=0).
_SIG_NO_OBJ = frozenset((23, 26, 27, 28, 29, 30, 38))
# Dictionary entries carry raw pointers, not objects to filter by.
_NO_TAGS = frozenset(("DIC", "INF"))
COMMS = "COMMS"  # framing problems: QSPY's <COMMS> lines


def group_of(rec: int) -> str:
    """QSPY's record group (QS_GRP_*), with application records in U0..U4 as QP
    groups them (five ids each, 100-124); ids 125 and up are in no U group: UA."""
    if rec >= USER_FIRST:
        k = (rec - USER_FIRST) // 5
        return f"U{k}" if k <= 4 else "UA"
    return record_group(rec)


class _Plan(NamedTuple):
    names: tuple[str, ...]
    group: str
    name: str
    objs: tuple[int, ...] | None  # indices of object fields; None: no tags
    sig: int | None
    owner: int | None  # index of the object a signal belongs to; None: no object
    margin: bool


class Clips:
    """Cuts texts to their bounds, with a marker saying how much went, and counts the
    cuts (a monitor's lines share one). Cut names are kept once, so the lines naming
    one object share one string, as they share the uncut one."""

    __slots__ = ("_cut", "lines", "names")

    def __init__(self) -> None:
        self.lines = 0  # line texts cut
        self.names = 0  # distinct names cut
        self._cut: dict[str, str] = {}

    def line(self, text: str, counted: bool = False) -> str:
        """``text``, itself when it fits; ``counted``: this line's cut is counted."""
        if len(text) <= MAX_LINE_BYTES // 4:  # fits, whatever its characters
            return text
        raw = text.encode("utf-8", "replace")
        if len(raw) <= MAX_LINE_BYTES:
            return text
        if not counted:
            self.lines += 1
        return cut_text(raw, MAX_LINE_BYTES)

    def name(self, name: str) -> str:
        if len(name) <= MAX_TAG_CHARS:
            return name
        cut = self._cut.get(name)
        if cut is None:
            marker = f"...[{len(name)} chars]"
            cut = name[: MAX_TAG_CHARS - len(marker)] + marker
            if len(self._cut) < MAX_NAMES:
                self._cut[name] = cut
            self.names += 1
        return cut


def cut_text(raw: bytes, limit: int) -> str:
    """``raw`` (UTF-8) cut to ``limit`` bytes in all, marker included, on a character
    boundary."""
    marker = f" ...[cut: {len(raw):,} bytes]"
    head = raw[: limit - len(marker)].decode("utf-8", "ignore")
    return head + marker


class Line:
    """One log line. A record's text is rendered when first asked for (most lines are
    never shown): the record keeps the sizes and dictionaries it arrived with, so the
    text is the same as if rendered on arrival. A text cut to MAX_LINE_BYTES is not
    kept: the line keeps its record (a few hundred bytes) and renders it again when
    asked, so a long log of cut lines costs its records, not 1 KiB a line."""

    __slots__ = ("_clips", "_cut", "_text", "group", "id", "objs", "rec", "record", "sig", "t")

    def __init__(
        self,
        id: int,
        t: int | None,
        group: str,
        rec: str,
        objs: tuple[str, ...],
        sig: str | None,
        text: str | None,
        record: Record | None,
        clips: Clips,
    ) -> None:
        self.id, self.t, self.group, self.rec = id, t, group, rec
        self.objs, self.sig, self.record = objs, sig, record
        self._text = None if text is None else clips.line(text)
        self._clips = clips
        self._cut = False

    @property
    def text(self) -> str:
        text = self._text
        if text is None:
            # Readers may race here: _text is set before record is dropped, so a reader
            # that finds no record finds the text.
            record = self.record
            if record is None:
                return self._text or ""
            full = record_line(record) or ""
            text = self._clips.line(full, counted=self._cut)
            if text is full:
                self._text = text
                self.record = None
            else:
                self._cut = True
        return text

    def settle(self) -> None:
        """Keep the text now and drop the record, and the dictionaries it holds."""
        text = self.text
        self._text = text
        self.record = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "t": self.t,
            "group": self.group,
            "rec": self.rec,
            "obj": self.objs[0] if self.objs else None,
            "objs": list(self.objs),
            "sig": self.sig,
            "text": self.text,
        }


@dataclass
class Series:
    """Points (t, lo, hi): each point is one sample (lo == hi) until the series fills,
    then adjacent points merge, keeping the first time, the lowest and the highest
    value, so dips (a queue nearly full) survive any decimation."""

    cap: int = MAX_POINTS
    t: list[int] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    samples: int = 0
    merged: int = 1  # samples per point
    _pending: tuple[int, float, float, int] | None = None

    def add(self, t: int, value: float) -> None:
        self.samples += 1
        if self.merged == 1:
            self._append(t, value, value)
            return
        p = self._pending
        if p is None:
            p = (t, value, value, 0)
        p = (p[0], min(p[1], value), max(p[2], value), p[3] + 1)
        if p[3] == self.merged:
            self._append(p[0], p[1], p[2])
            p = None
        self._pending = p

    def _append(self, t: int, lo: float, hi: float) -> None:
        self.t.append(t)
        self.lo.append(lo)
        self.hi.append(hi)
        if len(self.t) >= self.cap:
            self._halve()

    def _halve(self) -> None:
        t, lo, hi = self.t, self.lo, self.hi
        n = len(t) // 2 * 2
        rest = (t[n:], lo[n:], hi[n:])
        self.t = t[0:n:2] + rest[0]
        self.lo = [min(a, b) for a, b in zip(lo[0:n:2], lo[1:n:2], strict=True)] + rest[1]
        self.hi = [max(a, b) for a, b in zip(hi[0:n:2], hi[1:n:2], strict=True)] + rest[2]
        self.merged *= 2

    def points(self) -> dict[str, Any]:
        t, lo, hi = list(self.t), list(self.lo), list(self.hi)
        if self._pending is not None:
            t.append(self._pending[0])
            lo.append(self._pending[1])
            hi.append(self._pending[2])
        return {"t": t, "lo": lo, "hi": hi, "samples": self.samples, "per_point": self.merged}


@dataclass
class MarginTrack:
    obj: int
    name: str
    kind: str
    series: Series
    low_water: int | None = None
    lowest_free: int | None = None
    last_free: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "low_water": self.low_water,
            "lowest_free": self.lowest_free,
            "last_free": self.last_free,
            **self.series.points(),
        }


@dataclass
class AppTrack:
    rec: int
    arg: int
    kind: str
    series: Series


def search_pattern(text: str) -> re.Pattern[str] | None:
    """The log search: a case-insensitive regular expression, as the flame graph's
    search (a plain word is one too); None when empty. A bad one is a one-line error."""
    if not text:
        return None
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as exc:
        raise UserError(f"search {text!r} is not a valid regular expression: {exc}") from None


def _matching(
    lines: list[Line],
    groups: Iterable[str],
    objs: Iterable[str],
    sigs: Iterable[str],
    text: str,
) -> list[Line]:
    gs, os_, ss = frozenset(groups), frozenset(objs), frozenset(sigs)
    needle = search_pattern(text)
    if not (gs or os_ or ss or needle):
        return lines

    def keep(line: Line) -> bool:
        return (
            (not gs or line.group in gs)
            and (not os_ or not os_.isdisjoint(line.objs))
            and (not ss or line.sig in ss)
            and (needle is None or needle.search(line.text) is not None)
        )

    return [line for line in lines if keep(line)]


class QsMonitor:
    """Thread-safe: a source thread calls ``qs_events``/``qs_reset`` while the web
    routes read. Readers get copies, never live structures."""

    def __init__(
        self,
        max_lines: int = MAX_LINES,
        max_points: int = MAX_POINTS,
        max_margins: int = MAX_MARGINS,
        max_series: int = MAX_SERIES,
        max_flow: int = FLOW_ITEMS_MAX,
        max_spans: int = STATE_SPANS_MAX,
    ) -> None:
        self.max_lines = max_lines
        self.max_flow = max_flow
        self.max_spans = max_spans
        self.max_points = max_points
        self.max_margins = max_margins
        self.max_series = max_series
        self._lock = threading.Lock()
        self.version = 0
        self._clear()

    def _clear(self) -> None:
        self.lines: collections.deque[Line] = collections.deque(maxlen=self.max_lines)
        self.next_id = 0
        self.records = 0
        self.groups: collections.Counter[str] = collections.Counter()
        self.objects: collections.Counter[str] = collections.Counter()
        self.signals: collections.Counter[str] = collections.Counter()
        self.names_dropped = 0
        self.clips = Clips()
        self.text_cut = 0  # text downloads cut at MAX_TEXT_BYTES
        self.bad_frames: collections.Counter[str] = collections.Counter()
        self.discontinuities = 0
        self.lost_frames = 0
        self.malformed = 0
        self.margins: dict[int, MarginTrack] = {}
        self.margins_dropped = 0
        self.app: dict[tuple[int, int], AppTrack] = {}
        self.app_names: dict[int, str] = {}
        self.series_dropped = 0
        self.first_t: int | None = None
        self.last_t: int | None = None
        self.target: dict[str, Any] | None = None
        self._plans: list[_Plan | None] = [None] * 256
        # Lines whose text is not rendered yet, all holding the dictionaries in _dicts.
        self._lazy: collections.deque[Line] = collections.deque(maxlen=self.max_lines)
        self._dicts: object = None
        self._clock = SeriesClock()  # series time from the target's timestamps
        # The sequence diagram's and the state timeline's items.
        self.flow = FlowLog(self.max_flow, self.max_spans)

    # ------------------------------------------------------------ the listener

    def qs_reset(self) -> None:
        """A new capture or connection: start from nothing."""
        with self._lock:
            self._clear()
            self.version += 1

    def qs_events(self, events: list[QSEvent]) -> None:
        """Decoded events, in stream order."""
        if not events:
            return
        with self._lock:
            record = self._record
            for event in events:
                if event.__class__ is Record:
                    record(event)  # type: ignore[arg-type]
                else:
                    self._event(event)
            self.version += 1

    # ------------------------------------------------------------ ingest

    def _event(self, e: QSEvent) -> None:
        cls = e.__class__
        if cls is Record:
            self._record(e)  # type: ignore[arg-type]
            return
        if cls is BadFrame:
            self.bad_frames[e.kind] += 1  # type: ignore[union-attr]
        elif cls is Discontinuity:
            self.discontinuities += 1
            self.lost_frames += (e.seq - e.prev_seq - 1) & 0xFF  # type: ignore[union-attr]
        elif cls is Malformed:
            self.malformed += 1
        for text in event_lines(e):
            self._line(None, COMMS, type(e).__name__, (), None, text)

    def _plan(self, r: Record) -> _Plan:
        """What to pick out of records of this id and layout, worked out once."""
        rec, names = r.rec, r.names
        group = group_of(rec)
        objs = sig = owner = None
        if group not in _NO_TAGS and rec < USER_FIRST:
            objs = tuple(names.index(k) for k in _OBJ_FIELDS if k in names)
            if "sig" in names:
                sig = names.index("sig")
                # The object a signal belongs to, as QSPY looks it up: a time event's
                # signal (TE post, TE query) is its active object's.
                key = "ao" if "ao" in names and rec in (37, 67) else "obj"
                if rec not in _SIG_NO_OBJ and key in names:
                    owner = names.index(key)
        margin = rec < USER_FIRST and margin_sample(r) is not None
        plan = _Plan(names, group, r.name, objs, sig, owner, margin)
        self._plans[rec] = plan
        return plan

    def _record(self, r: Record) -> None:
        self.records += 1
        rec = r.rec
        plan = self._plans[rec]
        if plan is None or plan.names is not r.names:
            plan = self._plan(r)
        group = plan.group
        self.groups[group] += 1
        ts = r.timestamp
        now = None
        if ts is not None:
            now = self._clock(ts, r.config.tstamp_size)
            if self.first_t is None:
                self.first_t = now
            self.last_t = now
        if rec == 0:  # QS_EMPTY: QSPY prints nothing for it
            return
        self.flow.add(r, now)
        objs: tuple[str, ...] = ()
        sig: str | None = None
        if plan.objs is not None:
            n = names_for(r)
            values = r.values
            clip = self.clips.name
            objs = tuple([clip(n.obj(values[i])) for i in plan.objs])
            if plan.sig is not None:
                owner = 0 if plan.owner is None else values[plan.owner]
                sig = clip(n.sig(values[plan.sig], owner))
        elif rec >= USER_FIRST:
            objs, sig = self._user_tags(r)
        elif rec == 64:
            is_reset, word, target = r.values
            self.target = {"qp_version": word, "build": target.build_stamp}
            if is_reset:
                self._clock.target_reset()
                self.flow.target_reset()
        line = self._line(ts, group, plan.name, objs, sig, None, r)
        if r.dicts is not self._dicts:
            # New dictionaries: lines still holding the old ones get their text now, so
            # at most one snapshot stays alive (a target that keeps sending dictionary
            # entries must not make us keep a copy per line).
            for old in self._lazy:
                old.settle()
            self._lazy.clear()
            self._dicts = r.dicts
        self._lazy.append(line)
        if rec >= USER_FIRST:
            self._app(r, now)
        elif plan.margin:
            self._margin(r, now, *margin_sample(r))  # type: ignore[misc]

    def _user_tags(self, r: Record) -> tuple[tuple[str, ...], str | None]:
        n = names_for(r)
        clip = self.clips.name
        objs = tuple(clip(n.obj(a.value)) for a in r.values[0] if a.kind == "OBJ")
        sigs = [a.value for a in r.values[0] if a.kind == "SIG"]
        return objs, (clip(n.sig(*sigs[0])) if sigs else None)

    def _count(self, counter: collections.Counter[str], name: str) -> None:
        if name in counter or len(counter) < MAX_NAMES:
            counter[name] += 1
        else:
            self.names_dropped += 1

    def _line(
        self,
        t: int | None,
        group: str,
        rec: str,
        objs: tuple[str, ...],
        sig: str | None,
        text: str | None,
        record: Record | None = None,
    ) -> Line:
        if objs:
            counter = self.objects
            for name in objs if len(objs) == 1 else dict.fromkeys(objs):
                if name in counter:
                    counter[name] += 1
                else:
                    self._count(counter, name)
        if sig is not None:
            if sig in self.signals:
                self.signals[sig] += 1
            else:
                self._count(self.signals, sig)
        line = Line(self.next_id, t, group, rec, objs, sig, text, record, self.clips)
        self.lines.append(line)
        self.next_id += 1
        return line

    def _margin(self, r: Record, now: int, kind: str, free: int, least: int | None) -> None:
        obj = r.values[r.names.index("obj")]
        m = self.margins.get(obj)
        if m is None:
            if len(self.margins) >= self.max_margins:
                self.margins_dropped += 1
                return
            m = self.margins[obj] = MarginTrack(
                obj, self.clips.name(names_for(r).obj(obj)), kind, Series(self.max_points)
            )
        m.series.add(now, free)
        m.last_free = free
        m.lowest_free = free if m.lowest_free is None else min(m.lowest_free, free)
        if least is not None:
            m.low_water = least if m.low_water is None else min(m.low_water, least)

    def _app(self, r: Record, now: int | None) -> None:
        if r.rec not in self.app_names:
            name = r.dicts.usr.get(r.rec)
            name = name if name is not None else f"USER+{r.rec - USER_FIRST:03d}"
            self.app_names[r.rec] = self.clips.name(name)
        t = now if now is not None else self._clock.last
        for i, a in enumerate(r.values[0]):
            if a.kind not in _NUMERIC:
                continue
            key = (r.rec, i)
            track = self.app.get(key)
            if track is None:
                if len(self.app) >= self.max_series:
                    self.series_dropped += 1
                    continue
                track = self.app[key] = AppTrack(r.rec, i, a.kind, Series(self.max_points))
            track.series.add(t, a.value)

    # ------------------------------------------------------------ readers

    def log(
        self,
        groups: Iterable[str] = (),
        objs: Iterable[str] = (),
        sigs: Iterable[str] = (),
        text: str = "",
        since: int | None = None,
        before: int | None = None,
        limit: int = 500,
    ) -> dict[str, Any]:
        """Lines matching every given filter (any of the values within one filter).
        ``since``: the first ``limit`` lines after that id (following a live log);
        ``before``: the last ``limit`` lines before it (paging back); neither: the last
        ``limit`` lines. ``matched`` counts every kept line that matches."""
        limit = max(1, min(limit, MAX_PAGE))
        with self._lock:
            kept = list(self.lines)
            dropped = self.next_id - len(kept)
            next_id = self.next_id
            version = self.version
        matching = _matching(kept, groups, objs, sigs, text)
        if since is not None:
            after = [line for line in matching if line.id > since]
            page, more = after[:limit], len(after) > limit
            older = len(matching) - len(after) > 0
        else:
            upto = matching if before is None else [line for line in matching if line.id < before]
            page, older, more = upto[-limit:], len(upto) > limit, False
        return {
            "lines": [line.as_dict() for line in page],
            "matched": len(matching),
            "older": older,
            "newer": more,
            "dropped": dropped,
            "next_id": next_id,
            "version": version,
        }

    def text_body(
        self,
        groups: Iterable[str] = (),
        objs: Iterable[str] = (),
        sigs: Iterable[str] = (),
        text: str = "",
        limit: int | None = None,
    ) -> Iterator[bytes]:
        """Every kept line that matches, as QSPY prints it, one a line (a text download),
        in UTF-8 pieces of about ``_PIECE`` bytes: the body is never held whole. It
        stops before ``limit`` (default MAX_TEXT_BYTES) bytes; a last line then says
        how many lines were left out, and the cut is counted (``text_cut``)."""
        with self._lock:
            kept = list(self.lines)
        matching = _matching(kept, groups, objs, sigs, text)
        limit = MAX_TEXT_BYTES if limit is None else limit
        room = limit - _NOTE_ROOM
        size = 0
        piece = bytearray()
        for i, line in enumerate(matching):
            data = (line.text + "\n").encode("utf-8", "replace")
            if size + len(data) > room:
                with self._lock:
                    self.text_cut += 1
                left = len(matching) - i
                piece += f"mcuprof: cut at {limit:,} bytes: {left:,} more lines left out\n".encode()
                break
            size += len(data)
            piece += data
            if len(piece) >= _PIECE:
                yield bytes(piece)
                piece.clear()
        if piece:
            yield bytes(piece)

    def flow_snapshot(self) -> tuple[FlowSnapshot, int | None, int | None, int]:
        """The kept event flow, the first and last series times and the version."""
        with self._lock:
            return self.flow.snapshot(), self.first_t, self.last_t, self.version

    def margin_list(self) -> dict[str, Any]:
        with self._lock:
            items = [m.as_dict() for m in self.margins.values()]
            return {"margins": items, "dropped": self.margins_dropped, "version": self.version}

    def app_series(self) -> dict[str, Any]:
        with self._lock:
            records: dict[int, dict[str, Any]] = {}
            for (rec, arg), track in self.app.items():
                entry = records.setdefault(
                    rec, {"rec": rec, "name": self.app_names.get(rec, str(rec)), "series": []}
                )
                entry["series"].append({"arg": arg, "kind": track.kind, **track.series.points()})
            return {
                "records": sorted(records.values(), key=lambda e: e["rec"]),
                "dropped": self.series_dropped,
                "version": self.version,
            }

    def bounded_losses(self) -> dict[str, int]:
        """The log's texts cut to their bounds, for the health panel."""
        with self._lock:
            return {"lines_cut": self.clips.lines, "names_cut": self.clips.names}

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "version": self.version,
                "records": self.records,
                "lines": self.next_id,
                "lines_kept": len(self.lines),
                "lines_dropped": self.next_id - len(self.lines),
                "groups": dict(sorted(self.groups.items())),
                # The most frequent names (the tab's filter chips), and how many there are.
                "objects": dict(self.objects.most_common(SUMMARY_NAMES)),
                "signals": dict(self.signals.most_common(SUMMARY_NAMES)),
                "objects_total": len(self.objects),
                "signals_total": len(self.signals),
                "names_dropped": self.names_dropped,
                # Texts cut to their bounds (MAX_LINE_BYTES, MAX_TAG_CHARS, MAX_TEXT_BYTES).
                "lines_cut": self.clips.lines,
                "names_cut": self.clips.names,
                "text_cut": self.text_cut,
                "bad_frames": sum(self.bad_frames.values()),
                "bad_frame_kinds": dict(self.bad_frames),
                "discontinuities": self.discontinuities,
                "lost_frames": self.lost_frames,
                "malformed": self.malformed,
                "margins": len(self.margins),
                "app_series": len(self.app),
                "first_t": self.first_t,
                "last_t": self.last_t,
                "target": self.target,
                "bounds": {
                    "lines": self.max_lines,
                    "points": self.max_points,
                    "margins": self.max_margins,
                    "series": self.max_series,
                    "line_bytes": MAX_LINE_BYTES,
                    "tag_chars": MAX_TAG_CHARS,
                    "text_bytes": MAX_TEXT_BYTES,
                },
            }
