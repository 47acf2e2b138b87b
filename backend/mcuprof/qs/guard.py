"""What a QP target is known to hold, and the QS-RX commands that would crash it.

QP/C trusts QS-RX (qs_rx.c): an EVENT to priority P posts to ``QActive_registry_[P]``
whether or not an active object is registered there; a post to the current AO, a
dispatch or an init, and a query of the current SM or AO, call through whatever object
was made current; the AO filter reads ``->prio`` through the address it is given. A wrong
guess kills the target (exit -11, or ``=ASSERT= Mod=qf_actq``), and QSPY forwards it all.

The host knows more: the target's own records say what each object is. A state-machine
record (QEP) names an SM; an active-object record (post, get, subscribe, defer, or a time
event's ``ao``) names an AO; pool, queue and time-event records name an MP, an EQ, a TE;
a scheduler record (QS_SCHED_NEXT) names a priority an active object holds. An init
(EVENT 254) is always refused: QP/C asserts (qep_hsm, 200) on a state machine whose
initial transition already ran, and a state machine shows in the records only once it
has (the real DPP dies of it on every one of its state machines).

``Known`` collects what the records show and forgets it at a target reset; ``refusal``
says, for one command, why it would be unsafe, or None. An object or priority the records
never named is unknown, and unknown is refused: the host cannot tell a pool from an
active object, and QP/C 7.4's trace never gives an active object's priority on ports
without scheduler records (the POSIX DPP), so a post goes to an active object by name
there (made current, then posted to the current AO, as QView does).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol.qs import Record
from ..protocol.qs.records import LAYOUTS, TARGET_INFO
from .text import RX_RECORDS

# QP's numbers (qs/rx.py builds with the same): object kinds (QS_ObjKind), and the
# EVENT targets that are no priority.
SM, AO, MP, EQ, TE, AP, SM_AO = range(7)
KIND_NAMES = {SM: "a state machine (SM)", AO: "an active object (AO)", MP: "a memory pool (MP)",
              EQ: "an event queue (EQ)", TE: "a time event (TE)"}  # fmt: skip
EVT_POST_CURR, EVT_INIT, EVT_DISPATCH = 253, 254, 255
RX_AO_FILTER, RX_CURR_OBJ, RX_QUERY_CURR, RX_EVENT = (
    RX_RECORDS.index(f"QS_RX_{name}") for name in ("AO_FILTER", "CURR_OBJ", "QUERY_CURR", "EVENT")
)
SCHED_NEXT = 52
# Objects whose kinds are kept: beyond this many, new addresses are not learned (and
# commands naming them are refused as unknown), so a stream of junk addresses cannot
# grow memory (docs/limits.md).
MAX_KNOWN_OBJECTS = 4096


def _fields(recs: Iterable[int], name: str, kind: int) -> dict[int, tuple[tuple[int, int], ...]]:
    out = {}
    for rec in recs:
        names = [n for n, _k in LAYOUTS[rec]]  # type: ignore[union-attr]
        out[rec] = ((names.index(name), 1 << kind),)
    return out


def _watch() -> dict[int, tuple[tuple[int, int], ...]]:
    """Record id -> (value index, kind bit) of each object field that proves a kind."""
    watch: dict[int, tuple[tuple[int, int], ...]] = {}
    parts = [
        _fields((*range(1, 10), 55, 56, 57), "obj", SM),  # QEP: the state machine
        _fields((10, 11, 12, 13, 14, 15, 16, 17, 18, 45), "obj", AO),  # the active object
        _fields((10, 11, 18), "queue", EQ),  # defer and recall: the deferred queue
        _fields((19, 20, 21, 22, 46), "obj", EQ),
        _fields((24, 25, 47), "obj", MP),
        _fields(range(32, 38), "obj", TE),
        _fields(range(32, 38), "ao", AO),  # the active object a time event posts to
    ]
    for part in parts:
        for rec, found in part.items():
            watch[rec] = watch.get(rec, ()) + found
    return watch


_WATCH = _watch()
_SCHED_PRIO = [n for n, _k in LAYOUTS[SCHED_NEXT]].index("prio")  # type: ignore[union-attr]


class Known:
    """The kinds of the objects the target's records named, and the priorities its
    scheduler records named; fed on the link's reader thread, read by the senders."""

    def __init__(self, limit: int = MAX_KNOWN_OBJECTS) -> None:
        self._lock = threading.Lock()
        self.limit = limit
        self.kinds: dict[int, int] = {}  # address -> bit set of kinds
        self.priorities: set[int] = set()
        self.unlearned = 0  # addresses not kept: the table was full

    def observe(self, events: Iterable[Any]) -> None:
        kinds, watch, limit = self.kinds, _WATCH, self.limit
        with self._lock:
            for e in events:
                if e.__class__ is not Record:
                    continue
                rec = e.rec
                found = watch.get(rec)
                if found is None:
                    if rec in (SCHED_NEXT, TARGET_INFO):
                        self._special(e)
                    continue
                values = e.values
                for index, bit in found:
                    addr = values[index]
                    bits = kinds.get(addr, 0)
                    if bits & bit or not addr:
                        continue  # known already (most records), or no object
                    if not bits and len(kinds) >= limit:
                        self.unlearned += 1
                        continue
                    kinds[addr] = bits | bit

    def _special(self, e: Record) -> None:
        if e.rec == SCHED_NEXT:
            if e.values[_SCHED_PRIO]:
                self.priorities.add(e.values[_SCHED_PRIO])
        elif e.values and e.values[0]:  # a reset target: its objects may have moved
            self.kinds.clear()
            self.priorities.clear()
            self.unlearned = 0

    def is_kind(self, addr: int, kind: int) -> bool:
        with self._lock:
            return bool(self.kinds.get(addr, 0) >> kind & 1)

    def kinds_of(self, addr: int) -> list[int]:
        with self._lock:
            bits = self.kinds.get(addr, 0)
        return [k for k in KIND_NAMES if bits >> k & 1]

    def has_priority(self, prio: int) -> bool:
        with self._lock:
            return prio in self.priorities


def refusal(
    rec: int, payload: bytes, known: Known, current: Mapping[int, int], names: Mapping[int, str],
    ptr_size: int,
) -> str | None:  # fmt: skip
    """Why the command would be unsafe for the target, in one line; None when it is safe.
    ``current`` holds the objects the host made current, by kind; ``names`` the object
    dictionary (for the message)."""
    if rec == RX_CURR_OBJ:
        kind, addr = payload[0], int.from_bytes(payload[1 : 1 + ptr_size], "little")
        needs = (SM, AO) if kind == SM_AO else (kind,) if kind in KIND_NAMES else ()
        return _not_proven(addr, needs, known, names, "made current as")
    if rec == RX_AO_FILTER:
        addr = int.from_bytes(payload[1 : 1 + ptr_size], "little")
        return _not_proven(addr, (AO,), known, names, "filtered as")
    if rec == RX_QUERY_CURR and payload[0] in (SM, AO):
        return _current(payload[0], known, current, names, "queried as")
    if rec != RX_EVENT:
        return None
    prio = payload[0]
    if prio == EVT_POST_CURR:
        return _current(AO, known, current, names, "posted to as")
    if prio == EVT_INIT:
        return (
            "init refused: QP asserts (qep_hsm, 200) on a state machine whose initial "
            "transition already ran, and every one the target's records show has run it"
        )
    if prio == EVT_DISPATCH:
        return _current(SM, known, current, names, "given an event as")
    if prio and not known.has_priority(prio):
        return (
            f"post to priority {prio} refused: the target's records name no active object "
            "at that priority (QP would post through an empty registry slot and crash); "
            "post to an active object by name"
        )
    return None


def _name(addr: int, names: Mapping[int, str]) -> str:
    return names.get(addr) or f"0x{addr:X}"


def _not_proven(
    addr: int, needs: tuple[int, ...], known: Known, names: Mapping[int, str], what: str
) -> str | None:
    if not addr:
        return None  # clearing: the target then answers Trg-ERR, safely
    for kind in needs:
        if known.is_kind(addr, kind):
            continue
        seen = known.kinds_of(addr)
        said = (
            f"its records show it as {' and '.join(KIND_NAMES[k] for k in seen)}"
            if seen
            else "none of the target's records shows what it is"
        )
        if not seen and known.unlearned:
            said += f" (the host keeps the kinds of {known.limit:,} objects: full)"
        return f"{_name(addr, names)} cannot be {what} {KIND_NAMES[kind]}: {said}"
    return None


def _current(
    kind: int, known: Known, current: Mapping[int, int], names: Mapping[int, str], what: str
) -> str | None:
    addr = current.get(kind)
    if not addr:
        label = "SM" if kind == SM else "AO"
        return f"no current {label} object set by this host: make one current first"
    return _not_proven(addr, (kind,), known, names, what)
