"""``mcuprof compare`` exit codes and output on crafted captures (real sample ELF)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from mcuprof.cli import main
from mcuprof.protocol import Metadata
from mcuprof.store import SessionStore


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def captures(firmware, write, kit):
    demo_tree = kit.demo_tree
    base = write("base.bin", firmware.capture(demo_tree(), 40))
    # 30 % slower FIR filter, over a capture of a different length (60 iterations).
    slower = write("slower.bin", firmware.capture(demo_tree(fir=65), 60))
    # Same per-call costs, twice as many iterations: must not count as a regression.
    longer = write("longer.bin", firmware.capture(demo_tree(), 80))
    faster = write("faster.bin", firmware.capture(demo_tree(fir=25), 40))
    return {"base": base, "slower": slower, "longer": longer, "faster": faster}


def test_identical_and_longer_captures_pass(capsys, captures, firmware):
    elf = str(firmware.elf)
    code, out, err = run(
        capsys, "compare", str(captures["base"]), str(captures["base"]), "--elf", elf
    )
    assert code == 0, err
    assert "OK: no function grew more than 10%" in out
    code, out, _ = run(
        capsys, "compare", str(captures["base"]), str(captures["longer"]), "--elf", elf
    )
    assert code == 0
    assert "Regressions (grew more than 10%): 0" in out


def test_slower_function_fails_the_gate(capsys, captures, firmware):
    code, out, _ = run(
        capsys,
        "compare",
        str(captures["base"]),
        str(captures["slower"]),
        "--elf",
        str(firmware.elf),
    )
    assert code == 1
    assert "Regressions (grew more than 10%): 1" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("fir_filter"))
    assert "50.00 µs" in row and "65.00 µs" in row and "+30.0%" in row and "40→60" in row
    assert out.rstrip().endswith("FAIL: 1 function(s) grew more than 10% (self time per call)")


def test_threshold_and_function_globs(capsys, captures, firmware):
    base, slower, elf = str(captures["base"]), str(captures["slower"]), str(firmware.elf)
    assert run(capsys, "compare", base, slower, "--elf", elf, "--threshold", "30%")[0] == 0
    assert run(capsys, "compare", base, slower, "--elf", elf, "--threshold", "29.5")[0] == 1
    assert run(capsys, "compare", base, slower, "--elf", elf, "--function", "app::*")[0] == 0
    code, out, _ = run(
        capsys, "compare", base, slower, "--elf", elf, "--function", "app::*", "fir_*"
    )
    assert code == 1 and "fir_filter" in out
    code, _, err = run(capsys, "compare", base, slower, "--elf", elf, "--function", "nope*")
    assert code == 2
    assert err.count("\n") == 1 and "matches no function" in err


def test_total_metric_propagates_to_callers(capsys, captures, firmware):
    code, out, _ = run(
        capsys,
        "compare",
        str(captures["base"]),
        str(captures["slower"]),
        "--elf",
        str(firmware.elf),
        "--metric",
        "total",
        "--json",
    )
    assert code == 1
    report = json.loads(out)
    keys = {r["key"]: r for r in report["regressions"]}
    # control_iteration's total per call: 3+8+50+4+20+5 = 90 -> 105 µs (+16.7 %).
    assert set(keys) == {"fir_filter", "control_iteration [main.c]"}
    it = keys["control_iteration [main.c]"]
    assert it["total_mean"]["base"] == pytest.approx(90.0)
    assert it["total_mean"]["new"] == pytest.approx(105.0)
    assert it["change_pct"] == pytest.approx(100 * 15 / 90)


def test_share_basis_and_noise_floor(capsys, captures, firmware, write, kit):
    base, slower, elf = str(captures["base"]), str(captures["slower"]), str(firmware.elf)
    # A share moves with the number of calls too, which the gate counts as noise: 40
    # calls cannot show an 11 % change of share, thousands can.
    code, out, _ = run(capsys, "compare", base, slower, "--elf", elf, "--basis", "share", "--json")
    assert code == 0
    assert "fir_filter" in {r["key"] for r in json.loads(out)["within_noise"]}
    big_base = str(write("big-base.bin", firmware.capture(kit.demo_tree(), 2000)))
    big_slower = str(write("big-slower.bin", firmware.capture(kit.demo_tree(fir=65), 3000)))
    code, out, _ = run(
        capsys, "compare", big_base, big_slower, "--elf", elf, "--basis", "share", "--json"
    )
    report = json.loads(out)
    assert code == 1
    assert report["gate"]["test"].startswith("normal interval on the share")
    fir = next(r for r in report["regressions"] if r["key"] == "fir_filter")
    # fir share: 50/90 -> 65/105 of the profiled time.
    assert fir["self_share"]["base"] == pytest.approx(100 * 50 / 90)
    assert fir["self_share"]["new"] == pytest.approx(100 * 65 / 105)
    # Everything else shrank as a share: improvements, not regressions.
    assert {r["key"] for r in report["regressions"]} == {"fir_filter"}
    assert "sensor_take" in {r["key"] for r in report["improvements"]}
    # A 15 µs/call growth is under a 20 µs noise floor.
    assert run(capsys, "compare", base, slower, "--elf", elf, "--min-delta-us", "20")[0] == 0
    assert run(capsys, "compare", base, slower, "--elf", elf, "--min-delta-us", "14")[0] == 1


def test_improvements_and_json(capsys, captures, firmware):
    code, out, _ = run(
        capsys,
        "compare",
        str(captures["base"]),
        str(captures["faster"]),
        "--elf",
        str(firmware.elf),
        "--json",
    )
    assert code == 0
    report = json.loads(out)
    assert report["failed"] is False and report["regressions"] == []
    [imp] = report["improvements"]
    assert imp["key"] == "fir_filter" and imp["change_pct"] == pytest.approx(-50.0)
    assert report["base"]["build_check"]["state"] == "match"
    assert report["base"]["records"] == 40 * 6  # six calls per iteration
    assert report["compared"] == 6


def test_added_functions_are_listed_not_gated(capsys, firmware, write, kit):
    demo_tree = kit.demo_tree
    base = write("a.bin", firmware.capture(demo_tree(), 10))
    new = write("b.bin", firmware.capture(demo_tree(extra=True), 10))
    code, out, _ = run(capsys, "compare", str(base), str(new), "--elf", str(firmware.elf))
    assert code == 0
    assert "Added functions (1): actuator_write" in out
    code, out, _ = run(capsys, "compare", str(new), str(base), "--elf", str(firmware.elf))
    assert "Removed functions (1): actuator_write" in out


def test_without_elf_addresses_are_compared(capsys, captures, firmware):
    code, out, _ = run(capsys, "compare", str(captures["base"]), str(captures["slower"]))
    assert code == 1
    # fir_filter's raw address as the device sent it (Thumb bit set).
    row = next(ln for ln in out.splitlines() if f"0x{firmware.addr('fir_filter'):08x}" in ln)
    assert "+30.0%" in row


def test_errors_are_one_line_exit_2(capsys, captures, firmware, write, tmp_path):
    base = str(captures["base"])
    empty = write("empty.bin", b"\x00" * 100)
    cases = [
        (["compare", base, str(tmp_path / "missing.bin")], "no such capture file or session id"),
        (["compare", base, str(empty)], "no profile records"),
        (["compare", base, base, "--threshold", "ten"], "expected a percentage"),
        (["compare", base, base, "--threshold=-5%"], "must be a finite percentage"),
        (["compare", base, base, "--elf", str(empty)], ""),
        (["compare", base, "session:999", "--data-dir", str(tmp_path / "d")], "no session 999"),
        (["compare", base, base, "--diff-svg", str(tmp_path / "no" / "x.svg")], "cannot write"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert err.count("\n") == 1 and err.startswith("mcuprof: error: "), err
        assert message in err


def test_mismatched_elf_warns(capsys, firmware, write, kit):
    meta = Metadata(25_000_000, 1_000_000, 0xDEADBEEF, "other")
    data = kit.encode(kit.records_for(kit.demo_tree(), 5, firmware.addr), meta)
    path = write("other.bin", data)
    code, _, err = run(capsys, "compare", str(path), str(path), "--elf", str(firmware.elf))
    assert code == 0
    assert "warning: base: ELF does not match the firmware" in err


def test_session_ids_and_stored_elfs(capsys, captures, firmware, tmp_path):
    data_dir = tmp_path / "store"
    with SessionStore(data_dir, autoflush=False) as store:
        a = store.import_capture("before", captures["base"].read_bytes(), firmware.elf)
        b = store.import_capture("after", captures["slower"].read_bytes(), firmware.elf)
    # No --elf: the ELF stored with each session names the functions.
    code, out, _ = run(capsys, "compare", str(a.id), f"session:{b.id}", "--data-dir", str(data_dir))
    assert code == 1
    assert f"session {a.id} (before)" in out and "fir_filter" in out
    # A file and a session mix.
    code, _, _ = run(
        capsys,
        "compare",
        str(captures["base"]),
        f"#{a.id}",
        "--data-dir",
        str(data_dir),
        "--elf",
        str(firmware.elf),
    )
    assert code == 0


def test_diff_exports(capsys, captures, firmware, tmp_path):
    folded, svg = tmp_path / "d.folded", tmp_path / "d.svg"
    code, _, _ = run(
        capsys,
        "compare",
        str(captures["base"]),
        str(captures["slower"]),
        "--elf",
        str(firmware.elf),
        "--diff-folded",
        str(folded),
        "--diff-svg",
        str(svg),
    )
    assert code == 1
    lines = folded.read_text().splitlines()
    fir = next(ln for ln in lines if ln.startswith("control_iteration;fir_filter "))
    # base 40 x 50 µs scaled to the new total (60 x 105 / (40 x 90)), new 60 x 65 µs.
    assert fir == f"control_iteration;fir_filter {round(2000 * 6300 / 3600)} 3900"
    root = ET.fromstring(svg.read_bytes())
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t and t.startswith("fir_filter\n") for t in titles)
    # Coloured by the gate's verdict on the self time per call, as the Compare tab: the
    # regressed FIR filter red at its +30%, the unchanged functions pale (by share, the
    # others' shrunken shares painted them blue).
    ns = "{http://www.w3.org/2000/svg}"
    fills = {
        (g.find(f"{ns}title").text or "").split("\n")[0]: g.find(f"{ns}rect").get("fill")
        for g in root.iter(f"{ns}g")
    }
    assert fills.pop("fir_filter") == "rgb(255,0,0)" and fills.pop("all") == "rgb(220,220,220)"
    assert set(fills.values()) == {"rgb(235,235,235)"} and len(fills) >= 4
    fir = next(t for t in titles if t and t.startswith("fir_filter\n"))
    assert fir.endswith(
        "regressed: +30.0% (self time per call); grew past the threshold, its interval clear of 0"
    )
    assert "colour: the verdict on the self time per call" in svg.read_text()


def test_real_process_exit_status(captures, firmware):
    cmd = [sys.executable, "-m", "mcuprof", "compare", str(captures["base"])]
    ok = subprocess.run(
        [*cmd, str(captures["longer"]), "--elf", str(firmware.elf)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    bad = subprocess.run(
        [*cmd, str(captures["slower"]), "--elf", str(firmware.elf)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    err = subprocess.run([*cmd, "/nonexistent"], capture_output=True, text=True, timeout=120)
    assert (ok.returncode, bad.returncode, err.returncode) == (0, 1, 2)
    assert err.stderr.count("\n") == 1 and "Traceback" not in err.stderr


@pytest.mark.parametrize("long_ticks", [1 << 20, 1 << 27])
def test_report_equals_the_profiles(capsys, firmware, write, kit, long_ticks):
    # compare reads captures through the loader every command uses; with calls of 2**27
    # ticks in a recursive function (float64 sums past 2**52) too, it must report what
    # the Profile-based diff of the same captures says.
    from mcuprof.diff import diff_profiles
    from mcuprof.profile import load_capture

    Call = kit.Call
    long = [Call("control_iteration", long_ticks, [Call("control_iteration", long_ticks)])]
    tree, slower = long + kit.demo_tree(), long + kit.demo_tree(fir=65)
    base = write("b.bin", kit.encode(kit.records_for(tree, 5, firmware.addr), firmware.meta))
    new = write("n.bin", kit.encode(kit.records_for(slower, 7, firmware.addr), firmware.meta))
    code, out, _ = run(capsys, "compare", str(base), str(new), "--elf", str(firmware.elf), "--json")
    report = json.loads(out)
    profiles = [load_capture(p.read_bytes(), firmware.symbols).profile for p in (base, new)]
    want = diff_profiles(*profiles)
    rows = {r["key"]: r for k in ("regressions", "improvements", "within_noise") for r in report[k]}
    assert code == 1 and "fir_filter" in rows
    assert report["compared"] == len(want.functions)
    for d in want.functions:
        if d.key in rows:
            assert rows[d.key] == {**rows[d.key], **d.as_dict()}
    assert (report["base_summary"], report["new_summary"]) == (
        want.base_summary,
        want.new_summary,
    )


def test_the_table_names_a_static_as_every_view_with_its_file_apart(capsys, captures, firmware):
    """control_iteration is static in main.c: the table calls it control_iteration, as
    the Functions view does, and gives main.c in the file column."""
    argv = ["compare", str(captures["base"]), str(captures["slower"]), "--elf", str(firmware.elf)]
    code, out, _ = run(capsys, *argv, "--metric", "total", "--confidence", "0")
    assert code == 1
    header = next(line for line in out.splitlines() if line.strip().startswith("function"))
    assert header.split()[:2] == ["function", "file"]
    row = next(line for line in out.splitlines() if "control_iteration" in line)
    assert row.split()[:2] == ["control_iteration", "main.c"]
    assert "[main.c]" not in out
    _, out, _ = run(capsys, *argv, "--metric", "total", "--confidence", "0", "--json")
    rows = json.loads(out)["regressions"]
    ci = next(r for r in rows if r["name"] == "control_iteration")
    assert ci["file"] == "main.c" and ci["key"] == "control_iteration [main.c]"
