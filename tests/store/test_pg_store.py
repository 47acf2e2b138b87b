"""What only the PostgreSQL store has to show: concurrent runners, a runner killed
mid-upload, migrations recorded in the database, credentials kept out of messages, and
the command line end to end against a real server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psycopg
import pytest

from mcuprof.errors import UserError
from mcuprof.store import INTERRUPTED, open_store
from mcuprof.store.pgconnect import connect, migrate, scrub_url

from .conftest import capture

RUNNERS = 8
BACKEND = str(Path(__file__).resolve().parents[2] / "backend")


def _count(url: str, sql: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchone()[0]


def test_eight_runners_importing_at_once_lose_nothing(pg_url, tmp_path):
    start = threading.Barrier(RUNNERS)
    got: dict[int, int] = {}
    errors: list[BaseException] = []

    def runner(n: int) -> None:
        try:
            with open_store(tmp_path / str(n), pg_url, autoflush=False) as store:
                start.wait()
                info = store.import_capture(f"run {n}", capture(5 + n), tags={"runner": str(n)})
                got[n] = info.id
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(RUNNERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(got.values())) == RUNNERS
    with open_store(tmp_path / "reader", pg_url, autoflush=False) as store:
        listed = store.list()
        assert sorted(s.id for s in listed) == sorted(got.values())
        for n, sid in got.items():
            assert store.raw(sid) == capture(5 + n)
            assert store.tags(sid) == {"runner": str(n)}


CHILD = textwrap.dedent(
    """
    import sys, time
    from mcuprof.store import open_store
    from tests.store.conftest import capture

    url, data_dir, live = sys.argv[1], sys.argv[2], sys.argv[3] == "live"
    store = open_store(data_dir, url, autoflush=False)
    if live:
        writer = store.create("live run", None, None)
        writer.append(capture(30))
        writer.flush()
        print(writer.id, flush=True)
    else:
        def stall(done, records):  # the upload is well under way: wait to be killed
            print(next(iter(store._active)), flush=True)
            time.sleep(600)
        store.import_capture("doomed", capture(13_000), progress=stall)
    time.sleep(600)
    """
)


def _killed_mid_upload(pg_url: str, tmp_path: Path, mode: str) -> int:
    """Runs CHILD until it has bytes in the database, checks nobody sees them, kills it
    with SIGKILL; returns its session id."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([BACKEND, str(Path(BACKEND).parent)])}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, pg_url, str(tmp_path / "child"), mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else "child exited"
        sid = int(line)
        assert _count(pg_url, f"SELECT count(*) FROM raw_chunks WHERE session_id = {sid}") > 0
        with open_store(tmp_path / "peer", pg_url, autoflush=False) as peer:
            assert peer.list() == []  # not visible while it uploads
            assert peer.recover() == []  # and a live upload is left alone
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f:
                f.close()
    return sid


def _recover_once_the_server_noticed(pg_url: str, tmp_path: Path) -> list[int]:
    """The server drops the dead client's advisory lock when it sees the socket close;
    wait for that (a condition, bounded), not for a time."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(600):
            held = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            if held.fetchone()[0] == 0:
                break
            conn.execute("SELECT pg_sleep(0.05)")
    with open_store(tmp_path / "later", pg_url, autoflush=False) as later:
        # The open itself swept; recover() again finds nothing more.
        assert later.recover() == []
        return later.swept


def test_a_runner_killed_mid_upload_leaves_nothing_visible(pg_url, tmp_path):
    sid = _killed_mid_upload(pg_url, tmp_path, "import")
    # Opening the store sweeps the dead upload: no row, no chunk left behind.
    assert _recover_once_the_server_noticed(pg_url, tmp_path) == [sid]
    assert _count(pg_url, "SELECT count(*) FROM sessions") == 0
    assert _count(pg_url, f"SELECT count(*) FROM raw_chunks WHERE session_id = {sid}") == 0


def test_a_killed_live_recording_is_kept_as_interrupted(pg_url, tmp_path):
    sid = _killed_mid_upload(pg_url, tmp_path, "live")
    assert _recover_once_the_server_noticed(pg_url, tmp_path) == [sid]
    with open_store(tmp_path / "view", pg_url, autoflush=False) as store:
        info = store.get(sid)
        assert info.status == INTERRUPTED
        assert store.raw(sid) == capture(30) and info.raw_bytes == len(capture(30))


def test_migrations_are_recorded_and_applied_once(pg_url, tmp_path):
    open_store(tmp_path, pg_url, autoflush=False).close()
    with connect(pg_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM mcuprof_migrations")]
        assert names == ["0001_sessions.sql", "0002_raw_zstd.sql"]
        assert migrate(conn) == []


def test_credentials_never_reach_a_message(pg_server, tmp_path):
    assert scrub_url("postgresql://ci:s3cret@db.example/team?sslmode=verify-full") == (
        "postgresql://ci:***@db.example/team?sslmode=verify-full"
    )
    assert "s3cret" not in scrub_url("postgresql://db/team?password=s3cret&sslmode=require")
    # A server that answers, but no such database; then no server at all.
    missing = pg_server.url("no_such_db").replace("postgres@", "postgres:s3cret@")
    nowhere = "postgresql://ci:s3cret@/team?host=/nonexistent/dir"
    for url in (missing, nowhere):
        with pytest.raises(UserError) as err:
            open_store(tmp_path, url)
        assert "s3cret" not in str(err.value) and "***" in str(err.value)
        assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="expected postgresql://"):
        open_store(tmp_path, "mysql://ci:s3cret@db/team")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", *args], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip


def test_the_command_line_against_postgresql(pg_url, tmp_path):
    from tests.history.captures import STEP_LABEL
    from tests.history.captures import capture as timed

    env = {**os.environ, "PYTHONPATH": BACKEND, "MCUPROF_DATA_DIR": str(tmp_path / "d")}
    env.pop("MCUPROF_STORE", None)
    for i in range(2):
        path = tmp_path / f"c{i}.bin"
        path.write_bytes(timed(1000.0 * (1 + i), seed=i))
        done = _cli("sessions", "import", str(path), "--store", pg_url,
                    "--tag", f"commit=c{i}", env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
    listed = _cli("sessions", "list", "--json", "--store", pg_url, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["tags"]["commit"] for r in rows] == ["c1", "c0"]
    # MCUPROF_STORE works as --store does; nothing went to the data directory's SQLite.
    trend = _cli(
        "history", "--function", STEP_LABEL, "--json", env={**env, "MCUPROF_STORE": pg_url}
    )
    assert trend.returncode == 0, trend.stderr
    (series,) = json.loads(trend.stdout)["series"]
    assert [p["build"] for p in series["points"]] == ["c0", "c1"]
    ids = [str(r["id"]) for r in rows]
    diff = _cli("compare", ids[1], ids[0], "--json", "--store", pg_url, env=env)
    assert diff.returncode in (0, 1), diff.stderr  # 1: the 2x slower build is a regression
    assert [json.loads(diff.stdout)[k]["session_id"] for k in ("base", "new")] == [
        int(ids[1]),
        int(ids[0]),
    ]
    env["MCUPROF_STORE"] = pg_url
    base = _cli("compare", "--baseline", "commit=c0", ids[0], "--json", env=env)
    assert base.returncode in (0, 1), base.stderr
    assert json.loads(base.stdout)["base"]["session_id"] == int(ids[1])
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(f'[[budget]]\nfunction = "{STEP_LABEL}"\nmax_us = 100000\n')
    checked = _cli("check", ids[0], "--budgets", str(budgets), "--json", env=env)
    assert checked.returncode == 0, checked.stderr + checked.stdout
    assert not (tmp_path / "d" / "sessions.db").exists()


def test_the_dashboard_reads_and_writes_a_postgresql_store(pg_url, tmp_path):
    from fastapi.testclient import TestClient

    from mcuprof.web.app import create_app
    from mcuprof.web.settings import Settings

    data = capture(3, per_packet=10)
    with open_store(tmp_path / "cli", pg_url, autoflush=False) as runner:
        sid = runner.import_capture("from CI", data, tags={"branch": "main"}).id
    settings = Settings(autoconnect=False, data_dir=tmp_path / "d", store_url=pg_url)
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        listed = client.get("/api/sessions").json()
        assert [r["id"] for r in listed["sessions"]] == [sid]
        assert "postgresql://" in listed["data_dir"]
        session = client.get(f"/api/sessions/{sid}").json()["session"]
        assert session["capture"]["records"] == 30 and session["tags"] == {"branch": "main"}
        assert client.get(f"/api/sessions/{sid}/flame").status_code == 200
        raw = client.get(f"/api/sessions/{sid}/raw")
        assert raw.status_code == 200 and raw.content == data
        # A replay reads the store's stream (it needed a session file before).
        replay = client.post(f"/api/sessions/{sid}/replay", json={"speed": "max"})
        assert replay.status_code == 200, replay.text
        assert replay.json()["replay"]["label"].startswith(f"Replay of session {sid}")
        assert client.patch(f"/api/sessions/{sid}", json={"name": "seen"}).status_code == 200
        assert client.delete(f"/api/sessions/{sid}").json() == {"deleted": sid}
    assert _count(pg_url, "SELECT count(*) FROM sessions") == 0


def test_a_qs_scenario_stores_its_run_in_postgresql(pg_url, tmp_path, capsys):
    from mcuprof.cli import main

    script = tmp_path / "s.jsonl"
    script.write_text('{"tick": 2}\n', encoding="utf-8")
    argv = ["qs", "scenario", str(script), "--port", "sim://?proto=qs", "--store", pg_url,
            "--data-dir", str(tmp_path / "d"), "--tag", "board=sim"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    with open_store(tmp_path / "view", pg_url, autoflush=False) as store:
        (stored,) = store.list()
        assert (stored.kind, stored.source, stored.tags) == ("qs", "scenario", {"board": "sim"})
        assert stored.status == "complete" and stored.raw_bytes == store.raw_size(stored.id) > 0


def test_raw_rows_are_zstd_frames_and_rows_stored_before_still_read(pg_url, tmp_path):
    """Each chunk row is one zstd frame (store/zst.py); rows an older mcuprof stored as
    received (zstd false) read back as they are."""
    import zstandard

    from mcuprof.store.zst import MAGIC

    data = capture(200)
    with open_store(tmp_path, pg_url, autoflush=False) as store:
        sid = store.import_capture("zst", data).id
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute(
                "SELECT idx, data, size, zstd FROM raw_chunks WHERE session_id = %s", (sid,)
            ).fetchall()
            assert rows and all(z and bytes(d).startswith(MAGIC) for _, d, _, z in rows)
            assert (
                sum(n for _, _, n, _ in rows) == len(data) > 4 * sum(len(d) for _, d, _, _ in rows)
            )
            for idx, packed, _, _ in rows:  # as 0001 stored them
                conn.execute(
                    "UPDATE raw_chunks SET data = %s, zstd = FALSE WHERE session_id = %s "
                    "AND idx = %s",
                    (zstandard.decompress(bytes(packed)), sid, idx),
                )
        assert store.raw(sid) == data == b"".join(store.raw_chunks(sid, 1000))
        assert store.raw_size(sid) == len(data)
