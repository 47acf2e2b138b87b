"""Issue 35 finding 10: a QS target behind a TCP bridge (ser2net, QEMU) sends its boot
the moment ``socket://`` connects; pyserial's open() threw it away. The real DPP target's
reset sequence, held by a bridge and sent as the connection opens, is kept whole."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from mcuprof.protocol.qs import QSDecoder, Record
from mcuprof.protocol.qs.records import ENUM_DICT, FUN_DICT, OBJ_DICT, QF_RUN, SIG_DICT, USR_DICT

from .qsfe import REAL, start_target, wait_for

TARGET = "dpp-posix64"
DICTS = {OBJ_DICT, FUN_DICT, SIG_DICT, USR_DICT, ENUM_DICT}


def _boot(conn: socket.socket) -> bytes:
    """The target's bytes up to its QS_QF_RUN: the reset sequence."""
    decoder = QSDecoder()
    held = bytearray()
    while True:
        data = conn.recv(65536)
        assert data, "the target hung up before QS_QF_RUN"
        held += data
        if any(e.__class__ is Record and e.rec == QF_RUN for e in decoder.feed(data)):
            return bytes(held)


def test_socket_keeps_the_boot_a_bridge_sends_on_connect():
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    with (
        socket.create_server(("127.0.0.1", 0)) as for_target,
        socket.create_server(("127.0.0.1", 0)) as for_host,
    ):
        target = start_target(TARGET, for_target.getsockname()[1])
        try:
            for_target.settimeout(30)
            conn, _ = for_target.accept()
            conn.settimeout(30)
            boot = _boot(conn)
            sent = [e for e in QSDecoder().feed(boot) if e.__class__ is Record]
            assert sum(e.rec in DICTS for e in sent) == 42  # the DPP's reset sequence
            url = f"socket://127.0.0.1:{for_host.getsockname()[1]}"
            listen = subprocess.Popen(
                [sys.executable, "-m", "mcuprof", "qs", "listen", "--port", url,
                 "--duration", "2", "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            for_host.settimeout(30)
            host, _ = for_host.accept()
            host.sendall(boot)  # at once, as ser2net sends what it buffered

            def drain() -> None:  # the target dies of SIGPIPE if nobody reads it
                try:
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass

            threading.Thread(target=drain, daemon=True).start()
            out, err = listen.communicate(timeout=60)
            host.close()
        finally:
            target.stop()
    assert listen.returncode == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    records = [e for e in got if e["type"] == "record"]
    assert sum(e["rec"] in DICTS for e in records) == 42
    assert [e["rec"] for e in records[:2]] == [0, 64] and records[-1]["rec"] == QF_RUN
    assert not [e for e in got if e["type"] != "record"]


def test_the_dashboard_link_keeps_the_boot_a_bridge_sends_on_connect(ref_dir, monkeypatch):
    """The same through the dashboard's QSLink: the reference capture's reset sequence
    (42 dictionary records) sent the moment socket:// connects names the target. The
    port's open waits (in pyserial's step between connecting and its discard) until the
    bytes are sent, so they are surely there when the old open threw them away."""
    from serial.urlhandler import protocol_socket

    from mcuprof.link.qs_link import QSLink

    capture = (ref_dir / "dpp-posix64.bin").read_bytes()
    sent = threading.Event()
    configure = protocol_socket.Serial._reconfigure_port

    def slow_open(self, *args, **kwargs):
        sent.wait(10)
        time.sleep(0.2)  # the bytes cross loopback
        return configure(self, *args, **kwargs)

    monkeypatch.setattr(protocol_socket.Serial, "_reconfigure_port", slow_open)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def bridge() -> None:
            conn, _ = server.accept()
            with conn:
                conn.sendall(capture)  # at once, as a bridge sends what it buffered
                sent.set()
                conn.settimeout(10)
                with contextlib.suppress(OSError):
                    while conn.recv(4096):  # until the link hangs up
                        pass

        thread = threading.Thread(target=bridge, daemon=True)
        thread.start()
        link = QSLink(f"socket://127.0.0.1:{port}", 115_200, info_wait_s=10.0)
        try:
            meta = link.connect()
            assert meta.fw_version == "QP 7.4.0"  # from the kept target info
            decoder = link.source.decoder
            wait_for(lambda: decoder.frame_stats.frames >= 938, "the capture decoded")
            assert decoder.stats.dictionary_entries >= 42
            assert decoder.dicts.obj and decoder.dicts.fun and decoder.dicts.sig
            assert decoder.stats.malformed == 0
        finally:
            link.close()
        thread.join(10)
