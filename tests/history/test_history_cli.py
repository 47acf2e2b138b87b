"""``mcuprof history`` and tags, from the command line, on a store of tagged sessions."""

from __future__ import annotations

import json

import pytest

from mcuprof.cli import main
from mcuprof.history.summary import VERSION
from mcuprof.store import SessionStore

from .captures import STEP_LABEL, capture

BUILDS = 24
STEP_AT = 14  # the first build whose function is 2% slower


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    """BUILDS sessions on main (commit c00..c23) with a 2% step at STEP_AT, and two on a
    branch that must not count."""
    d = tmp_path_factory.mktemp("history")
    with SessionStore(d, autoflush=False) as store:
        for i in range(BUILDS):
            mean = 1000.0 * (1.02 if i >= STEP_AT else 1.0)
            tags = {"branch": "main", "commit": f"c{i:02d}", "board": "nucleo-f4"}
            store.import_capture(f"nightly {i}", capture(mean, seed=i), tags=tags)
        for i in range(2):
            store.import_capture(f"wip {i}", capture(5000.0, seed=100 + i), tags={"branch": "wip"})
    return str(d)


def test_history_names_the_first_build_after_the_step(capsys, store_dir):
    code, out, err = run(
        capsys, "history", "--function", "0x0800100*", "--where", "branch=main", "--json",
        "--data-dir", store_dir,
    )  # fmt: skip
    assert code == 0, err
    (series,) = json.loads(out)["series"]
    assert series["function"] == STEP_LABEL
    assert [p["build"] for p in series["points"]] == [f"c{i:02d}" for i in range(BUILDS)]
    (change,) = series["change_points"]
    assert change["first_build"] == f"c{STEP_AT:02d}"
    assert change["session_id"] == series["points"][STEP_AT]["session_id"]
    assert 1.0 < change["step_pct"] < 3.0
    low, high = change["interval"]
    assert low < change["step"] < high and low > 0


def test_history_text_marks_the_change(capsys, store_dir):
    code, out, _ = run(
        capsys, "history", "--function", STEP_LABEL, "--where", "branch=main", "--data-dir",
        store_dir,
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{STEP_LABEL}  (mean, {BUILDS} sessions)")
    marked = [line for line in lines if "<- change" in line]
    assert len(marked) == 1 and f"c{STEP_AT:02d}" in marked[0]


def test_history_share_and_summaries_are_kept(capsys, store_dir):
    code, out, _ = run(
        capsys, "history", "--function", STEP_LABEL, "--metric", "share", "--json",
        "--data-dir", store_dir,
    )  # fmt: skip
    assert code == 0
    (series,) = json.loads(out)["series"]
    assert len(series["points"]) == BUILDS + 2  # no --where: every session
    with SessionStore(store_dir, autoflush=False) as store:
        assert all(store.summary(s.id, VERSION) is not None for s in store.list())


def test_list_filters_by_tag_and_tags_can_be_set(capsys, store_dir):
    code, out, _ = run(capsys, "sessions", "list", "--where", "branch=wip", "--json",
                       "--data-dir", store_dir)  # fmt: skip
    assert code == 0
    wip = json.loads(out)
    assert [s["name"] for s in wip] == ["wip 1", "wip 0"]
    sid = str(wip[0]["id"])
    assert run(capsys, "sessions", "tag", sid, "board=disco", "--data-dir", store_dir)[0] == 0
    code, out, _ = run(capsys, "sessions", "show", sid, "--data-dir", store_dir)
    assert "tags        board=disco branch=wip" in out
    code, out, err = run(capsys, "sessions", "tag", sid, "bad key=1", "--data-dir", store_dir)
    assert code != 0 and "tag key 'bad key'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--function", "nothing*"], "no stored session has a matching function"),
        (["--function", "*", "--where", "nokey"], "expected KEY=VALUE"),
    ],
)
def test_history_messages(capsys, store_dir, argv, message):
    _, out, err = run(capsys, "history", *argv, "--data-dir", store_dir)
    assert message in out + err


def test_import_takes_tags(capsys, tmp_path):
    cap = tmp_path / "cap.bin"
    cap.write_bytes(capture(100.0, seed=1))
    code, out, _ = run(
        capsys, "sessions", "import", str(cap), "--tag", "commit=abc", "--tag", "board=x",
        "--json", "--data-dir", str(tmp_path / "d"),
    )  # fmt: skip
    assert code == 0 and json.loads(out)["tags"] == {"commit": "abc", "board": "x"}


def test_history_p99_is_the_csv_p99(capsys, store_dir, tmp_path):
    """One number, one definition: history's p99 of a session is its CSV's p99_us."""
    code, out, _ = run(capsys, "history", "--function", STEP_LABEL, "--metric", "p99",
                       "--json", "--data-dir", store_dir)  # fmt: skip
    assert code == 0
    first = json.loads(out)["series"][0]["points"][0]
    csv_path = tmp_path / "first.csv"
    cap = tmp_path / "first.bin"
    with SessionStore(store_dir, autoflush=False) as store:
        cap.write_bytes(store.raw(first["session_id"]))
    assert run(capsys, "export", str(cap), "-f", "csv", "-o", str(csv_path))[0] == 0
    rows = [line.split(",") for line in csv_path.read_text().splitlines()]
    col = rows[0].index("p99_us")
    (row,) = [r for r in rows[1:] if r[0] == STEP_LABEL]
    assert f"{first['value']:.3f}" == row[col]


def test_compare_against_the_latest_baseline_with_tags(capsys, store_dir):
    """compare --baseline branch=main NEW: the newest other main session of NEW's board;
    two captures of one build ID are an A/A comparison."""
    code, out, err = run(capsys, "compare", "--baseline", "branch=main", str(BUILDS), "--json",
                         "--data-dir", store_dir)  # fmt: skip
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["base"]["session_id"] == BUILDS - 1
    assert report["new"]["session_id"] == BUILDS
    assert report["aa"] is True
    code, out, _ = run(capsys, "compare", "--baseline", "branch=main", str(BUILDS),
                       "--data-dir", store_dir)  # fmt: skip
    assert "A/A comparison: both captures are of one build" in out
    code, _, err = run(capsys, "compare", "--baseline", "branch=nope", str(BUILDS),
                       "--data-dir", store_dir)  # fmt: skip
    assert code == 2 and "no complete stored session has those tags" in err
    code, _, err = run(capsys, "compare", "--baseline", "branch=main", "1", "2",
                       "--data-dir", store_dir)  # fmt: skip
    assert code == 2 and "give only NEW" in err
