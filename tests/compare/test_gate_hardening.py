"""The compare gate cannot be talked out of a regression (issue 26, F12): its options are
finite, one outlying call does not hide a change in all the others, and captures of
different timer frequencies are not compared without a word."""

from __future__ import annotations

import json

import pytest
from tests.compare.captures import WRAP
from tests.compare.captures import noisy_capture as capture

from mcuprof.cli import main
from mcuprof.diff.table import OUTLIER_MIN_CALLS, Side


def compare(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(["compare", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "-1"])
def test_min_delta_must_be_finite(capsys, write, firmware, value):
    base = str(write("base.bin", capture(firmware, 50, 300, seed=1)))
    slower = str(write("slower.bin", capture(firmware, 75, 300, seed=2)))
    elf = str(firmware.elf)
    assert compare(capsys, base, slower, "--elf", elf)[0] == 1  # the regression is caught
    code, report, err = compare(capsys, base, slower, "--elf", elf, f"--min-delta-us={value}")
    assert code == 2 and report is None
    assert err.count("\n") == 1 and "--min-delta-us" in err and "finite" in err


@pytest.mark.parametrize("option", ["--threshold", "--confidence"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_percentages_must_be_finite(capsys, write, firmware, option, value):
    base = str(write("base.bin", capture(firmware, 50, 50, seed=1)))
    code, _, err = compare(capsys, base, base, "--elf", str(firmware.elf), f"{option}={value}")
    assert code == 2 and err.count("\n") == 1 and option in err


@pytest.mark.parametrize("where", ["new", "base"])
def test_one_outlier_does_not_hide_a_regression(capsys, write, firmware, where):
    """1,000 calls 50 % slower, and one call of 2**32 - 1 ticks on one side: the gate
    fails, and says which call it set aside and what the change is without it."""
    base = capture(firmware, 50, 1000, seed=1, outlier=where == "base")
    slower = capture(firmware, 75, 1000, seed=2, outlier=where == "new")
    a, b = str(write("base.bin", base)), str(write("slower.bin", slower))
    code, report, _ = compare(capsys, a, b, "--elf", str(firmware.elf))
    assert code == 1
    assert "fir_filter" not in {r["key"] for r in report["within_noise"]}
    [row] = [r for r in report["regressions"] if r["key"] == "fir_filter"]
    out = row["outlier"]
    assert out["set_aside_us"][where] == pytest.approx(WRAP)  # 1 MHz: a tick is a µs
    other = "base" if where == "new" else "new"
    assert out["set_aside_us"][other] is None
    assert out["change_pct"] == pytest.approx(50, abs=10)
    assert 0 < out["ci_pct"][0] < out["change_pct"]
    # The text report says it too, under the row.
    assert main(["compare", a, b, "--elf", str(firmware.elf)]) == 1
    text = capsys.readouterr().out
    assert f"one call set aside ({where} 4,294,967,295.00 µs)" in text


def test_an_outlier_alone_is_not_a_regression(capsys, write, firmware):
    """The same per-call cost on both sides, one stall in NEW: nothing to fail on once
    the stall is set aside (and with it, the mean's interval is too wide to say)."""
    base = str(write("base.bin", capture(firmware, 50, 1000, seed=1)))
    same = str(write("same.bin", capture(firmware, 50, 1000, seed=2, outlier=True)))
    code, report, _ = compare(capsys, base, same, "--elf", str(firmware.elf))
    assert code == 0, report["regressions"]
    [row] = [r for r in report["within_noise"] if r["key"] == "fir_filter"]
    lo, hi = row["outlier"]["ci_pct"]
    assert lo <= 0 <= hi


def test_outlier_rule_needs_calls_and_a_dominant_call():
    def side(calls: int, top: float, sq: float) -> Side:
        return Side(calls, 0.0, 0.0, 1.0, 1.0, self_sq=sq, self_max=top)

    assert side(1000, 100.0, 10_001.0 + 999 * 4).outlier("self")
    assert not side(1000, 3.0, 1000 * 4.0).outlier("self")  # ordinary spread
    n = OUTLIER_MIN_CALLS
    assert not side(n, 100.0, 10_001.0).outlier("self")  # too few calls left to judge
    assert side(n + 1, 100.0, 10_001.0).outlier("self")
    assert not side(1000, 0.0, 0.0).outlier("self")  # not known: never set aside
    t = Side(5, 10.0, 12.0, 1.0, 1.0, 50.0, 12.0, 60.0, 6.0, 7.0).trimmed()
    assert (t.calls, t.self_us, t.total_us, t.self_sq, t.incl_sum, t.incl_sq) == (
        4,
        4.0,
        5.0,
        14.0,
        5.0,
        11.0,
    )
    assert (t.self_max, t.incl_max) == (0.0, 0.0)  # set aside once, not again


def test_timer_frequency_mismatch_is_refused_or_reported(capsys, write, firmware):
    base = str(write("base.bin", capture(firmware, 50, 300, seed=1)))
    other = str(write("other.bin", capture(firmware, 50, 300, seed=2, timer_hz=2_000_000)))
    elf = str(firmware.elf)
    code, report, err = compare(capsys, base, other, "--elf", elf)
    assert code == 2 and report is None
    assert err.count("\n") == 1
    assert "timer frequencies differ: BASE 1,000,000 Hz, NEW 2,000,000 Hz" in err
    code, report, err = compare(capsys, base, other, "--elf", elf, "--allow-timebase-mismatch")
    assert code in (0, 1)
    assert report["timebase"] == {
        "base_hz": 1_000_000,
        "new_hz": 2_000_000,
        "mismatch": True,
        "message": "timer frequencies differ: BASE 1,000,000 Hz, NEW 2,000,000 Hz",
    }
    assert "timer frequencies differ" in err
    # The same timer: reported as such, not a word on stderr.
    code, report, err = compare(capsys, base, base, "--elf", elf)
    assert code == 0 and report["timebase"]["mismatch"] is False and err == ""


def test_an_internal_error_exits_2_not_1(capsys, write, firmware, monkeypatch):
    """1 means "regression": a bug or an unexpected failure must not read as one."""
    import mcuprof.commands.compare as compare_cmd

    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(compare_cmd, "diff_reduced", broken)
    base = str(write("base.bin", capture(firmware, 50, 50, seed=1)))
    code, report, err = compare(capsys, base, base, "--elf", str(firmware.elf))
    assert code == 2 and report is None
    assert err == "mcuprof: internal error: RuntimeError: a bug\n"


def test_a_closed_stdout_keeps_the_verdict(write, firmware):
    """``mcuprof compare … | head -0``: the reader is gone before the report is printed;
    the exit status is still the gate's (was 0, a pass, for a regression)."""
    import os
    import subprocess
    import sys

    base = str(write("base.bin", capture(firmware, 50, 300, seed=1)))
    slower = str(write("slower.bin", capture(firmware, 75, 300, seed=2)))
    r, w = os.pipe()
    os.close(r)  # nobody will read: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcuprof", "compare", base, slower, "--elf", str(firmware.elf)],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(w)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
