"""The simulated QS target (``sim://?proto=qs``) answers the QS-RX commands the control
panel and front ends send, as a QP/C target does (issue 25, point 5): commands built by
qs/rx.py with names from the target's own dictionaries, answers read by the QS decoder
and shown as QSPY shows them. Sans-IO, on a clock the test moves."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.link.qs_sim import AP_BYTES, OWNER, PHILO, PRIO, TABLE, QSSimDevice
from mcuprof.link.simulator import SimOptions
from mcuprof.protocol.qs import QSDecoder, Record, encode_frame
from mcuprof.qs.rx import KIND_AO, KIND_AP, KIND_SM, RxCommand, RxCommands
from mcuprof.qs.text import render_lines

STEP_S = 0.005
KIND_MP, KIND_TE = 2, 4  # (qs/rx.py OBJ_KINDS)


class Board:
    def __init__(self) -> None:
        self.now = 0.0
        self.device = QSSimDevice(SimOptions(proto="qs", seed=2), clock=lambda: self.now,
                                  baud=4_000_000)  # fmt: skip
        self.decoder = QSDecoder()
        self.rx = RxCommands(lambda: (self.decoder.config, self.decoder.dicts))
        self.seq = 0
        self.run(0.2)  # the reset sequence: target info and dictionaries

    def run(self, seconds: float) -> list[str]:
        events = []
        for _ in range(round(seconds / STEP_S)):
            self.now += STEP_S
            events += self.decoder.feed(self.device.poll())
        self.records = [e for e in events if isinstance(e, Record)]
        return list(render_lines(events))

    def send(self, cmd: RxCommand, seconds: float = 0.05) -> list[str]:
        self.seq = (self.seq + 1) & 0xFF
        self.device.receive(encode_frame(self.seq, cmd.rec, cmd.payload))
        self.rx.sent(cmd)
        return self.run(seconds)


@pytest.fixture
def board() -> Board:
    return Board()


def _has(lines: list[str], pattern: str) -> bool:
    return any(re.search(pattern, line) for line in lines)


def test_info_tick_command_and_unsupported_records(board: Board) -> None:
    lines = board.send(board.rx.info())
    assert _has(lines, r"Trg-Ack  QS_RX_INFO") and _has(lines, r"Trg-Info QP-Ver=740")
    assert _has(board.send(board.rx.tick(0)), r"Trg-Ack  QS_RX_TICK")
    lines = board.send(board.rx.command(3, 1, 2, 3))
    assert _has(lines, r"Trg-Ack  QS_RX_COMMAND") and _has(lines, r"Trg-Done QS_RX_COMMAND")
    assert _has(board.send(board.rx.bare(7)), r"Trg-ERR  0x43")  # no QUTest, as the real DPP


def test_peek_poke_and_fill_on_the_current_ap_object(board: Board) -> None:
    assert _has(board.send(board.rx.curr_obj(KIND_AP, "Table_inst")), r"Trg-Ack  QS_RX_CURR_OBJ")
    assert _has(board.send(board.rx.poke(4, 2, b"\x34\x12")), r"Trg-Ack  QS_RX_POKE")
    assert _has(board.send(board.rx.fill(8, 1, 3, 0xAB)), r"Trg-Ack  QS_RX_FILL")
    lines = board.send(board.rx.peek(2, 2, 4))
    assert _has(lines, r"Trg-Peek Offs=2,Size=2,Num=4,Data=<0000,1234,0000,ABAB>$")
    assert _has(board.send(board.rx.peek(10, 1, 2)), r"Data=<AB,00>$")
    # Outside the object: refused by the target, which keeps running.
    assert _has(board.send(board.rx.peek(AP_BYTES - 2, 4, 1)), r"Trg-ERR")
    # Another AP object has its own memory.
    board.send(board.rx.curr_obj(KIND_AP, "EvtPool1"))
    assert _has(board.send(board.rx.peek(4, 2, 1)), r"Data=<0000>$")


def test_current_objects_and_queries(board: Board) -> None:
    board.send(board.rx.curr_obj(KIND_SM, "Philo_inst[2]"))
    lines = board.send(board.rx.query_curr(KIND_SM))
    assert _has(lines, r"Query-SM Obj=Philo_inst\[2\],State=Philo_(thinking|hungry|eating)$")
    board.send(board.rx.curr_obj(KIND_AO, "Table_inst"))
    assert _has(
        board.send(board.rx.query_curr(KIND_AO)), r"Query-AO Obj=Table_inst,State=Table_serving"
    )
    board.send(board.rx.curr_obj(KIND_MP, "EvtPool1"))
    assert _has(board.send(board.rx.query_curr(KIND_MP)), r"Query-MP Obj=EvtPool1,Free=\d+,Min=\d+")
    board.send(board.rx.curr_obj(KIND_TE, "Philo_inst[1].timeEvt"))
    lines = board.send(board.rx.query_curr(KIND_TE))
    assert _has(lines, r"Query-TE Obj=Philo_inst\[1\]\.timeEvt,Rate=0,Sig=TIMEOUT_SIG")


def test_events_publish_post_dispatch_and_init(board: Board) -> None:
    lines = board.send(board.rx.event(0, "EAT_SIG"))
    assert _has(lines, r"Trg-Ack  QS_RX_EVENT") and _has(lines, r"Trg-Done QS_RX_EVENT")
    assert _has(lines, r"QF-Pub .*Sig=EAT_SIG")
    # Published to every active object: each gets it posted and dispatched.
    posted = {r.fields["obj"] for r in board.records if r.name == "QS_QF_ACTIVE_POST"
              and r.fields["sig"] == 4 and r.fields["sender"] == 0}  # fmt: skip
    assert posted == set(PRIO)
    # Posted to a priority: the Table (6) gets it; dispatched: the current SM, no post.
    lines = board.send(board.rx.event(PRIO[TABLE], "HUNGRY_SIG"))
    posts = [r.fields["obj"] for r in board.records if r.name == "QS_QF_ACTIVE_POST"
             and r.fields["sender"] == 0]  # fmt: skip
    assert posts == [TABLE]
    assert _has(lines, r"Disp===> Obj=Table_inst,Sig=HUNGRY_SIG")
    board.send(board.rx.curr_obj(KIND_SM, "Philo_inst[0]"))
    lines = board.send(board.rx.event(255, "TIMEOUT_SIG"))
    assert _has(lines, r"Disp===> Obj=Philo_inst\[0\],Sig=TIMEOUT_SIG")
    assert _has(lines, r"Trg-Done QS_RX_EVENT")
    lines = board.send(board.rx.event(254, 0))
    assert _has(lines, r"Init===> Obj=Philo_inst\[0\]") and _has(lines, r"Trg-Done QS_RX_EVENT")


def test_filters_really_filter(board: Board) -> None:
    # Global: only QS_QEP_DISPATCH (8) on; the answers still come (not maskable).
    mask = (1 << 8).to_bytes(16, "little")
    assert _has(board.send(board.rx.glb_filter(mask)), r"Trg-Ack  QS_RX_GLB_FILTER")
    board.run(1.0)
    assert {r.name for r in board.records} == {"QS_QEP_DISPATCH"}
    board.send(board.rx.glb_filter(b"\xff" * 16))
    # Local: Philo_inst[2] (QS-ID 3) off; the AO filter takes the Table off, then back.
    loc = ((1 << 128) - 1) & ~(1 << 3)
    assert _has(board.send(board.rx.loc_filter(loc.to_bytes(16, "little"))), r"QS_RX_LOC_FILTER")
    assert _has(board.send(board.rx.ao_filter("Table_inst", remove=True)), r"QS_RX_AO_FILTER")
    lines = board.run(3.0)
    owners = [OWNER.get(r.fields.get("obj")) for r in board.records]
    assert PHILO[1] in owners and PHILO[2] not in owners and TABLE not in owners
    assert _has(lines, r"Sdr=Table_inst")  # named as a sender: its own records are off
    board.send(board.rx.ao_filter("Table_inst"))
    assert _has(board.run(3.0), r"Table_inst")


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rec=st.integers(0, 20), payload=st.binary(max_size=40))
def test_any_command_bytes_are_answered_and_the_board_goes_on(board, rec, payload) -> None:
    """Whatever frame reaches the simulated target, it answers or ignores it as a QP
    target would (never an exception), and its trace stays well-formed."""
    board.device.receive(encode_frame(1, rec, payload))
    board.run(0.02)
    assert board.decoder.stats.malformed == 0
    assert board.decoder.frame_stats.bad_checksum == 0
