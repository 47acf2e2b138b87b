"""WebSocket input is rate-limited per client (issue 26, F14): five tabs flooding
messages stalled /api/state for 45-51 s. The excess is dropped unread and counted, the
client is told once, and a client that keeps flooding is disconnected; all logged."""

from __future__ import annotations

import json

from starlette.websockets import WebSocketDisconnect

from mcuprof.web.security import (
    WS_FLOOD_CLOSE_AFTER,
    WS_MAX_MESSAGES_PER_S,
    WS_MESSAGE_BURST,
    MessageBudget,
)
from tests.web.conftest import ORIGIN, WS


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_page_pace_is_never_dropped() -> None:
    clock = _Clock()
    budget = MessageBudget(clock)
    for _ in range(600):  # a minute of "drawn" reports at 10 Hz
        assert budget.take()
        clock.now += 0.1
    assert budget.dropped == 0


def test_a_burst_past_the_budget_is_dropped_then_refilled() -> None:
    clock = _Clock()
    budget = MessageBudget(clock)
    assert all(budget.take() for _ in range(WS_MESSAGE_BURST))
    assert not budget.take() and budget.dropped == 1 and not budget.flooding
    clock.now += 1.0
    taken = sum(budget.take() for _ in range(2 * int(WS_MAX_MESSAGES_PER_S)))
    assert taken == int(WS_MAX_MESSAGES_PER_S)
    assert budget.dropped == 1 + int(WS_MAX_MESSAGES_PER_S)


def test_a_flooding_client_is_told_then_disconnected(idle_client) -> None:
    live = idle_client.app.state.live
    drawn = json.dumps({"type": "drawn", "seq": 1, "frame_ms": 1.0})
    sent, errors, code = 0, [], None
    with idle_client.websocket_connect(WS, headers={"Origin": ORIGIN}) as ws:
        assert json.loads(ws.receive_text())["type"] == "hello"
        for _ in range(WS_MESSAGE_BURST + 2 * WS_FLOOD_CLOSE_AFTER):
            ws.send_text(drawn)
            sent += 1
        ws.send_text("not json")  # answered with an error if the client was still read
        try:
            while "message is not JSON" not in errors:
                message = json.loads(ws.receive_text())
                if message["type"] == "error":
                    errors.append(message["error"])
        except WebSocketDisconnect as exc:
            code = exc.code
    assert code == 1008, errors
    assert errors == [
        f"too many messages (over {WS_MAX_MESSAGES_PER_S:g} a second): the excess is dropped"
    ]
    # Only what the budget allowed reached the session; the rest was never parsed.
    assert 0 < len(live.publisher.frame_ms) < sent - WS_FLOOD_CLOSE_AFTER
    logged = [e["message"] for e in live.log_since(0)]
    assert any("the excess is dropped" in m for m in logged)
    assert any(
        m.startswith("WebSocket client disconnected:") and "over the rate dropped" in m
        for m in logged
    )
    # The server answers as before; a new tab gets its hello.
    assert idle_client.get("/api/state").status_code == 200
    with idle_client.websocket_connect(WS, headers={"Origin": ORIGIN}) as ws:
        assert json.loads(ws.receive_text())["type"] == "hello"
