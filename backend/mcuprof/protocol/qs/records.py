"""QP 7.4's predefined QS records (0-80): names, groups and data layouts.

A layout lists the fields after the record id, in order, as (name, kind). Kinds whose
size the target decides: ``ts`` timestamp, ``obj``/``fun`` pointers, ``sig`` signal,
``evt`` event size, ``qctr``/``pctr``/``tctr`` queue, pool and time-event counters.
Fixed kinds: ``u8``, ``u16``, ``u32``; ``str`` is NUL-terminated. Records with a layout
that depends on their own content (query, peek, target info) have ``None`` and are
decoded by hand in decoder.py. The layouts are those of QP/C 7.x as QSPY 7.4 reads them.
"""

from __future__ import annotations

import struct

USER_FIRST = 100

# (name, group) per record id, 0-80.
RECORDS: tuple[tuple[str, str], ...] = (
    ("QS_EMPTY", "INF"),
    ("QS_QEP_STATE_ENTRY", "SM"),
    ("QS_QEP_STATE_EXIT", "SM"),
    ("QS_QEP_STATE_INIT", "SM"),
    ("QS_QEP_INIT_TRAN", "SM"),
    ("QS_QEP_INTERN_TRAN", "SM"),
    ("QS_QEP_TRAN", "SM"),
    ("QS_QEP_IGNORED", "SM"),
    ("QS_QEP_DISPATCH", "SM"),
    ("QS_QEP_UNHANDLED", "SM"),
    ("QS_QF_ACTIVE_DEFER", "AO"),
    ("QS_QF_ACTIVE_RECALL", "AO"),
    ("QS_QF_ACTIVE_SUBSCRIBE", "AO"),
    ("QS_QF_ACTIVE_UNSUBSCRIBE", "AO"),
    ("QS_QF_ACTIVE_POST", "AO"),
    ("QS_QF_ACTIVE_POST_LIFO", "AO"),
    ("QS_QF_ACTIVE_GET", "AO"),
    ("QS_QF_ACTIVE_GET_LAST", "AO"),
    ("QS_QF_ACTIVE_RECALL_ATTEMPT", "AO"),
    ("QS_QF_EQUEUE_POST", "EQ"),
    ("QS_QF_EQUEUE_POST_LIFO", "EQ"),
    ("QS_QF_EQUEUE_GET", "EQ"),
    ("QS_QF_EQUEUE_GET_LAST", "EQ"),
    ("QS_QF_NEW_ATTEMPT", "QF"),
    ("QS_QF_MPOOL_GET", "MP"),
    ("QS_QF_MPOOL_PUT", "MP"),
    ("QS_QF_PUBLISH", "QF"),
    ("QS_QF_NEW_REF", "QF"),
    ("QS_QF_NEW", "QF"),
    ("QS_QF_GC_ATTEMPT", "QF"),
    ("QS_QF_GC", "QF"),
    ("QS_QF_TICK", "QF"),
    ("QS_QF_TIMEEVT_ARM", "TE"),
    ("QS_QF_TIMEEVT_AUTO_DISARM", "TE"),
    ("QS_QF_TIMEEVT_DISARM_ATTEMPT", "TE"),
    ("QS_QF_TIMEEVT_DISARM", "TE"),
    ("QS_QF_TIMEEVT_REARM", "TE"),
    ("QS_QF_TIMEEVT_POST", "TE"),
    ("QS_QF_DELETE_REF", "QF"),
    ("QS_QF_CRIT_ENTRY", "QF"),
    ("QS_QF_CRIT_EXIT", "QF"),
    ("QS_QF_ISR_ENTRY", "QF"),
    ("QS_QF_ISR_EXIT", "QF"),
    ("QS_QF_INT_DISABLE", "QF"),
    ("QS_QF_INT_ENABLE", "QF"),
    ("QS_QF_ACTIVE_POST_ATTEMPT", "AO"),
    ("QS_QF_EQUEUE_POST_ATTEMPT", "EQ"),
    ("QS_QF_MPOOL_GET_ATTEMPT", "MP"),
    ("QS_SCHED_PREEMPT", "SC"),
    ("QS_SCHED_RESTORE", "SC"),
    ("QS_SCHED_LOCK", "SC"),
    ("QS_SCHED_UNLOCK", "SC"),
    ("QS_SCHED_NEXT", "SC"),
    ("QS_SCHED_IDLE", "SC"),
    ("QS_ENUM_DICT", "DIC"),
    ("QS_QEP_TRAN_HIST", "SM"),
    ("QS_QEP_TRAN_EP", "SM"),
    ("QS_QEP_TRAN_XP", "SM"),
    ("QS_TEST_PAUSED", "TST"),
    ("QS_TEST_PROBE_GET", "TST"),
    ("QS_SIG_DICT", "DIC"),
    ("QS_OBJ_DICT", "DIC"),
    ("QS_FUN_DICT", "DIC"),
    ("QS_USR_DICT", "DIC"),
    ("QS_TARGET_INFO", "INF"),
    ("QS_TARGET_DONE", "TST"),
    ("QS_RX_STATUS", "TST"),
    ("QS_QUERY_DATA", "TST"),
    ("QS_PEEK_DATA", "TST"),
    ("QS_ASSERT_FAIL", "ERR"),
    ("QS_QF_RUN", "INF"),
    ("QS_SEM_TAKE", "SEM"),
    ("QS_SEM_BLOCK", "SEM"),
    ("QS_SEM_SIGNAL", "SEM"),
    ("QS_SEM_BLOCK_ATTEMPT", "SEM"),
    ("QS_MTX_LOCK", "MTX"),
    ("QS_MTX_BLOCK", "MTX"),
    ("QS_MTX_UNLOCK", "MTX"),
    ("QS_MTX_LOCK_ATTEMPT", "MTX"),
    ("QS_MTX_BLOCK_ATTEMPT", "MTX"),
    ("QS_MTX_UNLOCK_ATTEMPT", "MTX"),
)
PREDEFINED_LAST = len(RECORDS) - 1  # 80

# Record ids the decoder treats specially.
EMPTY, TARGET_INFO, QF_RUN = 0, 64, 70
SIG_DICT, OBJ_DICT, FUN_DICT, USR_DICT, ENUM_DICT = 60, 61, 62, 63, 54
QUERY_DATA, PEEK_DATA = 67, 68


def record_name(rec: int) -> str:
    if rec <= PREDEFINED_LAST:
        return RECORDS[rec][0]
    if rec >= USER_FIRST:
        return f"USER+{rec - USER_FIRST:03d}"
    return f"QS_RESERVED_{rec}"


def record_group(rec: int) -> str:
    if rec <= PREDEFINED_LAST:
        return RECORDS[rec][1]
    return "U" if rec >= USER_FIRST else "ERR"


def _l(spec: str) -> tuple[tuple[str, str], ...]:
    """'ts obj state:fun' -> (('ts','ts'), ('obj','obj'), ('state','fun'))."""
    out = []
    for item in spec.split():
        name, _, kind = item.partition(":")
        out.append((name, kind or name))
    return tuple(out)


_EVT = "pool:u8 ref:u8"
_POST = f"ts sender:obj sig obj {_EVT} free:qctr min:qctr"
_QPOST = f"ts sig obj {_EVT} free:qctr min:qctr"

LAYOUTS: dict[int, tuple[tuple[str, str], ...] | None] = {
    0: (),
    1: _l("obj state:fun"),
    2: _l("obj state:fun"),
    3: _l("obj source:fun target:fun"),
    4: _l("ts obj state:fun"),
    5: _l("ts sig obj state:fun"),
    6: _l("ts sig obj source:fun target:fun"),
    7: _l("ts sig obj state:fun"),
    8: _l("ts sig obj state:fun"),
    9: _l("sig obj state:fun"),
    10: _l(f"ts obj queue:obj sig {_EVT}"),
    11: _l(f"ts obj queue:obj sig {_EVT}"),
    12: _l("ts sig obj"),
    13: _l("ts sig obj"),
    14: _l(_POST),
    15: _l(_QPOST),
    16: _l(f"ts sig obj {_EVT} free:qctr"),
    17: _l(f"ts sig obj {_EVT}"),
    18: _l("ts obj queue:obj"),
    19: _l(_QPOST),
    20: _l(_QPOST),
    21: _l(f"ts sig obj {_EVT} free:qctr"),
    22: _l(f"ts sig obj {_EVT}"),
    23: _l("ts size:evt sig"),
    24: _l("ts obj free:pctr min:pctr"),
    25: _l("ts obj free:pctr"),
    26: _l(f"ts sender:obj sig {_EVT}"),
    27: _l(f"ts sig {_EVT}"),
    28: _l("ts size:evt sig"),
    29: _l(f"ts sig {_EVT}"),
    30: _l(f"ts sig {_EVT}"),
    31: _l("ctr:tctr rate:u8"),
    32: _l("ts obj ao:obj tim:tctr interval:tctr rate:u8"),
    33: _l("obj ao:obj rate:u8"),
    34: _l("ts obj ao:obj rate:u8"),
    35: _l("ts obj ao:obj tim:tctr interval:tctr rate:u8"),
    36: _l("ts obj ao:obj tim:tctr interval:tctr was:u8 rate:u8"),
    37: _l("ts obj sig ao:obj rate:u8"),
    38: _l(f"ts sig {_EVT}"),
    39: _l("ts nest:u8"),
    40: _l("ts nest:u8"),
    41: _l("ts nest:u8 prio:u8"),
    42: _l("ts nest:u8 prio:u8"),
    # QP 7.4 never sends 43/44 and QSPY reports them as unknown: only the timestamp
    # is certain, the rest stays raw bytes.
    43: _l("ts data:rest"),
    44: _l("ts data:rest"),
    45: _l(_POST),
    46: _l(_QPOST),
    47: _l("ts obj free:pctr margin:pctr"),
    48: _l("ts prio:u8 prev:u8"),
    49: _l("ts prio:u8 prev:u8"),
    50: _l("ts prev:u8 ceiling:u8"),
    51: _l("ts prev:u8 ceiling:u8"),
    52: _l("ts prio:u8 prev:u8"),
    53: _l("ts prev:u8"),
    54: _l("value:u8 group:u8 symbol:str"),
    55: _l("obj source:fun target:fun"),
    56: _l("obj source:fun target:fun"),
    57: _l("obj source:fun target:fun"),
    58: (),
    59: _l("ts fun data:u32"),
    60: _l("sig obj symbol:str"),
    61: _l("obj symbol:str"),
    62: _l("fun symbol:str"),
    63: _l("user_rec:u8 symbol:str"),
    64: None,
    65: _l("ts rx:u8"),
    66: _l("status:u8"),
    67: None,
    68: None,
    69: _l("ts loc:u16 module:str"),
    70: (),
    71: _l("ts obj thread:u8 counter:u8"),
    72: _l("ts obj thread:u8 counter:u8"),
    73: _l("ts obj thread:u8 counter:u8"),
    74: _l("ts obj thread:u8 counter:u8"),
    75: _l("ts obj holder:u8 nest:u8"),
    76: _l("ts obj holder:u8 thread:u8"),
    77: _l("ts obj holder:u8 nest:u8"),
    78: _l("ts obj holder:u8 nest:u8"),
    79: _l("ts obj holder:u8 thread:u8"),
    80: _l("ts obj holder:u8 nest:u8"),
}

_SIZE_ATTR = {
    "ts": "tstamp_size",
    "obj": "obj_ptr_size",
    "fun": "fun_ptr_size",
    "sig": "sig_size",
    "evt": "evt_size",
    "qctr": "queue_ctr_size",
    "pctr": "pool_ctr_size",
    "tctr": "tevt_ctr_size",
}
_FIXED = {"u8": 1, "u16": 2, "u32": 4}
_CODE = {1: "B", 2: "H", 4: "I", 8: "Q"}


class Compiled:
    """A layout bound to one config: one ``struct`` for the fixed-size prefix, then
    an optional string or rest-of-record field."""

    __slots__ = ("has_ts", "names", "size", "struct", "tail")

    def __init__(self, layout: tuple[tuple[str, str], ...], config: object) -> None:
        codes = []
        names = []
        self.tail: tuple[str, str] | None = None
        for name, kind in layout:
            if kind in ("str", "rest"):
                self.tail = (name, kind)
                break
            size = _FIXED.get(kind) or getattr(config, _SIZE_ATTR[kind])
            if size not in _CODE:
                raise ValueError(f"unsupported {kind} size {size}")
            codes.append(_CODE[size])
            names.append(name)
        self.struct = struct.Struct("<" + "".join(codes))
        self.size = self.struct.size
        self.has_ts = bool(layout) and layout[0][1] == "ts"
        self.names = tuple(names) + ((self.tail[0],) if self.tail else ())


def compile_layouts(config: object) -> dict[int, Compiled | str]:
    """Every fixed layout for ``config``; a record whose sizes the config cannot
    express maps to the error message instead."""
    out: dict[int, Compiled | str] = {}
    for rec, layout in LAYOUTS.items():
        if layout is None:
            continue
        try:
            out[rec] = Compiled(layout, config)
        except ValueError as exc:
            out[rec] = str(exc)
    return out
