"""The live session's log: the last LOG_LIMIT lines the page shows, each numbered so
a page asks for what is newer than the last line it has. Any thread may write."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LOG_LIMIT = 1000


@dataclass
class LogEntry:
    seq: int
    t: float  # wall clock, seconds
    level: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": self.t, "level": self.level, "message": self.message}


class LiveLog:
    def __init__(self, wall: Callable[[], float]) -> None:
        self.wall = wall
        self.entries: collections.deque[LogEntry] = collections.deque(maxlen=LOG_LIMIT)
        self._seq = 0
        # A line's number and its place in the ring are taken together; a reader never
        # iterates the ring while a writer appends.
        self._lock = threading.Lock()

    def add(self, level: str, message: str) -> None:
        with self._lock:
            self._seq += 1
            self.entries.append(LogEntry(self._seq, self.wall(), level, message))

    def since(self, seq: int) -> list[dict[str, Any]]:
        with self._lock:
            return [e.as_dict() for e in self.entries if e.seq > seq]
