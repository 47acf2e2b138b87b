"""A simulated QP target speaking QS (``sim://?proto=qs``): the dining philosophers.

The device boots like a QP/C 7.4 application with QS: QS_EMPTY, target info (a 32-bit
Cortex-M: 4-byte pointers and timestamps), dictionaries, start-up records, QS_QF_RUN,
then the running DPP: a 100 Hz tick expires time events, five Philo active objects
and a Table pass events through queues and a memory pool, and every step is traced
(dispatch, transitions, queue and pool records, PHILO_STAT application records).
Timestamps count microseconds of device time.

Like ``SimDevice`` it is sans-IO (``receive``/``poll``), paced to the baud rate, and
last-is-best: frames the link cannot carry are dropped from its trace buffer, so the
host sees sequence-number gaps.

It answers the QS-RX commands a QP/C 7.4 target does (qs_rx.py has the records): INFO,
COMMAND, RESET, TICK, PEEK/POKE/FILL on the current AP object (each object the host
names gets ``AP_BYTES`` of simulated memory), GLB_FILTER and LOC_FILTER (really
filtering what it emits: the global mask by record, the local one by the active
object's QS-ID, its priority), AO_FILTER, CURR_OBJ and QUERY_CURR, and EVENT: publish,
post and dispatch produce the post, dispatch and "ignored" records a QP target would;
init takes the initial transition again. Each is acknowledged with QS_RX_STATUS, and
TICK, COMMAND and EVENT end with QS_TARGET_DONE. The QUTest records (7, 8, 9, 14) are
answered with Trg-ERR 0x43, as the real DPP (built without QUTest) answers them.
"""

from __future__ import annotations

import random
import struct
import time
from collections import deque

from ..protocol.qs import Framer, encode_frame
from ..protocol.qs.framing import QSFrame
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
# QS-RX records the host may send, and the target's answers.
RX_INFO, RX_RESET, RX_TICK, RX_GLB_FILTER = RX["INFO"], RX["RESET"], RX["TICK"], RX["GLB_FILTER"]
QS_TARGET_DONE, QS_RX_STATUS, QS_QUERY_DATA, QS_PEEK_DATA = 65, 66, 67, 68
RX_ERROR = 0x80  # QS_RX_STATUS flag: the command failed (the low bits say why)
ERR_UNSUPPORTED = 0x43  # the real DPP's answer to the QUTest records
AP_BYTES = 64  # simulated memory of one AP object: peek, poke and fill stay inside it
ALL = (1 << 128) - 1
# Records a QP target emits whatever the global filter (QP's non-maskable ones):
# dictionaries, target info, the test and QS-RX answers, QF_RUN.
NOT_MASKABLE = frozenset((0, 54, *range(58, 71)))
# QS-IDs (priorities) of the active objects, and the objects whose records are theirs.
PRIO = {**{philo: i + 1 for i, philo in enumerate(PHILO)}, TABLE: N_PHILO + 1}
OWNER = {**{te: PHILO[i] for i, te in enumerate(TIME_EVT)}, **{ao: ao for ao in PRIO}}
KIND_SM, KIND_AO, KIND_MP, KIND_EQ, KIND_TE, KIND_AP, KIND_SM_AO = range(7)
EVT_PUBLISH, EVT_POST_CURR, EVT_INIT, EVT_DISPATCH = 0, 253, 254, 255

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
            if isinstance(ev, QSFrame):
                self._command(ev.rec, ev.payload)

    def poll(self) -> bytes:
        self._advance()
        out = bytes(self._out)
        self._out.clear()
        return out

    # ------------------------------------------------------------ the board

    def _boot(self) -> None:
        """Power-up or QS-RX RESET: the timestamp counter starts again from 0."""
        self.glb_filter = ALL  # QS global filter: one bit per record id
        self.loc_filter = ALL  # QS local filter: one bit per QS-ID (AO priority)
        self.current: dict[int, int] = {}  # the host's current objects, by kind
        self.memory: dict[int, bytearray] = {}  # AP objects the host peeked or poked
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

    @property
    def enabled(self) -> bool:
        """Whether the global filter lets any record through."""
        return self.glb_filter != 0

    def _command(self, rec: int, payload: bytes) -> None:
        if rec == RX_RESET:
            self._buffer.clear()
            self._buffered = 0
            self._boot()
            return
        handler = _RX_HANDLERS.get(rec)
        try:
            done = handler(self, payload) if handler is not None else None
        except (struct.error, IndexError, KeyError, ValueError, StopIteration):
            done = None
            handler = None
        if handler is None:  # unknown, unsupported or malformed: Trg-ERR, as QP's
            self._emit(QS_RX_STATUS, bytes([RX_ERROR | ERR_UNSUPPORTED]), force=True)
        elif done:
            self._emit(QS_TARGET_DONE, struct.pack("<IB", self._ts(), rec), force=True)

    # ------------------------------------------------------------ QS-RX commands
    # Each acknowledges (QS_RX_STATUS) and returns whether QS_TARGET_DONE follows; a
    # malformed payload raises (struct.error, IndexError...) and is answered Trg-ERR.

    def _ack(self, rec: int) -> None:
        self._emit(QS_RX_STATUS, bytes([rec]), force=True)

    def _rx_info(self, payload: bytes) -> bool:
        self._ack(RX_INFO)
        self._emit(64, target_info(reset=False), force=True)
        return False

    def _rx_command(self, payload: bytes) -> bool:
        struct.unpack("<BIII", payload)  # the application has no commands: done at once
        self._ack(RX["COMMAND"])
        return True

    def _rx_tick(self, payload: bytes) -> bool:
        if payload != b"\x00":
            raise ValueError("only tick rate 0")  # as the real DPP (rate 1 asserts)
        self._ack(RX_TICK)
        self._tick()
        return True  # Trg-Done follows the tick's records, as the real DPP sends it

    def _ap(self, offset: int, size: int, num: int) -> tuple[bytearray, int]:
        """The current AP object's memory and the end of the range asked for."""
        if size not in (1, 2, 4) or KIND_AP not in self.current:
            raise ValueError("no AP object, or a bad element size")
        end = offset + size * num
        if num == 0 or end > AP_BYTES:
            raise ValueError(f"bytes {offset}-{end} are outside the {AP_BYTES}-byte object")
        return self.memory.setdefault(self.current[KIND_AP], bytearray(AP_BYTES)), end

    def _rx_peek(self, payload: bytes) -> bool:
        offset, size, num = struct.unpack("<HBB", payload)
        mem, end = self._ap(offset, size, num)
        head = struct.pack("<IHBB", self._ts(), offset, size, num)
        self._emit(QS_PEEK_DATA, head + bytes(mem[offset:end]), force=True)
        return False

    def _rx_poke(self, payload: bytes) -> bool:
        offset, size, num = struct.unpack_from("<HBB", payload)
        mem, end = self._ap(offset, size, num)
        if len(payload) != 4 + end - offset:
            raise ValueError("poke data does not match its count")
        mem[offset:end] = payload[4:]
        self._ack(RX["POKE"])
        return False

    def _rx_fill(self, payload: bytes) -> bool:
        offset, size, num = struct.unpack_from("<HBB", payload)
        mem, end = self._ap(offset, size, num)
        if len(payload) != 4 + size:
            raise ValueError("fill takes one element")
        mem[offset:end] = payload[4:] * num
        self._ack(RX["FILL"])
        return False

    def _rx_filter(self, payload: bytes, rec: int) -> bool:
        if len(payload) != 17 or payload[0] != 16:
            raise ValueError("a filter is a length byte 16 and 16 mask bytes")
        mask = int.from_bytes(payload[1:], "little")
        if rec == RX_GLB_FILTER:
            self.glb_filter = mask
        else:
            self.loc_filter = mask
        self._ack(rec)
        return False

    def _rx_ao_filter(self, payload: bytes) -> bool:
        remove, obj = struct.unpack("<BI", payload)
        bit = 1 << PRIO[obj] if obj else 0  # KeyError for an object that is no AO
        self.loc_filter = self.loc_filter & ~bit if remove else self.loc_filter | bit
        self._ack(RX["AO_FILTER"])
        return False

    def _rx_curr_obj(self, payload: bytes) -> bool:
        kind, obj = struct.unpack("<BI", payload)
        if kind > KIND_SM_AO:
            raise ValueError(f"object kind {kind}")
        for k in (KIND_SM, KIND_AO) if kind == KIND_SM_AO else (kind,):
            self.current[k] = obj
        self._ack(RX["CURR_OBJ"])
        return False

    def _rx_query(self, payload: bytes) -> bool:
        (kind,) = struct.unpack("<B", payload)
        obj = self.current.get(kind, 0)
        head = struct.pack("<IBI", self._ts(), kind, obj)
        if kind in (KIND_SM, KIND_AO):
            more = struct.pack("<I", self._state_of(obj))
        elif kind == KIND_MP:
            more = struct.pack("<HH", self.pool_free, self.pool_min)
        elif kind == KIND_EQ:
            more = struct.pack("<BB", QUEUE_LEN, self.queue_min.get(obj, QUEUE_LEN))
        elif kind == KIND_TE:
            philo = OWNER.get(obj, 0)
            tim = self.timer[PHILO.index(philo)] if philo in PHILO else 0
            more = struct.pack("<IIIHB", philo, tim, 0, TIMEOUT, 0)
        elif kind == KIND_AP:
            more = b""
        else:
            raise ValueError(f"query kind {kind}")
        self._emit(QS_QUERY_DATA, head + more, force=True)
        return False

    def _state_of(self, obj: int) -> int:
        if obj in PHILO:
            return self.state[PHILO.index(obj)]
        return SERVING if obj == TABLE else 0

    def _rx_event(self, payload: bytes) -> bool:
        prio, sig, length = struct.unpack_from("<BHH", payload)
        if len(payload) != 5 + length:
            raise ValueError("event parameters do not match their length")
        if prio == EVT_PUBLISH:
            targets = list(PRIO)
        elif prio in (EVT_POST_CURR, EVT_DISPATCH, EVT_INIT):
            current = self.current.get(KIND_AO if prio == EVT_POST_CURR else KIND_SM, 0)
            if current not in PRIO:
                raise ValueError("no current object")
            targets = [current]
        else:
            targets = [next(ao for ao, p in PRIO.items() if p == prio)]  # StopIteration
        self._ack(RX["EVENT"])
        if prio == EVT_INIT:
            state = self._state_of(targets[0])
            self._rec(3, "obj fun fun", targets[0], TOP, state)
            self._rec(4, "ts obj fun", targets[0], state)
            return True
        if prio == EVT_PUBLISH:
            self._rec(26, "ts obj sig u8 u8", 0, sig, 0, 0)
        for ao in targets:
            if prio != EVT_DISPATCH:
                self._post(0, ao, sig, 0, 0)
            state = self._state_of(ao)
            self._rec(8, "ts sig obj fun", sig, ao, state)
            self._rec(7, "ts sig obj fun", sig, ao, state)  # the state ignores it
        return True

    # ------------------------------------------------------------ tracing

    def _ts(self) -> int:
        return int(self._us) & 0xFFFF_FFFF

    def _rec(self, rec: int, layout: str, *values: int, ao: int | None = None) -> None:
        """Emit a record whose layout is given as kinds: ts (added here), sig, obj,
        fun, u8, u16, u32. ``ao``: the active object whose QS-ID the local filter
        checks (QP's record owner); by default the first AO or time event named."""
        codes = {"sig": "H", "obj": "I", "fun": "I", "u8": "B", "u16": "H", "u32": "I"}
        kinds = layout.split()
        if ao is None:
            named = zip(kinds[kinds[0] == "ts" :], values, strict=False)
            ao = next((OWNER[v] for k, v in named if k == "obj" and v in OWNER), 0)
        if kinds and kinds[0] == "ts":
            self._us += self._rng.uniform(2, 15)
            values = (self._ts(), *values)
            kinds[0] = "u32"
        self._emit(rec, struct.pack("<" + "".join(codes[k] for k in kinds), *values), ao=ao)

    def _emit(self, rec: int, payload: bytes, force: bool = False, ao: int = 0) -> None:
        if not force and rec not in NOT_MASKABLE:
            if not self.glb_filter >> rec & 1:
                return
            if ao and not self.loc_filter >> PRIO[ao] & 1:
                return  # the local filter silences this active object
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
        self._rec(
            14,
            "ts obj sig obj u8 u8 u8 u8",
            sender,
            sig,
            obj,
            pool,
            ref,
            free,
            self.queue_min[obj],
            ao=obj,
        )  # fmt: skip (the receiver's record)
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


_RX_HANDLERS = {
    RX_INFO: QSSimDevice._rx_info,
    RX["COMMAND"]: QSSimDevice._rx_command,
    RX_TICK: QSSimDevice._rx_tick,
    RX["PEEK"]: QSSimDevice._rx_peek,
    RX["POKE"]: QSSimDevice._rx_poke,
    RX["FILL"]: QSSimDevice._rx_fill,
    RX_GLB_FILTER: lambda dev, p: dev._rx_filter(p, RX_GLB_FILTER),
    RX["LOC_FILTER"]: lambda dev, p: dev._rx_filter(p, RX["LOC_FILTER"]),
    RX["AO_FILTER"]: QSSimDevice._rx_ao_filter,
    RX["CURR_OBJ"]: QSSimDevice._rx_curr_obj,
    RX["QUERY_CURR"]: QSSimDevice._rx_query,
    RX["EVENT"]: QSSimDevice._rx_event,
}
