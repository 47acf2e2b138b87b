"""S12Z sessions in the store and /api/s12z through the real app (TestClient, real store)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest
from fastapi.testclient import TestClient

from mcuprof.s12z import load_firmware, load_trace
from mcuprof.s12z.analysis import analyse
from mcuprof.s12z.store import import_trace
from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings

BASE_URL = "http://127.0.0.1:8000"


@pytest.fixture
def store(tmp_path):
    s = SessionStore(tmp_path / "data", autoflush=False)
    yield s
    s.close()


@pytest.fixture
def client(store, tmp_path):
    settings = Settings(autoconnect=False, data_dir=tmp_path / "data")
    with TestClient(create_app(settings, store=store), base_url=BASE_URL) as c:
        yield c


def test_old_database_gains_kind_and_its_sessions_stay_miniprofiler(tmp_path) -> None:
    from mcuprof.store.sessions import _SCHEMA

    data = tmp_path / "data"
    data.mkdir()
    # A database as schema 1 wrote it: no kind column.
    db = sqlite3.connect(data / "sessions.db")
    db.executescript(_SCHEMA)
    assert "kind" not in {r[1] for r in db.execute("PRAGMA table_info(sessions)")}
    db.execute("INSERT INTO sessions (name, status, created_at) VALUES ('old', 'complete', 0)")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    with SessionStore(data, autoflush=False) as s:
        [old] = s.list()
        assert old.kind == "miniprofiler"
        new = s.create("new", kind="s12z").finish()
        assert s.get(new.id).kind == "s12z" and s.get(old.id).kind == "miniprofiler"
        with pytest.raises(ValueError):
            s.create("bad", kind="nope")
        assert [x.name for x in s.list()] == ["new", "old"]


def test_import_keeps_bytes_elf_and_counts(store, demo_files) -> None:
    elf, trace = demo_files
    info = import_trace(store, "demo", trace, elf, bus_hz=32e6)
    assert info.kind == "s12z" and info.status == "complete"
    assert store.raw(info.id) == trace.read_bytes()
    assert store.elf_bytes(info.id) == elf.read_bytes()
    expected = analyse(load_trace(trace.read_bytes()))
    assert info.link_stats["records"] == expected["good_lines"]
    assert info.link_stats["lines"] == expected["lines"]
    assert info.duration_us == pytest.approx(expected["time"]["cycles"] / 32)


def test_import_refuses_a_bad_elf_and_stores_nothing(store, demo_files, tmp_path) -> None:
    from mcuprof.errors import UserError

    bad = tmp_path / "bad.elf"
    bad.write_bytes(b"not an elf")
    with pytest.raises(UserError, match="not a readable ELF"):
        import_trace(store, "demo", demo_files[1], bad)
    assert store.list() == []


def test_api_import_analysis_and_exports_agree(client, store, demo_files) -> None:
    elf, trace = demo_files
    r = client.post(
        "/api/s12z/import",
        params={"name": "demo", "elf": "sample:s12z-demo.elf", "bus_hz": 32e6},
        content=trace.read_bytes(),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    sid = r.json()["session"]["id"]
    assert r.json()["session"]["kind"] == "s12z"
    [row] = client.get("/api/sessions").json()["sessions"]
    assert row["kind"] == "s12z" and row["elf_name"] == "s12z-demo.elf"

    a = client.get(f"/api/s12z/sessions/{sid}").json()["analysis"]
    cli = analyse(load_trace(trace.read_bytes()), load_firmware(elf), 32e6)
    for key in ("lines", "cofs", "functions", "destinations", "end", "time"):
        assert a[key] == cli[key], key
    assert a["interrupts"]["vectors"] == cli["interrupts"]["vectors"]
    timeline = a["interrupts"]["timeline"]
    assert len(timeline["cycle"]) == a["interrupts"]["total"]
    assert set(timeline["name"]) == {"Timer0_ISR", "SCI0_ISR"}
    assert a["end"]["tbovf"] is True

    r = client.get(f"/api/s12z/sessions/{sid}/export", params={"format": "csv"})
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [(x["function"], int(x["entries"])) for x in rows] == [
        (f["function"], f["entries"]) for f in a["functions"]
    ]
    assert sum(int(x["entries"]) for x in rows) == a["lines"]["PTIB"]
    r = client.get(
        f"/api/s12z/sessions/{sid}/export", params={"format": "csv", "table": "interrupts"}
    )
    counts = {x["name"]: int(x["count"]) for x in csv.DictReader(io.StringIO(r.text))}
    assert sum(counts.values()) == a["lines"]["PTVB"]
    r = client.get(f"/api/s12z/sessions/{sid}/export", params={"format": "json"})
    assert json.loads(r.text)["functions"] == a["functions"]


def test_miniprofiler_routes_refuse_s12z_sessions(client, store, demo_files) -> None:
    info = import_trace(store, "demo", demo_files[1], demo_files[0])
    r = client.post(f"/api/sessions/{info.id}/replay", json={"speed": "max"})
    assert r.status_code >= 400 and "S12Z" in r.json()["error"]
    r = client.get("/api/sessions/diff", params={"base": info.id, "new": info.id})
    assert r.status_code >= 400 and "S12Z" in r.json()["error"]
    r = client.get(f"/api/sessions/{info.id}")
    assert r.json()["session"]["capture"]["records"] == info.link_stats["records"]
    r = client.get("/api/s12z/sessions/999")
    assert r.status_code == 404


def test_s12z_route_refuses_a_miniprofiler_session(client, store) -> None:
    info = store.create("mp").finish()
    r = client.get(f"/api/s12z/sessions/{info.id}")
    assert r.status_code >= 400 and "not an S12Z trace" in r.json()["error"]


def test_sessions_show_describes_an_s12z_session(store, demo_files, tmp_path) -> None:
    import subprocess
    import sys

    info = import_trace(store, "demo", demo_files[1], demo_files[0])
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcuprof",
            "sessions",
            "show",
            str(info.id),
            "--data-dir",
            str(store.data_dir),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "s12z        514 lines; reserved 0, malformed 0, truncated 0" in r.stdout
    assert "ended by TBOVF (data lost)" in r.stdout and "crc errors" not in r.stdout
