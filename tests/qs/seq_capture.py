"""A made-up QS capture with every record QSPY's -g draws, for the sequence-diagram
golden files (tests/qs/seq/): posts both ways and to itself, attempts, LIFO posts,
publishes (from an object, from NULL, long signal names on both sides), transitions to
states named Obj_state, Obj::state and plain, deferrals, recalls, ticks, over 100 lines
(the header repeats) and a target reset after which an object moves."""

from __future__ import annotations

import struct

from mcuprof.protocol.qs import encode_frame

A, B, C, TE, ISR = 0x1000, 0x2000, 0x3000, 0x1100, 0x4000
B_MOVED = 0x2200
OBJECTS = {A: "Blinky_inst", B: "Ctrl::inst", C: "C", TE: "Blinky_inst.te", ISR: "the_ISR"}
STATES = {
    0x500: "Blinky_off",
    0x504: "Blinky_on_with_a_very_long_state_name",
    0x508: "Ctrl::idle",
    0x50C: "plain",
    0x510: "Ctrl_sub::deep",
}
SIGNALS = {4: "ON_SIG", 5: "A_VERY_LONG_SIGNAL_NAME_SIG", 6: "X"}
UNKNOWN_SIG = 9


def _target_info() -> bytes:
    word = 740
    sizes = (0x22, 0x41, 0x22, 0x44, 0x04, 8, 0x13)
    return bytes((1, word & 0xFF, word >> 8, *sizes, 1, 2, 3, 4, 5, 26))


class _Stream:
    def __init__(self) -> None:
        self.out = bytearray()
        self.seq = 0
        self.t = 1000

    def rec(self, rec: int, fmt: str = "", *values: object, tail: bytes = b"") -> None:
        self.seq += 1
        self.out += encode_frame(self.seq, rec, struct.pack("<" + fmt, *values) + tail)

    def timed(self, rec: int, fmt: str, *values: object) -> None:
        self.t += 7
        self.rec(rec, "I" + fmt, self.t, *values)

    def dictionaries(
        self, objects: dict[int, str], states: dict[int, str] = STATES,
        signals: dict[int, str] = SIGNALS,
    ) -> None:  # fmt: skip
        for ptr, name in objects.items():
            self.rec(61, "I", ptr, tail=name.encode() + b"\0")
        for ptr, name in states.items():
            self.rec(62, "I", ptr, tail=name.encode() + b"\0")
        for sig, name in signals.items():
            self.rec(60, "HI", sig, 0, tail=name.encode() + b"\0")

    def post(self, sender: int, sig: int, obj: int, attempt: bool = False) -> None:
        self.timed(45 if attempt else 14, "IHIBBBB", sender, sig, obj, 1, 2, 5, 3)

    def round(self, b: int) -> None:
        """One of each, with B at address ``b``."""
        self.timed(4, "II", A, 0x500)  # QS_QEP_INIT_TRAN
        for sender, obj in ((A, b), (b, A), (A, A), (b, b), (C, C), (A, C), (C, A), (0, A)):
            self.post(sender, 4, obj)
            self.post(sender, 5, obj)
        self.post(A, UNKNOWN_SIG, b)
        self.post(b, 6, C, attempt=True)
        self.post(ISR, 4, b)
        for obj in (A, b, C):
            self.timed(15, "HIBBBB", 5, obj, 1, 1, 4, 2)  # LIFO
            self.timed(15, "HIBBBB", 6, obj, 1, 1, 4, 2)
        for sender in (A, b, C, 0, ISR):
            self.timed(26, "IHBB", sender, 4, 1, 0)  # publish
            self.timed(26, "IHBB", sender, 5, 1, 0)
        self.timed(8, "HII", 4, A, 0x500)  # dispatch
        for obj, (src, dst) in ((A, (0x500, 0x504)), (b, (0x508, 0x510)), (C, (0x50C, 0x508))):
            self.timed(6, "HIII", 4, obj, src, dst)  # transition
            self.timed(6, "HIII", 4, obj, dst, src)
        for obj in (A, b, C):
            self.timed(10, "IIHBB", obj, 0x9000, 4, 1, 1)  # defer
            self.timed(11, "IIHBB", obj, 0x9000, 4, 1, 1)  # recall
            self.timed(18, "II", obj, 0x9000)  # recall attempt
        self.rec(31, "IB", self.t, 0)  # tick
        self.rec(31, "IB", self.t + 1, 1)
        self.timed(37, "IHIB", TE, 4, A, 0)  # time event post


def capture() -> bytes:
    s = _Stream()
    s.rec(0)
    s.rec(64, tail=_target_info())
    s.dictionaries(OBJECTS)
    s.rec(70)
    s.round(B)
    s.round(B)
    # The target resets; B comes back at another address.
    s.rec(64, tail=_target_info())
    s.dictionaries({**OBJECTS, B_MOVED: OBJECTS[B]} | {B: "gone"})
    s.rec(70)
    s.round(B_MOVED)
    return bytes(s.out)


# One step of a made-up capture: (kind, a, b, c) with a, b, c object, signal or state
# numbers as the kind takes them (see ``made_up``).
STEP_KINDS = ("post", "attempt", "lifo", "publish", "tran", "defer", "recall", "recall_a", "tick")


def made_up(
    objects: list[str],
    states: list[str],
    signals: list[str],
    steps: list[tuple[str, int, int, int]],
) -> bytes:
    """A capture with these names (object k at 0x1000 * (k + 1), state k at 0x500 + 4k,
    signal k is k + 4) and these steps; object number len(objects) is NULL."""
    obj = [0x1000 * (k + 1) for k in range(len(objects))] + [0]
    s = _Stream()
    s.rec(64, tail=_target_info())
    s.dictionaries(
        dict(zip(obj[:-1], objects, strict=True)),
        {0x500 + 4 * k: n for k, n in enumerate(states)},
        {k + 4: n for k, n in enumerate(signals)},
    )
    for kind, a, b, c in steps:
        sig = b % len(signals) + 4
        if kind in ("post", "attempt"):
            s.post(obj[a % len(obj)], sig, obj[c % len(obj)], attempt=kind == "attempt")
        elif kind == "lifo":
            s.timed(15, "HIBBBB", sig, obj[a % len(obj)], 1, 1, 4, 2)
        elif kind == "publish":
            s.timed(26, "IHBB", obj[a % len(obj)], sig, 1, 0)
        elif kind == "tran":
            state = 0x500 + 4 * (c % len(states))
            s.timed(6, "HIII", sig, obj[a % len(obj)], 0x500, state)
        elif kind in ("defer", "recall"):
            s.timed(10 if kind == "defer" else 11, "IIHBB", obj[a % len(obj)], 0x9000, sig, 1, 1)
        elif kind == "recall_a":
            s.timed(18, "II", obj[a % len(obj)], 0x9000)
        else:
            s.rec(31, "IB", c, b % 10)
    return bytes(s.out)
