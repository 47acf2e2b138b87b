"""Run firmware under ``qemu-system-arm`` (mps2-an386) with its UART on a local TCP port.

QEMU is started as a TCP *server* that waits for the first client before it starts
the guest, so that client sees the firmware's boot METADATA packet. Later clients may
reconnect; whatever the firmware sends while nobody is connected is dropped by QEMU.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .errors import UserError
from .files import MAX_ELF_BYTES, read_file
from .paths import sample_elfs_dir

QEMU_BINARY = "qemu-system-arm"
MACHINE = "mps2-an386"
# One instruction = 2**5 ns of virtual time: timings depend on the instruction count
# only, so two runs of the same firmware measure the same durations.
ICOUNT_SHIFT = 5
_READY_MARK = "waiting for connection"
_ELF_MAGIC = b"\x7fELF"
_EM_ARM = 40
QS_DEMO_ELF_NAME = "mcuprof-qsdemo.elf"


def default_qs_elf() -> Path:
    """The bundled QS demo (firmware/qsdemo): three active objects traced with mcuqs."""
    return sample_elfs_dir() / QS_DEMO_ELF_NAME


def find_qemu() -> str:
    path = shutil.which(QEMU_BINARY)
    if path is None:
        raise UserError(
            f"{QEMU_BINARY} not found; install it with `sudo apt-get install qemu-system-arm`"
        )
    return path


def check_elf(path: str | os.PathLike[str]) -> Path:
    """A readable 32-bit little-endian ARM ELF, or a one-line UserError."""
    elf = Path(path)
    head = read_file(elf, "ELF file", MAX_ELF_BYTES)[:20]
    if len(head) < 20 or head[:4] != _ELF_MAGIC:
        raise UserError(f"not an ELF file: {elf}")
    if head[4] != 1 or head[5] != 1 or int.from_bytes(head[18:20], "little") != _EM_ARM:
        raise UserError(f"not a 32-bit little-endian ARM ELF: {elf}")
    return elf


def check_port(port: int) -> int:
    if not 1 <= port <= 65535:
        raise UserError(f"TCP port must be 1..65535, got {port}")
    return port


def free_port() -> int:
    """A TCP port that was free a moment ago (for tests and for --tcp 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def qemu_argv(
    elf: str | os.PathLike[str], port: int, *, qemu: str = QEMU_BINARY, icount_shift: int = 5
) -> list[str]:
    return [
        qemu,
        "-M",
        MACHINE,
        "-nodefaults",
        "-display",
        "none",
        "-icount",
        f"shift={icount_shift}",
        "-serial",
        f"tcp:127.0.0.1:{port},server=on,wait=on",
        "-kernel",
        str(elf),
    ]


class QemuProcess:
    """One QEMU instance. Use as a context manager, or call ``start`` and ``stop``."""

    def __init__(
        self,
        elf: str | os.PathLike[str],
        port: int | None = None,
        *,
        icount_shift: int = ICOUNT_SHIFT,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self.elf = check_elf(elf)
        self.port = check_port(port) if port else free_port()
        self.icount_shift = icount_shift
        self._on_output = on_output
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._output: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    @property
    def argv(self) -> list[str]:
        return qemu_argv(self.elf, self.port, qemu=find_qemu(), icount_shift=self.icount_shift)

    @property
    def output(self) -> str:
        """Everything QEMU printed so far (stdout and stderr)."""
        return "".join(self._output)

    def start(self, timeout_s: float = 10.0) -> QemuProcess:
        """Start QEMU and return once it listens on the port."""
        argv = self.argv
        self._proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.05):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                last = self.output.strip().splitlines()
                detail = last[-1] if last else f"exit status {self._proc.returncode}"
                raise UserError(f"QEMU did not start listening on port {self.port}: {detail}")
        return self

    def _read_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self._output.append(line)
            if _READY_MARK in line:
                self._ready.set()
            if self._on_output is not None:
                self._on_output(line)

    def poll(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def wait(self, timeout_s: float | None = None) -> int:
        assert self._proc is not None
        return self._proc.wait(timeout_s)

    def stop(self, timeout_s: float = 5.0) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(1.0)

    def __enter__(self) -> QemuProcess:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.stop()
