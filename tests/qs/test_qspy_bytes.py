"""Byte for byte: the frames ``mcuprof qs listen --udp`` sends a target for a front
end's datagrams equal those the real QSPY 7.4.0 sends for the same datagrams, across
a target reconnection (the host's sequence restarts at 1). Both hosts are measured
with the same fake target, which sends the reset sequence of a real dpp-posix64."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from mcuprof.protocol.qs import QSDecoder

from .qsfe import REAL, start_listen, start_target
from .qspy_replay import replay

QSPY = REAL / "qspy"


def _until_run(data: bytes) -> tuple[bytes, QSDecoder]:
    """A target's bytes up to and including QS_QF_RUN, and a decoder that has read them."""
    decoder = QSDecoder()
    end = 0
    for chunk in data.split(b"\x7e"):
        end += len(chunk) + 1
        events = decoder.feed(chunk + b"\x7e")
        if any(getattr(e, "rec", None) == 70 for e in events):
            return data[:end], decoder
    raise AssertionError("no QS_QF_RUN in the target's bytes")


def _live_hello(name: str) -> bytes:
    """The reset sequence of a real target, read from it over TCP (then it is killed)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        target = start_target(name, server.getsockname()[1])
        try:
            server.settimeout(60)
            conn, _ = server.accept()
            conn.settimeout(60)
            data = bytearray()
            with conn:
                while b"\x7e" not in data or not _has_run(bytes(data)):
                    data += conn.recv(65536)
        finally:
            target.stop(signal.SIGKILL)
    return bytes(data)


def _has_run(data: bytes) -> bool:
    try:
        _until_run(data)
    except AssertionError:
        return False
    return True


def _phases(decoder: QSDecoder) -> list[list[bytes]]:
    obj = {name: addr for addr, name in decoder.dicts.obj.items()}
    size, fun = decoder.config.obj_ptr_size, decoder.config.fun_ptr_size
    table = obj["Table_inst"].to_bytes(size, "little")
    zero = bytes(size)

    def named(rec: int, kind: int, name: str) -> bytes:
        return bytes([rec, kind]) + zero + name.encode() + b"\0"

    def event(prio: int, name: str, params: bytes = b"") -> bytes:
        head = bytes([0x87, prio]) + bytes(2) + struct.pack("<H", len(params))
        return head + params + name.encode() + b"\0"

    first = [
        b"\x00",
        b"\x01\x07" + struct.pack("<III", 1, 2, 0xDEADBEEF),
        b"\x03\x00",
        named(0x89, 0, "Table_inst"),
        named(0x89, 1, "Philo_inst[0]"),
        b"\x0f\x00",
        b"\x0f\x01",
        named(0x89, 5, "Table_inst"),
        b"\x04" + struct.pack("<HBB", 0x68, 2, 1),
        b"\x05" + struct.pack("<HBBH", 0x68, 2, 1, 1),
        b"\x06" + struct.pack("<HBBH", 0x7E7D, 2, 3, 0x7E7D),  # bytes that need escaping
        b"\x0a\x10" + b"\xff" * 16,
        b"\x0b\x10" + b"\xff" * 16,
        b"\x0a\x10" + bytes(16),
        b"\x0c\x00" + table,
        b"\x0d\x01" + table,
        named(0x88, 0, "Table_inst"),
        named(0x88, 1, "Philo_inst[2]"),
        b"\x8d\x00a note\0",  # shown by the host, nothing for the target
        b"\x82",  # save dictionaries: nothing for the target either
        event(0, "SERVE_SIG"),
        event(253, "EAT_SIG", b"\x01\x7e"),
        event(255, "SERVE_SIG"),
        b"\x10\xfd\x07\x00\x00\x00",  # raw EVENT (to a priority: refused, qs/guard.py)
        b"\x07",
        b"\x08",
        b"\x0e",
        b"\x09" + struct.pack("<I", 5) + (0x401CD0).to_bytes(fun, "little"),
        b"\x0d\x05" + (0x1234).to_bytes(size, "little"),
        b"\x02",
    ]
    second = [b"\x00", b"\x03\x00", named(0x89, 0, "Table_inst"), b"\x0f\x00", b"\x00"]
    return [first, second]


def _qspy_bytes(tmp_path: Path, hello: bytes, phases: list[list[bytes]]) -> list[str]:
    """What the real QSPY sends: run in a private network namespace when we may."""
    spec = {"hello": hello.hex(), "phases": [[d.hex() for d in p] for p in phases]}
    script, out = tmp_path / "script.json", tmp_path / "qspy.json"
    helper = Path(__file__).with_name("qspy_replay.py")
    argv = [sys.executable, str(helper), str(QSPY), str(script), str(out)]
    private = shutil.which("unshare") is not None and shutil.which("ip") is not None
    if private:
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
        private = probe.returncode == 0
    spec["private_net"] = private
    script.write_text(json.dumps(spec))
    run = subprocess.run(
        (["unshare", "-n"] if private else []) + argv,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("source", ["dpp-posix64.bin", "dpp-posix32"])
def test_frames_equal_real_qspy(tmp_path, source):
    if not QSPY.exists():
        pytest.skip(f"the real QSPY is missing: {QSPY} (see shared/reference/qs/real/README.md)")
    if source.endswith(".bin"):  # the stored capture of a 64-bit target
        data = (REAL.parent / source).read_bytes()
    elif (REAL / source).exists():  # a live 32-bit target: 4-byte pointers in 0x88/0x89
        data = _live_hello(source)
    else:
        pytest.skip(f"the real target {REAL / source} is missing")
    hello, decoder = _until_run(data)
    phases = _phases(decoder)
    reference = _qspy_bytes(tmp_path, hello, phases)
    host, tport, uport = start_listen()
    try:
        ours = replay(tport, uport, hello, phases)
    finally:
        host.stop(signal.SIGINT)
    assert reference[1][:8] == "0100fe7e"  # INFO with sequence 1: it restarts with a target
    assert ours[:-2] == reference[:-2]
    # The binary channel: the target's records as QSPY forwards them, twice (two resets).
    assert ours[-2].count("\n") > 150 and ours[-2] == reference[-2]
    # The text channel: QSPY's lines for the records (no dictionary or target-info lines),
    # apart from the host's own notes (<QSPY->, <F-END>), which say other things.
    assert _record_lines(ours[-1]) == _record_lines(reference[-1])
    assert len(_record_lines(ours[-1])) > 60


def _record_lines(text: str) -> list[str]:
    return [t for t in text.split("\n") if "<QSPY->" not in t and "<F-END>" not in t]
