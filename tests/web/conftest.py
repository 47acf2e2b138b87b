"""Fixtures for the web API tests: a real app on the real simulated device."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mcuprof.paths import default_elf
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings
from tests.helpers import free_port

BASE = "http://127.0.0.1:8000"
ORIGIN = BASE
WS = "ws://127.0.0.1:8000/ws"


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    made: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        base = overrides.pop("base_url", BASE)
        opts: dict[str, Any] = {"data_dir": tmp_path / "data", "http_port": 8000}
        opts.update(overrides)
        settings = Settings(**opts)
        app = create_app(settings)
        client = TestClient(app, base_url=base)
        client.__enter__()
        made.append(client)
        return client

    yield make
    for client in made:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    """Connected to the simulated device running the sample ELF."""
    c = make_client()
    wait_for(lambda: c.get("/api/state").json()["connected"], "auto-connect to sim://")
    return c


@pytest.fixture
def idle_client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(autoconnect=False)


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """Poll until ``predicate`` is truthy; the deadline only bounds a hung test."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def sample_elf_bytes() -> bytes:
    return default_elf().read_bytes()


def sample_function_names() -> set[str]:
    from mcuprof.symbols import SymbolTable

    return {f.name for f in SymbolTable.from_elf(default_elf()).functions}


def capture(client: TestClient, records: int = 500) -> dict[str, Any]:
    """Start profiling and wait until the profile holds ``records`` records."""
    r = client.post("/api/start", headers={"Origin": ORIGIN})
    assert r.status_code == 200, r.text
    return wait_for(
        lambda: (
            (s := client.get("/api/state").json())["health"]["profile_records"] >= records and s
        ),
        f"{records} records",
    )


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[Callable[..., tuple[int, Any]]]:
    """A real uvicorn server in a thread, for what TestClient cannot show (sockets)."""
    import uvicorn

    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(**overrides: Any) -> tuple[int, Any]:
        port = free_port()
        opts: dict[str, Any] = {"data_dir": tmp_path / "data", "http_port": port}
        opts.update(overrides)
        app = create_app(Settings(**opts))
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        wait_for(lambda: server.started, "uvicorn to start")
        servers.append((server, thread))
        return port, app

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)
