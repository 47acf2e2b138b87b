"""``mcuprof export`` end to end, on capture files and the sample ELF."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from mcuprof.cli import main
from mcuprof.paths import default_elf
from mcuprof.profile.synth import addresses, generate
from mcuprof.progress import ReadProgress
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import SymbolTable
from tests.export.validators import validate_speedscope


@pytest.fixture(scope="module")
def elf() -> Path:
    path = default_elf()
    assert path.is_file(), f"sample ELF missing: {path}"
    return path


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory, elf: Path) -> Path:
    table = SymbolTable.from_elf(elf)
    ranges = [(f.start, f.end) for f in table.functions]
    rng = random.Random(9)
    trace = generate(rng, len(ranges), 800, start_tick=(1 << 32) - 500)
    recs = trace.records(addresses(rng, trace, ranges, style="mixed", thumb=True))
    data = encode_metadata(Metadata(168_000_000, 1_000_000, table.build_id or 0, "t"))
    data += b"".join(encode_profile_data(recs[i : i + 50]) for i in range(0, len(recs), 50))
    path = tmp_path_factory.mktemp("cap") / "cap.bin"
    path.write_bytes(data)
    return path


def test_folded_to_stdout_uses_elf_names(capture, elf, capsys) -> None:
    assert main(["export", str(capture), "--elf", str(elf), "--format", "folded"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n")
    names = {f.name for f in SymbolTable.from_elf(elf).functions}
    frames = {fr for line in out.splitlines() for fr in line.rsplit(" ", 1)[0].split(";")}
    assert frames and frames <= names


def test_output_file(capture, elf, tmp_path, capsys) -> None:
    out = tmp_path / "p.speedscope.json"
    rc = main(["export", str(capture), "--elf", str(elf), "-f", "speedscope", "-o", str(out)])
    assert rc == 0
    assert capsys.readouterr().out == ""
    validate_speedscope(out.read_text())
    assert not (tmp_path / "p.speedscope.json.part").exists()


def test_dash_output_is_standard_output(capture, elf, tmp_path, capsys, monkeypatch) -> None:
    """``-o -`` writes to standard output, as ``sort -o -`` and most tools read it, and
    leaves no file named "-" behind; its text is the same as with no ``-o``."""
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(capture), "--elf", str(elf), "-f", "folded"]) == 0
    plain = capsys.readouterr().out
    assert main(["export", str(capture), "--elf", str(elf), "-f", "folded", "-o", "-"]) == 0
    assert capsys.readouterr().out == plain
    assert plain.count("\n") > 10
    assert list(tmp_path.iterdir()) == []


def test_without_elf_frames_are_hex_and_a_warning_says_so(capture, elf, capsys) -> None:
    assert main(["export", str(capture), "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].startswith("function,file,line,calls")
    assert out.splitlines()[1].split(",")[0].startswith("0x")
    # One line on stderr, naming the fix (and where the sample firmware's ELF is).
    assert err.count("\n") == 1 and err.startswith("mcuprof: warning: no --elf")
    assert str(elf) in err
    assert main(["export", str(capture), "--elf", str(elf), "--format", "csv"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_svg_has_the_pages_title_and_subtitle(capture, elf, capsys) -> None:
    """Firmware, capture time (the file's last write, UTC), scope and profiled time: the
    page's export_title lines, made by the same export.titles.flame_titles."""
    import os
    import xml.etree.ElementTree as ET

    from mcuprof.export.titles import fmt_us
    from mcuprof.profile import load_capture
    from mcuprof.profile.shares import span

    os.utime(capture, (1_700_000_000, 1_700_000_000))
    assert main(["export", str(capture), "--elf", str(elf), "-f", "svg"]) == 0
    root = ET.fromstring(capsys.readouterr().out.encode())
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    sp = span(load_capture(capture.read_bytes(), SymbolTable.from_elf(elf)).profile, None)
    assert texts[0] == "mcuprof flame graph — firmware t"
    assert texts[1] == (
        f"captured 2023-11-14 22:13:20 UTC · whole capture · {fmt_us(sp['profiled_us'])} "
        f"profiled of {fmt_us(sp['wall_us'])} wall ({sp['coverage_pct']:.1f}% coverage)"
    )


@pytest.mark.parametrize("bad", ["not an elf at all", "\x7fELF\x01\x01\x01"])
def test_bad_elf_is_one_line_error(capture, tmp_path, bad) -> None:
    elf = tmp_path / "bad.elf"
    elf.write_bytes(bad.encode("latin-1"))
    proc = subprocess.run(
        [sys.executable, "-m", "mcuprof", "export", str(capture), "--elf", str(elf), "-f", "svg"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcuprof: error: ")
    assert "Traceback" not in proc.stderr


def test_missing_capture_and_unwritable_output(capture, tmp_path, capsys) -> None:
    assert main(["export", str(tmp_path / "nope.bin"), "-f", "folded"]) == 2
    assert "no such file" in capsys.readouterr().err
    rc = main(["export", str(capture), "-f", "chrome", "-o", str(tmp_path / "no" / "x.json")])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("mcuprof: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["speedscope", "chrome", "folded"])
def test_a_full_disk_is_one_clear_error(capture, capsys, fmt) -> None:
    """The trace formats write from a thread of their own: its error still ends the
    command with one line, as the others' do."""
    assert Path("/dev/full").exists()
    assert main(["export", str(capture), "-f", fmt, "-o", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcuprof: error: /dev/full: cannot write") and err.count("\n") == 1


def test_chrome_export_is_json(capture, capsys) -> None:
    assert main(["export", str(capture), "-f", "chrome"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(e["ph"] == "X" for e in doc["traceEvents"])


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_silent_for_short_jobs() -> None:
    clock = _Clock()
    err = _Tty()
    prog = ReadProgress(stream=err, clock=clock)
    for i in range(10):
        clock.t = i * 0.05
        prog(i, 10, i * 1000)
    prog.step("rendering")
    prog.finish()
    assert err.getvalue() == ""


def test_progress_quiet_when_not_a_tty() -> None:
    clock = _Clock()
    err = io.StringIO()
    prog = ReadProgress(stream=err, clock=clock)
    for i in range(1, 101):
        clock.t = i * 0.5  # a 50 s job, piped
        prog(i * 1000, 100_000, i * 10)
    prog.step("rendering")
    prog.finish()
    assert err.getvalue() == ""


def test_progress_bar_on_a_tty_after_a_second() -> None:
    clock = _Clock()
    err = _Tty()
    prog = ReadProgress(stream=err, clock=clock)
    prog(1 << 20, 10 << 20, 70_000)
    assert err.getvalue() == ""
    clock.t = 1.5
    prog(10 << 20, 10 << 20, 700_000)
    text = err.getvalue()
    assert "reading capture" in text and "700,000 records" in text and "10.0M" in text
    prog.step("rendering svg")
    assert "rendering svg" in err.getvalue()
    prog.finish()
    assert err.getvalue().endswith("\r\x1b[K")


def test_export_is_quiet_on_stderr_when_piped(capture, elf) -> None:
    # (with --elf: without it the one warning that names are addresses is expected)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcuprof",
            "export",
            str(capture),
            "--elf",
            str(elf),
            "-f",
            "folded",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout and proc.stderr == ""


def test_output_to_a_fifo_writes_through_and_keeps_it_a_fifo(capture, tmp_path) -> None:
    """A special output path (a FIFO here; /dev/null alike) is written as it is: the
    write-then-rename of regular files would replace it with a regular file."""
    import os
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["export", str(capture), "-f", "folded", "-o", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not (tmp_path / "out.fifo.part").exists()
    assert got and got[0].count(b"\n") > 10


def test_qs_export_says_its_tick_rate_is_assumed(tmp_path) -> None:
    """QS times shown with the assumed rate suggest --qs-tick-hz; given, nothing."""
    from tests.sources.conftest import sim_stream

    capture = tmp_path / "run.qs"
    capture.write_bytes(sim_stream(0.5, seed=1))
    argv = [sys.executable, "-m", "mcuprof", "export", str(capture), "--kind", "qs", "-f", "folded"]
    assumed = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert assumed.returncode == 0 and assumed.stdout
    assert "--qs-tick-hz" in assumed.stderr
    given = subprocess.run(
        [*argv, "--qs-tick-hz", "1000000"], capture_output=True, text=True, timeout=60
    )
    assert given.returncode == 0 and given.stdout == assumed.stdout and given.stderr == ""
