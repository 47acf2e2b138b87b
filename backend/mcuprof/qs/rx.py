"""QS-RX commands, sans-IO: typed arguments in, a checked (record id, payload) out.

Every command a QP target's QS-RX channel takes (QP/C 7.4 qs_rx.c), built from plain
values or parsed from the bytes a front end sent, and checked on the host before
anything reaches the target: sizes, ranges, and names, which are resolved through the
decoder's dictionaries as QSPY 7.4 does (objects by name; signals in the current state
machine's scope, then global). A bad command raises ``RxError`` with a one-line reason.
The same layer serves ``mcuprof qs listen --udp`` and, later, the dashboard.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..protocol.qs import Dictionaries, QSConfig
from .guard import Known, refusal
from .text import RX_RECORDS

# Record ids by short name (INFO 0 ... EVENT 16), from the one list of QS-RX names.
RX = {name.removeprefix("QS_RX_"): rec for rec, name in enumerate(RX_RECORDS)}
# Object kinds of CURR_OBJ and QUERY_CURR (QP's QS_ObjKind); SM_AO sets both SM and AO.
OBJ_KINDS = ("SM", "AO", "MP", "EQ", "TE", "AP", "SM_AO")
KIND_SM, KIND_AO, KIND_AP, KIND_SM_AO = 0, 1, 5, 6
# EVENT's first byte: 0 publishes, 1..QF_MAX_ACTIVE posts to that priority.
EVT_PUBLISH, EVT_POST_CURR, EVT_INIT, EVT_DISPATCH = 0, 253, 254, 255
# QP's reserved signals (empty, entry, exit, init): publishing or posting one is
# refused (dpp-posix64 crashes on signal 0 posted to an active object).
Q_USER_SIG = 4
FILTER_BYTES = 16
# Bounds of what the host lets through (docs/limits.md, "QS-RX and the front-end port").
MAX_PEEK_BYTES = 256  # size x num of one PEEK: the answer is one QS record
MAX_POKE_BYTES = 64  # data bytes of one POKE (QView pokes one item)
MAX_EVENT_PARAMS = 64  # parameter bytes of one EVENT (the target allocates them from a pool)
MAX_NAME = 64  # bytes of an object or signal name (QSPY's QS_DNAME_LEN_MAX)
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}


class RxError(ValueError):
    """A command the host refuses; the message is one line."""


@dataclass(frozen=True, slots=True)
class RxCommand:
    rec: int
    payload: bytes

    @property
    def name(self) -> str:
        return RX_RECORDS[self.rec]


def _uint(value: object, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RxError(f"{what} must be a whole number, not {value!r}")
    if not 0 <= value < 1 << (8 * size):
        raise RxError(f"{what} {value} is out of range (0 to {(1 << (8 * size)) - 1})")
    return value


def _pack(size: int, value: int) -> bytes:
    return struct.pack("<" + _UINT[size], value)


def _item_size(size: object) -> int:
    if size not in (1, 2, 4):
        raise RxError(f"element size {size!r}: must be 1, 2 or 4")
    return int(size)  # type: ignore[arg-type]


class RxCommands:
    """Builds commands for one target. ``state`` gives the sizes and dictionaries in
    force (the decoder's ``config`` and ``dicts``); ``current`` holds the objects the
    host last made current on the target, by kind (QSPY's current objects)."""

    def __init__(self, state: Callable[[], tuple[QSConfig, Dictionaries]]) -> None:
        self.state = state
        self.current: dict[int, int] = {}
        # The last GLB_FILTER / LOC_FILTER mask sent, by record id (none: the target's own).
        self.masks: dict[int, bytes] = {}
        # What the target's records show it holds (qs/guard.py): fed by ``observe``.
        self.known = Known()

    def observe(self, events: list[Any]) -> None:
        """The target's decoded records, in order, as the link reads them."""
        self.known.observe(events)

    def admit(self, cmd: RxCommand) -> None:
        """Every sender calls this just before a command goes to the target: RxError when
        what the target is known to hold says the command would crash it (qs/guard.py)."""
        config, dicts = self.state()
        why = refusal(cmd.rec, cmd.payload, self.known, self.current, dicts.obj,
                      config.obj_ptr_size)  # fmt: skip
        if why is not None:
            raise RxError(why)

    def target_reset(self) -> None:
        """A reset target has no current objects, and its filters are its own again."""
        self.current.clear()
        self.masks.clear()

    def sent(self, cmd: RxCommand) -> None:
        """Note a command that went to the target (current objects follow CURR_OBJ,
        the filter masks shown follow GLB_FILTER and LOC_FILTER)."""
        if cmd.rec in (RX["GLB_FILTER"], RX["LOC_FILTER"]):
            self.masks[cmd.rec] = cmd.payload[1:]
        elif cmd.rec == RX["CURR_OBJ"]:
            kind, addr = cmd.payload[0], int.from_bytes(cmd.payload[1:], "little")
            for k in (KIND_SM, KIND_AO) if kind == KIND_SM_AO else (kind,):
                self.current[k] = addr

    # ------------------------------------------------------------ names

    def object_address(self, name: str) -> int:
        _config, dicts = self.state()
        _check_name(name, "object")
        for addr, known in dicts.obj.items():
            if known == name:
                return addr
        raise RxError(f"object {name!r} is not in the target's dictionary")

    def signal_value(self, name: str) -> int:
        """The signal in the current state machine's scope, else the global one."""
        _config, dicts = self.state()
        _check_name(name, "signal")
        scope = self.current.get(KIND_SM, 0)
        found: dict[int, int] = {}
        for (sig, obj), known in dicts.sig.items():
            if known == name and obj in (scope, 0):
                found.setdefault(obj, sig)
        for obj in (scope, 0):
            if obj in found:
                return found[obj]
        raise RxError(f"signal {name!r} is not in the target's dictionary")

    def _object(self, obj: int | str, what: str) -> int:
        config, dicts = self.state()
        if isinstance(obj, str):
            return self.object_address(obj)
        addr = _uint(obj, config.obj_ptr_size, what)
        if addr and addr not in dicts.obj:
            raise RxError(f"{what} 0x{addr:X} is not an object in the target's dictionary")
        return addr

    # ------------------------------------------------------------ commands

    def info(self) -> RxCommand:
        return RxCommand(RX["INFO"], b"")

    def reset(self) -> RxCommand:
        return RxCommand(RX["RESET"], b"")

    def command(self, cmd_id: int, p1: int = 0, p2: int = 0, p3: int = 0) -> RxCommand:
        values = [_uint(cmd_id, 1, "command id")]
        values += [_uint(p, 4, f"parameter {i}") for i, p in enumerate((p1, p2, p3), 1)]
        return RxCommand(RX["COMMAND"], struct.pack("<BIII", *values))

    def tick(self, rate: int = 0) -> RxCommand:
        config, _ = self.state()
        _uint(rate, 1, "tick rate")
        if config.max_tick_rate is not None and rate >= config.max_tick_rate:
            raise RxError(f"tick rate {rate}: the target has {config.max_tick_rate} rate(s)")
        return RxCommand(RX["TICK"], bytes([rate]))

    def peek(self, offset: int, size: int, num: int) -> RxCommand:
        size = _item_size(size)
        _uint(offset, 2, "offset")
        if _uint(num, 1, "count") == 0 or size * num > MAX_PEEK_BYTES:
            raise RxError(f"peek of {num} x {size} bytes: 1 to {MAX_PEEK_BYTES} bytes allowed")
        return RxCommand(RX["PEEK"], struct.pack("<HBB", offset, size, num))

    def poke(self, offset: int, size: int, data: bytes) -> RxCommand:
        size = _item_size(size)
        _uint(offset, 2, "offset")
        if not data or len(data) % size or len(data) > MAX_POKE_BYTES:
            raise RxError(
                f"poke of {len(data)} bytes: give 1 to {MAX_POKE_BYTES} bytes, "
                f"a multiple of the element size {size}"
            )
        num = len(data) // size
        return RxCommand(RX["POKE"], struct.pack("<HBB", offset, size, num) + bytes(data))

    def fill(self, offset: int, size: int, num: int, value: int) -> RxCommand:
        size = _item_size(size)
        _uint(offset, 2, "offset")
        if _uint(num, 1, "count") == 0:
            raise RxError("fill count 0: give 1 to 255 elements")
        head = struct.pack("<HBB", offset, size, num)
        return RxCommand(RX["FILL"], head + _pack(size, _uint(value, size, "fill value")))

    def glb_filter(self, mask: bytes) -> RxCommand:
        return RxCommand(RX["GLB_FILTER"], _filter(mask))

    def loc_filter(self, mask: bytes) -> RxCommand:
        return RxCommand(RX["LOC_FILTER"], _filter(mask))

    def ao_filter(self, obj: int | str, remove: bool = False) -> RxCommand:
        config, _ = self.state()
        addr = self._object(obj, "AO filter object")
        payload = bytes([1 if remove else 0]) + _pack(config.obj_ptr_size, addr)
        return RxCommand(RX["AO_FILTER"], payload)

    def curr_obj(self, kind: int, obj: int | str) -> RxCommand:
        config, _ = self.state()
        if isinstance(kind, bool) or kind not in range(len(OBJ_KINDS)):
            raise RxError(f"object kind {kind!r}: one of 0-6 ({', '.join(OBJ_KINDS)})")
        if kind == KIND_AP and not isinstance(obj, str):
            addr = _uint(obj, config.obj_ptr_size, "AP object")  # any memory for peek/poke
        else:
            addr = self._object(obj, f"{OBJ_KINDS[kind]} object")
        return RxCommand(RX["CURR_OBJ"], bytes([kind]) + _pack(config.obj_ptr_size, addr))

    def query_curr(self, kind: int) -> RxCommand:
        if isinstance(kind, bool) or kind not in range(KIND_SM_AO):
            raise RxError(f"query kind {kind!r}: one of 0-5 ({', '.join(OBJ_KINDS[:6])})")
        return RxCommand(RX["QUERY_CURR"], bytes([kind]))

    def event(self, prio: int, sig: int | str, params: bytes = b"") -> RxCommand:
        config, _ = self.state()
        _uint(prio, 1, "event target")
        top = config.max_active if config.max_active is not None else 63
        if not (prio <= top or prio >= EVT_POST_CURR):
            raise RxError(
                f"event target {prio}: 0 publish, 1-{top} post, 253 post to the current AO, "
                "254 init, 255 dispatch"
            )
        value = self.signal_value(sig) if isinstance(sig, str) else sig
        _uint(value, config.sig_size, "signal")
        if value < Q_USER_SIG and prio <= EVT_POST_CURR:
            raise RxError(f"signal {value} is reserved by QP: publish or post signals >= 4")
        if len(params) > MAX_EVENT_PARAMS:
            raise RxError(f"{len(params)} event parameter bytes: at most {MAX_EVENT_PARAMS}")
        head = bytes([prio]) + _pack(config.sig_size, value) + struct.pack("<H", len(params))
        return RxCommand(RX["EVENT"], head + bytes(params))

    def test_probe(self, fun: int, data: int) -> RxCommand:
        config, _ = self.state()
        addr = _uint(fun, config.fun_ptr_size, "probe function")
        payload = struct.pack("<I", _uint(data, 4, "probe data"))
        return RxCommand(RX["TEST_PROBE"], payload + _pack(config.fun_ptr_size, addr))

    def bare(self, rec: int) -> RxCommand:
        """INFO, RESET, TEST_SETUP, TEST_TEARDOWN and TEST_CONTINUE: no payload."""
        if rec not in (RX["INFO"], RX["RESET"], RX["TEST_SETUP"], RX["TEST_TEARDOWN"],
                       RX["TEST_CONTINUE"]):  # fmt: skip
            raise RxError(f"record {rec} takes a payload")
        return RxCommand(rec, b"")

    # ------------------------------------------------------------ from bytes

    def parse(self, rec: int, payload: bytes) -> RxCommand:
        """A target record as a front end sent it, checked field by field. The result's
        payload equals ``payload`` whenever it is accepted."""
        config, _ = self.state()
        parse = _PARSERS.get(rec)
        if parse is None:
            raise RxError(f"unknown QS-RX record {rec}")
        try:
            cmd = parse(self, config, payload)
        except (struct.error, IndexError):
            raise RxError(f"{RX_RECORDS[rec]}: {len(payload)} payload bytes do not fit") from None
        if cmd.payload != payload:
            raise RxError(f"{RX_RECORDS[rec]}: {len(payload)} payload bytes do not fit")
        return cmd


def _filter(mask: bytes) -> bytes:
    if len(mask) != FILTER_BYTES:
        raise RxError(f"filter mask of {len(mask)} bytes: must be {FILTER_BYTES}")
    return bytes([FILTER_BYTES]) + bytes(mask)


def _check_name(name: str, what: str) -> None:
    if not name or len(name.encode("utf-8", "replace")) > MAX_NAME:
        raise RxError(f"{what} name of {len(name)} characters: 1 to {MAX_NAME} allowed")
    if not name.isprintable():
        raise RxError(f"{what} name {name!r} has control characters")


def _u(payload: bytes, pos: int, size: int) -> int:
    if len(payload) < pos + size:
        raise struct.error("short payload")  # parse() says the payload does not fit
    return int.from_bytes(payload[pos : pos + size], "little")


def _parse_poke(c: RxCommands, cfg: QSConfig, p: bytes) -> RxCommand:
    offset, size, num = struct.unpack_from("<HBB", p)
    cmd = c.poke(offset, size, p[4:])
    if cmd.payload[3] != num:
        raise RxError(f"QS_RX_POKE: count {num} does not match {len(p) - 4} data bytes")
    return cmd


def _parse_fill(c: RxCommands, cfg: QSConfig, p: bytes) -> RxCommand:
    offset, size, num = struct.unpack_from("<HBB", p)
    return c.fill(offset, size, num, _u(p, 4, _item_size(size)))


def _parse_filter(c: RxCommands, cfg: QSConfig, p: bytes, rec: int) -> RxCommand:
    if not p or p[0] != FILTER_BYTES:
        raise RxError(f"{RX_RECORDS[rec]}: mask length must be {FILTER_BYTES}")
    return RxCommand(rec, _filter(p[1:]))


def _parse_event(c: RxCommands, cfg: QSConfig, p: bytes) -> RxCommand:
    s = cfg.sig_size
    (length,) = struct.unpack_from("<H", p, 1 + s)
    if len(p) != 3 + s + length:
        raise RxError(f"QS_RX_EVENT: parameter length {length} does not match the packet")
    return c.event(p[0], _u(p, 1, s), p[3 + s :])


_PARSERS: dict[int, Callable[[RxCommands, QSConfig, bytes], RxCommand]] = {
    RX["INFO"]: lambda c, cfg, p: c.info(),
    RX["RESET"]: lambda c, cfg, p: c.reset(),
    RX["TEST_SETUP"]: lambda c, cfg, p: c.bare(RX["TEST_SETUP"]),
    RX["TEST_TEARDOWN"]: lambda c, cfg, p: c.bare(RX["TEST_TEARDOWN"]),
    RX["TEST_CONTINUE"]: lambda c, cfg, p: c.bare(RX["TEST_CONTINUE"]),
    RX["COMMAND"]: lambda c, cfg, p: c.command(*struct.unpack("<BIII", p)),
    RX["TICK"]: lambda c, cfg, p: c.tick(*struct.unpack("<B", p)),
    RX["PEEK"]: lambda c, cfg, p: c.peek(*struct.unpack("<HBB", p)),
    RX["POKE"]: _parse_poke,
    RX["FILL"]: _parse_fill,
    RX["TEST_PROBE"]: lambda c, cfg, p: c.test_probe(_u(p, 4, cfg.fun_ptr_size), _u(p, 0, 4)),
    RX["GLB_FILTER"]: lambda c, cfg, p: _parse_filter(c, cfg, p, RX["GLB_FILTER"]),
    RX["LOC_FILTER"]: lambda c, cfg, p: _parse_filter(c, cfg, p, RX["LOC_FILTER"]),
    RX["AO_FILTER"]: lambda c, cfg, p: c.ao_filter(_u(p, 1, cfg.obj_ptr_size), bool(p[0])),
    RX["CURR_OBJ"]: lambda c, cfg, p: c.curr_obj(p[0], _u(p, 1, cfg.obj_ptr_size)),
    RX["QUERY_CURR"]: lambda c, cfg, p: c.query_curr(*struct.unpack("<B", p)),
    RX["EVENT"]: _parse_event,
}
