"""``mcuprof sessions``: the store from the command line."""

from __future__ import annotations

import json
import os

from mcuprof.cli import main
from mcuprof.paths import default_elf


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_list_show_rename_notes_export_delete(capsys, tmp_path, make_capture, meta):
    cap = tmp_path / "cap.bin"
    cap.write_bytes(make_capture(2, per_packet=10))
    d = str(tmp_path / "data")
    code, out, _ = run(
        capsys,
        "sessions",
        "import",
        str(cap),
        "--elf",
        str(default_elf()),
        "--name",
        "nightly",
        "--json",
        "--data-dir",
        d,
    )
    assert code == 0
    sid = json.loads(out)["id"]

    code, out, _ = run(capsys, "sessions", "--data-dir", d)  # no action: list
    assert code == 0 and "nightly" in out and "complete" in out and "20" in out

    assert run(capsys, "sessions", "--data-dir", d, "rename", str(sid), "night", "run")[0] == 0
    assert run(capsys, "sessions", "notes", str(sid), "flaky board", "--data-dir", d)[0] == 0
    code, out, _ = run(capsys, "sessions", "show", str(sid), "--json", "--data-dir", d)
    shown = json.loads(out)
    assert shown["name"] == "night run" and shown["notes"] == "flaky board"
    assert shown["capture"]["records"] == 20
    assert shown["metadata"]["fw_version"] == meta.fw_version
    assert shown["elf_name"] == default_elf().name
    assert os.path.exists(shown["elf_path"]) and os.path.exists(shown["raw_path"])
    code, out, _ = run(capsys, "sessions", "show", str(sid), "--data-dir", d)
    assert "night run" in out and "20 over" in out and "flaky board" in out

    exported = tmp_path / "out.bin"
    assert run(capsys, "sessions", "export", str(sid), str(exported), "--data-dir", d)[0] == 0
    assert exported.read_bytes() == cap.read_bytes()

    code, out, _ = run(capsys, "sessions", "delete", str(sid), "--data-dir", d)
    assert code == 0 and f"deleted session {sid}" in out
    assert not os.path.exists(shown["raw_path"]) and not os.path.exists(shown["elf_path"])
    code, out, _ = run(capsys, "sessions", "list", "--json", "--data-dir", d)
    assert json.loads(out) == []


def test_env_var_selects_the_store(capsys, tmp_path, monkeypatch, make_capture):
    cap = tmp_path / "cap.bin"
    cap.write_bytes(make_capture(1))
    monkeypatch.setenv("MCUPROF_DATA_DIR", str(tmp_path / "from-env"))
    assert run(capsys, "sessions", "import", str(cap))[0] == 0
    assert (tmp_path / "from-env" / "sessions.db").exists()
    code, out, _ = run(capsys, "sessions", "list", "--json")
    assert code == 0
    assert [s["name"] for s in json.loads(out)] == ["cap.bin"]


def test_errors_are_one_line(capsys, tmp_path):
    d = str(tmp_path / "data")
    for argv, message in [
        (["sessions", "show", "42", "--data-dir", d], "no session 42"),
        (["sessions", "show", "abc", "--data-dir", d], "is not a session id"),
        (["sessions", "rename", "1", " ", "--data-dir", d], "must not be empty"),
        (["sessions", "import", str(tmp_path / "nope.bin"), "--data-dir", d], "no such file"),
        (["sessions", "delete", "9", "--data-dir", d], "no session 9"),
    ]:
        code, _, err = run(capsys, *argv)
        assert code == 2, argv
        assert err.count("\n") == 1 and err.startswith("mcuprof: error: ") and message in err
