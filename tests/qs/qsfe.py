"""Parts for the QSPY front-end tests: a UDP front end, a fake TCP target, the real
target and ``mcuprof qs listen`` as processes (each ended by its PID)."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mcuprof.protocol.qs import Framer

WAIT_S = 60.0  # a deadline for things that should happen, not a timing assertion
# The real parts (see their README): QP/C 7.4 DPP targets and QSPY 7.4.0.
REAL = Path(__file__).resolve().parents[3] / "shared" / "reference" / "qs" / "real"
# Offset of Table_inst's event-queue low-water mark (QEQueue.nMin): only a statistic,
# so poking it changes nothing but what the target reports. Read from a peek of
# Table_inst: vptr, state, temp, prio, pthre, a pthread_cond_t, then the queue.
NMIN_OFFSET = {"dpp-posix64": 0x68, "dpp-posix32": 0x50}


def wait_for(cond: Callable[[], object], what: str, timeout: float = WAIT_S) -> object:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class FrontEnd:
    """A front end as QView is one: sequence-numbered datagrams, packets collected."""

    def __init__(self, port: int, host: str = "127.0.0.1", source: str | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if source is not None:  # another loopback address stands for another machine
            self.sock.bind((source, 0))
        self.sock.settimeout(0.1)
        self.addr = (host, port)
        self.seq = 0
        self.packets: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except (TimeoutError, OSError):
                continue
            with self._lock:
                self.packets.append(data)

    def send(self, data: bytes) -> None:
        self.sock.sendto(bytes([self.seq & 0xFF]) + data, self.addr)
        self.seq += 1

    def texts(self) -> list[str]:
        with self._lock:
            got = list(self.packets)
        return [p[3:].decode("utf-8", "replace") for p in got if len(p) > 2 and p[1] == 0]

    def binaries(self) -> list[bytes]:
        with self._lock:
            return [p for p in self.packets if len(p) > 1 and p[1] not in (0, 0x80)]

    def mark(self) -> int:
        return len(self.texts())

    def wait_text(self, pattern: str, since: int = 0, timeout: float = WAIT_S) -> str:
        rx = re.compile(pattern)

        def found() -> str | None:
            return next((t for t in self.texts()[since:] if rx.search(t)), None)

        return str(wait_for(found, f"a text line matching {pattern!r}", timeout))

    def ask_again(self, data: bytes, pattern: str, tries: int = 30) -> str:
        """Send until the answer's line comes: after a flood the host's socket buffer
        may still be full, and UDP drops what does not fit (our datagram too)."""
        for _ in range(tries):
            mark = self.mark()
            self.send(data)
            with contextlib.suppress(AssertionError):
                return self.wait_text(pattern, mark, timeout=2.0)
        raise AssertionError(f"no answer matching {pattern!r} in {tries} tries")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


class FakeTarget:
    """A TCP client in the test's place of a target: it sends a reset sequence and
    keeps what the host sends it, as frames."""

    def __init__(self, port: int, hello: bytes) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.sock.settimeout(0.1)
        self.received = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self.sock.sendall(hello)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            self.received += data

    def frames(self) -> list[bytes]:
        return [bytes(f) for f in bytes(self.received).split(b"\x7e")[:-1]]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def decoded_frames(raw: bytes) -> list[tuple[int, int, bytes]]:
    """(seq, record, payload) of each good frame, unescaped and checked."""
    framer = Framer()
    return [(f.seq, f.rec, bytes(f.raw[2:-1])) for f in framer.feed(raw) if hasattr(f, "rec")]


class Process:
    """A child process with its output lines collected; ended by its PID."""

    def __init__(self, argv: list[str], **kwargs) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            **kwargs,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    def wait_line(self, pattern: str, stream: str = "out", since: int = 0) -> re.Match:
        rx = re.compile(pattern)
        lines = self.out if stream == "out" else self.err

        def found() -> re.Match | None:
            for line in lines[since:]:
                m = rx.search(line)
                if m:
                    return m
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.proc.args[0]} exited: {self.err[-5:]}")
            return None

        return wait_for(found, f"{pattern!r} on {stream}")  # type: ignore[return-value]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for t in self._threads:
            t.join(timeout=5)
        return self.proc.returncode


def start_listen(*extra: str) -> tuple[Process, int, int]:
    """``mcuprof qs listen`` on free ports: (process, target TCP port, front-end UDP port)."""
    p = Process(
        [sys.executable, "-m", "mcuprof", "qs", "listen", "--port", "listen://127.0.0.1:0",
         "--udp", "0", *extra]
    )  # fmt: skip
    m = p.wait_line(r"waiting for a QS target on [\d.]+:(\d+), front ends on UDP [\d.]+:(\d+)",
                    "err")  # fmt: skip
    return p, int(m.group(1)), int(m.group(2))


def start_target(name: str, port: int) -> Process:
    return Process([str(REAL / name), f"127.0.0.1:{port}"])
