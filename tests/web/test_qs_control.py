"""The QS control panel's routes (/api/qs/control, issue 25 point 2) against the real
QP/C 7.4 DPP target (dpp-posix64) connected to the dashboard through listen://: the
target's answers as QSPY shows them, and hostile bodies refused in one line while the
link goes on. One target and one app for the module: the target runs all along."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcuprof.qs.rx import MAX_PEEK_BYTES, RxCommands, RxError
from mcuprof.web.app import create_app
from mcuprof.web.routes import qs_control
from mcuprof.web.settings import Settings
from tests.qs.qsfe import REAL, start_target
from tests.qs.test_qs_rx import CONFIG, DICTS

from .conftest import BASE, ORIGIN, wait_for

POST = {"Origin": ORIGIN}
TARGET = "dpp-posix64"
# Table_inst's event-queue low-water mark (tests/qs/test_qspy_real.py): only a statistic,
# which the target lowers to the queue's free count, so the values written are small.
NMIN_OFFSET = 0x68


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    data: Path = tmp_path_factory.mktemp("qs-control") / "data"
    app = create_app(Settings(data_dir=data, http_port=8000, autoconnect=False))
    with TestClient(app, base_url=BASE) as c:
        r = c.post("/api/connect", json={"port": "listen://127.0.0.1:0"}, headers=POST)
        assert r.status_code == 200, r.text
        port = int(r.json()["device"]["listening_on"].rsplit(":", 1)[1])
        target = start_target(TARGET, port)
        try:
            names = lambda: [o["name"] for o in c.get("/api/qs/control").json()["objects"]]  # noqa: E731
            wait_for(lambda: "Table_inst" in names(), "the target's dictionaries", 30)
            yield c
        finally:
            target.stop(signal.SIGKILL)


def send(c: TestClient, name: str, **body: Any) -> int:
    """Send a command; the id its answers come after."""
    r = c.post(f"/api/qs/control/{name}", json=body, headers=POST)
    assert r.status_code == 200, r.text
    return r.json()["answers_after"]


def answer(c: TestClient, after: int, pattern: str) -> dict[str, Any]:
    rx = re.compile(pattern)

    def found() -> dict[str, Any] | None:
        rows = c.get("/api/qs/control/answers", params={"since": after}).json()["answers"]
        return next((a for a in rows if rx.search(a["line"])), None)

    return wait_for(found, f"an answer matching {pattern!r}", 30)


def refused(c: TestClient, name: str, body: Any = None, content: bytes | None = None) -> str:
    if content is None:
        r = c.post(f"/api/qs/control/{name}", json=body, headers=POST)
    else:
        r = c.post(f"/api/qs/control/{name}", content=content, headers=POST)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert "\n" not in error and len(error) < 300, error
    return error


def log_lines(c: TestClient, since: int, q: str) -> list[str]:
    out = c.get("/api/qs/log", params={"since": since, "q": q, "limit": 2000}).json()
    return [line["text"] for line in out["lines"]]


def messages(c: TestClient) -> list[str]:
    return [e["message"] for e in c.get("/api/log").json()["entries"]]


def log_mark(c: TestClient) -> int:
    return c.get("/api/qs/log", params={"limit": 1}).json()["next_id"] - 1


def test_commands_are_in_sequence_from_the_first(client) -> None:
    """The INFO sent when the target connects is its frame 1, as QSPY numbers them, and
    the next ones follow: a QP target answers a number out of sequence with Trg-ERR 0x42
    (it did for the 0 that opened every connection)."""
    answer(client, 0, r"Trg-Info QP-Ver=740")
    after = send(client, "tick")
    answer(client, after, r"Trg-Done QS_RX_TICK")
    rows = client.get("/api/qs/control/answers", params={"since": 0}).json()["answers"]
    assert [a["line"] for a in rows if "Trg-ERR" in a["line"]] == []


def test_query_names_the_ao_state(client) -> None:
    after = send(client, "curr_obj", kind="AO", object="Philo_inst[1]")
    answer(client, after, r"Trg-Ack  QS_RX_CURR_OBJ")
    assert client.get("/api/qs/control").json()["current"]["AO"] == "Philo_inst[1]"
    after = send(client, "query_curr", kind="AO")
    got = answer(client, after, r"Query-AO")
    assert re.search(r"Obj=Philo_inst\[1\],State=Philo_(thinking|hungry|eating)$", got["line"])
    assert got["query"] == "AO"
    after = send(client, "curr_obj", kind="SM", object="Table_inst")
    after = send(client, "query_curr", kind="SM")
    assert answer(client, after, r"Query-SM")["line"].endswith("Obj=Table_inst,State=Table_serving")


def test_peek_poke_fill_the_ap_object(client) -> None:
    send(client, "curr_obj", kind="AP", object="Table_inst")
    after = send(client, "peek", offset=0, size=1, num=16)
    head = answer(client, after, r"Trg-Peek Offs=0,Size=1,Num=16")
    assert len(head["peek"]["items"]) == 16 and head["peek"]["size"] == 1
    # Poke a typed u16 (packed in the target's byte order by the server), read it back.
    after = send(client, "poke", offset=NMIN_OFFSET, size=2, values=[1])
    answer(client, after, r"Trg-Ack  QS_RX_POKE")
    after = send(client, "peek", offset=NMIN_OFFSET, size=2, num=1)
    assert answer(client, after, r"Trg-Peek")["peek"]["items"] == [1]
    after = send(client, "fill", offset=NMIN_OFFSET, size=2, num=1, value=2)
    answer(client, after, r"Trg-Ack  QS_RX_FILL")
    after = send(client, "peek", offset=NMIN_OFFSET, size=1, num=2)
    assert answer(client, after, r"Trg-Peek")["line"].endswith("Data=<02,00>")
    # Raw hex bytes are written as they are (little-endian target: 03 00 is 3).
    after = send(client, "poke", offset=NMIN_OFFSET, size=1, data="03 00")
    answer(client, after, r"Trg-Ack  QS_RX_POKE")
    after = send(client, "peek", offset=NMIN_OFFSET, size=2, num=1)
    assert answer(client, after, r"Trg-Peek")["peek"]["items"] == [3]


def test_global_filter_silences_records(client) -> None:
    after = send(client, "glb_filter", records=[])  # all off
    answer(client, after, r"Trg-Ack  QS_RX_GLB_FILTER")
    assert client.get("/api/qs/control").json()["masks"]["glb"] == "00" * 16
    mark = log_mark(client)
    after = send(client, "event", action="publish", signal="SERVE_SIG")
    answer(client, after, r"Trg-Done QS_RX_EVENT")
    assert log_lines(client, mark, "QF-Pub") == []
    # Groups back on by name: the publish shows again.
    groups = ["SM", "AO", "EQ", "MP", "QF", "TE", "SC", "U0", "U1", "U2", "U3", "U4", "UA"]
    after = send(client, "glb_filter", groups=groups)
    answer(client, after, r"Trg-Ack  QS_RX_GLB_FILTER")
    mask = client.get("/api/qs/control").json()["masks"]["glb"]
    assert mask != "00" * 16 and int(mask, 16) != 0
    mark = log_mark(client)
    after = send(client, "event", action="publish", signal="SERVE_SIG")
    answer(client, after, r"Trg-Done QS_RX_EVENT")
    wait_for(lambda: log_lines(client, mark, "Sig=SERVE_SIG"), "the publish in the log")


def test_post_by_ao_name_is_dispatched(client) -> None:
    mark = log_mark(client)
    r = client.post(
        "/api/qs/control/event",
        json={"action": "post", "ao": "Table_inst", "signal": "SERVE_SIG"},
        headers=POST,
    )
    assert r.status_code == 200, r.text
    assert r.json()["sent"] == ["QS_RX_CURR_OBJ", "QS_RX_EVENT"]
    answer(client, r.json()["answers_after"], r"Trg-Done QS_RX_EVENT")
    disp = lambda: [  # noqa: E731
        t for t in log_lines(client, mark, "Disp===>") if "Obj=Table_inst,Sig=SERVE_SIG" in t
    ]
    wait_for(disp, "Table_inst dispatching SERVE_SIG")
    assert "QS-RX event sent: QS_RX_CURR_OBJ + QS_RX_EVENT" in messages(client)


def test_local_filter_silences_an_active_object(client) -> None:
    after = send(client, "loc_filter", groups=[])  # only QS-ID 0
    answer(client, after, r"Trg-Ack  QS_RX_LOC_FILTER")
    assert client.get("/api/qs/control").json()["masks"]["loc"] == "01" + "00" * 15
    mark = log_mark(client)
    after = send(client, "event", action="post", ao="Table_inst", signal="SERVE_SIG")
    answer(client, after, r"Trg-Done QS_RX_EVENT")
    after = send(client, "tick")  # a round trip more: Table has had time to dispatch
    answer(client, after, r"Trg-Done QS_RX_TICK")
    assert log_lines(client, mark, "Obj=Table_inst,Sig=SERVE_SIG") == []
    after = send(client, "loc_filter", groups=["AO", "EP", "EQ", "AP"])
    answer(client, after, r"Trg-Ack  QS_RX_LOC_FILTER")
    mark = log_mark(client)
    send(client, "event", action="post", ao="Table_inst", signal="SERVE_SIG")
    wait_for(lambda: log_lines(client, mark, "Obj=Table_inst,Sig=SERVE_SIG"), "Table again")


CRASHERS = [
    # Each killed the real target when let through (issue 35, finding 1).
    ({"action": "post", "prio": 1, "signal": "SERVE_SIG"}, "post to priority 1 refused"),
    ({"action": "post", "ao": "EvtPool1", "signal": "SERVE_SIG"},
     "EvtPool1 cannot be made current as an active object (AO): its records show it as a "
     "memory pool (MP)"),
]  # fmt: skip


def test_commands_that_would_crash_the_target_are_refused(client) -> None:
    wait_for(lambda: log_lines(client, 0, "MP-Get"), "an MP-Get record")  # the pool is known
    for body, why in CRASHERS:
        assert why in refused(client, "event", body)
    assert "its records show it as a memory pool" in refused(
        client, "curr_obj", {"kind": "AO", "object": "EvtPool1"}
    )
    assert "show it as a time event (TE)" in refused(
        client, "curr_obj", {"kind": "SM", "object": "Philo_inst[0].timeEvt"}
    )
    # The target lives on: it answers, and a post by name is taken.
    after = send(client, "event", action="post", ao="Table_inst", signal="SERVE_SIG")
    answer(client, after, r"Trg-Done QS_RX_EVENT")
    assert any("QS-RX event refused: post to priority 1" in m for m in messages(client))


def test_user_command_and_tick_are_acknowledged(client) -> None:
    after = send(client, "command", id=7, params=[1, "0x2", 3])
    answer(client, after, r"Trg-Ack  QS_RX_COMMAND")
    after = send(client, "tick", rate=0)
    answer(client, after, r"Trg-Ack  QS_RX_TICK")


HOSTILE = [
    ("peek", {"offset": 0, "size": 4, "num": 200}, f"1 to {MAX_PEEK_BYTES} bytes"),
    ("curr_obj", {"kind": "AO", "object": "NoSuchAO"}, "not in the target's dictionary"),
    ("event", {"action": "publish", "signal": "NOPE_SIG"}, "not in the target's dictionary"),
    ("event", {"action": "publish", "signal": "SERVE_SIG", "params": "zz"}, "not whole bytes"),
    ("poke", {"offset": 0, "size": 2, "data": "abc"}, "not whole bytes"),
    ("poke", {"offset": 0, "size": 2, "values": [70000]}, "does not fit"),
    ("glb_filter", {"records": ["QS_NOT_A_RECORD"]}, "not a QS record name"),
    ("glb_filter", {"mask": "ff" * 15}, "must be 16"),
    ("loc_filter", {"ranges": [[5, 300]]}, "QS-ID range"),
    ("query_curr", {"kind": "SM_AO"}, "kind 'SM_AO'"),
    ("tick", {"rate": 1}, "the target has 1 rate"),
    ("command", {"id": 1, "params": [1, 2, 3, 4]}, "at most 3"),
    ("peek", {"offset": "1e9", "size": 1, "num": 1}, "must be a whole number"),
    ("peek", {"offset": "01", "size": 1, "num": 1}, "no leading zeros"),
    ("event", {"action": "post", "prio": "01", "signal": "SERVE_SIG"}, "no leading zeros"),
    ("curr_obj", {"kind": "AP", "object": "007"}, "no leading zeros"),
    ("glb_filter", {"records": ["01"]}, "no leading zeros"),
    ("launch_missiles", {}, "unknown QS command"),
]


@pytest.mark.parametrize(("name", "body", "why"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_bodies_are_refused_in_one_line(client, name, body, why) -> None:
    assert why in refused(client, name, body)


def test_huge_deep_or_odd_bodies_are_refused_and_the_link_goes_on(client) -> None:
    big = b'{"data": "' + b"00" * 100_000 + b'"}'
    assert f"over {qs_control.MAX_BODY_BYTES:,} bytes" in refused(client, "poke", content=big)
    assert "nested too deeply" in refused(client, "peek", content=b"[" * 3000)
    assert "not JSON" in refused(client, "peek", content=b"\xff\xfe{")
    assert "JSON object" in refused(client, "peek", content=b"[1, 2]")
    assert any(m.startswith("QS-RX peek refused: request body") for m in messages(client))
    # The link still answers.
    after = send(client, "info")
    answer(client, after, r"Trg-Info QP-Ver=740")


def test_a_foreign_origin_cannot_send(client) -> None:
    r = client.post("/api/qs/control/reset", json={}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403


def test_without_a_qs_target_commands_are_refused(make_client) -> None:
    c = make_client(autoconnect=False)
    r = c.post("/api/qs/control/info", json={}, headers=POST)
    assert r.status_code == 400
    assert r.json()["error"] == "QS commands need a QS target: connect one first"
    assert c.get("/api/qs/control").json()["available"] is False


def test_a_listen_port_with_no_target_yet_refuses_panel_commands(make_client) -> None:
    c = make_client(autoconnect=False)
    r = c.post("/api/connect", json={"port": "listen://127.0.0.1:0"}, headers=POST)
    assert r.status_code == 200, r.text
    r = c.post("/api/qs/control/tick", json={}, headers=POST)
    assert r.status_code == 400
    assert r.json()["error"].startswith("no QS target is connected to 127.0.0.1:")
    assert c.post("/api/qs/tick", headers=POST).status_code == 200  # the sidebar's: quiet
    assert (
        c.post(
            "/api/qs/control/ao_filter", json={"object": 1, "remove": "no"}, headers=POST
        ).json()["error"]
        == "remove must be true or false, not 'no'"
    )


# ------------------------------------------------------------ the body parsers, sans-IO

KEYS = ["offset", "size", "num", "value", "values", "data", "mask", "records", "groups", "ids",
        "ranges", "object", "kind", "ao", "signal", "action", "params", "prio", "id", "rate",
        "remove", "fun"]  # fmt: skip
WORDS = ["SM", "AO", "AP", "TE", "post", "publish", "dispatch", "Table_inst", "SERVE_SIG",
         "QS_QF_TICK", "U0", "EP", "0x10", "12", "ff" * 16, "01 02", "zz", "", "\x00", "01", "007",
         "00"]  # fmt: skip
SCALARS = (
    st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, 2, 4, 16, 255, 256, 300])
    | st.sampled_from(WORDS)
    | st.text(max_size=8)
    | st.booleans()
    | st.none()
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4), max_leaves=8)


@settings(max_examples=150)
@example(name="glb_filter", body={"groups": [[]]})  # was TypeError: unhashable (HTTP 500)
@example(name="loc_filter", body={"groups": [["AO"]]})
@example(name="peek", body={"offset": "01"})  # was ValueError from int("01", 0) (HTTP 500)
@given(
    name=st.sampled_from(sorted(qs_control.BUILDERS)),
    body=st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6),
)
def test_any_body_is_refused_in_one_line_or_builds_commands_the_target_parser_takes(name, body):
    rx = RxCommands(lambda: (CONFIG, DICTS))  # DPP-like names, 8-byte pointers
    try:
        cmds = qs_control.BUILDERS[name](rx, body)
    except RxError as exc:
        assert "\n" not in str(exc) and 0 < len(str(exc)) < 300
        return
    for cmd in cmds:
        assert rx.parse(cmd.rec, cmd.payload) == cmd  # what the front-end port checks too
        rx.sent(cmd)


def test_a_replayed_session_takes_no_panel_commands(make_client) -> None:
    """A QS replay goes through a QSLink too; its 'target' is a recording."""
    from tests.sources.conftest import sim_stream

    c = make_client(autoconnect=False)
    r = c.post(
        "/api/sessions/import?name=dpp&kind=qs",
        content=sim_stream(2.0),
        headers={"Origin": ORIGIN, "Content-Type": "application/octet-stream"},
    )
    sid = r.json()["session"]["id"]
    r = c.post(f"/api/sessions/{sid}/replay", json={"speed": "1x"}, headers=POST)
    assert r.status_code == 200, r.text
    r = c.post("/api/qs/control/info", json={}, headers=POST)
    assert r.status_code == 400
    assert r.json()["error"] == "a replay is playing: QS commands need a live QS target"
    assert c.get("/api/qs/control").json()["available"] is False
