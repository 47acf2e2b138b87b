"""Issue 35 finding 12: S12Z analysis streams. Peak memory is bounded whatever the trace's
length (32 MiB of reserved lines peaked at 1,441 MiB, a valid 57 MiB trace at 482 MiB),
and the figures are those of the whole-trace analysis, for any split."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.s12z import LineDecoder
from mcuprof.s12z import destinations, gaps, load_firmware, load_trace
from mcuprof.s12z.analysis import analyse
from mcuprof.s12z.digest import Analysis
from mcuprof.s12z.flow import encode_flow
from mcuprof.s12z.sample import demo_elf, demo_flow

DEMO = encode_flow(demo_flow())
PEAK_MIB = 256  # docs/limits.md: S12Z analysis, any trace up to the 1 GiB cap


def _streamed(data: bytes, cuts: list[int], firmware=None, bus_hz=None, timeline=None):
    decoder = LineDecoder()
    d = Analysis(timeline)
    at = 0
    for cut in [*sorted(cuts), len(data)]:
        d.feed(decoder.feed(data[at:cut]))
        at = max(at, cut)
    d.feed(decoder.close())
    return d.result(decoder.stats, firmware, bus_hz)


def _ptvb(n: int, seed: int) -> bytes:
    """n PTVB lines: random vectors and stamps, a third with TSOVF."""
    rng = np.random.default_rng(seed)
    lines = np.zeros((n, 8), np.uint8)
    lines[:, 0] = 0x03 | 0x40 * (rng.random(n) < 0.3)
    lines[:, 1] = 1
    lines[:, 5] = rng.integers(0, 8, n)
    lines[:, 6:8] = rng.integers(0, 256, (n, 2))
    return lines.tobytes()


_piece = st.one_of(
    st.tuples(st.integers(0, len(DEMO)), st.integers(0, 900)).map(lambda t: DEMO[t[0] :][: t[1]]),
    st.binary(max_size=60),
)


@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_piece, max_size=10), st.lists(st.integers(0, 8000), max_size=8))
def test_streamed_figures_are_the_whole_traces_for_any_split(pieces, cuts):
    data = b"".join(pieces)
    whole = analyse(load_trace(data), None, 32e6, 7)
    total = whole["interrupts"]["total"]
    assert _streamed(data, cuts, None, 32e6, (total, 7)) == whole


def test_gaps_past_memory_go_to_disk_and_the_median_is_exact(monkeypatch):
    data = _ptvb(5001, 1)
    whole = analyse(load_trace(data), None, 1e6)["interrupts"]["between"]
    monkeypatch.setattr(gaps, "MAX_HELD_GAPS", 300)
    for cuts in ([], [8 * 100, 8 * 2000 + 3]):
        assert _streamed(data, cuts, None, 1e6)["interrupts"]["between"] == whole
    even = _ptvb(4000, 2)
    monkeypatch.setattr(gaps, "MAX_HELD_GAPS", 1 << 30)
    held = _streamed(even, [])["interrupts"]["between"]
    monkeypatch.setattr(gaps, "MAX_HELD_GAPS", 10)
    assert _streamed(even, [8 * 7])["interrupts"]["between"] == held


def test_rows_past_the_bound_are_counted_not_listed(monkeypatch):
    firmware = load_firmware(demo_elf(), None, name="demo")
    full = analyse(load_trace(DEMO), firmware)
    bare = analyse(load_trace(DEMO))
    monkeypatch.setattr(destinations, "MAX_ROWS", 3)
    cut = analyse(load_trace(DEMO), firmware)
    assert cut["destinations"] == full["destinations"][:3]
    assert cut["destinations_more"] == len(full["destinations"]) - 3
    assert cut["functions"] == full["functions"][:3]
    assert cut["functions_more"] == len(full["functions"]) - 3
    cut_bare = analyse(load_trace(DEMO))
    assert cut_bare["functions"] == bare["functions"][:3]
    assert "starts_more" not in cut and "starts_more" not in full
    assert "destinations_more" not in full and "functions_more" not in full


def _peak_mib(path) -> int:
    """Peak RSS of ``mcuprof s12z PATH --json`` run as a child, in MiB."""
    probe = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "assert done.returncode == 0\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    argv = [sys.executable, "-c", probe, sys.executable, "-m", "mcuprof", "s12z", str(path)]
    out = subprocess.run([*argv, "--json"], capture_output=True, text=True, check=True)
    return int(out.stdout) >> 10


@pytest.mark.parametrize(
    "name, data, bound",
    [
        # Garbage decodes slowly (a bad line a byte): a quarter of the 32 MiB here,
        # under half the bound; bench/s12z_memory.py runs the full sizes and worse shapes.
        ("8 MiB of reserved lines", lambda: bytes([0x04, 0x05, 0x06, 0x08]) * (2 << 20), 128),
        ("a valid 64 MiB trace", lambda: DEMO * ((64 << 20) // len(DEMO) + 1), PEAK_MIB),
    ],
)
def test_peak_memory_of_the_cli_is_bounded(tmp_path, name, data, bound):
    trace = tmp_path / "trace.bin"
    trace.write_bytes(data())
    assert _peak_mib(trace) <= bound, name
