"""/api/qs/control: the QS control panel's routes (issue 25, point 2).

Every QS-RX command by name, each a POST with a small JSON body. Nothing the browser
sends reaches the target unchecked: the body is capped and parsed here, and every
value goes through qs/rx.py (sizes, ranges, names resolved through the target's
dictionaries); a refusal is HTTP 400 with rx.py's one-line reason, and the link goes
on. Every action, sent or refused, is logged at info in the page's log.

The target's answers (Trg-Info, Trg-Ack/ERR, Trg-Done, Query-*, Trg-Peek, assertions)
are kept by ``Answers``, a listener of the live QS stream, with QSPY's line for each
and the peeked bytes and query results as values, under ids that never restart:
``GET /api/qs/control/answers?since=ID`` gives what came after a command was sent.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import threading
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request

from ...errors import UserError
from ...protocol.qs import QUERY_KINDS, Record
from ...protocol.qs.records import PEEK_DATA, PREDEFINED_LAST, QUERY_DATA, RECORDS, TARGET_INFO
from ...qs.monitor import group_of
from ...qs.rx import (
    EVT_DISPATCH,
    EVT_INIT,
    EVT_POST_CURR,
    EVT_PUBLISH,
    FILTER_BYTES,
    KIND_AO,
    MAX_EVENT_PARAMS,
    MAX_PEEK_BYTES,
    MAX_POKE_BYTES,
    OBJ_KINDS,
    RX,
    RxCommand,
    RxCommands,
    RxError,
)
from ...qs.text import record_line
from ..deps import LiveDep
from ..live.session import LiveSession
from ..security import client_message_error

router = APIRouter(prefix="/api/qs/control")

# Bounds (docs/limits.md, "QS control panel"). The largest good body (a 64-byte poke
# or event in hex, or every record named in a filter) is well under MAX_BODY_BYTES.
MAX_BODY_BYTES = 4096
MAX_ANSWERS = 512  # target answers kept; older ones go first (counted in ``dropped``)
MAX_LIST = 128  # items in one list of a body (records, QS-IDs, ranges, values)
# The target's answers to QS-RX: target info, done, status (ack), query, peek, assert.
ANSWER_RECS = frozenset(range(TARGET_INFO, TARGET_INFO + 6))
FILTER_BITS = 8 * FILTER_BYTES
# QS-ID groups of the local filter (QP's QS_LOC_FILTER table): AO priorities, event
# pools, event queues, application ids. QS-ID 0 is always enabled.
LOC_GROUPS = {"AO": (1, 64), "EP": (65, 80), "EQ": (81, 96), "AP": (97, 127)}
EVENT_ACTIONS = ("publish", "post", "post_current", "init", "dispatch")
_NUMBER = re.compile(r"(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})")
_HEX_SEP = re.compile(r"[\s,:]")


class Answers:
    """A QS listener (``LiveSession.links.qs.listeners``): the target's answers, newest last."""

    def __init__(self, limit: int = MAX_ANSWERS) -> None:
        self._lock = threading.Lock()
        self._kept: collections.deque[dict[str, Any]] = collections.deque(maxlen=limit)
        self.next_id = 1
        self.dropped = 0

    def qs_reset(self) -> None:
        """A new profile is no new target: the answers and their ids go on."""

    def qs_events(self, events: list[Any]) -> None:
        for event in events:
            if event.__class__ is Record and event.rec in ANSWER_RECS:
                self._add(event)

    def _add(self, r: Record) -> None:
        answer: dict[str, Any] = {"rec": r.rec, "name": r.name, "line": record_line(r) or ""}
        if r.rec == PEEK_DATA:
            _, offset, size, items = r.values
            answer["peek"] = {"offset": offset, "size": size, "items": list(items)}
        elif r.rec == QUERY_DATA:
            kind = r.fields["kind"]
            answer["query"] = QUERY_KINDS[kind] if kind < len(QUERY_KINDS) else str(kind)
        with self._lock:
            answer["id"] = self.next_id
            self.next_id += 1
            if len(self._kept) == self._kept.maxlen:
                self.dropped += 1
            self._kept.append(answer)

    def since(self, after: int) -> dict[str, Any]:
        with self._lock:
            rows = [a for a in self._kept if a["id"] > after]
            return {"answers": rows, "next_id": self.next_id, "dropped": self.dropped}


def install(app: FastAPI) -> None:
    """The routes, and the answers listener on the app's live session."""
    app.state.qs_answers = Answers()
    app.state.live.links.qs.listeners.append(app.state.qs_answers)
    app.include_router(router)


def _answers(request: Request) -> Answers:
    return request.app.state.qs_answers


# ------------------------------------------------------------ reading a body


async def _body(request: Request) -> dict[str, Any]:
    """The JSON object the page sent, read with a cap on the bytes actually received."""
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise RxError(f"request body over {MAX_BODY_BYTES:,} bytes: refused")
    text = data.decode("utf-8", "replace") or "{}"
    problem = client_message_error(text)  # also bounds the nesting json.loads sees
    if problem is not None:
        raise RxError(f"request body: {problem}")
    body = json.loads(text)
    if not isinstance(body, dict):
        raise RxError("request body must be a JSON object")
    return body


def _num(body: dict[str, Any], key: str, default: int | None = None) -> int:
    """A whole number: JSON, or a string in decimal or 0x hex (rx.py checks ranges)."""
    value = body.get(key, default)
    if value is None:
        raise RxError(f"{key} is missing")
    return _as_int(value, key)


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        text = value.strip()
        if len(text) > 1 and text[0] == "0" and text[1] not in "xX":
            # int(text, 0) refuses "01" (Python reads no octal there): say so, not HTTP 500
            raise RxError(f"{what} {_quote(value)}: no leading zeros (decimal or 0x hex)")
        return int(text, 0)
    raise RxError(f"{what} must be a whole number (decimal or 0x hex), not {_quote(value)}")


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key, [])
    if not isinstance(value, list):
        raise RxError(f"{key} must be a list")
    if len(value) > MAX_LIST:
        raise RxError(f"{key}: {len(value)} items, at most {MAX_LIST}")
    return value


def _hex(body: dict[str, Any], key: str) -> bytes:
    """Bytes written as hex digits, spaces, commas or colons allowed between bytes."""
    value = body.get(key, "")
    if not isinstance(value, str):
        raise RxError(f"{key} must be hex digits in a string")
    digits = _HEX_SEP.sub("", value.removeprefix("0x"))
    try:
        return bytes.fromhex(digits) if len(digits) % 2 == 0 else bytes.fromhex("x")
    except ValueError:
        raise RxError(f"{key}: not whole bytes in hex ({_quote(value)})") from None


def _object(body: dict[str, Any], key: str = "object") -> int | str:
    """A name from the target's dictionary, or a number (an address, a signal)."""
    value = body.get(key)
    if isinstance(value, str) and not _NUMBER.fullmatch(value.strip()):
        return value
    if value is None:
        raise RxError(f"{key} is missing: a name from the target's dictionary or an address")
    return _as_int(value, key)


def _kind(body: dict[str, Any], kinds: tuple[str, ...]) -> int:
    value = body.get("kind")
    if isinstance(value, str) and value.upper() in kinds:
        return kinds.index(value.upper())
    raise RxError(f"kind {_quote(value)}: one of {', '.join(kinds)}")


# ------------------------------------------------------------ filters


def _mask(bits: set[int]) -> bytes:
    value = sum(1 << b for b in bits)
    return value.to_bytes(FILTER_BYTES, "little")


def _mask_hex(body: dict[str, Any]) -> bytes | None:
    if "mask" not in body:
        return None
    mask = _hex(body, "mask")
    if len(mask) != FILTER_BYTES:
        raise RxError(f"mask: {len(mask)} bytes, must be {FILTER_BYTES} (32 hex digits)")
    return mask


def _record_id(value: Any) -> int:
    if isinstance(value, str) and not _NUMBER.fullmatch(value.strip()):
        for rec, (name, _group) in enumerate(RECORDS):
            if value in (name, name.removeprefix("QS_")):
                return rec
        raise RxError(f"record {_quote(value)} is not a QS record name")
    rec = _as_int(value, "record")
    if not 0 <= rec < FILTER_BITS:
        raise RxError(f"record {rec}: 0 to {FILTER_BITS - 1}")
    return rec


def record_table() -> list[dict[str, Any]]:
    """Every record id a global filter can name, with its group (U0-U4, UA for 100+)."""
    rows = [{"rec": r, "name": n, "group": g} for r, (n, g) in enumerate(RECORDS)]
    rows += [
        {"rec": r, "name": f"USER+{r - 100:03d}", "group": group_of(r)}
        for r in range(100, FILTER_BITS)
    ]
    return rows


def glb_mask(body: dict[str, Any]) -> bytes:
    """``mask`` (32 hex digits), or the union of ``groups`` and ``records`` (names or ids)."""
    mask = _mask_hex(body)
    if mask is not None:
        return mask
    table = record_table()
    known = {row["group"] for row in table}
    bits: set[int] = set()
    for group in _list(body, "groups"):
        if not isinstance(group, str) or group not in known:
            raise RxError(f"group {_quote(group)}: one of {', '.join(sorted(known))}")
        bits |= {row["rec"] for row in table if row["group"] == group}
    bits |= {_record_id(rec) for rec in _list(body, "records")}
    return _mask(bits)


def loc_mask(body: dict[str, Any]) -> bytes:
    """``mask``, or the union of ``groups`` (AO, EP, EQ, AP), ``ids`` and ``ranges``
    ([first, last] QS-IDs); QS-ID 0 is always on, as on the target."""
    mask = _mask_hex(body)
    if mask is not None:
        return mask
    bits = {0}
    for group in _list(body, "groups"):
        if not isinstance(group, str) or group not in LOC_GROUPS:
            raise RxError(f"QS-ID group {_quote(group)}: one of {', '.join(LOC_GROUPS)}")
        first, last = LOC_GROUPS[group]
        bits |= set(range(first, last + 1))
    spans = [(i, i) for i in _list(body, "ids")] + [_span(r) for r in _list(body, "ranges")]
    for first, last in spans:
        lo, hi = _as_int(first, "QS-ID"), _as_int(last, "QS-ID")
        if not 0 <= lo <= hi < FILTER_BITS:
            raise RxError(f"QS-ID range {lo}-{hi}: 0 to {FILTER_BITS - 1}, first <= last")
        bits |= set(range(lo, hi + 1))
    return _mask(bits)


def _span(value: Any) -> tuple[Any, Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise RxError(f"range {_quote(value)}: give [first, last]")
    return value[0], value[1]


# ------------------------------------------------------------ commands


def _typed(rx: RxCommands, body: dict[str, Any], size: int) -> bytes:
    """POKE data: ``data`` as raw hex bytes, or ``values`` packed at ``size`` in the
    target's byte order."""
    if "values" not in body:
        return _hex(body, "data")
    config, _ = rx.state()
    order = "big" if config.big_endian else "little"
    if size not in (1, 2, 4):
        raise RxError(f"element size {size!r}: must be 1, 2 or 4")
    out = bytearray()
    for v in _list(body, "values"):
        n = _as_int(v, "value")
        if not 0 <= n < 1 << (8 * size):
            raise RxError(f"value {n} does not fit in {size} byte(s)")
        out += n.to_bytes(size, order)
    return bytes(out)


def _event(rx: RxCommands, body: dict[str, Any]) -> list[RxCommand]:
    action = body.get("action", "publish")
    if action not in EVENT_ACTIONS:
        raise RxError(f"action {_quote(action)}: one of {', '.join(EVENT_ACTIONS)}")
    signal = _object(body, "signal")  # a name from the dictionary, or a number
    params = _hex(body, "params")
    if action == "post" and "ao" in body:
        # An AO by name: made the current AO first, then posted to it (as QView does).
        first = rx.curr_obj(KIND_AO, _object(body, "ao"))
        return [first, _after(rx, first, lambda: rx.event(EVT_POST_CURR, signal, params))]
    prio = {
        "publish": EVT_PUBLISH,
        "post_current": EVT_POST_CURR,
        "init": EVT_INIT,
        "dispatch": EVT_DISPATCH,
    }.get(action)
    if prio is None:
        prio = _num(body, "prio")
        if prio in (EVT_PUBLISH, EVT_POST_CURR, EVT_INIT, EVT_DISPATCH):
            raise RxError(f"post: prio {prio} is not an active object's priority")
    return [rx.event(prio, signal, params)]


def _after(rx: RxCommands, first: RxCommand, build: Callable[[], RxCommand]) -> RxCommand:
    """Build a command as it will be read after ``first`` (signals are scoped by the
    current object), without changing what the host thinks is current yet."""
    saved = dict(rx.current)
    rx.sent(first)
    try:
        return build()
    finally:
        rx.current.clear()
        rx.current.update(saved)


Builder = Callable[[RxCommands, dict[str, Any]], list[RxCommand]]
BUILDERS: dict[str, Builder] = {
    "info": lambda rx, b: [rx.info()],
    "reset": lambda rx, b: [rx.reset()],
    "tick": lambda rx, b: [rx.tick(_num(b, "rate", 0))],
    "command": lambda rx, b: [rx.command(_num(b, "id"), *_params(b))],
    "peek": lambda rx, b: [rx.peek(_num(b, "offset"), _num(b, "size"), _num(b, "num"))],
    "poke": lambda rx, b: [
        rx.poke(_num(b, "offset"), _num(b, "size"), _typed(rx, b, _num(b, "size")))
    ],
    "fill": lambda rx, b: [
        rx.fill(_num(b, "offset"), _num(b, "size"), _num(b, "num"), _num(b, "value"))
    ],
    "glb_filter": lambda rx, b: [rx.glb_filter(glb_mask(b))],
    "loc_filter": lambda rx, b: [rx.loc_filter(loc_mask(b))],
    "ao_filter": lambda rx, b: [rx.ao_filter(_object(b), _flag(b, "remove"))],
    "curr_obj": lambda rx, b: [rx.curr_obj(_kind(b, OBJ_KINDS), _object(b))],
    "query_curr": lambda rx, b: [rx.query_curr(_kind(b, OBJ_KINDS[:6]))],
    "event": _event,
    "test_probe": lambda rx, b: [rx.test_probe(_num(b, "fun"), _num(b, "data"))],
    "test_setup": lambda rx, b: [rx.bare(RX["TEST_SETUP"])],
    "test_teardown": lambda rx, b: [rx.bare(RX["TEST_TEARDOWN"])],
    "test_continue": lambda rx, b: [rx.bare(RX["TEST_CONTINUE"])],
}


def _flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise RxError(f"{key} must be true or false, not {_quote(value)}")
    return value


def _params(body: dict[str, Any]) -> list[int]:
    params = _list(body, "params")
    if len(params) > 3:
        raise RxError(f"params: {len(params)} given, a user command takes at most 3")
    return [_as_int(p, f"parameter {i}") for i, p in enumerate(params, 1)]


def _send(live: LiveSession, name: str, body: dict[str, Any]) -> list[str]:
    """Build (checking everything) then send; the names of the records sent."""
    link = live.control()
    cmds = BUILDERS[name](link.rx, body)
    for cmd in cmds:
        link.send_rx(cmd)
    return [cmd.name for cmd in cmds]


@router.post("/{name}")
async def command(name: str, request: Request, live: LiveDep) -> dict[str, Any]:
    """One QS-RX command; the answers to it follow ``answers_after``."""
    if name not in BUILDERS:
        raise UserError(f"unknown QS command {_quote(name)}: one of {', '.join(BUILDERS)}")
    mark = _answers(request).next_id - 1
    try:
        body = await _body(request)
        sent = await asyncio.to_thread(_send, live, name, body)
    except (RxError, UserError) as exc:
        live.on_log("info", f"QS-RX {name} refused: {exc}")
        raise UserError(str(exc)) from None
    live.on_log("info", f"QS-RX {name} sent: {' + '.join(sent)}")
    return {"sent": sent, "answers_after": mark}


# ------------------------------------------------------------ what the page reads


@router.get("/answers")
async def answers(
    request: Request, since: Annotated[int, Query(ge=0, le=2**62)] = 0
) -> dict[str, Any]:
    return _answers(request).since(since)


@router.get("")
async def state(request: Request, live: LiveDep) -> dict[str, Any]:
    """What the panel offers: the dictionaries' names, the masks and current objects
    the host last set, the target's sizes; ``available`` false with ``why`` when no
    QS target is connected."""
    try:
        link = live.control()
    except UserError as exc:
        return {"available": False, "why": str(exc), "next_id": _answers(request).next_id}
    return {"available": True, **_panel(link.rx), "next_id": _answers(request).next_id}


def _panel(rx: RxCommands) -> dict[str, Any]:
    config, dicts = rx.state()
    objects = {addr: name for addr, name in dicts.obj.items()}
    signals: dict[str, int] = {}
    for (sig, _obj), name in dicts.sig.items():
        signals.setdefault(name, sig)
    masks = {
        key: (rx.masks[RX[rec]].hex() if RX[rec] in rx.masks else None)
        for key, rec in (("glb", "GLB_FILTER"), ("loc", "LOC_FILTER"))
    }
    return {
        "objects": [{"name": n, "addr": f"0x{a:X}"} for a, n in sorted(objects.items(), key=_name)],
        "signals": [{"name": n, "sig": s} for n, s in sorted(signals.items())],
        "records": record_table(),
        "loc_groups": {k: list(v) for k, v in LOC_GROUPS.items()},
        "masks": masks,
        "current": {OBJ_KINDS[k]: objects.get(a, f"0x{a:X}") for k, a in rx.current.items()},
        "sizes": {
            "obj_ptr": config.obj_ptr_size,
            "fun_ptr": config.fun_ptr_size,
            "sig": config.sig_size,
            "max_active": config.max_active,
            "big_endian": config.big_endian,
        },
        "predefined_last": PREDEFINED_LAST,
        "kinds": list(OBJ_KINDS[:6]),
        "event_actions": list(EVENT_ACTIONS),
        "limits": {"peek": MAX_PEEK_BYTES, "poke": MAX_POKE_BYTES, "event": MAX_EVENT_PARAMS},
    }


def _name(item: tuple[int, str]) -> tuple[str, int]:
    return item[1], item[0]
