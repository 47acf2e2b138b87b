"""Uploads are bounded: one file per content, swept after a crash, parsed within a
memory budget however many arrive at once."""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings

from .conftest import ORIGIN, sample_elf_bytes
from .test_uploads import POST, uploads

pytestmark = pytest.mark.timeout(180)


def test_the_same_elf_uploaded_twice_is_one_file(idle_client) -> None:
    data = sample_elf_bytes()
    first = idle_client.post("/api/elfs", params={"name": "a.elf"}, content=data, headers=POST)
    again = idle_client.post("/api/elfs", params={"name": "b.elf"}, content=data, headers=POST)
    assert first.status_code == again.status_code == 200
    assert first.json()["elf"]["id"] == again.json()["elf"]["id"]
    assert len(uploads(idle_client)) == 1
    listed = [e for e in idle_client.get("/api/elfs").json()["elfs"] if e["kind"] == "upload"]
    assert [e["label"] for e in listed] == ["b.elf"]  # one entry, named as last given
    other = data + b"\0"  # a different file: its own entry
    r = idle_client.post("/api/elfs", params={"name": "c.elf"}, content=other, headers=POST)
    assert r.status_code == 200 and len(uploads(idle_client)) == 2


def test_uploads_left_by_a_dead_server_are_swept_at_start_up(make_client, tmp_path) -> None:
    live = make_client(autoconnect=False)
    data = sample_elf_bytes()
    r = live.post("/api/elfs", params={"name": "kept.elf"}, content=data, headers=POST)
    assert r.status_code == 200
    kept = live.app.state.settings.upload_dir / uploads(live)[0]
    # What kill -9 leaves: uploads and a half-received import nobody holds any more.
    folder = kept.parent
    orphans = [folder / f"{'ab' * 32}.elf", folder / f"{'cd' * 16}.bin"]
    for path in orphans:
        path.write_bytes(b"\x7fELF left behind")
    second = create_app(Settings(data_dir=tmp_path / "data", autoconnect=False))
    assert second.state.catalog is not None
    assert not any(p.exists() for p in orphans)
    assert kept.exists()  # the live server's upload is held, so it stays
    second.state.store.close()
    chosen = live.post(
        "/api/elfs/select", json={"id": r.json()["elf"]["id"]}, headers={"Origin": ORIGIN}
    )
    assert chosen.status_code == 200, chosen.text


def _parsers() -> int:
    """ELF reader processes that are children of this test process."""
    me, count = str(os.getpid()), 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"elfparse.py" in cmd:
            count += 1
    return count


def test_parallel_uploads_are_parsed_within_the_budget(live_server, monkeypatch) -> None:
    import mcuprof.symbols.loader as loader

    base = sample_elf_bytes()
    # Each upload alone fills the budget, so they must be parsed one at a time.
    monkeypatch.setattr(loader, "PARSE_BUDGET_BYTES", len(base) + 64, raising=False)
    port, _ = live_server(autoconnect=False)
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _parsers())
            time.sleep(0.002)

    def upload(i: int, out: list[int]) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/elfs?name=fw{i}.elf",
            data=base + bytes([i]) * 64,  # six different files: no deduplication
            headers={**POST, "Origin": f"http://127.0.0.1:{port}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=120) as reply:
            out.append(reply.status)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    statuses: list[int] = []
    threads = [threading.Thread(target=upload, args=(i, statuses)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    done.set()
    watcher.join()
    assert statuses == [200] * 6
    assert peak[0] == 1, f"{peak[0]} ELF parses ran at once"
