"""A simulated QP target speaking QS (``sim://?proto=qs``): the dining philosophers.

The device boots like a QP/C 7.4 application with QS: QS_EMPTY, target info (a 32-bit
Cortex-M: 4-byte pointers and timestamps), dictionaries, start-up records, QS_QF_RUN,
then the running DPP: a 100 Hz tick expires time events, five Philo active objects
and a Table pass events through queues and a memory pool, and every step is traced
(dispatch, transitions, queue and pool records, PHILO_STAT application records).
Timestamps count microseconds of device time.

Like ``SimDevice`` it is sans-IO (``receive``/``poll``), paced to the baud rate, and
last-is-best: frames the link cannot carry are dropped from its trace buffer, so the
host sees sequence-number gaps. QS-RX commands answered: INFO, RESET, TICK, GLB_FILTER.
"""

from __future__ import annotations

import random
import struct
import time
from collections import deque

from ..protocol.qs import Framer, encode_frame
from ..protocol.qs.framing import Frame
from ..qs.rx import RX

QUANTUM_S = 0.005
TICK_S = 0.01  # QF tick rate 0: 100 Hz
BUFFER = 4096  # bytes of trace buffer

N_PHILO = 5
PHILO = [0x2000_0100 + 0x48 * i for i in range(N_PHILO)]
TIME_EVT = [p + 0x28 for p in PHILO]
TABLE = 0x2000_0400
POOL = 0x2000_0500
CLOCK_TICK = 0x0800_0F01
TOP, THINKING, HUNGRY, EATING = 0x0800_2001, 0x0800_1001, 0x0800_1101, 0x0800_1201
SERVING = 0x0800_1401
EAT, DONE, TIMEOUT, HUNGRY_SIG = 4, 5, 10, 11
PHILO_STAT = 100
POOL_SIZE, QUEUE_LEN = 10, 5
# QS-RX records the host may send, and the target's acknowledgement record.
RX_INFO, RX_RESET, RX_TICK, RX_GLB_FILTER = RX["INFO"], RX["RESET"], RX["TICK"], RX["GLB_FILTER"]
QS_RX_STATUS = 66

_STATE_NAME = {THINKING: "thinking", HUNGRY: "hungry", EATING: "eating"}


def target_info(reset: bool) -> bytes:
    """QS_TARGET_INFO for this board: QP 7.4.0, 32-bit pointers, 4-byte timestamps."""
    sizes = bytes([0x22, 0x41, 0x22, 0x44, 0x04, 8, 0x13])
    build = bytes([0, 30, 12, 1, 6, 26])  # 260601_123000
    return bytes([0xFF if reset else 0]) + struct.pack("<H", 740) + sizes + build


class QSSimDevice:
    """One simulated QP board. Not thread-safe: one driver calls receive/poll."""

    def __init__(self, options=None, *, clock=time.monotonic, baud: int = 115_200, **_: object):
        self.options = options
        self.baud = (getattr(options, "baud", None) or baud) if options is not None else baud
        self._clock = clock
        self._t0 = clock()
        self._t = 0.0
        self._rng = random.Random(getattr(options, "seed", 1))
        self._rx = Framer()
        self.unplugged = False
        self.enabled = True  # global filter: all records on or off
        self.dropped_frames = 0
        self._out = bytearray()
        self._buffer: deque[bytes] = deque()
        self._buffered = 0
        self._budget = 0.0
        self._boot()

    # ------------------------------------------------------------ host side

    def receive(self, data: bytes) -> None:
        self._advance()
        for ev in self._rx.feed(data):
            if isinstance(ev, Frame):
                self._command(ev.rec, ev.payload)

    def poll(self) -> bytes:
        self._advance()
        out = bytes(self._out)
        self._out.clear()
        return out

    # ------------------------------------------------------------ the board

    def _boot(self) -> None:
        """Power-up or QS-RX RESET: the timestamp counter starts again from 0."""
        self._seq = 0
        self._us = 0.0
        self._boot_t = self._t
        self._next_tick = self._t + TICK_S
        self.state = [THINKING] * N_PHILO
        self.timer = [self._rng.randint(10, 60) for _ in range(N_PHILO)]
        self.forks = [True] * N_PHILO
        self.hungry: set[int] = set()
        self.pool_free = self.pool_min = POOL_SIZE
        self.queue_min = {obj: QUEUE_LEN for obj in [*PHILO, TABLE]}
        self._emit(0, b"", force=True)
        self._emit(64, target_info(reset=True), force=True)
        self._dictionaries()
        for i, philo in enumerate(PHILO):
            self._rec(12, "ts sig obj", EAT, philo)
            self._rec(3, "obj fun fun", philo, TOP, THINKING)
            self._rec(32, "ts obj obj u32 u32 u8", TIME_EVT[i], philo, self.timer[i], 0, 0)
            self._rec(1, "obj fun", philo, THINKING)
            self._rec(4, "ts obj fun", philo, THINKING)
        self._rec(12, "ts sig obj", DONE, TABLE)
        self._rec(3, "obj fun fun", TABLE, TOP, SERVING)
        self._rec(4, "ts obj fun", TABLE, SERVING)
        self._emit(70, b"", force=True)

    def _dictionaries(self) -> None:
        names = [(CLOCK_TICK, "l_clock_tick"), (TABLE, "Table_inst"), (POOL, "EvtPool1")]
        for i in range(N_PHILO):
            names += [(PHILO[i], f"Philo_inst[{i}]"), (TIME_EVT[i], f"Philo_inst[{i}].timeEvt")]
        for ptr, name in names:
            self._emit(61, struct.pack("<I", ptr) + name.encode() + b"\0", force=True)
        funs = [(TOP, "QHsm_top"), (THINKING, "Philo_thinking"), (HUNGRY, "Philo_hungry")]
        funs += [(EATING, "Philo_eating"), (SERVING, "Table_serving")]
        for ptr, name in funs:
            self._emit(62, struct.pack("<I", ptr) + name.encode() + b"\0", force=True)
        for sig, name in [(EAT, "EAT_SIG"), (DONE, "DONE_SIG"), (TIMEOUT, "TIMEOUT_SIG")]:
            self._emit(60, struct.pack("<HI", sig, 0) + name.encode() + b"\0", force=True)
        self._emit(60, struct.pack("<HI", HUNGRY_SIG, 0) + b"HUNGRY_SIG\0", force=True)
        self._emit(63, bytes([PHILO_STAT]) + b"PHILO_STAT\0", force=True)

    def _command(self, rec: int, payload: bytes) -> None:
        if rec == RX_RESET:
            self._buffer.clear()
            self._buffered = 0
            self._boot()
            return
        self._emit(QS_RX_STATUS, bytes([rec]), force=True)
        if rec == RX_INFO:
            self._emit(64, target_info(reset=False), force=True)
        elif rec == RX_TICK:
            self._tick()
        elif rec == RX_GLB_FILTER and payload:
            # A length byte, then a 128-bit mask: any bit set turns the trace on.
            self.enabled = any(payload[1:])

    # ------------------------------------------------------------ tracing

    def _ts(self) -> int:
        return int(self._us) & 0xFFFF_FFFF

    def _rec(self, rec: int, layout: str, *values: int) -> None:
        """Emit a record whose layout is given as kinds: ts (added here), sig, obj,
        fun, u8, u16, u32."""
        codes = {"sig": "H", "obj": "I", "fun": "I", "u8": "B", "u16": "H", "u32": "I"}
        kinds = layout.split()
        if kinds and kinds[0] == "ts":
            self._us += self._rng.uniform(2, 15)
            values = (self._ts(), *values)
            kinds[0] = "u32"
        self._emit(rec, struct.pack("<" + "".join(codes[k] for k in kinds), *values))

    def _emit(self, rec: int, payload: bytes, force: bool = False) -> None:
        if not (self.enabled or force):
            return
        self._seq = (self._seq + 1) & 0xFF
        frame = encode_frame(self._seq, rec, payload)
        self._buffer.append(frame)
        self._buffered += len(frame)
        while self._buffered > BUFFER:  # last is best: the oldest frames go
            self._buffered -= len(self._buffer.popleft())
            self.dropped_frames += 1

    def _stat(self, i: int) -> None:
        name = _STATE_NAME[self.state[i]].encode()
        self._us += self._rng.uniform(1, 4)
        self._emit(PHILO_STAT, struct.pack("<IBB", self._ts(), 0x11, i) + b"\x08" + name + b"\0")

    # ------------------------------------------------------------ the application

    def _new(self, sig: int) -> None:
        self._rec(28, "ts u16 sig", 6, sig)
        self.pool_free -= 1
        self.pool_min = min(self.pool_min, self.pool_free)
        self._rec(24, "ts obj u16 u16", POOL, self.pool_free, self.pool_min)

    def _gc(self, sig: int) -> None:
        self._rec(30, "ts sig u8 u8", sig, 1, 1)
        self.pool_free += 1
        self._rec(25, "ts obj u16", POOL, self.pool_free)

    def _post(self, sender: int, obj: int, sig: int, pool: int, ref: int) -> None:
        free = QUEUE_LEN - 1
        self.queue_min[obj] = min(self.queue_min[obj], free)
        self._rec(14, "ts obj sig obj u8 u8 u8 u8", sender, sig, obj, pool, ref, free,
                  self.queue_min[obj])  # fmt: skip
        self._rec(17, "ts sig obj u8 u8", sig, obj, pool, ref)

    def _tran(self, i: int, sig: int, target: int) -> None:
        philo, source = PHILO[i], self.state[i]
        self._rec(8, "ts sig obj fun", sig, philo, source)
        self._rec(2, "obj fun", philo, source)
        self._rec(1, "obj fun", philo, target)
        self._us += self._rng.uniform(5, 60)  # the work of the RTC step
        self._rec(6, "ts sig obj fun fun", sig, philo, source, target)
        self.state[i] = target
        self._stat(i)

    def _tick(self) -> None:
        for i in range(N_PHILO):
            self.timer[i] -= 1
            if self.timer[i] > 0:
                continue
            self._rec(37, "ts obj sig obj u8", TIME_EVT[i], TIMEOUT, PHILO[i], 0)
            self._rec(33, "obj obj u8", TIME_EVT[i], PHILO[i], 0)
            self._post(CLOCK_TICK, PHILO[i], TIMEOUT, 0, 0)
            if self.state[i] == THINKING:
                self._tran(i, TIMEOUT, HUNGRY)
                self._new(HUNGRY_SIG)
                self._post(PHILO[i], TABLE, HUNGRY_SIG, 1, 1)
                self._table_hungry(i)
            else:  # eating: done
                self._tran(i, TIMEOUT, THINKING)
                self.timer[i] = self._rng.randint(30, 120)
                self._rec(32, "ts obj obj u32 u32 u8", TIME_EVT[i], PHILO[i], self.timer[i], 0, 0)
                self.forks[i] = self.forks[(i + 1) % N_PHILO] = True
                self._new(DONE)
                self._rec(26, "ts obj sig u8 u8", PHILO[i], DONE, 1, 0)
                self._post(PHILO[i], TABLE, DONE, 1, 1)
                self._rec(8, "ts sig obj fun", DONE, TABLE, SERVING)
                self._rec(5, "ts sig obj fun", DONE, TABLE, SERVING)
                self._gc(DONE)
                for j in sorted(self.hungry):
                    self._serve(j)
            if self.timer[i] <= 0:
                self.timer[i] = 1_000_000  # hungry: waits for EAT, no time event

    def _table_hungry(self, i: int) -> None:
        self._rec(8, "ts sig obj fun", HUNGRY_SIG, TABLE, SERVING)
        self._rec(5, "ts sig obj fun", HUNGRY_SIG, TABLE, SERVING)
        self._gc(HUNGRY_SIG)
        self.hungry.add(i)
        self._serve(i)

    def _serve(self, i: int) -> None:
        left, right = i, (i + 1) % N_PHILO
        if i not in self.hungry or not (self.forks[left] and self.forks[right]):
            return
        self.forks[left] = self.forks[right] = False
        self.hungry.discard(i)
        self._new(EAT)
        self._rec(26, "ts obj sig u8 u8", TABLE, EAT, 1, 0)
        for j in range(N_PHILO):
            self._post(TABLE, PHILO[j], EAT, 1, N_PHILO - j)
            if j == i:
                self._tran(j, EAT, EATING)
                self.timer[j] = self._rng.randint(20, 50)
                self._rec(32, "ts obj obj u32 u32 u8", TIME_EVT[j], PHILO[j], self.timer[j], 0, 0)
            else:
                self._rec(8, "ts sig obj fun", EAT, PHILO[j], self.state[j])
                self._rec(7 if self.state[j] == HUNGRY else 5, "ts sig obj fun", EAT, PHILO[j],
                          self.state[j])  # fmt: skip
            self._rec(29, "ts sig u8 u8", EAT, 1, N_PHILO - j - 1)
        self._gc(EAT)

    # ------------------------------------------------------------ time and the wire

    def power_up(self) -> None:
        """Start the board's clock now (see SimDevice.power_up)."""
        if self._t == 0.0:
            self._t0 = self._clock()

    def _advance(self) -> None:
        now = self._clock() - self._t0
        while now - self._t >= QUANTUM_S:
            self._t += QUANTUM_S
            self._budget = min(self._budget + QUANTUM_S * self.baud / 10, BUFFER)
            while self._t >= self._next_tick:
                self._us = max(self._us, (self._next_tick - self._boot_t) * 1e6)
                self._next_tick += TICK_S
                self._tick()
            while self._buffer and len(self._buffer[0]) <= self._budget:
                frame = self._buffer.popleft()
                self._buffered -= len(frame)
                self._budget -= len(frame)
                self._out += frame
