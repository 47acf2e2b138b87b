"""``mcuprof qs scenario FILE``: drive a QS target through a short script (connect, reset,
filters, events, ticks, waits), record the run as one stored session, report its RTC steps
per object, state and signal, and with ``--baseline SESSION`` gate it with ``compare``.

The script is JSON lines: one command object per line; blank lines and lines starting
with ``#`` are skipped (README, "QS scenarios"). Every command is checked on the host
(qs/rx.py) and waits for the target's answer, so a refusal stops the run with a one-line
error naming the script's line; what the target sent until then stays in the session.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serial import SerialException

from ..errors import UserError
from ..history.summary import keep_summary
from ..protocol.qs import QSDecoder, QSEvent, Record, encode_frame
from ..protocol.qs.records import TARGET_INFO
from ..qs.rtc import MAX_RTC_ROWS, RtcTally, RtcTracker
from ..qs.rx import KIND_AO, KIND_SM, RX, RxCommand, RxCommands, RxError
from ..store.tags import parse_tags
from ._storeopt import add_store_option, open_from_args

# Bounds of a script (docs/limits.md, "QS target library ... and QS scenarios").
MAX_SCRIPT_BYTES = 64 * 1024
MAX_SCRIPT_LINES = 1000
MAX_WAIT_S = 600.0  # one wait_s, and the timeout of one wait_steps
MAX_WAIT_STEPS = 1_000_000
MAX_TICKS = 10_000  # ticks of one tick command
ANSWER_TIMEOUT_S = 30.0  # for the target's answer to one command (a loaded host is slow)
CONNECT_TIMEOUT_S = 60.0  # for a listen:// target to connect (and send its target info)
WAIT_STEPS_TIMEOUT_S = 60.0  # default timeout of wait_steps
SCENARIO_TIMEOUT_S = 3600.0  # default --timeout: the whole run, connecting included
MAX_SCENARIO_TIMEOUT_S = 86_400.0  # the largest --timeout
BOOT_QUIET_S = 1.0  # a port's target that starts no reset sequence in this long is running
RX_STATUS, TARGET_DONE, QF_RUN = 66, 65, 70
# Commands and the keys each may have beside its own.
OPTIONS: dict[str, tuple[str, ...]] = {
    "connect": (),
    "reset": (),
    "glb_filter": (),
    "loc_filter": (),
    "ao_filter": ("remove",),
    "post": ("to", "params"),
    "publish": ("params",),
    "dispatch": ("to", "params"),
    "tick": ("rate",),
    "command": ("params",),
    "wait_steps": ("timeout_s",),
    "wait_s": (),
}


def register(sub: argparse._SubParsersAction) -> None:
    """Nothing at the top level: ``scenario`` is a ``qs`` subcommand (add_parser)."""


def add_parser(qs_sub: argparse._SubParsersAction) -> None:
    p = qs_sub.add_parser(
        "scenario",
        help="run a QS scenario script, store the run, report RTC steps, gate on a baseline",
        description="Run a JSON-lines scenario against a QS target (connect, reset, "
        "filters, events, ticks, waits), store the run as one session, print its RTC "
        "steps per object, state and signal (target timestamp units), and with "
        "--baseline compare it with that session as `mcuprof compare` does: exit 1 when "
        "a step got slower.",
    )
    p.add_argument("script", metavar="FILE", help="the scenario (JSON lines)")
    p.add_argument("--port", help="the target (overrides the script's connect)")
    p.add_argument("--baud", type=int, default=115_200, help="baud rate (115200)")
    p.add_argument("--name", help="session name (default: the script's file name)")
    p.add_argument("--baseline", metavar="SESSION", help="gate against this stored session")
    p.add_argument("--threshold", help="compare's --threshold (its default: 10%%)")
    p.add_argument("--confidence", help="compare's --confidence (its default: 95%%)")
    p.add_argument("--data-dir", help="session store directory")
    add_store_option(p)
    p.add_argument(
        "--tag",
        action="append",
        metavar="KEY=VALUE",
        help="tag the stored run (repeatable): commit=SHA, branch=main, board=...",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=SCENARIO_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop the whole run after this long ({SCENARIO_TIMEOUT_S:g} s)",
    )
    p.set_defaults(func=run, error_exit=2)


@dataclass(frozen=True)
class Step:
    line: int
    op: str
    arg: Any
    options: dict[str, Any] = field(default_factory=dict)
    value: Any = None  # the command's values, checked before anything is sent


def parse_script(text: str) -> list[Step]:
    """The script's commands, every value checked: a bad line is a one-line error
    naming it, found before anything is sent. Lines end at \n only (JSON-lines): a
    U+2028 inside a JSON string is part of the string."""
    if len(text.encode("utf-8")) > MAX_SCRIPT_BYTES:
        raise UserError(f"the scenario is over {MAX_SCRIPT_BYTES} bytes")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > MAX_SCRIPT_LINES:
        raise UserError(f"the scenario has {len(lines)} lines, at most {MAX_SCRIPT_LINES}")
    steps = []
    for n, raw in enumerate(lines, 1):
        raw = raw.removesuffix("\r")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        step = _step(n, raw)
        if step.op == "connect" and steps:
            raise UserError(f"line {n}: connect must be the scenario's first command")
        steps.append(step)
    return steps


def _step(n: int, raw: str) -> Step:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UserError(f"line {n}: not a JSON object ({exc.msg})") from None
    except RecursionError:
        raise UserError(f"line {n}: JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise UserError(f"line {n}: not a JSON object")
    ops = [k for k in obj if k in OPTIONS]
    if len(ops) != 1:
        raise UserError(f"line {n}: one command of {', '.join(OPTIONS)} per line")
    op = ops[0]
    extra = set(obj) - {op, *OPTIONS[op]}
    if extra:
        raise UserError(f"line {n}: {op} takes no {', '.join(sorted(extra))}")
    step = Step(n, op, obj[op], {k: v for k, v in obj.items() if k != op})
    return Step(step.line, op, step.arg, step.options, CHECKS[op](step))


def _number(step: Step, value: Any, low: float, high: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise UserError(f"line {step.line}: {what} must be a number from {low:g} to {high:g}")
    return value


def _whole(step: Step, value: Any, low: int, high: int, what: str) -> int:
    """A whole number in range: 2.9 is refused, never truncated."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"line {step.line}: {what} must be a whole number from {low} to {high}")
    return value


def _params(step: Step) -> bytes:
    text = step.options.get("params", "")
    try:
        return bytes.fromhex(text)
    except (TypeError, ValueError):
        raise UserError(f'line {step.line}: params must be hex bytes, e.g. "2100"') from None


def _name_or_number(step: Step, value: Any, low: int, high: int, what: str) -> str | int:
    """An object or signal: a name from the target's dictionary, or a number."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"line {step.line}: {what} must be a name or a number from {low} to {high}")
    return value


def _event(step: Step) -> tuple[str | int, str | int | None, bytes]:
    sig = _name_or_number(step, step.arg, 0, 0xFFFF, step.op)
    to = step.options.get("to")
    if step.op == "post":
        to = _name_or_number(step, to, 1, 252, 'post\'s "to"')
    elif step.op == "dispatch" and not (isinstance(to, str) and to):
        raise UserError(f'line {step.line}: dispatch needs "to": an object\'s name')
    return sig, to, _params(step)


def _remove(step: Step) -> bool:
    remove = step.options.get("remove", False)
    if not isinstance(remove, bool):
        raise UserError(f'line {step.line}: "remove" must be true or false, not {remove!r}')
    return remove


def _command(step: Step) -> tuple[int, list[int]]:
    params = step.options.get("params", [])
    if not isinstance(params, list) or len(params) > 3:
        raise UserError(f"line {step.line}: command params: a list of up to 3 numbers")
    values = [_whole(step, p, 0, 0xFFFF_FFFF, "a command parameter") for p in params]
    return _whole(step, step.arg, 0, 255, "command"), values


def _connect(step: Step) -> str:
    if not isinstance(step.arg, str) or not step.arg:
        raise UserError(f'line {step.line}: connect takes a port, e.g. "listen://127.0.0.1:6601"')
    return step.arg


CHECKS: dict[str, Callable[[Step], Any]] = {
    "connect": _connect,
    "reset": lambda step: None,
    "glb_filter": lambda step: _mask(step, step.arg, 16),
    "loc_filter": lambda step: _mask(step, step.arg, 16),
    "ao_filter": lambda step: (
        _name_or_number(step, step.arg, 0, 2**64 - 1, "ao_filter"),
        _remove(step),
    ),
    "post": _event,
    "publish": _event,
    "dispatch": _event,
    "tick": lambda step: (
        _whole(step, step.arg, 1, MAX_TICKS, "tick"),
        _whole(step, step.options.get("rate", 0), 0, 255, "rate"),
    ),
    "command": _command,
    "wait_steps": lambda step: (
        _whole(step, step.arg, 1, MAX_WAIT_STEPS, "wait_steps"),
        _number(
            step, step.options.get("timeout_s", WAIT_STEPS_TIMEOUT_S), 0.1, MAX_WAIT_S, "timeout_s"
        ),
    ),
    "wait_s": lambda step: _number(step, step.arg, 0, MAX_WAIT_S, "wait_s"),
}


class _Capture:
    """QSHost's capture file: the bytes go to the session."""

    def __init__(self, record: Callable[[bytes], None]) -> None:
        self.write = record


class _Awaited:
    """The answer one command waits for, judged as each answer arrives (nothing kept):
    Trg-Done for TICK, COMMAND and EVENT, Trg-Ack for the rest, a reset target's info
    for RESET; Trg-ERR is a refusal."""

    def __init__(self, rec: int) -> None:
        self.rec = rec
        self.final = TARGET_DONE if rec in (RX["TICK"], RX["COMMAND"], RX["EVENT"]) else RX_STATUS
        self.done = self.refused = False

    def see(self, r: Record) -> None:
        if r.rec == RX_STATUS and r.values[-1] == 0x80 | self.rec:
            self.refused = True
        elif self.rec == RX["RESET"]:
            self.done = self.done or (r.rec == TARGET_INFO and bool(r.values[0]))
        elif r.rec == self.final and r.values[-1] == self.rec:
            self.done = True


class Target:
    """One QS target: a port we open (serial, socket://) or listen:// (it connects).
    Judges the answers to commands as they arrive, and tallies the RTC steps that closed
    (per object, state and signal: the report's rows, never the steps themselves)."""

    def __init__(
        self, url: str, baud: int, record: Callable[[bytes], None], deadline: float = math.inf
    ) -> None:
        from ..link.ports import open_transport
        from ..link.qs_host import QSHost
        from ..link.qs_link import LISTEN_SCHEME, validate_listen

        self.decoder = QSDecoder()
        self.tracker = RtcTracker()
        self.tally = RtcTally()
        self.awaited: _Awaited | None = None
        self.deadline = deadline
        self._record = record
        self.host: Any = None
        self.port: Any = None
        self.seq = 0
        self.booted = False  # a reset target's info arrived
        self.running = False  # the target's QS_QF_RUN arrived
        if url.strip().lower().startswith(LISTEN_SCHEME):
            at = validate_listen(url)
            self.host = QSHost(at, self.decoder, self._take, _say, capture=_Capture(record))
            self.rx = self.host.commands  # QSHost feeds it what the target sends
            host, port = self.host.listening.address[:2]
            _say(f"mcuprof: waiting for a QS target on {host}:{port}")
            # Commands go once the target has sent its reset sequence (QS_QF_RUN ends it):
            # its dictionaries resolve the script's names.
            self.wait(lambda: self.running, CONNECT_TIMEOUT_S, "waiting for the target")
        else:
            self.port = open_transport(url, baud)
            self.port.timeout = 0.05
            self.rx = RxCommands(lambda: (self.decoder.config, self.decoder.dicts))
            self._settle()

    @property
    def step_count(self) -> int:
        return self.tally.steps

    def _settle(self) -> None:
        """A target may boot as the port opens (QEMU waits for its first client; a board
        may reset on DTR): it sends its reset sequence, then reads commands. A RESET sent
        meanwhile was answered by the boot's target info, and the reset that followed lost
        the next command. So the first command waits for the sequence to end (QS_QF_RUN),
        or for BOOT_QUIET_S without one beginning."""
        quiet = time.monotonic() + BOOT_QUIET_S
        while not self.booted and time.monotonic() < quiet:
            self.pump()
        if self.booted:
            self.wait(lambda: self.running, CONNECT_TIMEOUT_S, "the target's reset sequence")

    def close(self) -> None:
        if self.host is not None:
            self.host.close()
        if self.port is not None:
            self.port.close()

    def _take(self, events: list[QSEvent]) -> None:
        if self.port is not None:
            self.rx.observe(events)  # what the target holds, for the guard (qs/guard.py)
        for e in events:
            if e.__class__ is not Record:
                continue
            if e.rec == QF_RUN:
                self.running = True
            if 64 <= e.rec <= 68:  # target info .. peek data: answers
                if self.awaited is not None:
                    self.awaited.see(e)  # type: ignore[arg-type]
                if e.rec == TARGET_INFO and e.values[0]:  # a reset target
                    self.booted = True
                    if self.port is not None:
                        self.seq = 0  # the host's sequence restarts
                        self.rx.target_reset()
        self.tally.add(self.tracker.feed(events))

    def pump(self) -> None:
        if self.host is not None:
            self.host.step()
            return
        try:
            data = self.port.read(65536)
        except (OSError, SerialException) as exc:
            raise UserError(f"the target hung up ({exc})") from None
        if data:
            self._record(data)
            self._take(self.decoder.feed(data))

    def send(self, cmd: RxCommand) -> None:
        if self.host is not None:
            why = self.host.send(cmd)  # the guard is QSHost's
            if why is not None:
                raise UserError(why)
            return
        self.rx.admit(cmd)  # RxError when it would crash the target
        self.seq = (self.seq + 1) & 0xFF
        try:
            self.port.write(encode_frame(self.seq, cmd.rec, cmd.payload))
        except (OSError, SerialException) as exc:
            raise UserError(f"the target hung up ({exc})") from None
        self.rx.sent(cmd)

    def wait(
        self, done: Callable[[], bool], timeout_s: float, what: str, reconnects: bool = False
    ) -> None:
        """Pump until ``done``; a listen:// target that hangs up is an error unless it
        ``reconnects`` (a POSIX target ends on RESET and connects again)."""
        end = time.monotonic() + timeout_s
        while not done():
            now = time.monotonic()
            if now > self.deadline:
                raise UserError(f"{what}: the scenario's --timeout ran out")
            if now > end:
                raise UserError(f"{what}: nothing after {timeout_s:g} s")
            host = self.host
            gone = host is not None and host.connections and host.listening.conn is None
            if gone and not reconnects:
                raise UserError(f"{what}: the target hung up")
            self.pump()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def command(target: Target, step: Step, cmd: RxCommand) -> None:
    """Send one command and wait for its answer (``_Awaited``); Trg-ERR is an error."""
    awaited = target.awaited = _Awaited(cmd.rec)
    try:
        try:
            target.send(cmd)
        except (UserError, RxError) as exc:  # the guard's refusal, a hang-up
            raise UserError(f"line {step.line}: {exc}") from None

        def answered() -> bool:
            if awaited.refused:
                raise UserError(f"line {step.line}: the target refused {cmd.name} (Trg-ERR)")
            return awaited.done

        reset = cmd.rec == RX["RESET"]
        timeout = CONNECT_TIMEOUT_S if reset else ANSWER_TIMEOUT_S
        target.wait(answered, timeout, f"line {step.line}: {cmd.name} was not answered", reset)
    finally:
        target.awaited = None


def _mask(step: Step, value: Any, size: int) -> bytes:
    """A filter: "on", "off", {"on": [ids]} (only these) or {"off": [ids]} (all but)."""
    if value in ("on", "off"):
        return (b"\xff" if value == "on" else b"\x00") * size
    if isinstance(value, dict) and len(value) == 1 and set(value) <= {"on", "off"}:
        (key, ids), bits = next(iter(value.items())), 0
        if not isinstance(ids, list):
            ids = [ids]
        for i in ids:
            bits |= 1 << _whole(step, i, 0, 8 * size - 1, "a filter id")
        if key == "off":
            bits ^= (1 << 8 * size) - 1
        return bits.to_bytes(size, "little")
    raise UserError(
        f'line {step.line}: a filter is "on", "off", {{"on": [ids]}} or {{"off": [ids]}}'
    )


def _to(target: Target, step: Step, kind: int, to: str) -> int:
    """Make the step's ``to`` object current (kind SM or AO)."""
    command(target, step, target.rx.curr_obj(kind, to))
    return {KIND_AO: 253, KIND_SM: 255}[kind]


def do_step(target: Target, step: Step) -> None:
    rx, op, value = target.rx, step.op, step.value
    if op == "reset":
        command(target, step, rx.reset())
    elif op in ("glb_filter", "loc_filter"):
        command(target, step, rx.glb_filter(value) if op == "glb_filter" else rx.loc_filter(value))
    elif op == "ao_filter":
        command(target, step, rx.ao_filter(*value))
    elif op in ("post", "publish", "dispatch"):
        sig, to, params = value
        if op == "publish":
            prio = 0
        elif isinstance(to, int):
            prio = to
        else:
            prio = _to(target, step, KIND_AO if op == "post" else KIND_SM, to)
        command(target, step, rx.event(prio, sig, params))
    elif op == "tick":
        ticks, rate = value
        for _ in range(ticks):
            command(target, step, rx.tick(rate))
    elif op == "command":
        cmd_id, params = value
        command(target, step, rx.command(cmd_id, *params))
    elif op == "wait_steps":
        count, timeout = value
        want = target.step_count + count
        target.wait(lambda: target.step_count >= want, timeout, f"line {step.line}: wait_steps")
    elif op == "wait_s":
        end = time.monotonic() + value
        target.wait(lambda: time.monotonic() >= end, MAX_WAIT_S + 1, f"line {step.line}: wait_s")
    else:  # connect: only as the first command (run() takes it)
        raise UserError(f"line {step.line}: connect must be the scenario's first command")


def run(args: argparse.Namespace) -> int:
    from ..files import read_file
    from .qs import rtc_lines

    if not 0 < args.timeout <= MAX_SCENARIO_TIMEOUT_S:  # NaN too
        raise UserError(f"--timeout must be from 0 to {MAX_SCENARIO_TIMEOUT_S:g} seconds")
    path = Path(args.script)
    raw = read_file(path, "scenario", MAX_SCRIPT_BYTES + 1)
    steps = parse_script(raw.decode("utf-8", "replace"))  # every value checked: nothing sent yet
    url = args.port
    if steps and steps[0].op == "connect":
        url = url or steps[0].value
        steps = steps[1:]
    if not isinstance(url, str) or not url:
        raise UserError('no target: give --port or begin the scenario with {"connect": PORT}')
    tags = parse_tags(args.tag)
    deadline = time.monotonic() + args.timeout
    store = open_from_args(args)
    try:
        writer = store.create(args.name or path.name, source="scenario", kind="qs",
                              notes=f"mcuprof qs scenario {path.name}", tags=tags)  # fmt: skip
        target = None
        try:
            target = Target(url, args.baud, writer.append, deadline)
            for step in steps:
                try:
                    do_step(target, step)
                except RxError as exc:
                    raise UserError(f"line {step.line}: {exc}") from None
        except BaseException:
            info = writer.abort()  # what arrived stays stored
            _say(f"mcuprof: stopped; stored as session {info.id} ({info.name}, interrupted)")
            raise
        finally:
            if target is not None:
                target.close()
        info = writer.finish()
        keep_summary(store, info.id)
    finally:
        store.close()
    for line in rtc_lines(target.tally.rows()):
        print(line)
    if target.tally.untallied:
        _say(f"mcuprof: {target.tally.untallied} RTC steps are not in the table: it holds "
             f"{MAX_RTC_ROWS:,} object/state/signal rows (MAX_RTC_ROWS)")  # fmt: skip
    _say(f"mcuprof: {target.step_count} RTC steps; stored as session {info.id} ({info.name})")
    if args.baseline is None:
        return 0
    return _gate(args, str(info.id))


def _gate(args: argparse.Namespace, new: str) -> int:
    """``mcuprof compare BASELINE NEW`` with its defaults: its report, its verdict."""
    from . import compare

    # Parsed by compare's own parser, so every option it is not given keeps compare's default.
    parser = argparse.ArgumentParser(prog="mcuprof")
    compare.register(parser.add_subparsers())
    argv = ["compare", args.baseline, new]
    for option in ("threshold", "confidence", "data_dir"):
        value = getattr(args, option)
        if value is not None:
            argv += [f"--{option.replace('_', '-')}", value]
    gate = parser.parse_args(argv)
    sys.stdout.flush()
    return int(compare.run(gate))
