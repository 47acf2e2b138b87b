"""Shared helpers for the session-store tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data

META = Metadata(
    mcu_clock_hz=168_000_000, timer_freq=1_000_000, elf_build_id=0x1234ABCD, fw_version="store-test"
)


def records(n: int, start: int = 0) -> np.ndarray:
    """``n`` sequential leaf calls; record i starts at tick 10*(start+i) and lasts 5."""
    rec = np.zeros(n, dtype=RECORD_DTYPE)
    idx = np.arange(start, start + n, dtype=np.int64)
    rec["func_addr"] = 0x0800_0100 + (idx % 7) * 0x20
    rec["entry_time"] = idx * 10
    rec["duration"] = 5
    return rec


def capture(n_packets: int, per_packet: int = 50) -> bytes:
    out = [encode_metadata(META)]
    for p in range(n_packets):
        out.append(encode_profile_data(records(per_packet, p * per_packet)))
    return b"".join(out)


def simulated_capture(
    seconds: float, rate: int = 50_000, baud: int = 2_000_000
) -> tuple[bytes, int]:
    """What the simulated board sends in ``seconds`` of profiling at ``rate`` calls a
    second over its default link (a realistic capture: link/workload.py's call tree,
    real timings), and the records in it. Driven by a fake clock: no waiting."""
    from mcuprof.link.simulator import SimDevice, SimOptions
    from mcuprof.protocol import Command, encode_command

    now = [0.0]
    device = SimDevice(SimOptions(rate=rate), clock=lambda: now[0], baud=baud)
    device.receive(encode_command(Command.START_PROFILING))
    parts = []
    for _ in range(round(seconds * 100)):
        now[0] += 0.01
        parts.append(device.poll())
    return b"".join(parts), device.records_sent


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def meta() -> Metadata:
    return META


@pytest.fixture
def make_capture() -> Callable[..., bytes]:
    return capture


@pytest.fixture
def fake_elf(tmp_path: Path) -> Path:
    # The store treats the ELF as opaque bytes: hashing and copying need no real ELF.
    path = tmp_path / "fw.elf"
    path.write_bytes(b"\x7fELF" + bytes(range(256)) * 8)
    return path


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    # Never let a test fall back to the user's real ~/.local/share/mcuprof.
    monkeypatch.setenv("MCUPROF_DATA_DIR", str(tmp_path_factory.mktemp("default-data")))


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the whole test session (tests/pgserver.py)."""
    from tests.pgserver import INSTALL_HINT, PgServer, bin_dir

    if bin_dir() is None:
        pytest.fail(INSTALL_HINT)
    server = PgServer()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A database of its own for one test."""
    return pg_server.new_database()
