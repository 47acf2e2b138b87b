"""Issue 26 F10/F15: a full disk stops the recording with one line; the server stays up.

The disks are real: small tmpfs mounts (the tests run as root in CI; elsewhere they are
skipped). Writing through a mapping into a sparse file that the full disk cannot back
killed the server with SIGBUS; the column files are now given their blocks first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata

from .conftest import ORIGIN, wait_for

POST = {"Origin": ORIGIN}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small"
    where.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_columns_on_a_full_disk_raise_one_line_instead_of_sigbus(small_disk: Path) -> None:
    """In a child: before the fix it died of signal 7 (SIGBUS)."""
    code = textwrap.dedent(
        f"""
        import numpy as np
        from mcuprof.profile.columns import Column, Spill
        spill = Spill({str(small_disk)!r})
        col = Column(np.int64, spill)
        n = 0
        try:
            while True:
                n = n * 2 + 4096
                col.reserve(n, 0)[:n] = 7
        except Exception as exc:
            print(type(exc).__name__ + ":", exc)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-300:]}"
    [line] = proc.stdout.splitlines()
    assert line.startswith(f"ColumnsFull: no room for the profile's columns in {small_disk}")
    assert line.endswith("(No space left on device); free space on that disk")


def _recording(client):
    """The app's live session recording, as Start leaves it, without a device: the
    tests then play the link's reader thread (on_raw, on_records)."""
    live = client.app.state.live
    live.conn.metadata = Metadata(168_000_000, 1_000_000, 0x1234, "full-disk")
    live._new_profile()
    live._open_capture()
    live._taking = True
    return live, live.recorder.capture_id


def test_recording_stops_with_one_line_and_the_server_stays_up(make_client, tmp_path) -> None:
    """The live path as the link's reader thread drives it (on_raw, on_records), with the
    app's own ticker moving records into the profile, whose columns sit on a 1 MiB disk."""
    data = tmp_path / "data"
    columns = data / "columns"
    columns.mkdir(parents=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(columns)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        client = make_client(autoconnect=False, data_dir=data)
        live, sid = _recording(client)
        for k in range(40):  # 2M records: far more columns than 1 MiB holds
            recs = np.zeros(50_000, dtype=RECORD_DTYPE)
            recs["func_addr"] = 0x0800_0100 + (np.arange(50_000) % 7) * 0x20
            recs["entry_time"] = (np.arange(50_000) + k * 50_000) * 10
            recs["duration"] = 5
            live.on_raw(recs.tobytes()[:4096])
            live.on_records(recs)
        stopped = wait_for(
            lambda: [
                e
                for e in client.get("/api/log").json()["entries"]
                if e["message"].startswith("recording stopped")
            ],
            "the recording to stop on the full disk",
        )
        [entry] = stopped
        assert entry["level"] == "error"
        assert f"no room for the profile's columns in {columns}" in entry["message"]
        # The server answers, and the session keeps what was written.
        assert client.get("/api/state").status_code == 200
        session = client.get(f"/api/sessions/{sid}").json()["session"]
        assert session["status"] == "interrupted" and session["raw_bytes"] >= 4096
        raw = client.get(f"/api/sessions/{sid}/raw")
        assert raw.status_code == 200 and len(raw.content) == session["raw_bytes"]
        assert live.recorder.writer is None and not live._taking
    finally:
        subprocess.run(["umount", "-l", str(columns)], check=False)


def test_columns_work_under_an_address_space_limit(tmp_path: Path) -> None:
    """F15: under `ulimit -v 4000000` the 1 TiB reservation of every profile failed, and
    `serve` with it. In a child, with the limit set as the shell would."""
    code = textwrap.dedent(
        f"""
        import resource
        limit = 4_000_000 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        import numpy as np
        from mcuprof.profile.columns import Column, Spill
        spill = Spill({str(tmp_path)!r})
        from mcuprof.profile.columns import RESERVE_SHARE
        assert spill.reserve <= limit // RESERVE_SHARE, spill.reserve
        cols = [Column(np.int64, spill) for _ in range(3)]
        for col in cols:  # past OWN_AT: a file of its own each
            col.reserve(3_000_000, 0)[:3_000_000] = 9
        print(sum(int(c.a[:3_000_000].sum()) for c in cols))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-400:]
    assert proc.stdout.split() == [str(9 * 3 * 3_000_000)]


def _port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _mcuprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", *args], capture_output=True, text=True, timeout=90
    )


def test_a_read_only_data_dir_is_named_with_the_fix(small_disk: Path) -> None:
    """F15: it said "not a usable mcuprof database", as if the database were corrupt."""
    data = small_disk / "data"
    assert _mcuprof("sessions", "list", "--data-dir", str(data)).returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    for args in (["sessions", "list"], ["serve", "--http-port", _port()]):
        proc = _mcuprof(*args, "--data-dir", str(data))
        assert proc.returncode != 0
        [line] = proc.stderr.strip().splitlines()
        assert line == (
            f"mcuprof: error: data directory {data} is read-only; make it writable or "
            "choose another with --data-dir (or MCUPROF_DATA_DIR)"
        )


def test_a_columns_path_that_is_a_file_is_named_with_the_fix(tmp_path: Path) -> None:
    """F15: it said "internal error: FileExistsError"."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "columns").write_text("not a directory")
    proc = _mcuprof("serve", "--http-port", _port(), "--data-dir", str(data))
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert line == (
        f"mcuprof: error: cannot keep the profile's columns in {data / 'columns'} "
        "(not a directory); make it a writable directory"
    )


def test_raw_file_on_a_full_disk_closes_the_session_with_its_bytes(
    make_client, small_disk: Path
) -> None:
    """The whole data directory on a 2 MiB disk, half of it taken by another file: the
    raw file fills it, and the database cannot even record that the session ended until
    that file goes; the store's flusher then closes the session with its bytes."""
    filler = small_disk / "filler"
    filler.write_bytes(bytes(1 << 20))
    client = make_client(autoconnect=False, data_dir=small_disk / "data")
    live, sid = _recording(client)
    rng = np.random.default_rng(0)  # stored compressed: pieces with no pattern, no repeat
    pieces = [rng.bytes(256 * 1024) for _ in range(12)]
    for piece in pieces:  # 3 MiB into 1
        live.on_raw(piece)
    [entry] = [e for e in live.log_since(0) if e["message"].startswith("recording stopped")]
    assert entry["message"] == (
        f"recording stopped: cannot write session {sid}: No space left on device"
    )
    assert live.recorder.writer is None and not live._taking
    assert client.get("/api/state").status_code == 200
    filler.unlink()
    session = wait_for(
        lambda: (
            (s := client.get(f"/api/sessions/{sid}").json()["session"])["status"] == "interrupted"
            and s
        ),
        "the session to be closed",
    )
    assert 0 < session["raw_bytes"] < 12 * len(piece)
    raw = client.get(f"/api/sessions/{sid}/raw").content
    sent = encode_metadata(live.conn.metadata) + b"".join(pieces)  # the capture opens with metadata
    assert len(raw) == session["raw_bytes"] and raw == sent[: len(raw)]
