"""Shared helpers for the link tests: fake clocks, a recording listener, sim servers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from mcuprof.link import NullListener, SimOptions
from mcuprof.link.servers import PtySimServer, TcpSimServer
from mcuprof.profile.keyed import KeyedCalls
from mcuprof.protocol import RECORD_DTYPE, Metadata, Status

# Upper bound on how long a test waits for something that should happen; reaching
# it means the test failed (a hang), it is not a timing assertion.
HANG_S = 30.0


class FakeClock:
    """Time that moves only when a test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self._t = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._t

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._t += seconds


class SteppingClock(FakeClock):
    """Each reading moves time on by ``step``: the device's time advances with the
    simulator's loop, not with the wall clock, so a loaded machine changes nothing."""

    def __init__(self, step: float = 0.002, start: float = 1000.0) -> None:
        super().__init__(start)
        self.step = step

    def __call__(self) -> float:
        with self._lock:
            self._t += self.step
            return self._t


class Recorder(NullListener):
    """Keeps everything the session reports; wait_for() blocks until a condition holds."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.raw = bytearray()
        self.chunks: list[np.ndarray | KeyedCalls] = []
        self.n_records = 0
        self.metadata: list[Metadata] = []
        self.statuses: list[Status] = []
        self.states: list[tuple[str, str | None]] = []
        self.logs: list[tuple[str, str]] = []

    def _note(self) -> None:
        self.cond.notify_all()

    def on_raw(self, data: bytes) -> None:
        with self.cond:
            self.raw += data
            self._note()

    def on_metadata(self, meta: Metadata) -> None:
        with self.cond:
            self.metadata.append(meta)
            self._note()

    def on_records(self, records: np.ndarray | KeyedCalls) -> None:
        with self.cond:
            # A source's keyed calls (QS) are its own fresh arrays: nothing to copy.
            self.chunks.append(records.copy() if isinstance(records, np.ndarray) else records)
            self.n_records += len(records)
            self._note()

    def on_status(self, status: Status) -> None:
        with self.cond:
            self.statuses.append(status)
            self._note()

    def on_state(self, state: str, reason: str | None) -> None:
        with self.cond:
            self.states.append((state, reason))
            self._note()

    def on_log(self, level: str, message: str) -> None:
        with self.cond:
            self.logs.append((level, message))
            self._note()

    def records(self) -> np.ndarray:
        with self.cond:
            if not self.chunks:
                return np.empty(0, dtype=RECORD_DTYPE)
            return np.concatenate(self.chunks)

    def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout=HANG_S):
                raise AssertionError(f"gave up waiting for {what}")


def wait_until(
    predicate: Callable[[], bool], what: str, on_tick: Callable[[], None] | None = None
) -> None:
    """Poll a condition owned by another thread (a server's device), optionally doing
    something (advancing a fake clock) between looks."""
    done = threading.Event()
    for _ in range(int(HANG_S / 0.005)):
        if predicate():
            return
        if on_tick is not None:
            on_tick()
        done.wait(0.005)
    raise AssertionError(f"gave up waiting for {what}")


def run_in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed back to the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


@pytest.fixture(params=["pty", "tcp"])
def sim_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., tuple[object, str]]]:
    """A factory: make_server(options, **kw) -> (server, port string), over a real pty or TCP."""
    made: list[PtySimServer | TcpSimServer] = []

    def make(options: SimOptions, **kwargs: object) -> tuple[PtySimServer | TcpSimServer, str]:
        kwargs.setdefault("baud", 921_600)
        if request.param == "pty":
            server: PtySimServer | TcpSimServer = PtySimServer(options, **kwargs)
            port = server.path
        else:
            server = TcpSimServer(options, **kwargs)
            port = server.url
        made.append(server)
        server.start()
        return server, port

    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for server in made:
        server.close()
