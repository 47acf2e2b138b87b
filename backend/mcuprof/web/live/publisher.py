"""The updates the page gets over the websocket, and what the page reports back.

``message`` runs in the ticker's worker thread only (``update_hz``); it builds one JSON
update, or None when nothing changed and the health was sent less than a second ago.
The icicle is rebuilt at most when the profile's version moved and never takes more
than about a third of a core. ``on_client_message`` runs on the event loop.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import views
from .profile import LiveProfile

SAMPLES = 20000  # latency and frame-time samples kept for /api/metrics


class Publisher:
    def __init__(
        self, feed: LiveProfile, clock: Callable[[], float], wall: Callable[[], float]
    ) -> None:
        self.feed = feed
        self.clock = clock
        self.wall = wall
        self.seq = 0
        self.published_version = -1
        self.published_log = 0  # seq of the last log line sent
        self.next_icicle_at = 0.0
        self.latencies_ms: collections.deque[float] = collections.deque(maxlen=SAMPLES)
        self.frame_ms: collections.deque[float] = collections.deque(maxlen=SAMPLES)
        self._last_health = ""
        self._last_health_at = 0.0

    def icicle(self, max_nodes: int) -> dict[str, Any]:
        """The icicle part of an update, under the profile lock; paces the next one."""
        started = self.clock()
        feed = self.feed
        with feed.lock:
            part = {
                "icicle": views.icicle(feed.profile, None, max_nodes),
                "range": feed.time_range(),
                "version": feed.version,
            }
            recv = feed.take_oldest_unpublished()
        self.published_version = part["version"]
        spent = self.clock() - started
        # Keep the icicle from eating the server: never more than ~1/3 of a core.
        self.next_icicle_at = self.clock() + 2 * spent
        if recv is not None:
            part["recv_ts"] = recv * 1000.0
        return part

    def message(self, live: Any, want_icicle: bool, max_nodes: int) -> str | None:
        now = self.clock()
        health = live.health()
        health_text = json.dumps(health, sort_keys=True)
        log = live.log_since(self.published_log)
        message: dict[str, Any] = {"type": "update"}
        changed = self.feed.version != self.published_version
        if want_icicle and changed and now >= self.next_icicle_at:
            message.update(self.icicle(max_nodes))
        if (
            "icicle" not in message
            and not log
            and health_text == self._last_health
            and (now - self._last_health_at < 1.0)
        ):
            return None
        self._last_health = health_text
        self._last_health_at = now
        self.seq += 1
        message["seq"] = self.seq
        message["health"] = health
        message["log"] = log
        if log:
            self.published_log = log[-1]["seq"]
        message["device"] = live.device_info()
        message["connected"] = live.conn.connected
        message["server_ts"] = self.wall() * 1000.0
        return json.dumps(message)

    def on_client_message(self, text: str) -> None:
        """Frame-drawn reports from the page: latency from record received to drawn."""
        try:
            msg = json.loads(text)
        except ValueError:
            return
        if not isinstance(msg, dict) or msg.get("type") != "drawn":
            return
        recv = msg.get("recv_ts")
        if isinstance(recv, int | float):
            self.latencies_ms.append(self.wall() * 1000.0 - float(recv))
        frame = msg.get("frame_ms")
        if isinstance(frame, int | float):
            self.frame_ms.append(float(frame))

    def metrics(self) -> dict[str, Any]:
        def pct(values: collections.deque[float], q: float) -> float | None:
            if not values:
                return None
            return float(np.percentile(np.fromiter(values, float), q))

        return {
            "updates": self.seq,
            "latency_samples": len(self.latencies_ms),
            "latency_p50_ms": pct(self.latencies_ms, 50),
            "latency_p95_ms": pct(self.latencies_ms, 95),
            "frame_samples": len(self.frame_ms),
            "frame_p50_ms": pct(self.frame_ms, 50),
            "frame_p95_ms": pct(self.frame_ms, 95),
        }
