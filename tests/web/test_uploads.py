"""ELF uploads: streamed with a cap (chunked bodies too), generated names, bad ELFs."""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
from collections.abc import Iterator
from pathlib import Path

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import ORIGIN, sample_elf_bytes

POST = {"Origin": ORIGIN, "Content-Type": "application/octet-stream"}


def uploads(client: TestClient) -> list[str]:
    return uploads_in(client.app.state.settings.upload_dir)


def uploads_in(folder: Path) -> list[str]:
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_upload_sample_elf_is_stored_under_a_generated_name(idle_client: TestClient) -> None:
    data = sample_elf_bytes()
    r = idle_client.post(
        "/api/elfs", params={"name": "../../etc/my firmware.elf"}, content=data, headers=POST
    )
    assert r.status_code == 200, r.text
    elf = r.json()["elf"]
    assert elf["kind"] == "upload"
    assert elf["label"] == "my_firmware.elf"  # no path, no spaces
    names = uploads(idle_client)
    assert len(names) == 1
    assert names[0] == f"{hashlib.sha256(data).hexdigest()}.elf"  # named by content
    stored = idle_client.app.state.settings.upload_dir / names[0]
    assert stored.read_bytes() == data

    state = r.json()["state"]
    assert state["elf"]["id"] == elf["id"]
    listed = idle_client.get("/api/elfs").json()
    assert listed["selected"] == elf["id"]
    assert elf["id"] in [e["id"] for e in listed["elfs"]]
    idle_client.app.state.catalog.close()  # what shutdown does
    assert not stored.exists()


def test_upload_over_the_limit_is_refused_from_content_length(make_client) -> None:
    client = make_client(autoconnect=False, max_elf_bytes=4096)
    r = client.post("/api/elfs", content=b"\x7fELF" + b"\0" * 5000, headers=POST)
    assert r.status_code == 413
    assert "limit" in r.json()["error"]
    assert uploads(client) == []


def test_chunked_upload_without_content_length_is_capped_while_streaming(make_client) -> None:
    client = make_client(autoconnect=False, max_elf_bytes=64 * 1024)
    sent = []

    def body() -> Iterator[bytes]:
        for _ in range(64):  # 4 MiB in all, far past the cap
            sent.append(1)
            yield b"\0" * 65536

    r = client.post("/api/elfs", content=body(), headers=POST)
    assert r.status_code == 413, r.text
    assert "64 KiB" in r.json()["error"] or "limit" in r.json()["error"]
    assert uploads(client) == []  # the partial file is gone


def test_chunked_upload_under_the_limit_works(idle_client: TestClient) -> None:
    data = sample_elf_bytes()

    def body() -> Iterator[bytes]:
        for i in range(0, len(data), 4096):
            yield data[i : i + 4096]

    r = idle_client.post("/api/elfs", params={"name": "demo.elf"}, content=body(), headers=POST)
    assert r.status_code == 200, r.text
    assert r.json()["elf"]["label"] == "demo.elf"


def test_default_limit_is_64_mib(idle_client: TestClient) -> None:
    assert idle_client.app.state.settings.max_elf_bytes == 64 * 1024 * 1024
    assert idle_client.get("/api/elfs").json()["max_bytes"] == 64 * 1024 * 1024
    r = idle_client.post(
        "/api/elfs", content=b"x", headers={**POST, "Content-Length": str(64 * 1024 * 1024 + 1)}
    )
    assert r.status_code == 413


def test_bad_elfs_give_one_line_errors_and_change_nothing(idle_client: TestClient) -> None:
    before = idle_client.get("/api/state").json()["elf"]
    real = sample_elf_bytes()
    bad = {
        "text.elf": b"this is not an ELF file at all\n" * 10,
        "truncated.elf": real[:700],
        "header-only.elf": real[:64],
        "empty.elf": b"",
    }
    for name, data in bad.items():
        r = idle_client.post("/api/elfs", params={"name": name}, content=data, headers=POST)
        assert r.status_code == 400, (name, r.text)
        message = r.json()["error"]
        assert "\n" not in message and "Traceback" not in message, message
    assert idle_client.get("/api/state").json()["elf"] == before
    assert uploads(idle_client) == []  # rejected files are not kept


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(min_size=1, max_size=2048))
def test_any_bytes_give_a_clean_answer(idle_client: TestClient, data: bytes) -> None:
    r = idle_client.post(
        "/api/elfs", params={"name": "fuzz.elf"}, content=b"\x7fELF" + data, headers=POST
    )
    assert r.status_code in (200, 400)
    if r.status_code == 400:
        assert "\n" not in r.json()["error"]


def test_select_unknown_elf_is_refused(idle_client: TestClient) -> None:
    r = idle_client.post(
        "/api/elfs/select", json={"id": "../../etc/passwd"}, headers={"Origin": ORIGIN}
    )
    assert r.status_code == 400
    assert "unknown ELF" in r.json()["error"]


def test_select_sample_elf(idle_client: TestClient) -> None:
    sample = next(e for e in idle_client.get("/api/elfs").json()["elfs"] if e["kind"] == "sample")
    r = idle_client.post("/api/elfs/select", json={"id": sample["id"]}, headers={"Origin": ORIGIN})
    assert r.status_code == 200
    assert r.json()["state"]["elf"]["id"] == sample["id"]


def test_real_server_refuses_a_chunked_upload_mid_stream(live_server) -> None:
    """Over a real socket: a chunked body with no Content-Length is cut off at the cap,
    long before the client has sent it all."""
    port, app = live_server(autoconnect=False, max_elf_bytes=256 * 1024)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        f"POST /api/elfs?name=big.elf HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sock.sendall(head.encode())
    chunk = b"%x\r\n" % 65536 + b"\0" * 65536 + b"\r\n"
    sent = 0
    sock.setblocking(False)
    reply = b""
    try:
        for _ in range(1024):  # up to 64 MiB
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.send(chunk)
                sent += 1
            except BlockingIOError:
                select.select([sock], [sock], [], 1.0)
            except (BrokenPipeError, ConnectionResetError):
                break
        sock.setblocking(True)
        sock.settimeout(10)
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n\r\n" not in reply:
                data = sock.recv(65536)
                if not data:
                    break
                reply += data
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert sent < 1024
    assert uploads_in(app.state.settings.upload_dir) == []


def test_elf_parsing_has_a_time_limit(make_client) -> None:
    client = make_client(autoconnect=False, elf_parse_timeout_s=0.001)
    r = client.post(
        "/api/elfs", params={"name": "slow.elf"}, content=sample_elf_bytes(), headers=POST
    )
    assert r.status_code == 400
    assert r.json()["error"].startswith("slow.elf: ") and "gave up" in r.json()["error"]
    assert uploads(client) == []
