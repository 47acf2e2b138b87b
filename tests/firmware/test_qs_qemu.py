"""The QS demo firmware (firmware/qsdemo + the mcuqs encoder), built from source with
arm-none-eabi-gcc, runs in QEMU and is read over its emulated UART by our own QS decoder,
RTC-step and margin code, and by ``mcuprof qs decode`` / ``mcuprof qemu --qs``."""

from __future__ import annotations

import itertools
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcuprof.protocol.qs import (
    BadFrame,
    Discontinuity,
    Malformed,
    QSDecoder,
    QSEvent,
    Record,
    encode_frame,
)
from mcuprof.qemu import QemuProcess, default_qs_elf, free_port
from mcuprof.qs.margins import margins
from mcuprof.qs.rtc import RtcTracker, rtc_steps, rtc_table
from mcuprof.qs.rx import RxCommand, RxCommands
from mcuprof.qs.text import event_lines

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(
        shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
        reason="needs arm-none-eabi-gcc and qemu-system-arm (make sysdeps installs them)",
    ),
]

WINDOWS = 30  # MON_STAT records to capture: one per 10 samples, 100 samples/s
AOS = {"l_blinky", "l_button", "l_monitor"}
# QS-RX record ids (QSPY's numbering) and the target's answers.
RX_INFO, RX_RESET, RX_TICK, RX_GLB_FILTER = 0, 2, 3, 10
TARGET_INFO, TARGET_DONE, RX_STATUS, QF_TICK = 64, 65, 66, 31
RX_EVENT, RX_LOC_FILTER, RX_AO_FILTER, RX_CURR_OBJ = 16, 11, 12, 13
QUERY_DATA, PEEK_DATA, TIMEEVT_ARM, DISPATCH = 67, 68, 32, 8
MON_STAT, APP_CMD = 100, 101


def sample_value(k: int) -> int:
    """firmware/qsdemo/app.c: the "ADC" value of sample k."""
    phase = (k * 37) & 0x3FF
    tri = phase if phase < 512 else 1023 - phase
    return tri - 256


@pytest.fixture(scope="module")
def qs_elf(firmware_build: Path) -> Path:
    """The QS demo from the run's one `make -C firmware` (tests/conftest.py)."""
    elf = firmware_build / "mcuprof-qsdemo.elf"
    assert elf.is_file()
    return elf


def read_until(
    sock: socket.socket,
    decoder: QSDecoder,
    done: Callable[[list[QSEvent]], bool],
    timeout_s: float = 20.0,
) -> list[QSEvent]:
    """Decoded events until ``done(events so far)`` holds. Waits on what the target has
    sent, not on the wall clock, so a loaded machine only makes it slower."""
    events: list[QSEvent] = []
    deadline = time.monotonic() + timeout_s
    while not done(events):
        assert time.monotonic() < deadline, f"target went quiet after {len(events)} events"
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        assert chunk, "QEMU closed the connection"
        events += decoder.feed(chunk)
    return events


def has(rec: int, value: object = None) -> Callable[[list[QSEvent]], bool]:
    """A ``done`` test: a record ``rec`` arrived (whose last value is ``value``, if given)."""
    return lambda events: any(
        isinstance(e, Record) and e.rec == rec and (value is None or e.values[-1] == value)
        for e in events
    )


@pytest.fixture
def target(qs_elf: Path) -> Iterator[socket.socket]:
    with QemuProcess(qs_elf) as proc:
        sock = socket.create_connection(("127.0.0.1", proc.port), timeout=5)
        sock.settimeout(0.05)
        try:
            yield sock
        finally:
            sock.close()


@pytest.fixture(scope="module")
def capture(qs_elf: Path) -> bytes:
    """The demo from its reset until it has sent WINDOWS MON_STAT records (about 3 s of
    its time), as the host received the bytes."""
    data = bytearray()
    decoder = QSDecoder()
    windows = 0
    with QemuProcess(qs_elf) as proc:
        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as sock:
            sock.settimeout(0.05)
            deadline = time.monotonic() + 30
            while windows < WINDOWS:
                assert time.monotonic() < deadline, "the demo stopped sending"
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                assert chunk, "QEMU closed the connection"
                data += chunk
                windows += len(records(decoder.feed(chunk), MON_STAT))
    return bytes(data)


@pytest.fixture(scope="module")
def decoded(capture: bytes) -> tuple[QSDecoder, list[QSEvent]]:
    decoder = QSDecoder()
    events = decoder.feed(capture)
    # The capture stops reading a live target at any byte: a frame it cut short is the
    # end's, judged at close ("truncated"), not a flaw of the stream.
    tail = decoder.close()
    assert all(isinstance(e, BadFrame) and e.kind == "truncated" for e in tail), tail
    return decoder, events


def records(events: list[QSEvent], rec: int | None = None) -> list[Record]:
    return [e for e in events if isinstance(e, Record) and (rec is None or e.rec == rec)]


def test_committed_sample_is_what_the_build_produces(qs_elf: Path) -> None:
    assert default_qs_elf().read_bytes() == qs_elf.read_bytes(), (
        "sample_elfs/mcuprof-qsdemo.elf is stale: run `make -C firmware sample`"
    )


def test_stream_is_clean_and_target_info_is_applied(decoded) -> None:
    decoder, events = decoded
    stats = decoder.frame_stats
    assert stats.frames > 1000
    assert (stats.bad_checksum, stats.too_short, stats.too_long) == (0, 0, 0)
    assert stats.discontinuities == 0
    assert not [e for e in events if isinstance(e, BadFrame | Discontinuity | Malformed)]
    assert decoder.stats.unknown_records == 0
    first = records(events)[:2]
    assert [r.rec for r in first] == [0, TARGET_INFO]  # QS_EMPTY, then target info
    assert [r.seq for r in first] == [1, 2]
    config = decoder.config
    assert config.from_target and config.version == 740 and not config.big_endian
    # QSPY's default sizes (so a host joining mid-stream reads the layouts right); the
    # build stamp and QF_MAX_ACTIVE can only have come from the target's record.
    assert (config.pool_ctr_size, config.tevt_ctr_size, config.queue_ctr_size) == (2, 4, 1)
    assert (config.obj_ptr_size, config.fun_ptr_size, config.tstamp_size) == (4, 4, 4)
    assert (config.sig_size, config.evt_size, config.pool_blk_size) == (2, 2, 2)
    assert (config.max_active, config.build_stamp) == (3, "261123_120000")


def test_dictionary_names_resolve(decoded) -> None:
    _, events = decoded
    lines = [line for e in events for line in event_lines(e)]
    dispatches = [line for line in lines if "Disp===>" in line]
    assert dispatches
    assert not [line for line in dispatches if "0x" in line]  # every pointer has a name
    text = "\n".join(lines)
    for name in ("Obj=l_monitor", "Sig=SAMPLE_SIG", "State=monitor_collecting", "EvtPool1"):
        assert name in text
    assert "Sdr=l_adc_dma" in text and "Obj=l_blinky.te" in text


def test_rtc_steps_for_every_active_object(decoded) -> None:
    _, events = decoded
    result = rtc_steps(events)
    tracker = RtcTracker()
    tracker.feed(events)
    # No dispatch was overtaken by another of its object; the capture may be cut inside
    # a step (at most one open per object), which rtc_steps counts as unfinished too.
    assert tracker.unfinished == 0
    assert result.unfinished == len(tracker.pending) <= len(AOS)
    rows = {(r.obj, r.state, r.signal): r for r in rtc_table(result.steps)}
    assert {obj for obj, _, _ in rows} == AOS
    # The demo's behaviour (app.c), per step: 100 samples/s, 1 window in 10 ends with a
    # self-transition; a bounce PRESS in `pressed` is ignored; Blinky toggles.
    mon = rows["l_monitor", "monitor_collecting", "SAMPLE_SIG"]
    assert dict(mon.outcomes)["transition"] * 10 == pytest.approx(mon.count, abs=10)
    assert mon.count >= 200 and 0 < mon.min <= mon.mean <= mon.max
    bounce = rows["l_button", "button_pressed", "PRESS_SIG"]
    assert dict(bounce.outcomes) == {"ignored": bounce.count}
    assert dict(rows["l_button", "button_released", "PRESS_SIG"].outcomes).keys() == {"transition"}
    blinky = {state for obj, state, sig in rows if obj == "l_blinky" and sig == "TIMEOUT_SIG"}
    assert blinky == {"blinky_off", "blinky_on"}
    # A RATE event in `on` whose guard fails goes up to `blinking`: one UNHANDLED record.
    assert records(events, 9)


def test_margins_show_the_bursts(decoded) -> None:
    _, events = decoded
    found = {m.name: m for m in margins(events)}
    assert set(found) == AOS | {"EvtPool1"}
    # Four samples per "DMA" burst: the Monitor's 8-entry queue and the 10-block pool
    # each drop by four, and recover once the Monitor has run.
    assert found["l_monitor"].low_water == 4 and found["l_monitor"].lowest_free == 4
    assert found["EvtPool1"].low_water == 6 and found["EvtPool1"].lowest_free == 6
    assert max(found["EvtPool1"].free) == 10
    # A get that empties the queue is GET_LAST, which carries no count: 7 is the most seen.
    assert max(found["l_monitor"].free) == 7
    assert all(m.kind == ("pool" if m.name == "EvtPool1" else "queue") for m in found.values())


def test_application_record_decodes_to_the_expected_numbers(decoded) -> None:
    _, events = decoded
    stats = records(events, MON_STAT)
    assert len(stats) >= 20
    for i, r in enumerate(stats):
        args = r.values[-1]
        assert [a.kind for a in args] == ["U32", "U16", "I32", "I16", "I16"]
        first, count, total, low, high = (a.value for a in args)
        window = [sample_value(k) for k in range(first, first + count)]
        assert (first, count) == (10 * i, 10)
        assert (total, low, high) == (sum(window), min(window), max(window))


def test_mcuprof_qs_decode_prints_qspy_lines(capture: bytes, tmp_path: Path) -> None:
    path = tmp_path / "qsdemo.bin"
    path.write_bytes(capture)
    done = subprocess.run(
        [sys.executable, "-m", "mcuprof", "qs", "decode", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "           Trg-RST  QP-Ver=740,Build=261123_120000"
    assert any(line.startswith("           Obj-Dict 0x2") and line.endswith("->l_blinky")
               for line in lines)  # fmt: skip
    assert any(line.endswith("MON_STAT 0 10 -895 -256 77") for line in lines)
    disp = [line for line in lines if " Disp===> Obj=l_monitor,Sig=SAMPLE_SIG," in line]
    assert disp and all(line[:10].isdigit() for line in disp)
    assert "0 bad checksums, 0 discontinuities" in done.stderr


def test_qs_rx_info_filter_tick_and_reset(target: socket.socket) -> None:
    decoder = QSDecoder()
    boot = read_until(target, decoder, has(70))  # QS_QF_RUN ends the start-up
    assert records(boot, TARGET_INFO)[0].values[0] is True  # a reset record

    target.sendall(encode_frame(1, RX_INFO))
    got = read_until(target, decoder, has(TARGET_INFO))
    assert not records(got, RX_STATUS)  # no Trg-Ack: the info is the answer, as QP/C 7.4
    assert [r.values[0] for r in records(got, TARGET_INFO)] == [False]

    target.sendall(encode_frame(2, RX_GLB_FILTER, bytes([16]) + bytes(16)))  # all off
    read_until(target, decoder, has(RX_STATUS, RX_GLB_FILTER))
    target.sendall(encode_frame(3, RX_TICK, b"\x00"))
    off = read_until(target, decoder, has(TARGET_DONE, RX_TICK))
    # Every record made after the filter closed: only the answers pass it.
    assert {r.rec for r in records(off)} == {RX_STATUS, TARGET_DONE}
    assert [r.values[0] for r in records(off, RX_STATUS)] == [RX_TICK]

    target.sendall(encode_frame(4, RX_GLB_FILTER, bytes([16]) + b"\xff" * 16))  # all on
    read_until(target, decoder, lambda ev: has(QF_TICK)(ev) and has(8)(ev))

    target.sendall(encode_frame(5, 99))  # not a command the target knows
    read_until(target, decoder, has(RX_STATUS, 0x80 | 99))

    target.sendall(encode_frame(6, RX_RESET))
    again = read_until(target, decoder, has(TARGET_INFO))
    info = records(again, TARGET_INFO)
    assert info[0].values[0] is True and info[0].seq == 2
    assert decoder.frame_stats.bad_checksum == 0 and decoder.frame_stats.discontinuities == 0


def test_mcuprof_qemu_qs_streams_to_qs_listen(tmp_path: Path) -> None:
    port = free_port()
    qemu = subprocess.Popen(
        [sys.executable, "-m", "mcuprof", "qemu", "--qs", "--tcp", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert qemu.stdout is not None
        banner = qemu.stdout.readline()
        assert f"mcuprof qs listen --port socket://127.0.0.1:{port}" in banner
        listen = subprocess.run(
            [sys.executable, "-m", "mcuprof", "qs", "listen", "--port",
             f"socket://127.0.0.1:{port}", "--duration", "1.5"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listen.returncode == 0, listen.stderr
        assert "Trg-RST  QP-Ver=740" in listen.stdout
        assert "Disp===> Obj=l_monitor,Sig=SAMPLE_SIG,State=monitor_collecting" in listen.stdout
        assert "0 bad checksums, 0 discontinuities" in listen.stderr
        qemu.send_signal(signal.SIGTERM)
        assert qemu.wait(10) == 0
    finally:
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()


def test_a_host_joining_mid_stream_reads_the_layouts_right(qs_elf: Path) -> None:
    """The target's sizes are QSPY's defaults: a host that missed target info (a second
    client of QEMU's socket) still decodes every record, only without names."""
    with QemuProcess(qs_elf) as proc:
        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as first:
            first.settimeout(0.05)
            read_until(first, QSDecoder(), has(MON_STAT))
        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as late:
            late.settimeout(0.05)
            decoder = QSDecoder()  # QSPY's defaults, no target info, no dictionaries
            events = read_until(late, decoder, lambda ev: len(records(ev, MON_STAT)) >= 3)
    assert not records(events, TARGET_INFO)
    assert not [e for e in events if isinstance(e, Malformed | BadFrame)]
    assert decoder.stats.unknown_records == 0
    for r in records(events, MON_STAT):
        first, count, total, low, high = (a.value for a in r.values[-1])
        window = [sample_value(k) for k in range(first, first + count)]
        assert (count, total, low, high) == (10, sum(window), min(window), max(window))
    pool = records(events, 24)  # MP-Get: the 2-byte pool counters line up
    assert pool and all(6 <= r.fields["free"] <= 9 for r in pool)
    ticks = [r.fields["ctr"] for r in records(events, QF_TICK)]  # 4-byte tick counters
    assert ticks and ticks == list(range(ticks[0], ticks[0] + len(ticks)))


class Rx:
    """QS-RX commands built and checked by mcuprof.qs.rx, framed and sent to QEMU."""

    def __init__(self, sock: socket.socket, decoder: QSDecoder) -> None:
        self.sock, self.decoder = sock, decoder
        self.commands = RxCommands(lambda: (decoder.config, decoder.dicts))
        self.seq = itertools.count(1)

    def __call__(self, cmd: RxCommand, done: Callable[[list[QSEvent]], bool]) -> list[QSEvent]:
        self.sock.sendall(encode_frame(next(self.seq) & 0xFF, cmd.rec, cmd.payload))
        self.commands.sent(cmd)
        return read_until(self.sock, self.decoder, done)


def about(events: list[QSEvent], obj: int) -> list[Record]:
    """Records whose object is ``obj`` (state-machine, queue and time-event records)."""
    return [r for r in records(events) if obj in (r.fields.get("obj"), r.fields.get("ao"))]


def test_qs_rx_event_peek_query_and_local_filter(target: socket.socket) -> None:
    decoder = QSDecoder()
    read_until(target, decoder, has(70))
    rx = Rx(target, decoder)
    c = rx.commands
    blinky, monitor = c.object_address("l_blinky"), c.object_address("l_monitor")
    funs = {name: addr for addr, name in decoder.dicts.fun.items()}

    # A RATE_SIG posted to Blinky (priority 1) with a period of 33 ticks: Blinky runs
    # the step (an RTC step in `blinking`'s scope) and re-arms its time event with 33.
    post = c.event(1, "RATE_SIG", (33).to_bytes(2, "little"))
    got = rx(post, lambda ev: any(r.fields["tim"] == 33 for r in records(ev, TIMEEVT_ARM)))
    assert has(TARGET_DONE, RX_EVENT)(got)
    assert [r.values[0] for r in records(got, RX_STATUS)][:1] == [RX_EVENT]
    steps = [s for s in rtc_steps(got).steps if s.obj == "l_blinky" and s.signal == "RATE_SIG"]
    assert len(steps) == 1 and steps[0].outcome == "internal" and steps[0].duration > 0
    posted = [r for r in records(got, 14) if r.fields["obj"] == blinky]
    assert decoder.dicts.obj[posted[0].fields["sender"]] == "QS_RX"

    # Published: posted to every active object (the demo has no subscriptions).
    got = rx(c.event(0, "RATE_SIG", (20).to_bytes(2, "little")), has(TARGET_DONE, RX_EVENT))
    qs_rx = c.object_address("QS_RX")
    posted = {r.fields["obj"] for r in records(got, 14) if r.fields["sender"] == qs_rx}
    assert posted == {blinky, c.object_address("l_button"), monitor}
    # Dispatched to the current state machine at once: the step runs between the
    # command's Trg-Ack and its Trg-Done, with no post.
    button = c.object_address("l_button")
    rx(c.curr_obj(0, "l_button"), has(RX_STATUS, RX_CURR_OBJ))
    got = records(rx(c.event(255, "RELEASE_SIG"), has(TARGET_DONE, RX_EVENT)))
    acked = next(i for i, r in enumerate(got) if r.rec == RX_STATUS and r.values[0] == RX_EVENT)
    done = next(i for i, r in enumerate(got) if r.rec == TARGET_DONE)
    step = [r for r in got[acked:done] if r.rec == DISPATCH and r.fields["obj"] == button]
    assert [decoder.dicts.sig.get((r.fields["sig"], 0)) for r in step] == ["RELEASE_SIG"]
    assert not [r for r in got if r.rec == 14 and r.fields["sender"] == qs_rx]

    # Peek Blinky's bytes: its state handler first, then priority 1 and queue length 4.
    rx(c.curr_obj(5, "l_blinky"), has(RX_STATUS, RX_CURR_OBJ))
    peek = records(rx(c.peek(0, 4, 1), has(PEEK_DATA)), PEEK_DATA)[0]
    assert peek.values[1:3] == (0, 4)
    assert peek.values[3][0] in (funs["blinky_off"], funs["blinky_on"])
    peek = records(rx(c.peek(8, 1, 2), has(PEEK_DATA)), PEEK_DATA)[0]
    assert peek.values[3] == (1, 4)
    rx(c.curr_obj(0, "l_blinky"), has(RX_STATUS, RX_CURR_OBJ))
    query = records(rx(c.query_curr(0), has(QUERY_DATA)), QUERY_DATA)[0]
    assert query.fields["obj"] == blinky
    assert decoder.dicts.fun[query.fields["state"]] in ("blinky_off", "blinky_on")

    # The local filter with Monitor's QS-ID (its priority, 3) off silences Monitor while
    # its 100 samples a second go on; Blinky is still heard. The AO filter brings it back.
    mask = bytearray(b"\xff" * 16)
    mask[0] &= ~(1 << 3)
    rx(c.loc_filter(bytes(mask)), has(RX_STATUS, RX_LOC_FILTER))
    quiet = read_until(target, decoder, lambda ev: len(records(ev, MON_STAT)) >= 3)
    assert not about(quiet, monitor) and about(quiet, blinky)
    back = rx(c.ao_filter("l_monitor"), has(RX_STATUS, RX_AO_FILTER))
    back += read_until(target, decoder, has(MON_STAT))
    assert [r.fields["obj"] for r in records(back, DISPATCH)].count(monitor) >= 5

    # A command reaches the application, which echoes it in an APP_CMD record.
    got = rx(c.command(7, 1, 2, 3), has(TARGET_DONE, 1))
    assert [a.value for a in records(got, APP_CMD)[0].values[-1]] == [7, 1, 2, 3]
    assert decoder.frame_stats.bad_checksum == 0 and decoder.frame_stats.discontinuities == 0
