"""/api/qs: the live monitor and stored QS sessions through the real app."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import decode_capture
from mcuprof.qs.margins import margins
from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings as AppSettings

BASE = "http://127.0.0.1:8000"


@pytest.fixture
def app_client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(AppSettings(data_dir=tmp_path / "data", http_port=8000, autoconnect=False))
    with TestClient(app, base_url=BASE) as client:
        yield client


def feed_live(client: TestClient, capture: bytes) -> list:
    # Until the QS live source lands, the test feeds the monitor the way it does: as a
    # listener of the live session.
    events, _ = decode_capture(capture)
    monitor = client.app.state.qs_monitor
    assert monitor in client.app.state.live.links.qs.listeners  # beside the control panel's answers
    monitor.qs_reset()
    monitor.qs_events(events)
    return events


def store_session(client: TestClient, data: bytes, kind: str = "qs") -> int:
    store: SessionStore = client.app.state.store
    writer = store.create("DPP on QS", source="import", kind=kind)
    writer.append(data)
    return writer.finish().id


def test_live_log_summary_margins_and_app(app_client, capture, qspy_lines):
    events = feed_live(app_client, capture)
    log = app_client.get("/api/qs/log", params={"limit": 2000}).json()
    assert [line["text"] for line in log["lines"]] == qspy_lines
    assert log["matched"] == len(qspy_lines) and log["dropped"] == 0
    summary = app_client.get("/api/qs/summary").json()
    assert summary["records"] == len(events) and summary["objects"]["Table_inst"] > 0
    got = app_client.get("/api/qs/margins").json()["margins"]
    want = margins(events)
    assert [(g["name"], g["t"], g["lo"], g["low_water"]) for g in got] == [
        (w.name, w.times, w.free, w.low_water) for w in want
    ]
    app = app_client.get("/api/qs/app").json()["records"]
    assert app[0]["name"] == "PHILO_STAT" and app[0]["series"][0]["samples"] == 38


def test_filters_and_paging_over_http(app_client, capture):
    feed_live(app_client, capture)
    r = app_client.get(
        "/api/qs/log",
        params=[("group", "SM"), ("group", "AO"), ("obj", "Philo_inst[1]"), ("sig", "EAT_SIG")],
    )
    lines = r.json()["lines"]
    assert lines and all(
        line["group"] in ("SM", "AO")
        and "Philo_inst[1]" in line["objs"]
        and line["sig"] == "EAT_SIG"
        for line in lines
    )
    tail = app_client.get("/api/qs/log", params={"limit": 10}).json()
    assert len(tail["lines"]) == 10 and tail["older"]
    since = app_client.get("/api/qs/log", params={"since": tail["lines"][4]["id"]}).json()
    assert since["lines"] == tail["lines"][5:]
    text = app_client.get("/api/qs/log", params={"q": "trg-rst"}).json()["lines"]
    assert [line["rec"] for line in text] == ["QS_TARGET_INFO"]


def test_stored_session_is_decoded_like_the_live_one(app_client, capture, qspy_lines):
    sid = store_session(app_client, capture)
    listed = app_client.get("/api/qs/sessions").json()["sessions"]
    assert [s["id"] for s in listed] == [sid]
    log = app_client.get("/api/qs/log", params={"session": sid, "limit": 2000}).json()
    assert [line["text"] for line in log["lines"]] == qspy_lines
    # The live monitor is untouched by it.
    assert app_client.get("/api/qs/summary").json()["records"] == 0
    stored = app_client.get("/api/qs/summary", params={"session": sid}).json()
    assert stored["records"] == 938
    m = app_client.get("/api/qs/margins", params={"session": sid}).json()["margins"]
    assert {x["name"]: x["low_water"] for x in m}["Table_inst"] == 5
    obj = app_client.get(
        "/api/qs/log", params={"session": sid, "obj": "EvtPool1", "limit": 2000}
    ).json()
    assert obj["matched"] == 66


@pytest.mark.parametrize(
    ("params", "status", "words"),
    [
        ({"limit": 0}, 422, "limit"),
        ({"limit": "many"}, 422, "limit"),
        ({"group": "XX"}, 400, "unknown record group 'XX'"),
        ({"since": 3, "before": 9}, 400, "since or before"),
        ({"q": "x" * 201}, 422, "q"),
        ({"obj": "x" * 301}, 400, "longer than"),
        ({"session": 0}, 422, "session"),
        ({"session": 99}, 404, "no session 99"),
    ],
)
def test_bad_params_get_one_line(app_client, params, status, words):
    r = app_client.get("/api/qs/log", params=params)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert words in error and "\n" not in error


def test_a_session_of_another_kind_is_refused(app_client, capture):
    sid = store_session(app_client, b"\x00" * 64, kind="miniprofiler")
    r = app_client.get("/api/qs/summary", params={"session": sid})
    assert r.status_code == 400
    assert r.json()["error"] == f"session {sid} is a miniprofiler session, not a QS session"


def test_garbage_in_a_stored_session_is_counted_not_fatal(app_client, capture):
    data = bytearray(capture)
    data[3000:3040] = bytes(range(40))
    sid = store_session(
        app_client, bytes(data[:2000]) + b"\x7e\x7d\x7e\xff" * 20 + bytes(data[2000:])
    )
    s = app_client.get("/api/qs/summary", params={"session": sid}).json()
    assert s["bad_frames"] > 0 and s["records"] > 900
    comms = app_client.get("/api/qs/log", params={"session": sid, "group": "COMMS"}).json()
    assert comms["lines"] and all("<COMMS>" in line["text"] for line in comms["lines"])


@pytest.fixture(scope="module")
def fed_client(tmp_path_factory, ref_dir) -> Iterator[TestClient]:
    app = create_app(
        AppSettings(data_dir=tmp_path_factory.mktemp("qsapi"), http_port=8000, autoconnect=False)
    )
    with TestClient(app, base_url=BASE) as client:
        feed_live(client, (ref_dir / "dpp-posix64.bin").read_bytes())
        yield client


_VALUES = st.one_of(
    st.sampled_from(["SM", "AO", "U0", "COMMS", "Philo_inst[2]", "EAT_SIG", "Table_inst"]),
    st.text(max_size=40),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    group=st.lists(_VALUES, max_size=3),
    obj=st.lists(_VALUES, max_size=3),
    sig=st.lists(_VALUES, max_size=3),
    q=st.text(max_size=30),
    since=st.one_of(st.none(), st.integers(-5, 2000)),
    limit=st.one_of(st.none(), st.integers(-3, 2100)),
)
def test_any_query_gets_lines_or_one_line_error(fed_client, group, obj, sig, q, since, limit):
    params = [("group", g) for g in group] + [("obj", o) for o in obj] + [("sig", s) for s in sig]
    params += [("q", q)] + ([("since", str(since))] if since is not None else [])
    params += [("limit", str(limit))] if limit is not None else []
    r = fed_client.get("/api/qs/log", params=params)
    assert r.status_code in (200, 400, 422), r.text
    body = r.json()
    if r.status_code != 200:
        assert body["error"] and "\n" not in body["error"]
        return
    for line in body["lines"]:
        assert not group or line["group"] in group
        assert not obj or set(obj) & set(line["objs"])
        assert not sig or line["sig"] in sig
        assert re.search(q, line["text"], re.IGNORECASE)  # the search is a regex
        assert since is None or line["id"] > since


def test_lines_download_as_qspy_text(app_client, capture, qspy_lines):
    feed_live(app_client, capture)
    r = app_client.get("/api/qs/log.txt")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert 'filename="mcuprof-qs-live.txt"' in r.headers["content-disposition"]
    assert r.text.splitlines() == qspy_lines
    sid = store_session(app_client, capture)
    r = app_client.get("/api/qs/log.txt", params={"session": sid, "obj": "Table_inst"})
    want = [line for line in qspy_lines if "Table_inst" in line and "-Dict" not in line]
    assert r.text.splitlines() == want
    bad = app_client.get("/api/qs/log.txt", params={"group": "nope"})
    assert bad.status_code == 400 and "unknown record group" in bad.json()["error"]
