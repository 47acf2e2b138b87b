"""The compare gate tells a change from noise: Welch intervals on the time per call,
Bonferroni over the functions compared, a minimum number of calls."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.compare.captures import noisy_capture as capture

from mcuprof.cli import main
from mcuprof.diff.stats import t_cdf, t_quantile, welch_interval
from mcuprof.link.simulator import SimDevice, SimOptions
from mcuprof.protocol import (
    Command,
    encode_command,
)


def compare(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["compare", *argv, "--json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


# Student t quantiles from any printed table.
@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 10, 2.228),
        (0.975, 30, 2.042),
        (0.975, math.inf, 1.960),
        (0.995, 5, 4.032),
        (0.95, 20, 1.725),
    ],
)
def test_t_quantiles_match_the_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=5e-4)


@given(st.floats(0.51, 0.9999), st.floats(1.0, 1e6))
def test_t_quantile_inverts_the_cdf(p, df):
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-6)


def test_welch_interval():
    # No spread: the difference is exact.
    assert welch_interval(10.0, 0.0, 5, 12.0, 0.0, 7, 0.95) == (2.0, 2.0)
    # Equal variances and sizes: df = 2n - 2 = 18, se = sqrt(2 * 4 / 10).
    lo, hi = welch_interval(10.0, 4.0, 10, 11.0, 4.0, 10, 0.95)
    half = 2.1009 * math.sqrt(0.8)
    assert lo == pytest.approx(1.0 - half, abs=1e-3) and hi == pytest.approx(1.0 + half, abs=1e-3)


def sim_captures(n: int, seconds: float = 3.0, rate: int = 500) -> list[bytes]:
    """Back-to-back captures of one simulated device running the sample ELF: one build,
    so every difference between them is noise."""
    now = [0.0]
    dev = SimDevice(SimOptions(rate=rate), clock=lambda: now[0], baud=2_000_000)
    out = []
    for _ in range(n):
        buf = bytearray()
        dev.receive(encode_command(Command.START_PROFILING))
        t0 = now[0]
        while now[0] < t0 + seconds:
            now[0] += 0.05
            buf += dev.poll()
        dev.receive(encode_command(Command.STOP_PROFILING))
        now[0] += 0.5
        dev.poll()
        out.append(bytes(buf))
    return out


def test_captures_of_one_build_pass_at_the_default_threshold(capsys, write, firmware):
    caps = [str(write(f"c{i}.bin", data)) for i, data in enumerate(sim_captures(8))]
    elf = str(firmware.elf)
    point_only_failures = 0
    for a, b in zip(caps[::2], caps[1::2], strict=True):
        code, report = compare(capsys, a, b, "--elf", elf)
        assert code == 0, report["regressions"]
        assert report["gate"]["tested"] == report["compared"] > 5
        point_only_failures += compare(capsys, a, b, "--elf", elf, "--confidence", "0")[0]
        # What the point change alone would have flagged is listed as noise.
        for row in report["within_noise"]:
            lo, hi = row["ci_pct"]
            assert lo <= 0 <= hi and abs(row["change_pct"]) > 10
    # The noise is real: the gate without intervals fires on these same pairs.
    assert point_only_failures >= 2


def test_a_real_slowdown_in_noisy_calls_still_fails(capsys, write, firmware):
    elf = str(firmware.elf)
    base = str(write("base.bin", capture(firmware, 50, 600, seed=1)))
    same = str(write("same.bin", capture(firmware, 50, 900, seed=2)))
    slower = str(write("slower.bin", capture(firmware, 65, 900, seed=3)))
    code, report = compare(capsys, base, same, "--elf", elf)
    assert code == 0
    code, report = compare(capsys, base, slower, "--elf", elf)
    assert code == 1
    [row] = report["regressions"]
    assert row["key"] == "fir_filter"
    lo, hi = row["ci_pct"]
    assert 0 < lo < row["change_pct"] < hi
    assert row["change_pct"] == pytest.approx(30, abs=8)


def test_too_few_calls_are_reported_not_gated(capsys, write, firmware):
    elf = str(firmware.elf)
    base = str(write("base.bin", capture(firmware, 50, 3, seed=1)))
    slower = str(write("slower.bin", capture(firmware, 200, 3, seed=2)))
    code, report = compare(capsys, base, slower, "--elf", elf, "--min-calls", "5")
    assert code == 0
    assert "fir_filter" in {r["key"] for r in report["too_few_calls"]}
    assert report["gate"]["min_calls"] == 5
    code = main(["compare", base, slower, "--elf", elf, "--min-calls", "0"])
    assert code == 2
