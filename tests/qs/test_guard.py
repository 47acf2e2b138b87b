"""qs/guard.py: what the target's records prove it holds, and the refusals (issue 35,
finding 1). The real targets are in test_qspy_real.py, test_qs_scenario.py and
tests/web/test_qs_control.py; these pin the rules themselves."""

from __future__ import annotations

import struct

from mcuprof.protocol.qs import QSConfig, Record
from mcuprof.protocol.qs.records import LAYOUTS
from mcuprof.qs.guard import AO, MP, SM, TE, Known, refusal

POOL, TABLE, TIMER = 0x100, 0x200, 0x300
NAMES = {POOL: "EvtPool1", TABLE: "Table_inst", TIMER: "Table_inst.timeEvt"}


def rec(rec_id: int, *values: int) -> Record:
    names = tuple(n for n, _k in LAYOUTS[rec_id] or ())
    return Record(0, 0, rec_id, None, names, values, QSConfig(), None, b"")  # type: ignore[arg-type]


def event(prio: int) -> bytes:
    return bytes([prio]) + struct.pack("<HH", 5, 0)


def curr(kind: int, addr: int) -> bytes:
    return bytes([kind]) + addr.to_bytes(4, "little")


def why(known: Known, rec_id: int, payload: bytes, current: dict | None = None) -> str | None:
    return refusal(rec_id, payload, known, current or {}, NAMES, 4)


def test_kinds_come_from_the_records_that_name_them() -> None:
    known = Known()
    known.observe([
        rec(8, 1, 5, TABLE, 0x9000),  # a dispatch: Table is an SM
        rec(14, 1, 0, 5, TABLE, 0, 0, 3, 2),  # a post to it: an AO (the sender is not)
        rec(24, 1, POOL, 3, 2),  # MP-Get
        rec(32, 1, TIMER, TABLE, 10, 0, 0),  # TE-Arm: the time event, and its AO
    ])  # fmt: skip
    assert known.kinds_of(TABLE) == [SM, AO] and known.kinds_of(POOL) == [MP]
    assert known.kinds_of(TIMER) == [TE] and known.kinds_of(0) == []
    assert why(known, 13, curr(AO, TABLE)) is None
    assert why(known, 13, curr(6, TABLE)) is None  # SM_AO: both shown
    assert why(known, 13, curr(AO, POOL)) == (
        "EvtPool1 cannot be made current as an active object (AO): its records show it as "
        "a memory pool (MP)"
    )
    assert why(known, 13, curr(5, 0x1234)) is None  # AP: any memory
    assert why(known, 13, curr(SM, 0)) is None  # clearing: the target answers Trg-ERR
    assert "none of the target's records shows" in str(why(known, 12, b"\x00" + curr(0, 0x999)[1:]))
    # Post to current, dispatch, query: as the host's current object is.
    assert why(known, 16, event(253), {AO: TABLE}) is None
    assert "no current AO object" in str(why(known, 16, event(253)))
    assert "Table_inst.timeEvt cannot be given an event as a state machine" in str(
        why(known, 16, event(255), {SM: TIMER})
    )
    assert "init refused: QP asserts" in str(why(known, 16, event(254), {SM: TABLE}))
    assert why(known, 15, bytes([MP]), {}) is None  # a pool query reads counters only
    assert "no current SM" in str(why(known, 15, bytes([SM])))


def test_priorities_come_from_scheduler_records_and_a_reset_forgets() -> None:
    known = Known()
    assert "post to priority 3 refused" in str(why(known, 16, event(3)))
    assert why(known, 16, event(0)) is None  # publish
    known.observe([rec(52, 1, 3, 0), rec(8, 1, 5, TABLE, 0x9000)])  # QS_SCHED_NEXT 3
    assert why(known, 16, event(3)) is None and "priority 4" in str(why(known, 16, event(4)))
    known.observe([rec(64, 0xFF)])  # a reset target: its objects may have moved
    assert known.kinds == {} and "priority 3" in str(why(known, 16, event(3)))


def test_the_table_of_kinds_is_bounded() -> None:
    known = Known(limit=2)
    known.observe([rec(24, 1, a, 3, 2) for a in (POOL, TABLE, TIMER)])
    assert len(known.kinds) == 2 and known.unlearned == 1
    assert "(the host keeps the kinds of 2 objects: full)" in str(why(known, 13, curr(MP, TIMER)))
