"""Event flow of a QP application from decoded QS records: pure functions, no I/O.

``flow_items`` turns records into a stream of ``FlowItem``: posts, publishes, dispatches,
time events, state changes, deferrals and clock ticks, each named through the
dictionaries the record carries. ``SeqText`` draws them as QSPY 7.4's ``-g`` sequence
diagram, byte for byte (the layout below is QSPY's: 20-column lanes, the first lane's
middle at column 19, labels of 15 characters, the box header again every 100 lines).
``state_intervals`` gives, per state machine, the state it was in over time.

Everything works on a stream: one item at a time, no list of the whole capture. What
is kept is a constant number of small values per object list and per state machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..console import for_terminal
from ..protocol.qs import QSEvent, Record
from .clock import SeriesClock
from .text import names_for

# QSPY's limits for -g: at most 10 names (SEQ_ITEMS_MAX) in a list of at most 1023
# bytes (QS_SEQ_LIST_LEN_MAX with its terminating zero).
SEQ_NAMES_MAX = 10
SEQ_LIST_MAX = 1023
SYSTEM = "?"  # the system-border lane: posts from or to objects not in the list

LANE = 20  # columns per lane
LEFT = 19  # column of the first lane's middle
BOX = LANE - 3  # width of a name box in the header
LABEL = LANE - 5  # characters of a signal, state or note
HEADER_EVERY = 100  # lines between repeated headers

TARGET_INFO = 64
# State machines a state timeline follows at once (one open interval each).
STATE_MACHINES_MAX = 4096


@dataclass(frozen=True, slots=True)
class FlowItem:
    """One step of the event flow. ``ts`` is the target's timestamp (None for a tick),
    ``time`` the same made monotonic (SeriesClock), ``index`` the record's stream index
    (a dispatch's index is its RTC step's ``RtcStep.index``).

    kind: ``post``, ``post_attempt``, ``post_lifo``, ``publish``, ``time_event``
    (a time event fired: ``sender`` is the time event), ``dispatch`` (``state`` is
    the state that got the event), ``tran`` and ``init`` (``obj`` is the state
    machine, ``state`` its new state, ``source`` where it came from), ``defer``,
    ``recall``, ``recall_attempt`` (``obj`` the active object, ``receiver`` the queue)
    and ``tick`` (``rate``, ``ctr``)."""

    kind: str
    index: int
    ts: int | None
    time: int | None
    sender: str | None = None
    receiver: str | None = None
    signal: str | None = None
    obj: str | None = None
    state: str | None = None
    source: str | None = None
    rate: int | None = None
    ctr: int | None = None


# Record id -> kind.
_KINDS = {
    14: "post", 45: "post_attempt", 15: "post_lifo", 26: "publish", 37: "time_event",
    8: "dispatch", 6: "tran", 4: "init", 10: "defer", 11: "recall", 18: "recall_attempt",
    31: "tick",
}  # fmt: skip
STATE_KINDS = ("tran", "init")


def _item(r: Record, kind: str, time: int | None) -> FlowItem:
    """The item for one record; fields by position, in QP 7.x's layouts (records.py)."""
    n = names_for(r)
    v = r.values
    base = (kind, r.index, r.timestamp, time)
    if kind in ("post", "post_attempt"):  # ts sender sig obj ...
        return FlowItem(*base, n.obj(v[1]), n.obj(v[3]), n.sig(v[2], v[3]))
    if kind == "post_lifo":  # ts sig obj ...
        return FlowItem(*base, receiver=n.obj(v[2]), signal=n.sig(v[1], v[2]))
    if kind == "publish":  # ts sender sig ...
        return FlowItem(*base, sender=n.obj(v[1]), signal=n.sig(v[2], 0))
    if kind == "time_event":  # ts obj sig ao rate
        return FlowItem(*base, n.obj(v[1]), n.obj(v[3]), n.sig(v[2], v[3]))
    if kind == "dispatch":  # ts sig obj state
        return FlowItem(*base, receiver=n.obj(v[2]), signal=n.sig(v[1], v[2]), state=n.fun(v[3]))
    if kind == "tran":  # ts sig obj source target
        sig, obj = n.sig(v[1], v[2]), n.obj(v[2])
        return FlowItem(*base, signal=sig, obj=obj, state=n.fun(v[4]), source=n.fun(v[3]))
    if kind == "init":  # ts obj state
        return FlowItem(*base, obj=n.obj(v[1]), state=n.fun(v[2]))
    if kind == "tick":  # ctr rate
        return FlowItem(*base, rate=v[1], ctr=v[0])
    if kind == "recall_attempt":  # ts obj queue
        return FlowItem(*base, obj=n.obj(v[1]), receiver=n.obj(v[2]))
    # defer, recall: ts obj queue sig ...
    return FlowItem(*base, receiver=n.obj(v[2]), signal=n.sig(v[3], v[1]), obj=n.obj(v[1]))


def flow_item(r: Record, time: int | None) -> FlowItem | None:
    """The item of one record, None for a record that takes no part in the flow;
    ``time`` is the record's series time (the caller's SeriesClock)."""
    kind = _KINDS.get(r.rec)
    return None if kind is None else _item(r, kind, time)


def flow_items(events: Iterable[QSEvent], clock: SeriesClock | None = None) -> Iterator[FlowItem]:
    """The event flow in stream order, one item per record that takes part in it.
    ``clock`` carries series time on from an earlier batch (live streams)."""
    clock = SeriesClock() if clock is None else clock
    for e in events:
        if e.__class__ is not Record:
            continue
        rec = e.rec  # type: ignore[union-attr]
        if rec == TARGET_INFO and e.values[0]:  # type: ignore[union-attr]
            clock.target_reset()
            continue
        kind = _KINDS.get(rec)
        if kind is None:
            continue
        ts = e.timestamp  # type: ignore[union-attr]
        time = None if ts is None else clock(ts, e.config.tstamp_size)  # type: ignore[union-attr]
        yield _item(e, kind, time)  # type: ignore[arg-type]


# ------------------------------------------------------------------ QSPY's -g text


class SeqError(ValueError):
    """An object list QSPY's -g cannot draw."""


def parse_seq_list(text: str) -> list[str]:
    """The names of a -g list, as QSPY splits it (on every comma, empty names kept)."""
    if not text:
        raise SeqError("the object list is empty")
    # surrogatepass: any str has a size (a lone surrogate counts its 3 bytes; the
    # diagram prints it escaped).
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > SEQ_LIST_MAX:
        raise SeqError(f"the object list has {size} bytes, at most {SEQ_LIST_MAX}")
    names = text.split(",")
    if len(names) > SEQ_NAMES_MAX:
        raise SeqError(f"the object list has {len(names)} names, at most {SEQ_NAMES_MAX}")
    return names


@dataclass(frozen=True, slots=True)
class Placed:
    """An item as the diagram draws it: ``shape`` is ``arrow`` (``src`` to ``dst``,
    which may be the same lane), ``lifo``, ``publish``, ``state``, ``note`` or ``tick``;
    ``lane`` the lane it sits on (the sender's for arrows); ``label`` its text."""

    shape: str
    ts: int | None
    lane: int
    dst: int
    label: str
    attempt: bool = False


_NOTES = {"defer": "Defer", "recall": "RCall", "recall_attempt": "RCallA"}


class SeqLanes:
    """Which items QSPY's -g draws, and on which lanes: an object is on the first lane
    with its name; posts from or to objects not in the list go to the system border
    ("?") when there is one, and are left out otherwise, as are posts from the border
    to itself; transitions and notes of objects not in the list are left out."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.lane: dict[str, int] = {}
        for i, name in enumerate(self.names):
            self.lane.setdefault(name, i)
        # The border is the last '?' (QSPY's list parser keeps the last one it meets).
        self.system = max((i for i, n in enumerate(self.names) if n == SYSTEM), default=-1)

    def _of(self, name: str | None) -> int:
        return -1 if name is None else self.lane.get(name, -1)

    def place(self, item: FlowItem) -> Placed | None:
        kind, ts, system = item.kind, item.ts, self.system
        if kind in ("post", "post_attempt"):
            src = self._of(item.sender)
            dst = self._of(item.receiver)
            src, dst = (system if src < 0 else src), (system if dst < 0 else dst)
            if src < 0 or dst < 0 or src == dst == system:
                return None
            return Placed("arrow", ts, src, dst, item.signal, kind == "post_attempt")  # type: ignore[arg-type]
        if kind == "publish":
            lane = self._of(item.sender)
            lane = system if lane < 0 else lane
            return None if lane < 0 else Placed("publish", ts, lane, lane, item.signal)  # type: ignore[arg-type]
        if kind == "tick":
            return Placed("tick", None, -1, -1, f"Tick<{item.rate:1d}> Ctr={item.ctr:010d}")
        if kind == "post_lifo":
            lane = self._of(item.receiver)
            return None if lane < 0 else Placed("lifo", ts, lane, lane, item.signal)  # type: ignore[arg-type]
        lane = self._of(item.obj)
        if lane < 0:
            return None
        if kind == "tran":
            return Placed("state", ts, lane, lane, state_label(item.state))  # type: ignore[arg-type]
        note = _NOTES.get(kind)
        return None if note is None else Placed("note", ts, lane, lane, note)


class SeqText:
    """QSPY's -g sequence diagram for one object list: ``feed`` an item, get the bytes
    it adds (b"" for items QSPY does not draw). Keeps only the line count and the list.
    Columns count bytes of UTF-8, as QSPY's do, so names beyond ASCII come out as
    QSPY's do too."""

    def __init__(self, names: Sequence[str], list_text: str | None = None) -> None:
        self.lanes = SeqLanes(names)
        # Shown with control characters as escapes (names from the target already are).
        self.names = [_safe(n).encode() for n in self.lanes.names]
        self.list_text = _safe(",".join(names) if list_text is None else list_text).encode()
        self.system = self.lanes.system
        self.lines = 0
        self._bars: bytes | None = None  # a line's lanes after the timestamp
        self._fill: dict[tuple[int, bytes], bytes] = {}  # publish and tick lines' filler

    # -- the header

    def header(self) -> bytes:
        out = b"-g " + self.list_text + b"\n\n" if self.lines == 0 else b""
        self.lines += 3
        return out + self._box_edge() + self._box_names() + self._box_edge()

    def _box_edge(self) -> bytes:
        half = b"-" * (BOX // 2 - 1)
        box = b"+" + half + b"+" + half + b"+"
        gap = b" " * (LANE - BOX)
        return b" " * (LEFT - BOX // 2) + gap.join(box for _ in self.names) + b"\n"

    def _box_names(self) -> bytes:
        boxes = []
        for name in self.names:
            box = bytearray(b"|" + b" " * (BOX - 2) + b"|")
            start = 1 + max(0, (BOX - 2 - len(name)) // 2)
            shown = name[: BOX - 1 - start]
            box[start : start + len(shown)] = shown
            boxes.append(bytes(box))
        return b" " * (LEFT - BOX // 2) + (b" " * (LANE - BOX)).join(boxes) + b"\n"

    # -- one item

    def feed(self, item: FlowItem) -> bytes:
        p = self.lanes.place(item)
        if p is None:
            return b""
        shape, ts, lane = p.shape, p.ts, p.lane
        label = _safe(p.label).encode()
        if shape == "arrow":
            return self._post(ts, lane, p.dst, label, p.attempt)  # type: ignore[arg-type]
        if shape == "publish":
            return self._publish(ts, lane, label)  # type: ignore[arg-type]
        if shape == "lifo":
            return self._lifo(ts, lane, label)  # type: ignore[arg-type]
        if shape == "tick":
            return self._tick(item.rate, item.ctr)  # type: ignore[arg-type]
        if shape == "state":
            return self._centred(ts, lane, label, b"<", b">")  # type: ignore[arg-type]
        return self._centred(ts, lane, label, b"(", b")")  # type: ignore[arg-type]

    def _begin(self) -> bytes:
        return self.header() if self.lines % HEADER_EVERY == 0 else b""

    def _end(self, line: _Line, at: int = -1, mark: bytes = b"") -> bytes:
        """The system border over everything but the sender's mark at ``at``."""
        if self.system >= 0:
            line.buf[LEFT + self.system * LANE] = ord("/")
        if at >= 0:
            line.buf[at] = mark[0]
        self.lines += 1
        return line.text()

    def _lanes(self, ts: int) -> _Line:
        """The timestamp, then a bar in the middle of every lane."""
        if self._bars is None:
            last = LEFT + (len(self.names) - 1) * LANE
            bars = [b"|" if (i - LEFT) % LANE == 0 else b" " for i in range(10, last)]
            self._bars = b"".join(bars) + b"|\n"
        return _Line(b"%010d" % ts + self._bars)

    def _dotted(self, head: bytes, odd: bytes, even: bytes) -> _Line:
        """``head``, then bars in the lanes' middles and a dotted filler, to the middle
        of the last box's right half (publish and tick lines)."""
        key = (len(head), odd)
        tail = self._fill.get(key)
        if tail is None:
            width = LEFT - LANE + BOX // 2 + len(self.names) * LANE
            fill = [
                b"|" if (i - LEFT) % LANE == 0 else (odd if i % 2 else even)
                for i in range(len(head), width)
            ]
            tail = self._fill[key] = b"".join(fill) + b"\n"
        return _Line(head + tail)

    def _post(self, ts: int, src: int, dst: int, sig: bytes, attempt: bool) -> bytes:
        head = self._begin()
        line = self._lanes(ts)
        buf = line.buf
        dash = b"~" if attempt else b"-"
        a, b = LEFT + src * LANE, LEFT + dst * LANE
        lo, hi = min(a, b), max(a, b)  # both in the middle of a lane
        buf[lo:hi] = (b"+" + dash * (LANE - 1)) * ((hi - lo) // LANE)
        if src < dst:
            buf[b - 1] = ord(">")
            line.put(a + 3, sig, a + 3 + LABEL - 1)
        elif src > dst:
            buf[b + 1], buf[b] = ord("<"), ord("|")
            at = a - 2 - min(len(sig), LABEL)
            line.put(at, sig, at + LABEL - 1)
        else:  # to itself
            line.close(line.put(a + 3, sig, a + 3 + LABEL - 1), b"]")
            buf[a + 1], buf[a + 2] = ord("<"), ord("-")
        return head + self._end(line, a, b"A" if attempt else b"*")

    def _lifo(self, ts: int, lane: int, sig: bytes) -> bytes:
        head = self._begin()
        line = self._lanes(ts)
        a = LEFT + lane * LANE
        line.close(line.put(a + 3, sig, a + 3 + LABEL), b"]")
        line.buf[a + 1], line.buf[a + 2] = ord("<"), ord("=")
        return head + self._end(line, a, b"*")

    def _publish(self, ts: int, lane: int, sig: bytes) -> bytes:
        head = self._begin()
        line = self._dotted(b"%010d" % ts, b".", b" ")
        a = LEFT + lane * LANE
        if lane < len(self.names) - 1:  # the signal right of the '*'
            line.put(a + 3, sig, a + 3 + LABEL)
        else:  # left of it
            at = a - 2 - min(len(sig), LABEL)
            line.put(at, sig, at + LABEL)
        return head + self._end(line, a, b"*")

    def _centred(self, ts: int, lane: int, text: bytes, left: bytes, right: bytes) -> bytes:
        head = self._begin()
        line = self._lanes(ts)
        at = LEFT + lane * LANE - (min(len(text), LABEL) + 1) // 2
        line.buf[at] = left[0]
        line.close(line.put(at + 1, text, at + LABEL), right)
        return head + self._end(line)

    def _tick(self, rate: int, ctr: int) -> bytes:
        head = self._begin()
        line = self._dotted(b"##########  Tick<%1d> Ctr=%010d" % (rate, ctr), b" ", b"'")
        return head + self._end(line)


class _Line:
    """One line as QSPY builds it: a buffer written at columns (bytes), and the line's
    length (its newline included). Columns past the length hold blanks until text
    reaches them."""

    __slots__ = ("buf", "length")

    def __init__(self, text: bytes) -> None:
        self.buf = bytearray(text)
        self.length = len(text)
        self.buf += b" " * (2 * LANE + LABEL)  # room for text past the end

    def put(self, at: int, text: bytes, until: int) -> int:
        """``text`` from column ``at`` while the column is at most ``until``; the column
        after the last byte written."""
        n = min(len(text), max(0, until - at + 1))
        self.buf[at : at + n] = text[:n]
        return at + n

    def close(self, at: int, mark: bytes) -> None:
        """``mark`` at ``at``; a line that ended there or before now ends after it
        (QSPY moves its line end only when the text reached it)."""
        self.buf[at] = mark[0]
        if self.length <= at + 1:
            self.buf[at + 1] = ord("\n")
            self.length = at + 2

    def text(self) -> bytes:
        return bytes(self.buf[: self.length])


def _safe(text: str) -> str:
    return text if text.isprintable() else for_terminal(text)


def state_label(state: str) -> str:
    """A state's name after its state machine's: what follows the first "_" or the
    first "::" (Philo_hungry -> hungry, Blinky::off -> off), as QSPY shortens it."""
    for i, c in enumerate(state):
        if c == "_":
            return state[i + 1 :]
        if c == ":" and state[i + 1 : i + 2] == ":":
            return state[i + 2 :]
    return state


def seq_text(items: Iterable[FlowItem], names: Sequence[str]) -> Iterator[bytes]:
    """QSPY's -g file for ``items``: the header, then what each item adds."""
    seq = SeqText(names)
    yield seq.header()
    for item in items:
        text = seq.feed(item)
        if text:
            yield text


# ------------------------------------------------------------------ state timeline


@dataclass(frozen=True, slots=True)
class StateInterval:
    """``obj`` was in ``state`` from ``t0`` to ``t1`` (series time); ``t1`` is None
    while it still is. ``index`` is the stream index of the change that began it."""

    obj: str
    state: str
    t0: int
    t1: int | None
    index: int


class StateTimeline:
    """``state_intervals`` fed in batches (live streams). It keeps one open interval
    per state machine, for at most STATE_MACHINES_MAX machines: changes of machines
    beyond those are counted in ``dropped``, not drawn."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[str, int, int]] = {}
        self.dropped = 0

    def feed(self, items: Iterable[FlowItem]) -> Iterator[StateInterval]:
        """The intervals these items closed."""
        open_ = self.open
        for it in items:
            if it.kind not in STATE_KINDS or it.time is None:
                continue
            obj = it.obj
            began = open_.pop(obj, None)  # type: ignore[arg-type]
            if began is not None:
                yield StateInterval(obj, began[0], began[1], it.time, began[2])  # type: ignore[arg-type]
            elif len(open_) >= STATE_MACHINES_MAX:
                self.dropped += 1
                continue
            open_[obj] = (it.state, it.time, it.index)  # type: ignore[index,assignment]

    def still_open(self) -> Iterator[StateInterval]:
        """The intervals not closed yet, in the order of their machines' last change."""
        for obj, (state, t0, index) in self.open.items():
            yield StateInterval(obj, state, t0, None, index)


def state_intervals(items: Iterable[FlowItem]) -> Iterator[StateInterval]:
    """One interval per state change (QS_QEP_TRAN, QS_QEP_INIT_TRAN), closed by the
    same state machine's next change; the ones still open come last. Items must be in
    stream order."""
    timeline = StateTimeline()
    yield from timeline.feed(items)
    yield from timeline.still_open()
