"""``mcuprof qs listen --udp`` against the real QP/C 7.4 DPP targets (64- and 32-bit),
driven by a UDP front end as QView drives QSPY: every QS-RX command, by number and by
name, and the target's answers (issue 25, items 1 and 3)."""

from __future__ import annotations

import re
import signal
import struct
from pathlib import Path

import pytest

from .qsfe import (
    NMIN_OFFSET,
    REAL,
    FakeTarget,
    FrontEnd,
    decoded_frames,
    start_listen,
    start_target,
    wait_for,
)

TARGETS = ("dpp-posix64", "dpp-posix32")


def _name(rec: int, kind: int, ptr: int, name: str) -> bytes:
    return bytes([rec, kind]) + bytes(ptr) + name.encode() + b"\0"


def _event(prio: int, name: str, params: bytes = b"") -> bytes:
    return (
        bytes([0x87, prio])
        + bytes(2)
        + struct.pack("<H", len(params))
        + params
        + (name.encode() + b"\0")
    )


@pytest.fixture(params=TARGETS)
def setup(request, tmp_path):
    name = request.param
    if not (REAL / name).exists():
        pytest.skip(f"the real target {REAL / name} is missing")
    host, tport, uport = start_listen("--save-dic", str(tmp_path / "target.dic"))
    target = start_target(name, tport)
    fe = FrontEnd(uport)
    try:
        yield name, host, tport, fe, target
    finally:
        fe.close()
        target.stop(signal.SIGKILL)
        host.stop(signal.SIGINT)


class Session:
    def __init__(self, fe: FrontEnd, ptr: int) -> None:
        self.fe, self.ptr = fe, ptr

    def ask(self, data: bytes, pattern: str) -> str:
        mark = self.fe.mark()
        self.fe.send(data)
        return self.fe.wait_text(pattern, mark)

    def by_name(self, rec: int, kind: int, name: str, answer: str) -> str:
        return self.ask(_name(rec, kind, self.ptr, name), answer)


def test_every_command_against_the_real_target(setup):
    name, host, _tport, fe, _target = setup
    ptr = 8 if name.endswith("64") else 4
    s = Session(fe, ptr)
    fe.send(b"\x80\x03")
    host.wait_line(r"QF_RUN")
    # Target info shows on the host's output; front ends get it as a binary record.
    since, infos = len(host.out), len([p for p in fe.binaries() if p[1] == 64])
    fe.send(b"\x00")
    host.wait_line(r"Trg-Info QP-Ver=740,Build=\d{6}_\d{6}", since=since)
    wait_for(lambda: len([p for p in fe.binaries() if p[1] == 64]) > infos, "binary info")
    assert s.ask(b"\x03\x00", r"Trg-Ack  QS_RX_TICK")
    assert s.ask(b"\x01\x07" + struct.pack("<III", 1, 2, 3), r"Trg-Ack  QS_RX_COMMAND")
    # State machines and active objects by name; the answers name their states.
    s.by_name(0x89, 0, "Table_inst", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(b"\x0f\x00", r"Query-SM Obj=Table_inst,State=Table_serving")
    s.by_name(0x89, 1, "Philo_inst[1]", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(b"\x0f\x01", r"Query-AO Obj=Philo_inst\[1\],State=Philo_(thinking|hungry|eating)")
    # The pool is known as one once its records came (the guard, qs/guard.py).
    wait_for(lambda: any(p[1] == 24 for p in fe.binaries()), "an MP-Get record")
    s.by_name(0x89, 2, "EvtPool1", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(b"\x0f\x02", r"Query-MP Obj=EvtPool1,Free=\d+,Min=\d+")
    s.by_name(0x89, 4, "Philo_inst[1].timeEvt", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(b"\x0f\x04", r"Query-TE Obj=Philo_inst\[1\]\.timeEvt,Rate=0,Sig=TIMEOUT_SIG")
    # Peek, poke and fill, relative to the AP object: the queue's low-water mark.
    s.by_name(0x89, 5, "Table_inst", r"Trg-Ack  QS_RX_CURR_OBJ")
    offs = NMIN_OFFSET[name]
    head = s.ask(b"\x04\x00\x00\x01\x10", r"Trg-Peek Offs=0,Size=1,Num=16,Data=<")
    assert head.endswith(">") and len(head.split("Data=<")[1][:-1].split(",")) == 16
    assert s.ask(b"\x05" + struct.pack("<HBBH", offs, 2, 1, 1), r"Trg-Ack  QS_RX_POKE")
    peek = b"\x04" + struct.pack("<HBB", offs, 2, 1)
    assert s.ask(peek, rf"Offs={offs},Size=2,Num=1,Data=<0001>")
    assert s.ask(b"\x06" + struct.pack("<HBBH", offs, 2, 1, 2), r"Trg-Ack  QS_RX_FILL")
    assert s.ask(peek, rf"Offs={offs},Size=2,Num=1,Data=<0002>")
    # Events: publish by name, with the publish record the target sends before it is done.
    mark = fe.mark()
    fe.send(_event(0, "SERVE_SIG"))
    fe.wait_text(r"Trg-Done QS_RX_EVENT", mark)
    assert any("QF-Pub" in t and "Sig=SERVE_SIG" in t for t in fe.texts()[mark:])
    # The global filter all off silences the publish record; all on brings it back.
    assert s.ask(b"\x0a\x10" + bytes(16), r"Trg-Ack  QS_RX_GLB_FILTER")
    mark = fe.mark()
    fe.send(_event(0, "SERVE_SIG"))
    fe.wait_text(r"Trg-Done QS_RX_EVENT", mark)
    assert not any("QF-Pub" in t for t in fe.texts()[mark:])
    assert s.ask(b"\x0a\x10" + b"\xff" * 16, r"Trg-Ack  QS_RX_GLB_FILTER")
    assert s.ask(b"\x0b\x10" + b"\xff" * 16, r"Trg-Ack  QS_RX_LOC_FILTER")
    s.by_name(0x88, 1, "Table_inst", r"Trg-Ack  QS_RX_AO_FILTER")
    s.by_name(0x88, 0, "Table_inst", r"Trg-Ack  QS_RX_AO_FILTER")
    # Post to the current AO, and dispatch to the current SM. A post to a priority is
    # refused: the DPP's records never say which priority an active object holds (the
    # Table's is 12), and QP posts through an empty registry slot without a check.
    assert s.ask(_event(12, "SERVE_SIG"), r"ERROR .*post to priority 12 refused")
    assert s.ask(_event(253, "EAT_SIG"), r"Trg-Ack  QS_RX_EVENT")
    s.by_name(0x89, 0, "Table_inst", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(_event(255, "SERVE_SIG"), r"Trg-Ack  QS_RX_EVENT")
    # The DPP build has no QUTest: the test records are refused by the target.
    for rec in (b"\x07", b"\x08", b"\x0e"):
        assert s.ask(rec, r"Trg-ERR  0x43")
    # Host refusals: a name not in the dictionary, an oversized peek. The link lives on.
    assert s.by_name(0x89, 0, "No_such_inst", r"ERROR .*'No_such_inst' is not in the target")
    assert s.ask(b"\x04\x00\x00\x04\xff", r"ERROR .*peek of 255 x 4 bytes")
    assert s.ask(b"\x03\x00", r"Trg-Ack  QS_RX_TICK")
    # Notes go to the host's output; 0x82 saves the dictionaries (--save-dic).
    fe.send(b"\x8d\x00a note from the front end\x00")
    host.wait_line(r"^a note from the front end$")
    saved = s.ask(b"\x82", r"<QSPY-> Dictionaries saved to (.*)$").split("saved to ")[1]
    dic = Path(saved).read_text()
    assert "Table_inst" in dic and "SERVE_SIG" in dic
    # Init would take the SM's initial transition again: QP asserts (qep_hsm, 200), so
    # it is refused (qs/guard.py).
    s.by_name(0x89, 0, "Table_inst", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(_event(254, "SERVE_SIG"), r"ERROR .*init refused: QP asserts")


def test_commands_that_would_crash_the_target_are_refused(setup):
    """Issue 35, finding 1: each of these killed the real target when forwarded (exit
    -11, or an assertion in qf_actq); the host refuses each in one line, and the target
    stays alive and answers the next command."""
    name, host, _tport, fe, target = setup
    ptr = 8 if name.endswith("64") else 4
    s = Session(fe, ptr)
    fe.send(b"\x80\x03")
    host.wait_line(r"QF_RUN")
    wait_for(lambda: any(p[1] == 24 for p in fe.binaries()), "an MP-Get record")
    pool = next(a for a, n in _objects(host) if n == "EvtPool1")
    # A post to a priority with no active object (the DPP's are 3-7 and 12).
    assert s.ask(_event(1, "SERVE_SIG"), r"ERROR .*post to priority 1 refused")
    assert s.ask(bytes([0x10, 1, 6, 0, 0, 0]), r"ERROR .*post to priority 1 refused")
    # A pool made the current AO (by name and by address), then a post to current.
    assert s.by_name(0x89, 1, "EvtPool1", r"ERROR .*EvtPool1 cannot be made current as an "
                     r"active object \(AO\): its records show it as a memory pool")  # fmt: skip
    by_addr = bytes([0x0D, 1]) + pool.to_bytes(ptr, "little")
    assert s.ask(by_addr, r"ERROR .*EvtPool1 cannot be made current as an active object")
    assert s.ask(_event(253, "EAT_SIG"), r"ERROR .*no current AO object set by this host")
    # A time event made the current SM, then a dispatch; the AO filter through a pool.
    assert s.by_name(0x89, 0, "Philo_inst[0].timeEvt", r"ERROR .*cannot be made current as a "
                     r"state machine \(SM\): its records show it as a time event")  # fmt: skip
    assert s.ask(_event(255, "SERVE_SIG"), r"ERROR .*no current SM object set by this host")
    # Init of a state machine that ran its initial transition (all the records show).
    s.by_name(0x89, 0, "Philo_inst[0]", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(_event(254, "SERVE_SIG"), r"ERROR .*init refused: QP asserts \(qep_hsm, 200\)")
    assert s.by_name(0x88, 0, "EvtPool1", r"ERROR .*EvtPool1 cannot be filtered as an active")
    # An object no record shows as anything: unknown is refused too.
    assert s.by_name(0x89, 0, "l_clock_tick", r"ERROR .*none of the target's records shows")
    # The target lives on and answers.
    assert s.ask(b"\x03\x00", r"Trg-Ack  QS_RX_TICK")
    s.by_name(0x89, 6, "Table_inst", r"Trg-Ack  QS_RX_CURR_OBJ")
    assert s.ask(_event(253, "SERVE_SIG"), r"Trg-Done QS_RX_EVENT")
    assert target.proc.poll() is None


def _objects(host) -> list[tuple[int, str]]:
    """(address, name) of the object dictionary lines the host printed."""
    found = []
    for line in host.out:
        m = re.search(r"Obj-Dict 0x([0-9A-F]+)->(\S+)", line)
        if m:
            found.append((int(m.group(1), 16), m.group(2)))
    return found


def test_reset_ends_the_target_and_the_new_connection_is_taken(setup):
    name, host, tport, fe, target = setup
    fe.send(b"\x80\x03")
    host.wait_line(r"QF_RUN")
    fe.send(b"\x02")
    assert target.proc.wait(timeout=60) == 0  # RESET ends the program, as a board reboots
    host.wait_line(r"<COMMS> TCP-IP   Disconn from Host=127\.0\.0\.1")
    again = start_target(name, tport)
    try:
        wait_for(lambda: sum("Trg-RST  QP-Ver=740" in x for x in host.out) == 2, "Trg-RST")
        assert sum("Connected to Host=127.0.0.1" in x for x in host.out) == 2
        s = Session(fe, 8 if name.endswith("64") else 4)
        assert s.ask(b"\x03\x00", r"Trg-Ack  QS_RX_TICK")
    finally:
        again.stop(signal.SIGKILL)
    # The host's sequence restarts at 1 with a new connection: seen by a fake target.
    wait_for(lambda: sum("Disconn from Host" in x for x in host.out) == 2, "the disconnect")
    hello = (REAL.parent / "dpp-posix64.bin").read_bytes()
    fake = FakeTarget(tport, hello[: hello.index(b"\x7e") + 1])
    try:
        wait_for(lambda: sum("Connected to Host" in x for x in host.out) == 3, "the fake target")
        wait_for(lambda: fe.send(b"\x00") or fake.frames(), "a frame at the fake target", 30)
        assert decoded_frames(bytes(fake.received))[0][:2] == (1, 0)
    finally:
        fake.close()
