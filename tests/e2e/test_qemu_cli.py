"""`mcuprof qemu`: a foreground process that owns QEMU, and one-line errors."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcuprof.protocol import Command, Metadata, ResponseDecoder, Status, encode_command
from mcuprof.qemu import free_port

pytestmark = pytest.mark.qemu


def mcuprof(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcuprof", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def read_until(sock: socket.socket, decoder: ResponseDecoder, kind: type, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            data = sock.recv(4096)
        except TimeoutError:
            continue
        assert data, "QEMU closed the connection"
        for event in decoder.feed(data):
            if isinstance(event, kind):
                return event
    raise AssertionError(f"no {kind.__name__} within {timeout_s} s")


def test_runs_until_sigterm_and_takes_qemu_with_it(built_elf: Path) -> None:
    port = free_port()
    proc = mcuprof("qemu", "--elf", str(built_elf), "--tcp", str(port))
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"socket://127.0.0.1:{port}" in banner
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.settimeout(0.2)
            decoder = ResponseDecoder()
            boot = read_until(sock, decoder, Metadata, 5.0)
            assert boot.fw_version == "demo-1.0"
            sock.sendall(encode_command(Command.GET_STATUS))
            status = read_until(sock, decoder, Status, 5.0)
            assert status.is_profiling is False
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # QEMU went down with it: nothing listens on the port any more.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_missing_qemu_is_one_line_saying_how_to_install(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # an empty directory: no qemu-system-arm
    proc = mcuprof("qemu", "--tcp", str(free_port()), env=env)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.count("\n") == 1
    assert err.startswith("mcuprof: error: qemu-system-arm not found")
    assert "apt-get install qemu-system-arm" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "fw.elf: no such file"),
        (b"hello, not an ELF at all", "not an ELF file"),
        (b"\x7fELF\x02\x01\x01" + bytes(13), "not a 32-bit little-endian ARM ELF"),
    ],
)
def test_bad_elf_is_one_line(tmp_path: Path, content: bytes | None, message: str) -> None:
    elf = tmp_path / "fw.elf"
    if content is not None:
        elf.write_bytes(content)
    proc = mcuprof("qemu", "--elf", str(elf), "--tcp", str(free_port()))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.count("\n") == 1 and message in err
