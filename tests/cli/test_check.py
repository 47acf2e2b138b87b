"""``mcuprof check``: budgets on captures whose control_step durations are known (the
bundled demo ELF names them), exit 0 / 1 / 2 as a CI job reads them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mcuprof.cli import main
from mcuprof.paths import default_elf
from mcuprof.profile import budget
from mcuprof.profile.synth import flat
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import SymbolTable

BUDGETS = """
[[budget]]
function = "control_step"
p99_us = 230
max_us = 2000

[[budget]]
function = "fir_*"
p50_us = 100
"""


@pytest.fixture(scope="module")
def elf():
    path = default_elf()
    table = SymbolTable.from_elf(path)
    return path, {f.name: f.start for f in table.functions}, table.build_id or 0


def _capture(addrs, bid, n: int, seed: int, tail: float = 1.0, stall: bool = False) -> bytes:
    """control_step: log-normal, median 100 µs (p99 about 200 µs); with ``tail`` every
    duration above the unchanged build's p90 grows by that factor. fir_filter: about
    40 µs. ``stall``: one control_step call of 5 ms, the 101st."""
    rng = np.random.default_rng(seed)
    step = rng.lognormal(np.log(100), 0.3, n)
    p90 = 100 * np.exp(1.2816 * 0.3)
    step = np.where(step > p90, step * tail, step)
    if stall:
        step[100] = 5000
    fir = rng.normal(40, 3, n)
    dur = np.maximum(1, np.round(np.column_stack([step, fir]).ravel())).astype(np.int64)
    func = np.tile([0, 1], n)
    trace = flat(func, dur, np.full(len(dur), 10))
    a = np.array([addrs["control_step"], addrs["fir_filter"]], np.uint32)
    recs = trace.records(a[trace.func])
    meta = encode_metadata(Metadata(168_000_000, 1_000_000, bid, "check"))
    return meta + b"".join(encode_profile_data(recs[i : i + 200]) for i in range(0, len(recs), 200))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory, elf):
    d = tmp_path_factory.mktemp("check")
    _, addrs, bid = elf
    out = {}
    for name, kw in {
        "same": dict(n=5000, seed=1),
        "tail": dict(n=5000, seed=2, tail=1.3),
        "few": dict(n=60, seed=3),
        "stall": dict(n=5000, seed=4, stall=True),
    }.items():
        out[name] = d / f"{name}.bin"
        out[name].write_bytes(_capture(addrs, bid, **kw))
    out["budgets"] = d / "budgets.toml"
    out["budgets"].write_text(BUDGETS)
    return out


def test_unchanged_build_holds_and_grown_tail_breaks(capsys, files, elf):
    code, out, err = run(
        capsys,
        "check",
        str(files["same"]),
        "--budgets",
        str(files["budgets"]),
        "--elf",
        str(elf[0]),
    )
    assert code == 0, out + err
    assert "OK: no budget broken" in out
    assert "holds       control_step  p99" in out
    code, out, err = run(
        capsys,
        "check",
        str(files["tail"]),
        "--budgets",
        str(files["budgets"]),
        "--elf",
        str(elf[0]),
    )
    assert code == 1, out + err
    assert "BROKEN      control_step  p99" in out and "FAIL: 1 of 3" in out


def test_too_few_calls_cannot_tell(capsys, files, elf):
    code, out, _ = run(
        capsys,
        "check",
        str(files["few"]),
        "--budgets",
        str(files["budgets"]),
        "--elf",
        str(elf[0]),
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    p99 = next(v for v in doc["verdicts"] if v["limit"] == "p99_us")
    assert p99["state"] == "cannot tell" and p99["calls"] == 60
    assert p99["more_calls"] is not None and p99["more_calls"] > 0
    assert doc["broken"] == 0 and doc["cannot_tell"] >= 1
    code, out, _ = run(
        capsys, "check", str(files["few"]), "--budgets", str(files["budgets"]), "--elf", str(elf[0])
    )
    assert "cannot tell yet: " in out and "more calls needed" in out


def test_a_max_budget_names_the_call(capsys, files, elf):
    code, out, _ = run(
        capsys,
        "check",
        str(files["stall"]),
        "--budgets",
        str(files["budgets"]),
        "--elf",
        str(elf[0]),
        "--json",
    )
    assert code == 1
    v = next(v for v in json.loads(out)["verdicts"] if v["limit"] == "max_us")
    assert v["state"] == "broken" and v["over"] == 1 and v["figure_us"] == 5000
    # the 101st control_step: 100 pairs of calls (each with its 10-tick gaps) before it
    trace_before = _starts(files, elf)
    assert v["first_over_us"] == pytest.approx(trace_before)
    assert v["first_over_took_us"] == 5000  # that call's own time: its span on the timeline


def _starts(files, elf) -> float:
    """The stalled call's entry from the capture's start (the first call's entry)."""
    from mcuprof.sources import load

    data = files["stall"].read_bytes()
    p = load("miniprofiler", data, SymbolTable.from_elf(elf[0])).profile
    lv = p.levels[0]
    names = [p.frames[f].name for f in p.frame_ids(lv)]
    i = [k for k, n in enumerate(names) if n == "control_step"][100]
    return float(p.us(lv.entry[i])) - p.t0_us


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[budget]]\nfunction = "control_stpe"\np99_us = 10\n', "matches no function"),
        ('[[budget]]\nfunction = "control_step"\np98_us = 10\n', "unknown key 'p98_us'"),
        ('[[budget]]\nfunction = "control_step"\np99_us = -1\n', "not a positive number"),
        ('[[budget]]\nfunction = "control_step"\n', "no limit"),
        ("[[budget]\n", "not a TOML file"),
        ('[[budget]]\nfunction = "x"\nperiod_jitter_us = 3\np50_us = 1\n', "without period_us"),
    ],
)
def test_errors_exit_2_with_one_line(capsys, files, elf, tmp_path, text, message):
    f = tmp_path / "b.toml"
    f.write_text(text)
    code, out, err = run(
        capsys, "check", str(files["same"]), "--budgets", str(f), "--elf", str(elf[0])
    )
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert out == ""


def test_period_budget(capsys, files, elf, tmp_path):
    """The flat capture's control_step calls come every ~150 µs, give or take the
    durations: a 150 µs period with 20 µs of jitter is broken, one of 60 % is not."""
    f = tmp_path / "p.toml"
    f.write_text('[[budget]]\nfunction = "control_step"\nperiod_us = 150\nperiod_jitter_us = 20\n')
    code, out, _ = run(
        capsys, "check", str(files["same"]), "--budgets", str(f), "--elf", str(elf[0]), "--json"
    )
    v = json.loads(out)["verdicts"][0]
    assert code == 1 and v["state"] == "broken" and v["over"] > 0 and v["first_over_us"] > 0
    assert 0 < v["first_over_took_us"] < 150  # the call that came off the period, its time
    f.write_text(
        '[[budget]]\nfunction = "control_step"\nperiod_us = 160\nperiod_jitter_us = 1000\n'
    )
    code, out, _ = run(
        capsys, "check", str(files["same"]), "--budgets", str(f), "--elf", str(elf[0])
    )
    assert code == 0, out


def test_interval_ranks_cover_the_percentile():
    """The ranks' interval holds the true percentile at least as often as asked, on
    uniform samples (distribution-free: any continuous law gives the same coverage)."""
    rng = np.random.default_rng(5)
    for n, milli in [(100, 500), (400, 900), (1000, 990), (60, 990)]:
        lo, hi = budget.ci_ranks(n, milli, 0.95)
        q = milli / 1000
        x = np.sort(rng.random((2000, n)), axis=1)
        low = x[:, lo - 1] if lo else np.full(2000, -1.0)
        high = x[:, hi - 1] if hi else np.full(2000, 2.0)
        assert ((low <= q) & (q <= high)).mean() >= 0.94, (n, milli)


def test_a_stored_session_with_its_elf(capsys, files, elf, tmp_path):
    from mcuprof.store import SessionStore

    store = SessionStore(tmp_path / "data")
    info = store.import_capture("tail", files["tail"].read_bytes(), elf[0])
    store.close()
    code, out, err = run(
        capsys,
        "check",
        str(info.id),
        "--budgets",
        str(files["budgets"]),
        "--data-dir",
        str(tmp_path / "data"),
    )
    assert code == 1, err
    assert f"budgets on session {info.id} (tail)" in out and "BROKEN      control_step  p99" in out
