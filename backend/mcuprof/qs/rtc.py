"""Run-to-completion steps from decoded QS records: pure functions, no I/O.

A step starts at a dispatch (QS_QEP_DISPATCH: object, signal, current state, time) and
ends at the object's next record that closes it: a transition, an internal transition or
an ignored event (each timestamped). QS_QEP_UNHANDLED (no timestamp) only says the event
went up to a superstate on the way; the step goes on. Steps are kept per object, so an
active object preempted by another (QK) still gets its own step. A dispatch that never
ends (cut stream, lost frames) is counted as unfinished, never timed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..protocol.qs import QSEvent, Record
from .text import names_for

DISPATCH, INTERN, TRAN, IGNORED, UNHANDLED = 8, 5, 6, 7, 9
OUTCOME = {INTERN: "internal", TRAN: "transition", IGNORED: "ignored"}


@dataclass(frozen=True, slots=True)
class RtcStep:
    """One RTC step; ``duration`` is in target timestamp units (wrap-around handled)."""

    obj: str
    state: str
    signal: str
    start: int
    duration: int
    outcome: str
    unhandled: int  # superstates the event passed through unhandled
    index: int  # stream index of the dispatch


@dataclass
class RtcSteps:
    steps: list[RtcStep] = field(default_factory=list)
    unfinished: int = 0


class RtcTracker:
    """``rtc_steps`` fed in batches (live streams): each ``feed`` returns the steps its
    events closed; a dispatch still open waits for the next batch."""

    def __init__(self) -> None:
        self.pending: dict[int, tuple[Record, int]] = {}
        self.unfinished = 0  # dispatches a second dispatch of the same object overtook

    def feed(self, events: Iterable[QSEvent]) -> list[RtcStep]:
        out: list[RtcStep] = []
        pending = self.pending
        for e in events:
            if e.__class__ is not Record:
                continue
            rec = e.rec
            if rec == DISPATCH:
                _, sig, obj, state = e.values
                if obj in pending:
                    self.unfinished += 1
                pending[obj] = (e, 0)
            elif rec == UNHANDLED:
                obj = e.values[1]
                if obj in pending:
                    start, hops = pending[obj]
                    pending[obj] = (start, hops + 1)
            elif rec in OUTCOME:
                obj = e.values[2]
                began = pending.pop(obj, None)
                if began is None:
                    continue
                start, hops = began
                _, sig, _, state = start.values
                names = names_for(start)
                wrap = 1 << (8 * start.config.tstamp_size)
                out.append(
                    RtcStep(
                        names.obj(obj),
                        names.fun(state),
                        names.sig(sig, obj),
                        start.timestamp,
                        (e.timestamp - start.timestamp) % wrap,
                        OUTCOME[rec],
                        hops,
                        start.index,
                    )
                )
        return out


def rtc_steps(events: Iterable[QSEvent]) -> RtcSteps:
    tracker = RtcTracker()
    steps = tracker.feed(events)
    return RtcSteps(steps, tracker.unfinished + len(tracker.pending))


@dataclass(frozen=True, slots=True)
class RtcRow:
    obj: str
    state: str
    signal: str
    count: int
    total: int
    min: int
    max: int
    outcomes: tuple[tuple[str, int], ...]

    @property
    def mean(self) -> float:
        return self.total / self.count


def rtc_table(steps: Iterable[RtcStep]) -> list[RtcRow]:
    """Per (object, state, signal): count and total/min/max time; largest total first."""
    groups: dict[tuple[str, str, str], list[RtcStep]] = {}
    for s in steps:
        groups.setdefault((s.obj, s.state, s.signal), []).append(s)
    rows = []
    for (obj, state, signal), group in groups.items():
        durations = [s.duration for s in group]
        outcomes = Counter(s.outcome for s in group)
        rows.append(
            RtcRow(
                obj,
                state,
                signal,
                len(group),
                sum(durations),
                min(durations),
                max(durations),
                tuple(sorted(outcomes.items())),
            )
        )
    rows.sort(key=lambda r: (-r.total, r.obj, r.state, r.signal))
    return rows


def folded(rows: Iterable[RtcRow]) -> Iterator[str]:
    """``object;state;signal total`` lines: flamegraph.pl and speedscope read them."""
    for r in rows:
        frames = ";".join(part.replace(";", ":") for part in (r.obj, r.state, r.signal))
        yield f"{frames} {r.total}"
