"""QS streams for the seam tests: the reference capture and the simulated DPP."""

from __future__ import annotations

import pytest

from mcuprof.link.qs_sim import QSSimDevice
from tests.qs.conftest import REFERENCE


@pytest.fixture(scope="session")
def capture() -> bytes:
    return (REFERENCE / "dpp-posix64.bin").read_bytes()


def sim_stream(seconds: float = 5.0, seed: int = 1) -> bytes:
    """What the simulated QP target sends in ``seconds`` of its time, on a fast link."""
    t = [0.0]

    class Opts:
        baud = 4_000_000

    opts = Opts()
    opts.seed = seed  # type: ignore[attr-defined]
    dev = QSSimDevice(opts, clock=lambda: t[0])
    out = bytearray()
    for _ in range(int(seconds / 0.005)):
        t[0] += 0.005
        out += dev.poll()
    return bytes(out)


@pytest.fixture(scope="session")
def sim() -> bytes:
    return sim_stream()
