"""/api/sessions/diff: two stored sessions, or a stored baseline against the live capture."""

from __future__ import annotations

import dataclasses
import threading
import xml.etree.ElementTree as ET

import pytest
from fastapi.testclient import TestClient

from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings


@pytest.fixture
def env(tmp_path, firmware, kit):
    store = SessionStore(tmp_path / "data", autoflush=False)
    a = store.import_capture("before", firmware.capture(kit.demo_tree(), 40), firmware.elf)
    b = store.import_capture("after", firmware.capture(kit.demo_tree(fir=65), 60), firmware.elf)
    app = create_app(Settings(autoconnect=False, data_dir=tmp_path / "data"), store=store)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        yield client, store, a, b
    store.close()


def test_diff_of_two_sessions(env):
    client, _, a, b = env
    r = client.get("/api/sessions/diff", params={"base": a.id, "new": b.id})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["base"]["name"] == f"session {a.id} (before)" and d["base"]["records"] == 240
    # 60 back-to-back iterations of 105 µs.
    assert d["new"]["duration_us"] == 60 * 105 and d["new"]["profiled_us"] == 60 * 105
    rows = {f["key"]: f for f in d["functions"]}
    fir = rows["fir_filter"]
    assert fir["self_mean"]["base"] == 50.0 and fir["self_mean"]["new"] == 65.0
    assert fir["self_mean"]["pct"] == pytest.approx(30.0)
    assert fir["calls"] == {"base": 40, "new": 60, "delta": 20, "pct": 50.0}
    tree = d["flame"]["tree"]
    assert tree["value"] == 60 * 105 and tree["base"] == 40 * 90
    [root] = tree["children"]
    assert root["name"] == "control_iteration"
    kids = {c["name"]: c for c in root["children"]}
    # fir share 50/90 -> 65/105: grew; sensor_take 8/90 -> 8/105: shrank.
    assert kids["fir_filter"]["delta"] == pytest.approx(65 / 105 - 50 / 90)
    assert kids["sensor_take"]["delta"] < 0


def test_diff_exports(env):
    client, _, a, b = env
    r = client.get(
        "/api/sessions/diff/export", params={"base": a.id, "new": b.id, "format": "folded"}
    )
    assert r.status_code == 200
    # base 40 x 50 µs scaled by 6300/3600 (the captures' totals) = 3500; new 60 x 65 µs.
    assert "control_iteration;fir_filter 3500 3900\n" in r.text
    r = client.get("/api/sessions/diff/export", params={"base": a.id, "new": b.id})
    assert r.headers["content-type"].startswith("image/svg+xml")
    ET.fromstring(r.content)
    assert f"session {a.id} (before)" in r.text
    # coloured by the gate's verdicts with the tab's options: at p50, fir_filter's +30%
    # per call is red, the unchanged rest pale
    params = {"base": a.id, "new": b.id, "basis": "p50", "threshold": "10%"}
    r = client.get("/api/sessions/diff/export", params=params)
    assert "colour: the verdict on the p50 of the self time per call" in r.text
    assert "regressed: +30.0% (p50 of the self time per call)" in r.text
    assert 'fill="rgb(255,0,0)"' in r.text and "rgb(235,235,235)" in r.text


def test_diff_errors(env):
    client, _, a, _ = env
    for params, status in [
        ({"base": a.id, "new": 999}, 404),
        ({"base": "live", "new": a.id}, 400),
        ({"base": "x;drop", "new": a.id}, 400),
        ({"base": a.id}, 422),
    ]:
        r = client.get("/api/sessions/diff", params=params)
        assert r.status_code == status, (params, r.text)
        assert "\n" not in r.json()["error"]
    r = client.get("/api/sessions/diff/export", params={"base": a.id, "new": a.id, "format": "pdf"})
    assert r.status_code == 422


def test_baseline_against_live(env):
    client, _, a, b = env
    live = client.app.state.live
    assert client.post(f"/api/sessions/{b.id}/replay", json={"speed": "max"}).status_code == 200
    tick = threading.Event()
    for _ in range(6000):
        live.ingest()
        if live.profile_records() == 360:
            break
        tick.wait(0.01)
    assert live.profile_records() == 360
    r = client.get("/api/sessions/diff", params={"base": a.id, "new": "live"})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["new"]["name"] == "live capture" and d["new"]["id"] is None
    fir = next(f for f in d["functions"] if f["key"] == "fir_filter")
    assert fir["self_mean"]["new"] == 65.0
    client.post("/api/sessions/replay/stop")


@pytest.mark.parametrize("text", ["²", "٣", "３", "1²", "¹"])
def test_session_ids_are_ascii_digits(env, text):
    """'²' passed str.isdigit and then failed int() (a 500); '٣' was read as session 3."""
    client, _, a, b = env
    for params in ({"base": text, "new": b.id}, {"base": a.id, "new": text}):
        r = client.get("/api/sessions/diff", params=params)
        assert r.status_code == 400, r.text
        assert r.json()["error"].startswith("bad session") and "\n" not in r.json()["error"]
    r = client.get(f"/api/sessions/{text}")
    assert r.status_code == 422


def test_cli_session_ids_are_ascii_digits(tmp_path):
    from mcuprof.diff.sources import session_id_of

    assert session_id_of("#3") == 3 and session_id_of("session:12") == 12
    assert session_id_of("٣") is None and session_id_of("session:٣") is None


def test_a_raw_file_that_is_a_directory_is_a_clean_error(env):
    client, store, a, b = env
    raw = store.raw_path(b.id)
    raw.unlink()
    raw.mkdir()
    r = client.get("/api/sessions/diff", params={"base": a.id, "new": b.id})
    assert 400 <= r.status_code < 500, r.text
    error = r.json()["error"]
    assert f"session {b.id}" in error and "\n" not in error
    # The other session is untouched and still compares with itself.
    assert client.get("/api/sessions/diff", params={"base": a.id, "new": a.id}).status_code == 200


def test_timer_frequencies_are_checked_as_the_cli_does(env, firmware, kit):
    """A pair timed at different timer frequencies is refused in one line, as
    `mcuprof compare` refuses it (its timebase_check), for the diff and its exports."""
    client, store, a, _ = env
    meta = dataclasses.replace(firmware.meta, timer_freq=2 * firmware.meta.timer_freq)
    data = kit.encode(kit.records_for(kit.demo_tree(), 40, firmware.addr), meta)
    other = store.import_capture("2 MHz", data, firmware.elf)
    for path, extra in (("", {}), ("/export", {"format": "folded"})):
        r = client.get(f"/api/sessions/diff{path}", params={"base": a.id, "new": other.id} | extra)
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert "\n" not in error
        assert "timer frequencies differ: BASE 1,000,000 Hz, NEW 2,000,000 Hz" in error
        assert f"session {a.id} (before)" in error and f"session {other.id} (2 MHz)" in error


def test_diff_judges_loss_as_the_cli_also_for_sessions_stored_before_it(tmp_path, firmware, capsys):
    """A session stored before loss was kept (its loss column NULL) has its STATUS packets
    read again: the page's verdicts are `mcuprof compare`'s."""
    import json
    import sqlite3

    from tests.compare.captures import bursty_capture

    from mcuprof.cli import main

    data = tmp_path / "data"
    with SessionStore(data) as store:
        a = store.import_capture("a", bursty_capture(firmware, 21), firmware.elf)
        b = store.import_capture("b", bursty_capture(firmware, 22, grow=1.3), firmware.elf)
    db = sqlite3.connect(data / "sessions.db")
    db.execute("UPDATE sessions SET loss = NULL WHERE id = ?", (a.id,))
    db.commit()
    db.close()
    store = SessionStore(data, autoflush=False)
    assert store.get(a.id).loss is None
    app = create_app(Settings(autoconnect=False, data_dir=data), store=store)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        r = client.get("/api/sessions/diff", params={"base": a.id, "new": b.id, "basis": "p99"})
        assert r.status_code == 200, r.text
        verdict = r.json()["verdict"]
    store.close()
    assert verdict["loss"]["base"]["lost"] > 0
    page = {v["key"]: (v["verdict"], v["reason"]) for v in verdict["verdicts"]}
    assert page["fir_filter"][0] == "inconclusive" and page["control_step"][0] == "regressed"
    main(["compare", str(a.id), str(b.id), "--basis", "p99", "--json", "--data-dir", str(data)])
    cli = json.loads(capsys.readouterr().out)
    assert {v["key"]: (v["verdict"], v["reason"]) for v in cli["verdicts"]} == page
