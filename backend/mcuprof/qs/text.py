"""QSPY's human-readable lines for decoded QS events.

Each record renders with the sizes and dictionaries it carries (those in force when it
arrived), so the output matches QSPY 7.4 line for line for the same stream. The
formats are QSPY's: a 10-digit timestamp column (11 blanks for records without one,
``===RTC===>`` for state-machine steps inside an RTC), an 8-column label, then
``Obj=``/``Sig=``/``State=`` fields with dictionary names where known.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from ..protocol.qs import (
    QUERY_KINDS,
    USER_FIRST,
    BadFrame,
    Discontinuity,
    Malformed,
    QSEvent,
    Record,
    UserArg,
    record_name,
)

log = logging.getLogger("mcuprof.qs")

# Answers each Names memo keeps per kind (objects, functions, signals). Past it the
# memo starts over: the names stay right, only their lookups are made again.
NAME_MEMO = 4096
BLANK = " " * 10
RTC = "===RTC===>"
COMMS = "   <COMMS> ERROR    "
# QS-RX record names, for target acknowledgements.
RX_RECORDS = (
    "QS_RX_INFO",
    "QS_RX_COMMAND",
    "QS_RX_RESET",
    "QS_RX_TICK",
    "QS_RX_PEEK",
    "QS_RX_POKE",
    "QS_RX_FILL",
    "QS_RX_TEST_SETUP",
    "QS_RX_TEST_TEARDOWN",
    "QS_RX_TEST_PROBE",
    "QS_RX_GLB_FILTER",
    "QS_RX_LOC_FILTER",
    "QS_RX_AO_FILTER",
    "QS_RX_CURR_OBJ",
    "QS_RX_TEST_CONTINUE",
    "QS_RX_QUERY_CURR",
    "QS_RX_EVENT",
)


class Names:
    """Dictionary lookups for one set of dictionaries and sizes, with QSPY's fallbacks
    for unknown keys. Answers are memoised: a trace names the same few objects,
    states and signals over and over. A target posting from ever new addresses would
    grow the memo without end, so it holds at most NAME_MEMO answers per kind."""

    __slots__ = ("_fun", "_obj", "_sig", "cfg", "d")
    memo_resets = 0  # all Names together: how often a memo was full and started over

    def __init__(self, record: Record) -> None:
        self.d = record.dicts
        self.cfg = record.config
        self._obj: dict[int, str] = {}
        self._fun: dict[int, str] = {}
        self._sig: dict[int, str] = {}

    def _hex(self, key: int, size: int) -> str:
        return f"0x{key:016X}" if size > 4 else f"0x{key:08X}"

    def obj(self, ptr: int) -> str:
        name = self._obj.get(ptr)
        if name is None:
            name = "NULL" if ptr == 0 else self.d.obj.get(ptr)
            if name is None:
                name = self._hex(ptr, self.cfg.obj_ptr_size)
            _memo(self._obj, ptr, name)
        return name

    def fun(self, ptr: int) -> str:
        name = self._fun.get(ptr)
        if name is None:
            name = "NULL" if ptr == 0 else self.d.fun.get(ptr)
            if name is None:
                name = self._hex(ptr, self.cfg.fun_ptr_size)
            _memo(self._fun, ptr, name)
        return name

    def sig(self, sig: int, obj: int) -> str:
        key = (obj << 32) | sig
        name = self._sig.get(key)
        if name is None:
            name = "NULL" if sig == 0 else self.d.sig_name(sig, obj)
            if name is None:
                name = f"{sig:08d},Obj={self._hex(obj, self.cfg.obj_ptr_size)}"
            _memo(self._sig, key, name)
        return name

    def enum(self, group: int, value: int) -> str:
        name = self.d.enum.get((group, value))
        return name if name is not None else f"{value:03d}"


def _memo(memo: dict, key: int, name: str) -> None:
    if len(memo) >= NAME_MEMO:
        memo.clear()
        Names.memo_resets += 1
        n = Names.memo_resets
        if n & (n - 1) == 0:  # 1, 2, 4, 8...: seen in the log, without flooding it
            log.info(
                "QS names: a memo of %d names was full and started over (%d times)", NAME_MEMO, n
            )
    memo[key] = name


def _ts(r: Record) -> str:
    return f"{r.timestamp:010d}"


def _evt(n: Names, sig: int, obj: int, pool: int, ref: int) -> str:
    return f"Evt<Sig={n.sig(sig, obj)},Pool={pool},Ref={ref}>"


# One function per record id: (record, names) -> the line after the timestamp column.
Render = Callable[[Record, Names], str]
_R: dict[int, Render] = {}


def _on(*recs: int) -> Callable[[Render], Render]:
    def deco(fn: Render) -> Render:
        for rec in recs:
            _R[rec] = fn
        return fn

    return deco


_ST_LABEL = {
    1: "St-Entry",
    2: "St-Exit ",
    3: "St-Init ",
    55: "St-Hist ",
    56: "St-EP   ",
    57: "St-XP   ",
}


@_on(1, 2)
def _state(r: Record, n: Names) -> str:
    obj, state = r.values
    return f"{RTC} {_ST_LABEL[r.rec]} Obj={n.obj(obj)},State={n.fun(state)}"


@_on(3, 55, 56, 57)
def _state_tran(r: Record, n: Names) -> str:
    obj, src, dst = r.values
    return f"{RTC} {_ST_LABEL[r.rec]} Obj={n.obj(obj)},State={n.fun(src)}->{n.fun(dst)}"


@_on(4)
def _init_tran(r: Record, n: Names) -> str:
    _, obj, state = r.values
    return f"{_ts(r)} Init===> Obj={n.obj(obj)},State={n.fun(state)}"


_SM_LABEL = {5: "=>Intern", 7: "=>Ignore", 8: "Disp===>"}


@_on(5, 7, 8)
def _sm_sig(r: Record, n: Names) -> str:
    _, sig, obj, state = r.values
    return (
        f"{_ts(r)} {_SM_LABEL[r.rec]} Obj={n.obj(obj)},Sig={n.sig(sig, obj)},State={n.fun(state)}"
    )


@_on(6)
def _tran(r: Record, n: Names) -> str:
    _, sig, obj, src, dst = r.values
    return (
        f"{_ts(r)} ===>Tran Obj={n.obj(obj)},Sig={n.sig(sig, obj)},State={n.fun(src)}->{n.fun(dst)}"
    )


@_on(9)
def _unhandled(r: Record, n: Names) -> str:
    sig, obj, state = r.values
    return f"{RTC} St-Unhnd Obj={n.obj(obj)},Sig={n.sig(sig, obj)},State={n.fun(state)}"


@_on(10, 11)
def _defer(r: Record, n: Names) -> str:
    _, obj, queue, sig, pool, ref = r.values
    label = "Defer" if r.rec == 10 else "RCall"
    return f"{_ts(r)} AO-{label} Obj={n.obj(obj)},Que={n.obj(queue)},{_evt(n, sig, obj, pool, ref)}"


@_on(12, 13)
def _subscribe(r: Record, n: Names) -> str:
    _, sig, obj = r.values
    label = "Subsc" if r.rec == 12 else "Unsub"
    return f"{_ts(r)} AO-{label} Obj={n.obj(obj)},Sig={n.sig(sig, obj)}"


@_on(14, 45)
def _ao_post(r: Record, n: Names) -> str:
    _, sender, sig, obj, pool, ref, free, least = r.values
    label, mark = ("Post ", "Min") if r.rec == 14 else ("PostA", "Mar")
    return (
        f"{_ts(r)} AO-{label} Sdr={n.obj(sender)},Obj={n.obj(obj)},"
        f"{_evt(n, sig, obj, pool, ref)},Que<Free={free},{mark}={least}>"
    )


@_on(15)
def _ao_lifo(r: Record, n: Names) -> str:
    _, sig, obj, pool, ref, free, least = r.values
    return (
        f"{_ts(r)} AO-LIFO  Obj={n.obj(obj)},{_evt(n, sig, obj, pool, ref)},"
        f"Que<Free={free},Min={least}>"
    )


@_on(16, 21)
def _get(r: Record, n: Names) -> str:
    _, sig, obj, pool, ref, free = r.values
    label = "AO-Get  " if r.rec == 16 else "EQ-Get  "
    return f"{_ts(r)} {label} Obj={n.obj(obj)},{_evt(n, sig, obj, pool, ref)},Que<Free={free}>"


@_on(17, 22)
def _get_last(r: Record, n: Names) -> str:
    _, sig, obj, pool, ref = r.values
    label = "AO-GetL " if r.rec == 17 else "EQ-GetL "
    return f"{_ts(r)} {label} Obj={n.obj(obj)},{_evt(n, sig, obj, pool, ref)}"


@_on(18)
def _recall_attempt(r: Record, n: Names) -> str:
    _, obj, queue = r.values
    return f"{_ts(r)} AO-RCllA Obj={n.obj(obj)},Que={n.obj(queue)}"


_EQ_LABEL = {19: ("Post ", "Min"), 46: ("PostA", "Mar"), 20: ("LIFO", "Min")}


@_on(19, 20, 46)
def _eq_post(r: Record, n: Names) -> str:
    _, sig, obj, pool, ref, free, least = r.values
    label, mark = _EQ_LABEL[r.rec]
    return (
        f"{_ts(r)} EQ-{label} Obj={n.obj(obj)},{_evt(n, sig, obj, pool, ref)},"
        f"Que<Free={free},{mark}={least}>"
    )


@_on(23, 28)
def _new(r: Record, n: Names) -> str:
    _, size, sig = r.values
    label = "QF-NewA " if r.rec == 23 else "QF-New  "
    return f"{_ts(r)} {label} Sig={n.sig(sig, 0)},Size={size}"


@_on(24, 47)
def _mp_get(r: Record, n: Names) -> str:
    _, obj, free, least = r.values
    label, mark = ("Get  ", "Min") if r.rec == 24 else ("GetA ", "Mar")
    return f"{_ts(r)} MP-{label} Obj={n.obj(obj)},Free={free},{mark}={least}"


@_on(25)
def _mp_put(r: Record, n: Names) -> str:
    _, obj, free = r.values
    return f"{_ts(r)} MP-Put   Obj={n.obj(obj)},Free={free}"


@_on(26)
def _publish(r: Record, n: Names) -> str:
    _, sender, sig, pool, ref = r.values
    return f"{_ts(r)} QF-Pub   Sdr={n.obj(sender)},{_evt(n, sig, 0, pool, ref)}"


_REF_LABEL = {27: "QF-NewRf", 38: "QF-DelRf", 29: "QF-gcA  ", 30: "QF-gc   "}


@_on(27, 29, 30, 38)
def _ref(r: Record, n: Names) -> str:
    _, sig, pool, ref = r.values
    return f"{_ts(r)} {_REF_LABEL[r.rec]} {_evt(n, sig, 0, pool, ref)}"


@_on(31)
def _tick(r: Record, n: Names) -> str:
    ctr, rate = r.values
    return f"{BLANK} Tick<{rate:1d}>  Ctr={ctr:010d}"


@_on(32, 35)
def _te_arm(r: Record, n: Names) -> str:
    _, obj, ao, tim, interval, rate = r.values
    label = "Arm " if r.rec == 32 else "Dis "
    return f"{_ts(r)} TE{rate:1d}-{label} Obj={n.obj(obj)},AO={n.obj(ao)},Tim={tim},Int={interval}"


@_on(33)
def _te_auto_disarm(r: Record, n: Names) -> str:
    obj, ao, rate = r.values
    return f"{BLANK} TE{rate:1d}-ADis Obj={n.obj(obj)},AO={n.obj(ao)}"


@_on(34)
def _te_disarm_attempt(r: Record, n: Names) -> str:
    _, obj, ao, rate = r.values
    return f"{_ts(r)} TE{rate:1d}-DisA Obj={n.obj(obj)},AO={n.obj(ao)}"


@_on(36)
def _te_rearm(r: Record, n: Names) -> str:
    _, obj, ao, tim, interval, was, rate = r.values
    return (
        f"{_ts(r)} TE{rate:1d}-Rarm Obj={n.obj(obj)},AO={n.obj(ao)},"
        f"Tim={tim},Int={interval},Was={was:1d}"
    )


@_on(37)
def _te_post(r: Record, n: Names) -> str:
    _, obj, sig, ao, rate = r.values
    return f"{_ts(r)} TE{rate:1d}-Post Obj={n.obj(obj)},Sig={n.sig(sig, ao)},AO={n.obj(ao)}"


@_on(39, 40)
def _crit(r: Record, n: Names) -> str:
    _, nest = r.values
    return f"{_ts(r)} {'QF-CritE' if r.rec == 39 else 'QF-CritX'} Nest={nest}"


@_on(41, 42)
def _isr(r: Record, n: Names) -> str:
    _, nest, prio = r.values
    return f"{_ts(r)} {'QF-IsrE' if r.rec == 41 else 'QF-IsrX'}  Nest={nest},Pri={prio}"


@_on(43, 44)
def _unknown_int(r: Record, n: Names) -> str:
    return f"{BLANK} Unknown Rec={r.rec},Len={len(r.raw) - 3}"


@_on(48, 49, 52)
def _sched_prio(r: Record, n: Names) -> str:
    _, prio, prev = r.values
    label = {48: "Sch-Pre ", 49: "Sch-Rest", 52: "Sch-Next"}[r.rec]
    return f"{_ts(r)} {label} Pri={prev}->{prio}"


@_on(50, 51)
def _sched_lock(r: Record, n: Names) -> str:
    _, prev, ceiling = r.values
    label = "Sch-Lock" if r.rec == 50 else "Sch-Unlk"
    return f"{_ts(r)} {label} Ceil={prev}->{ceiling}"


@_on(53)
def _sched_idle(r: Record, n: Names) -> str:
    _, prev = r.values
    return f"{_ts(r)} Sch-Idle Pri={prev}->0"


@_on(54)
def _enum_dict(r: Record, n: Names) -> str:
    value, group, name = r.values
    return f"{BLANK} Enum-Dic {value:03d},Grp={group & 7:1d}->{name}"


@_on(58)
def _paused(r: Record, n: Names) -> str:
    return f"{BLANK} TstPause"


@_on(59)
def _probe(r: Record, n: Names) -> str:
    _, fun, data = r.values
    signed = data - (1 << 32) if data & 0x8000_0000 else data
    return f"{_ts(r)} TstProbe Fun={n.fun(fun)},Data={signed}"


@_on(60)
def _sig_dict(r: Record, n: Names) -> str:
    sig, obj, name = r.values
    return f"{BLANK} Sig-Dict {sig:08d},Obj={n._hex(obj, r.config.obj_ptr_size)}->{name}"


@_on(61)
def _obj_dict(r: Record, n: Names) -> str:
    obj, name = r.values
    return f"{BLANK} Obj-Dict {n._hex(obj, r.config.obj_ptr_size)}->{name}"


@_on(62)
def _fun_dict(r: Record, n: Names) -> str:
    fun, name = r.values
    return f"{BLANK} Fun-Dict {n._hex(fun, r.config.fun_ptr_size)}->{name}"


@_on(63)
def _usr_dict(r: Record, n: Names) -> str:
    rec, name = r.values
    return f"{BLANK} Usr-Dict {rec:08d}->{name}"


@_on(64)
def _target_info(r: Record, n: Names) -> str:
    is_reset, word, target = r.values
    label = "Trg-RST " if is_reset else "Trg-Info"
    return f"{BLANK} {label} QP-Ver={word},Build={target.build_stamp}"


@_on(65)
def _done(r: Record, n: Names) -> str:
    _, rx = r.values
    name = RX_RECORDS[rx] if rx < len(RX_RECORDS) else str(rx)
    return f"{_ts(r)} Trg-Done {name}"


@_on(66)
def _rx_status(r: Record, n: Names) -> str:
    (status,) = r.values
    if status < 128:
        name = RX_RECORDS[status] if status < len(RX_RECORDS) else str(status)
        return f"{BLANK} Trg-Ack  {name}"
    status &= 0x7F
    name = RX_RECORDS[status] if status < len(RX_RECORDS) else f"0x{status:02X}"
    return f"{BLANK} Trg-ERR  {name}"


@_on(67)
def _query(r: Record, n: Names) -> str:
    f = r.fields
    kind = QUERY_KINDS[f["kind"]] if f["kind"] < len(QUERY_KINDS) else str(f["kind"])
    line = f"{_ts(r)} Query-{kind} Obj={n.obj(f['obj'])}"
    if kind in ("SM", "AO"):
        line += f",State={n.fun(f['state'])}"
    elif kind == "MP":
        line += f",Free={f['free']},Min={f['min']}"
    elif kind == "EQ":
        line += f",Que<Free={f['free']},Min={f['min']}>"
    elif kind == "TE":
        line += (
            f",Rate={f['flags'] & 0x0F},Sig={n.sig(f['sig'], f['ao'])},"
            f"Tim={f['tim']},Int={f['interval']},Flags=0x{f['flags'] & 0xF0:02X}"
        )
    return line


@_on(68)
def _peek(r: Record, n: Names) -> str:
    _, offset, size, items = r.values
    digits = 2 * size
    data = ",".join(f"{v:0{digits}X}" for v in items)
    return f"{_ts(r)} Trg-Peek Offs={offset},Size={size},Num={len(items)},Data=<{data}>"


@_on(69)
def _assert(r: Record, n: Names) -> str:
    _, loc, module = r.values
    return f"{_ts(r)} =ASSERT= Mod={module},Loc={loc}"


@_on(70)
def _run(r: Record, n: Names) -> str:
    return f"{BLANK} QF_RUN"


_SEM_LABEL = {71: "Sem-Take", 72: "Sem-Blk ", 73: "Sem-Sgnl", 74: "Sem-BlkA"}


@_on(71, 72, 73, 74)
def _sem(r: Record, n: Names) -> str:
    _, obj, thread, counter = r.values
    return f"{_ts(r)} {_SEM_LABEL[r.rec]} {n.obj(obj)},Thr={thread},Cnt={counter}"


_MTX_LABEL = {
    75: ("Mtx-Lock", "Nest"),
    76: ("Mtx-Blk ", "Thr"),
    77: ("Mtx-Unlk", "Nest"),
    78: ("Mtx-LckA", "Nest"),
    79: ("Mtx-BlkA", "Thr"),
    80: ("Mtx-UlkA", "Nest"),
}


@_on(75, 76, 77, 78, 79, 80)
def _mtx(r: Record, n: Names) -> str:
    _, obj, holder, other = r.values
    label, what = _MTX_LABEL[r.rec]
    return f"{_ts(r)} {label} {n.obj(obj)},Hldr={holder},{what}={other}"


# ------------------------------------------------------------ application records

_ILFMT = tuple(f"%{w}d" if w != 20 else "%d" for w in range(2, 33, 2))
_ULFMT = tuple(f"%{w}d" for w in range(2, 33, 2))
_EFMT = ("%7.0e", "%9.1e", *(f"%{10 + i}.{2 + i}e" for i in range(14)))
_HEX_WIDTH = {"U8": 2, "U16": 4, "U32": 8}
HEX = 0xF


def _user_arg(a: UserArg, n: Names) -> str:
    kind, w, v = a.kind, a.width, a.value
    if kind in ("I8", "I16", "I32", "U8", "U16", "U32"):
        if kind[0] == "U" and w == HEX:
            return f"0x{v:0{_HEX_WIDTH[kind]}X}"
        return f"{v:{w}d}" if w else f"{v}"
    if kind == "HEX32":
        return f"0x{v:0{w}X}" if w else f"0x{v:X}"
    if kind == "ENUM":
        return n.enum(a.group, v)
    if kind in ("F32", "F64"):
        return _EFMT[w] % v
    if kind == "I64":
        return _ILFMT[w] % v
    if kind == "U64":
        return f"0x{v:16X}" if w == HEX else _ULFMT[w] % v
    if kind == "STR":
        return v if v else "''"
    if kind == "MEM":
        return "".join(f" {b:02X}" for b in v)
    if kind == "SIG":
        sig, obj = v
        return f"{n.sig(sig, obj)},Obj={n.obj(obj)}" if obj else n.sig(sig, obj)
    if kind == "OBJ":
        return n.obj(v)
    return n.fun(v)


def _user(r: Record, n: Names) -> str:
    name = r.dicts.usr.get(r.rec)
    label = name if name is not None else f"USER+{r.rec - USER_FIRST:03d}"
    parts = [f"{_ts(r)} {label}"]
    parts.extend(_user_arg(a, n) for a in r.values[0])
    return " ".join(parts)


# ------------------------------------------------------------ entry points


_last_names: list[Names] = []


def names_for(record: Record) -> Names:
    """Consecutive records nearly always share their dictionaries and sizes."""
    if _last_names:
        n = _last_names[0]
        if n.d is record.dicts and n.cfg is record.config:
            return n
    n = Names(record)
    _last_names[:] = [n]
    return n


def record_line(record: Record) -> str | None:
    """QSPY's line for one record, or None for records QSPY does not print (QS_EMPTY)."""
    rec = record.rec
    if rec == 0:
        return None
    n = names_for(record)
    if rec >= USER_FIRST:
        return _user(record, n)
    fn = _R.get(rec)
    if fn is None:
        return f"{BLANK} Unknown Rec={rec},Len={len(record.raw) - 3}"
    return fn(record, n)


def _rec_label(rec: int) -> str:
    return record_name(rec) if rec < USER_FIRST else f"USER+{rec - USER_FIRST:03d}"


def event_lines(event: QSEvent) -> list[str]:
    cls = event.__class__
    if cls is Record:
        line = record_line(event)  # type: ignore[arg-type]
        return [] if line is None else [line]
    if cls is Discontinuity:
        return [f"{COMMS}Discontinuity Seq={event.prev_seq}->{event.seq}"]
    if cls is BadFrame:
        rec = event.raw[1] if len(event.raw) > 1 else 0
        if event.kind == "checksum":
            return [f"{COMMS}Bad checksum in Rec={_rec_label(rec)}(?),Seq={event.seq}"]
        if event.kind == "too_short":
            return [f"{COMMS}Record too short at Seq={event.seq}(?),Rec={_rec_label(rec)}"]
        if event.kind == "truncated":
            return [f"{COMMS}Record cut short by the end of the stream at Seq={event.seq}(?)"]
        return [f"{COMMS}Record too long at Seq={event.seq}(?)"]
    if cls is Malformed:
        return [f"{COMMS}{event.message} in Rec={_rec_label(event.rec)}"]
    return []


def render_lines(events: Iterable[QSEvent]) -> Iterator[str]:
    for event in events:
        yield from event_lines(event)
