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
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..protocol.qs import QSDecoder, QSEvent, Record, encode_frame
from ..protocol.qs.records import TARGET_INFO
from ..qs.rtc import RtcStep, RtcTracker, rtc_table
from ..qs.rx import KIND_AO, KIND_SM, RX, RxCommand, RxCommands, RxError

# Bounds of a script (docs/limits.md, "QS target library ... and QS scenarios").
MAX_SCRIPT_BYTES = 64 * 1024
MAX_SCRIPT_LINES = 1000
MAX_WAIT_S = 600.0  # one wait_s, and the timeout of one wait_steps
MAX_WAIT_STEPS = 1_000_000
MAX_TICKS = 10_000  # ticks of one tick command
ANSWER_TIMEOUT_S = 30.0  # for the target's answer to one command (a loaded host is slow)
CONNECT_TIMEOUT_S = 60.0  # for a listen:// target to connect (and send its target info)
WAIT_STEPS_TIMEOUT_S = 60.0  # default timeout of wait_steps
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
    p.set_defaults(func=run, error_exit=2)


@dataclass(frozen=True)
class Step:
    line: int
    op: str
    arg: Any
    options: dict[str, Any] = field(default_factory=dict)


def parse_script(text: str) -> list[Step]:
    """The script's commands; a bad line is a one-line error naming it."""
    if len(text.encode("utf-8")) > MAX_SCRIPT_BYTES:
        raise UserError(f"the scenario is over {MAX_SCRIPT_BYTES} bytes")
    lines = text.splitlines()
    if len(lines) > MAX_SCRIPT_LINES:
        raise UserError(f"the scenario has {len(lines)} lines, at most {MAX_SCRIPT_LINES}")
    steps = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise UserError(f"line {n}: not a JSON object ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise UserError(f"line {n}: not a JSON object")
        ops = [k for k in obj if k in OPTIONS]
        if len(ops) != 1:
            raise UserError(f"line {n}: one command of {', '.join(OPTIONS)} per line")
        op = ops[0]
        extra = set(obj) - {op, *OPTIONS[op]}
        if extra:
            raise UserError(f"line {n}: {op} takes no {', '.join(sorted(extra))}")
        steps.append(Step(n, op, obj[op], {k: v for k, v in obj.items() if k != op}))
    return steps


def _number(step: Step, value: Any, low: float, high: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise UserError(f"line {step.line}: {what} must be a number from {low:g} to {high:g}")
    return value


def _params(step: Step) -> bytes:
    text = step.options.get("params", "")
    try:
        return bytes.fromhex(text)
    except (TypeError, ValueError):
        raise UserError(f'line {step.line}: params must be hex bytes, e.g. "2100"') from None


class _Capture:
    """QSHost's capture file: the bytes go to the session."""

    def __init__(self, record: Callable[[bytes], None]) -> None:
        self.write = record


class Target:
    """One QS target: a port we open (serial, socket://) or listen:// (it connects).
    Keeps the answers to commands and the RTC steps that closed."""

    def __init__(self, url: str, baud: int, record: Callable[[bytes], None]) -> None:
        from ..link.ports import open_transport
        from ..link.qs_host import QSHost
        from ..link.qs_link import LISTEN_SCHEME, validate_listen

        self.decoder = QSDecoder()
        self.tracker = RtcTracker()
        self.steps: list[RtcStep] = []
        self.answers: list[Record] = []
        self._record = record
        self.host: Any = None
        self.port: Any = None
        self.seq = 0
        self.booted = False  # a reset target's info arrived
        self.running = False  # the target's QS_QF_RUN arrived
        if url.strip().lower().startswith(LISTEN_SCHEME):
            at = validate_listen(url)
            self.host = QSHost(at, self.decoder, self._take, _say, capture=_Capture(record))
            self.rx = self.host.commands
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
        for e in events:
            if e.__class__ is Record and e.rec == QF_RUN:
                self.running = True
            if e.__class__ is Record and 64 <= e.rec <= 68:  # target info .. peek data
                self.answers.append(e)  # type: ignore[arg-type]
                if e.rec == TARGET_INFO and e.values[0]:  # a reset target
                    self.booted = True
                    if self.port is not None:
                        self.seq = 0  # the host's sequence restarts
                        self.rx.target_reset()
        self.steps += self.tracker.feed(events)

    def pump(self) -> None:
        if self.host is not None:
            self.host.step()
            return
        data = self.port.read(65536)
        if data:
            self._record(data)
            self._take(self.decoder.feed(data))

    def send(self, cmd: RxCommand) -> None:
        if self.host is not None:
            why = self.host.send(cmd)
            if why is not None:
                raise UserError(why)
            return
        self.seq = (self.seq + 1) & 0xFF
        self.port.write(encode_frame(self.seq, cmd.rec, cmd.payload))
        self.rx.sent(cmd)

    def wait(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        end = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > end:
                raise UserError(f"{what}: nothing after {timeout_s:g} s")
            self.pump()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def command(target: Target, step: Step, cmd: RxCommand) -> None:
    """Send one command and wait for its answer: Trg-Done for TICK, COMMAND and EVENT,
    Trg-Ack for the rest, a reset target's info for RESET; Trg-ERR is an error."""
    target.answers.clear()
    target.send(cmd)
    rec = cmd.rec
    final = TARGET_DONE if rec in (RX["TICK"], RX["COMMAND"], RX["EVENT"]) else RX_STATUS

    def answered() -> bool:
        for r in target.answers:
            if r.rec == RX_STATUS and r.values[-1] == 0x80 | rec:
                raise UserError(f"line {step.line}: the target refused {cmd.name} (Trg-ERR)")
            if rec == RX["RESET"] and r.rec == TARGET_INFO and r.values[0]:
                return True
            if rec != RX["RESET"] and r.rec == final and r.values[-1] == rec:
                return True
        return False

    timeout = CONNECT_TIMEOUT_S if rec == RX["RESET"] else ANSWER_TIMEOUT_S
    target.wait(answered, timeout, f"line {step.line}: {cmd.name} was not answered")


def _mask(step: Step, value: Any, size: int) -> bytes:
    """A filter: "on", "off", {"on": [ids]} (only these) or {"off": [ids]} (all but)."""
    if value in ("on", "off"):
        return (b"\xff" if value == "on" else b"\x00") * size
    if isinstance(value, dict) and len(value) == 1 and set(value) <= {"on", "off"}:
        (key, ids), bits = next(iter(value.items())), 0
        if not isinstance(ids, list):
            ids = [ids]
        for i in ids:
            bits |= 1 << int(_number(step, i, 0, 8 * size - 1, "a filter id"))
        if key == "off":
            bits ^= (1 << 8 * size) - 1
        return bits.to_bytes(size, "little")
    raise UserError(
        f'line {step.line}: a filter is "on", "off", {{"on": [ids]}} or {{"off": [ids]}}'
    )


def _to(target: Target, step: Step, kind: int) -> int:
    """Make the step's ``to`` object current (kind SM or AO)."""
    to = step.options.get("to")
    if not isinstance(to, str):
        raise UserError(f'line {step.line}: {step.op} needs "to": an object\'s name')
    command(target, step, target.rx.curr_obj(kind, to))
    return {KIND_AO: 253, KIND_SM: 255}[kind]


def do_step(target: Target, step: Step) -> None:
    rx, op, arg = target.rx, step.op, step.arg
    if op == "reset":
        command(target, step, rx.reset())
    elif op in ("glb_filter", "loc_filter"):
        mask = _mask(step, arg, 16)
        command(target, step, rx.glb_filter(mask) if op == "glb_filter" else rx.loc_filter(mask))
    elif op == "ao_filter":
        command(target, step, rx.ao_filter(arg, bool(step.options.get("remove", False))))
    elif op in ("post", "publish", "dispatch"):
        if op == "publish":
            prio = 0
        elif op == "post" and not isinstance(step.options.get("to"), str):
            prio = int(_number(step, step.options.get("to"), 1, 252, 'post\'s "to"'))
        else:
            prio = _to(target, step, KIND_AO if op == "post" else KIND_SM)
        command(target, step, rx.event(prio, arg, _params(step)))
    elif op == "tick":
        rate = step.options.get("rate", 0)
        for _ in range(int(_number(step, arg, 1, MAX_TICKS, "tick"))):
            command(target, step, rx.tick(rate))
    elif op == "command":
        params = step.options.get("params", [])
        if not isinstance(params, list) or len(params) > 3:
            raise UserError(f"line {step.line}: command params: a list of up to 3 numbers")
        command(target, step, rx.command(arg, *params))
    elif op == "wait_steps":
        want = len(target.steps) + int(_number(step, arg, 1, MAX_WAIT_STEPS, "wait_steps"))
        timeout = step.options.get("timeout_s", WAIT_STEPS_TIMEOUT_S)
        timeout = _number(step, timeout, 0.1, MAX_WAIT_S, "timeout_s")
        target.wait(lambda: len(target.steps) >= want, timeout, f"line {step.line}: wait_steps")
    elif op == "wait_s":
        end = time.monotonic() + _number(step, arg, 0, MAX_WAIT_S, "wait_s")
        target.wait(lambda: time.monotonic() >= end, MAX_WAIT_S + 1, "wait_s")
    else:  # connect: only as the first command (run() takes it)
        raise UserError(f"line {step.line}: connect must be the scenario's first command")


def run(args: argparse.Namespace) -> int:
    from ..files import read_file
    from ..store import SessionStore, resolve_data_dir
    from .qs import rtc_lines

    path = Path(args.script)
    raw = read_file(path, "scenario", MAX_SCRIPT_BYTES + 1)
    steps = parse_script(raw.decode("utf-8", "replace"))
    url = args.port
    if steps and steps[0].op == "connect":
        url = url or steps[0].arg
        steps = steps[1:]
    if not isinstance(url, str) or not url:
        raise UserError('no target: give --port or begin the scenario with {"connect": PORT}')
    store = SessionStore(resolve_data_dir(args.data_dir))
    try:
        writer = store.create(args.name or path.name, source="scenario", kind="qs",
                              notes=f"mcuprof qs scenario {path.name}")  # fmt: skip
        target = Target(url, args.baud, writer.append)
        try:
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
            target.close()
        info = writer.finish()
    finally:
        store.close()
    for line in rtc_lines(rtc_table(target.steps)):
        print(line)
    _say(f"mcuprof: {len(target.steps)} RTC steps; stored as session {info.id} ({info.name})")
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
