"""The simulated device: the device side of the MiniProfiler protocol, sans-IO.

``SimDevice`` takes the host's bytes through ``receive`` and hands back what the
device puts on the wire through ``poll``. Everything is a function of the
injected clock: the firmware workload advances with it, the UART drains at
``baud / 10`` bytes per second of it, and a workload the link cannot carry fills
the ring buffer, which then drops its oldest records and counts them in
``buffer_overflows`` (last is best), as a real device does.

Servers that put a SimDevice behind a pty or a TCP port live in ``servers.py``;
the ``sim://`` pyserial handler lives in ``urlhandler/protocol_sim.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np

from ..errors import UserError
from ..protocol import (
    MAX_RECORDS_PER_PACKET,
    RECORD_DTYPE,
    Ack,
    BadCommand,
    Command,
    CommandDecoder,
    Metadata,
    Nack,
    Status,
    encode_event,
    encode_profile_data,
)
from .workload import (
    FunctionSpec,
    Workload,
    load_elf_functions,
    synthetic_build_id,
    synthetic_functions,
)

Clock = Callable[[], float]

MAX_SIM_RATE = 5_000_000  # records/s of the simulated device (sim://?rate=, --sim-rate, the page)
QUANTUM_S = 0.005  # device time advances in fixed steps so output does not depend on polling
PACKET_OVERHEAD = 8 + 3
DISCONNECT_MESSAGE = (
    "device reports readiness to read but returned no data "
    "(device disconnected or multiple access on port?)"
)


_COMMAND_ALIASES = {
    "START": Command.START_PROFILING,
    "STOP": Command.STOP_PROFILING,
    "STATUS": Command.GET_STATUS,
    "RESET": Command.RESET_BUFFERS,
    "METADATA": Command.GET_METADATA,
    "CONFIG": Command.SET_CONFIG,
}


def _command_set(text: str) -> frozenset[int]:
    """``START,GET_STATUS,0x7f``: command names, short aliases or raw codes."""
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        name = part.upper()
        if name in Command.__members__:
            out.add(int(Command[name]))
        elif name in _COMMAND_ALIASES:
            out.add(int(_COMMAND_ALIASES[name]))
        else:
            try:
                code = int(part, 0)
            except ValueError:
                raise ValueError(f"unknown command {part!r}") from None
            if not 0 <= code <= 0xFF:
                raise ValueError(f"command code {part!r} does not fit in a byte")
            out.add(code)
    return frozenset(out)


@dataclass
class SimOptions:
    """What ``sim://?key=value&...`` and ``mcuprof simulate`` can set.

    elf       ELF whose functions make up the workload: a path, ``default`` (the
              bundled sample) or ``none`` (a small synthetic firmware). Unset:
              the sample ELF if it exists, else the synthetic one.
    rate      records per second the firmware produces while profiling (500, which
              115200 baud carries; about 780/s fit at that speed)
    main      1: instrument a ``main`` that never returns, so the superloop runs at
              depth 1 and every stack lacks its root (orphans under [unknown]) (0:
              main is not instrumented, like the demo firmware; its callees are roots)
    mismatch  1: report a build ID that does not match the ELF (0)
    seed      random seed of the call graph and the faults (1)
    wrap      1: start the tick counter 2 s before it wraps at 2**32 (0)
    timer     profiling timer frequency in Hz (1000000)
    buffer    ring buffer capacity in records (2048)
    packet    at most this many records per PROFILE_DATA packet (64)
    ber       bit error rate on the device-to-host line (0)
    drop      probability that a device-to-host byte is lost (0)
    unplug    seconds after boot at which the device vanishes (never)
    nack      commands always answered with NACK, e.g. nack=START,GET_STATUS
    mute      commands never answered, e.g. mute=STOP
    boot      1: send METADATA unprompted at boot (1)
    baud      link speed the output is paced to; unset: the port's baud rate
    proto     mp: a MiniProfiler device (default); qs: a QP target speaking QS
              (link/qs_sim.py; seed and baud apply, the other options do not)
    """

    elf: str | None = None
    rate: float = 500.0
    main: bool = False
    mismatch: bool = False
    seed: int = 1
    wrap: bool = False
    timer: int = 1_000_000
    buffer: int = 2048
    packet: int = 64
    ber: float = 0.0
    drop: float = 0.0
    unplug: float | None = None
    nack: frozenset[int] = field(default_factory=frozenset)
    mute: frozenset[int] = field(default_factory=frozenset)
    boot: bool = True
    baud: int | None = None
    proto: str = "mp"

    @classmethod
    def from_query(cls, query: str) -> SimOptions:
        """Parse and range-check a query string; ValueError names the bad key."""
        opts = cls()
        seen: set[str] = set()
        names = {f.name for f in fields(cls)}
        for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
            if key not in names:
                raise ValueError(
                    f"unknown sim:// option {key!r} (known: {', '.join(sorted(names))})"
                )
            if key in seen:
                raise ValueError(f"sim:// option {key!r} given twice")
            seen.add(key)
            try:
                setattr(opts, key, _PARSERS[key](value))
            except ValueError as exc:
                raise ValueError(f"sim:// option {key}={value!r}: {exc}") from None
        return opts

    def to_query(self) -> str:
        default = SimOptions()
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == getattr(default, f.name):
                continue
            if isinstance(value, frozenset):
                text = ",".join(
                    Command(c).name if c in Command._value2member_map_ else hex(c)
                    for c in sorted(value)
                )
            elif isinstance(value, bool):
                text = str(int(value))
            else:
                text = str(value).removesuffix(".0")
            parts.append(f"{f.name}={text}")
        return "&".join(parts)


def _ranged(kind: type, lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = kind(text)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("not a finite number")
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo:g} and {hi:g}")
        return value

    return parse


def _flag(text: str) -> bool:
    if text not in {"0", "1"}:
        raise ValueError("must be 0 or 1")
    return text == "1"


def _elf(text: str) -> str:
    if text in {"default", "none"}:
        return text
    if not Path(text).is_file():
        raise ValueError("not an existing file (or 'default' / 'none')")
    return text


def _positive_unplug(text: str) -> float:
    return _ranged(float, 0.001, 1e7)(text)


def _proto(text: str) -> str:
    if text not in {"mp", "qs"}:
        raise ValueError("must be mp or qs")
    return text


_PARSERS: dict[str, Callable[[str], object]] = {
    "proto": _proto,
    "elf": _elf,
    "rate": _ranged(float, 0.001, MAX_SIM_RATE),
    "main": _flag,
    "mismatch": _flag,
    "seed": _ranged(int, 0, 2**32 - 1),
    "wrap": _flag,
    "timer": _ranged(int, 1_000, 1_000_000_000),
    "buffer": _ranged(int, 16, 10_000_000),
    "packet": _ranged(int, 1, MAX_RECORDS_PER_PACKET),
    "ber": _ranged(float, 0.0, 0.1),
    "drop": _ranged(float, 0.0, 0.1),
    "unplug": _positive_unplug,
    "nack": _command_set,
    "mute": _command_set,
    "boot": _flag,
    "baud": _ranged(int, 300, 1_000_000_000),
}


@dataclass(frozen=True)
class Firmware:
    """The program the simulated device runs."""

    functions: list[FunctionSpec]
    build_id: int
    thumb: bool
    source: str
    # static call edges (caller, callee) as indices into ``functions``; none: random graph
    calls: tuple[tuple[int, int], ...] = ()


def load_firmware(elf: str | None) -> Firmware:
    from ..paths import default_elf

    if elf == "none":
        funcs = synthetic_functions()
        return Firmware(funcs, synthetic_build_id(funcs), True, "synthetic")
    path = default_elf() if elf in {None, "default"} else Path(elf)
    if elf is None and not path.is_file():
        funcs = synthetic_functions()
        return Firmware(funcs, synthetic_build_id(funcs), True, "synthetic")
    if not path.is_file():
        raise UserError(f"{path}: no such ELF file")
    funcs, build_id, is_arm, calls = load_elf_functions(path)
    if build_id is None:
        build_id = synthetic_build_id(funcs)
    return Firmware(funcs, build_id, is_arm, str(path), tuple(calls))


@dataclass
class SentPacket:
    """What the device sent, for tests that check the host lost only damaged packets."""

    records: np.ndarray
    damaged: bool


def make_device(options: SimOptions | None = None, **kwargs: object):
    """The simulated board ``options.proto`` asks for (SimDevice or QSSimDevice)."""
    if options is not None and options.proto == "qs":
        from .qs_sim import QSSimDevice

        return QSSimDevice(options, **kwargs)
    return SimDevice(options, **kwargs)  # type: ignore[arg-type]


class SimDevice:
    """One simulated board. Not thread-safe: one driver calls receive/poll."""

    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        clock: Clock = time.monotonic,
        baud: int = 115_200,
        firmware: Firmware | None = None,
        keep_log: bool = False,
    ) -> None:
        self.options = opts = options or SimOptions()
        self.firmware = firmware or load_firmware(opts.elf)
        self._clock = clock
        self.baud = opts.baud or baud
        build_id = self.firmware.build_id ^ (0x5A5A_0001 if opts.mismatch else 0)
        self.metadata = Metadata(168_000_000, opts.timer, build_id & 0xFFFFFFFF, "sim-1.0")
        start_tick = (2**32 - 2 * opts.timer) if opts.wrap else 0
        self._start_tick = start_tick
        self.workload = Workload(
            self.firmware.functions,
            opts.rate,
            opts.timer,
            seed=opts.seed,
            start_tick=start_tick,
            thumb=self.firmware.thumb,
            calls=self.firmware.calls,
            main=opts.main,
        )
        self._rng = np.random.default_rng(opts.seed + 7919)
        self._decoder = CommandDecoder()
        self._t0 = clock()
        self._t = 0.0  # device time processed so far, a multiple of QUANTUM_S
        self._budget = 0.0  # UART bytes the line can take now; negative while busy
        self._ring = np.empty(0, dtype=RECORD_DTYPE)
        self._ring_since = 0.0
        self._out = bytearray()
        self.profiling = False
        self.unplugged = False
        self.buffer_overflows = 0
        self.records_captured = 0
        self.records_sent = 0
        self.records_damaged = 0
        self.commands: list[Command | BadCommand] = []
        self.config = b""
        self.records_per_packet = opts.packet
        self.flush_s = 0.02  # the firmware's default: timer_freq / 50 ticks
        self.sent: list[SentPacket] | None = [] if keep_log else None
        if opts.boot:
            self._send(encode_event(self.metadata), records=None)

    # ------------------------------------------------------------ host side

    def receive(self, data: bytes) -> None:
        """Bytes the host wrote; answered at the current device time."""
        if self.unplugged:
            return
        self._advance()
        for event in self._decoder.feed(data):
            if isinstance(event, BadCommand):
                self.commands.append(event)
                self._send(encode_event(Nack()), records=None)
                continue
            self.commands.append(event.command)
            self._handle(event.command, event.payload)

    def power_up(self) -> None:
        """Start the device's clock now: a board behind a TCP server runs from the first
        connection, so a host that connects late gets no catch-up burst and ``unplug``
        counts from then. Only before any device time has passed."""
        if self._t == 0.0:
            self._t0 = self._clock()

    def poll(self) -> bytes:
        """Bytes the device has put on the wire since the last call."""
        if not self.unplugged:
            self._advance()
        out = bytes(self._out)
        self._out.clear()
        return out

    @property
    def device_time(self) -> float:
        return self._t

    @property
    def buffer_usage_percent(self) -> int:
        return min(100, 100 * len(self._ring) // self.options.buffer)

    def status(self) -> Status:
        return Status(
            self.profiling,
            self.buffer_overflows & 0xFFFFFFFF,
            self.records_captured & 0xFFFFFFFF,
            self.buffer_usage_percent,
        )

    # ------------------------------------------------------------ internals

    def _handle(self, command: Command, payload: bytes) -> None:
        code = int(command)
        if code in self.options.mute:
            return
        if code in self.options.nack:
            self._send(encode_event(Nack()), records=None)
            return
        if command is Command.GET_METADATA:
            reply = encode_event(self.metadata)
        elif command is Command.GET_STATUS:
            reply = encode_event(self.status())
        else:
            ok = True
            if command is Command.START_PROFILING:
                if not self.profiling and not len(self._ring):
                    self._ring_since = self._t
                self.profiling = True
            elif command is Command.STOP_PROFILING:
                # As the firmware does: ACK at once; what is still in the ring
                # follows, paced, since responses go ahead of data.
                self.profiling = False
            elif command is Command.RESET_BUFFERS:
                self._ring = self._ring[:0]
                self.buffer_overflows = 0
                self.records_captured = 0
            elif command is Command.SET_CONFIG:
                ok = self._set_config(payload)
            reply = encode_event(Ack() if ok else Nack())
            self._send(reply, records=None)
            return
        self._send(reply, records=None)

    def _set_config(self, payload: bytes) -> bool:
        """The firmware's layout: u16 records per packet, u32 flush interval in
        ticks; 0 or absent keeps the value; too many records per packet is refused."""
        self.config = payload
        rpp = int.from_bytes(payload[0:2], "little") if len(payload) >= 2 else 0
        flush = int.from_bytes(payload[2:6], "little") if len(payload) >= 6 else 0
        if rpp > self.options.packet:
            return False
        if rpp:
            self.records_per_packet = rpp
        if flush:
            self.flush_s = flush / self.options.timer
        return True

    def _advance(self) -> None:
        now = self._clock() - self._t0
        q = QUANTUM_S
        if now - self._t >= q and not self.profiling and not len(self._ring):
            # Nothing to record: jump the firmware ahead in one go.
            steps = math.floor((now - self._t) / q)
            self._t += steps * q
            self.workload.skip_until(self._tick(self._t))
            self._budget = min(self._budget + steps * q * self.baud / 10, self._budget_cap())
        unplug = self.options.unplug
        while now - self._t >= q:
            if unplug is not None and self._t >= unplug:
                self.unplugged = True
                self.profiling = False
                return
            self._t += q
            self._budget = min(self._budget + q * self.baud / 10, self._budget_cap())
            records = self.workload.take_until(self._tick(self._t))
            self._capture(records)
            self._transmit()
        if unplug is not None and self._t >= unplug:
            self.unplugged = True
            self.profiling = False

    def _tick(self, t: float) -> int:
        return self._start_tick + round(t * self.options.timer)

    def _budget_cap(self) -> float:
        return QUANTUM_S * self.baud / 10

    def _capture(self, records: np.ndarray) -> None:
        if not self.profiling or not len(records):
            return
        self.records_captured += len(records)
        if not len(self._ring):
            self._ring_since = self._t
        ring = np.concatenate([self._ring, records]) if len(self._ring) else records
        excess = len(ring) - self.options.buffer
        if excess > 0:
            self.buffer_overflows += excess
            ring = ring[excess:]
        self._ring = ring

    def _transmit(self) -> None:
        packet = self.records_per_packet
        while len(self._ring) and self._budget >= 0:
            waited = self._t - self._ring_since
            if self.profiling and len(self._ring) < packet and waited < self.flush_s:
                break
            self._send_packet()

    def _send_packet(self) -> None:
        n = min(self.records_per_packet, len(self._ring))
        records, self._ring = self._ring[:n], self._ring[n:]
        self._ring_since = self._t
        self._send(encode_profile_data(records), records=records)

    def _send(self, packet: bytes, records: np.ndarray | None) -> None:
        self._budget -= len(packet)
        damaged = False
        opts = self.options
        if opts.ber or opts.drop:
            packet, damaged = self._damage(packet)
        if records is not None:
            self.records_sent += len(records)
            if damaged:
                self.records_damaged += len(records)
            if self.sent is not None:
                self.sent.append(SentPacket(records.copy(), damaged))
        self._out += packet

    def _damage(self, packet: bytes) -> tuple[bytes, bool]:
        data = np.frombuffer(packet, dtype=np.uint8).copy()
        rng = self._rng
        flips = int(rng.binomial(len(data) * 8, self.options.ber)) if self.options.ber else 0
        if flips:
            bits = rng.integers(0, len(data) * 8, size=flips)
            np.bitwise_xor.at(data, bits // 8, (1 << (bits % 8)).astype(np.uint8))
        if self.options.drop:
            data = data[rng.random(len(data)) >= self.options.drop]
        out = data.tobytes()
        return out, out != packet
