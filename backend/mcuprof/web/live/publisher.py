"""The updates the page gets over the websocket, and what the page reports back.

``message`` runs in the ticker's worker thread only (``update_hz``); it builds one JSON
update, or None when nothing changed and the health was sent less than a second ago.
The flame graph is rebuilt at most when the profile's version moved and never takes more
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
DRAWN_SAMPLES_MAX = 64  # samples read from one "drawn" report (docs/limits.md)


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
        self.next_flame_at = 0.0
        self.latencies_ms: collections.deque[float] = collections.deque(maxlen=SAMPLES)
        self.frame_ms: collections.deque[float] = collections.deque(maxlen=SAMPLES)
        self._last_health = ""
        self._last_health_at = 0.0

    def flame(self, max_nodes: int) -> dict[str, Any]:
        """The flame graph part of an update, under the profile lock; paces the next one."""
        started = self.clock()
        feed = self.feed
        with feed.lock:
            part = {
                "flame": views.flame_graph(feed.profile, None, max_nodes),
                "range": feed.time_range(),
                "version": feed.version,
            }
            recv = feed.take_oldest_unpublished()
        self.published_version = part["version"]
        spent = self.clock() - started
        # Keep the flame build from eating the server: never more than ~1/3 of a core.
        self.next_flame_at = self.clock() + 2 * spent
        if recv is not None:
            part["recv_ts"] = recv * 1000.0
        return part

    def message(self, live: Any, want_flame: bool, max_nodes: int) -> str | None:
        now = self.clock()
        health = live.health()
        health_text = json.dumps(health, sort_keys=True)
        log = live.log_since(self.published_log)
        message: dict[str, Any] = {"type": "update"}
        changed = self.feed.version != self.published_version
        if want_flame and changed and now >= self.next_flame_at:
            message.update(self.flame(max_nodes))
        if (
            "flame" not in message
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
        """Frame-drawn reports from the page: latency from record received to drawn. The
        page batches them (``samples``: [recv_ts, frame_ms, ms it waited in the page]);
        a single report (``recv_ts``, ``frame_ms``) is taken too."""
        try:
            msg = json.loads(text)
        except ValueError:
            return
        if not isinstance(msg, dict) or msg.get("type") != "drawn":
            return
        samples = msg.get("samples")
        if not isinstance(samples, list):
            samples = [[msg.get("recv_ts"), msg.get("frame_ms"), 0.0]]
        now_ms = self.wall() * 1000.0
        for sample in samples[:DRAWN_SAMPLES_MAX]:
            if isinstance(sample, list) and len(sample) == 3:
                self._drawn(now_ms, *sample)

    def _drawn(self, now_ms: float, recv: Any, frame: Any, waited: Any) -> None:
        if not isinstance(waited, int | float) or not 0 <= waited <= now_ms:
            return
        if isinstance(recv, int | float):
            self.latencies_ms.append(now_ms - waited - float(recv))
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
