"""Opening a capture whose timer restarts often (issue 35, finding 6): a board in a reset
loop, or captures joined with ``cat``. For R restarts (R + 1 runs of the same firmware,
each announcing itself with METADATA and its clock starting again near 0) it times

- the CLI: ``mcuprof info FILE`` (a summary: the counts, no profile) and ``mcuprof export
  -f folded FILE`` (the whole-capture loader, then its folded stacks), the whole process;
- the page: ``mcuprof serve`` holding the capture as a stored session, opened as the
  Sessions tab's Open does (``{"speed": "max", "open": true}``: the kind's loader into the
  live views, web/live/open.py; a tree before it replayed the session at max speed through
  the live path), until every record is in the profile; with ``--replay``, a Replay at max
  speed instead (the live path, as before);

for this checkout and, with ``--baseline DIR``, another tree (e.g. an extracted main).
``--tab`` keeps a WebSocket client on the server meanwhile (an open tab: every live update
then draws the flame graph). ``--forward`` makes the same runs follow one another in time
(no restart): the live path's own cost, for comparison.
Each figure is the best of ``--repeat`` runs (the machine is shared). Asserts nothing.

Run: .venv/bin/python bench/restarts.py [--restarts 80,160,320] [--calls 10000]
     [--baseline /tmp/main-tree] [--repeat 2] [--tab] [--forward] [--replay]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import ROOT, api, free_port, wait_for_server
from mcuprof.profile.synth import restarting_records
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.store import SessionStore

META = Metadata(
    mcu_clock_hz=168_000_000, timer_freq=1_000_000, elf_build_id=0x1234ABCD, fw_version="loop"
)
PER_PACKET = 100


def write_capture(path: Path, restarts: int, calls: int, forward: bool = False) -> int:
    """R + 1 runs of one boot (a reset loop replays the same calls), as the device sends
    them (``forward``: each run later than the one before); returns the record count."""
    (run,) = restarting_records(random.Random(1), 0, calls)
    span = int((run["entry_time"].astype("i8") + run["duration"]).max()) + 10
    with path.open("wb") as f:
        for _ in range(restarts + 1):
            if forward:
                run["entry_time"] = (run["entry_time"].astype("i8") + span) & 0xFFFFFFFF
            f.write(encode_metadata(META))
            for i in range(0, len(run), PER_PACKET):
                f.write(encode_profile_data(run[i : i + PER_PACKET]))
    return len(run) * (restarts + 1)


def open_tab(port: int) -> socket.socket:
    """A WebSocket client that reads and drops every live update, as an open tab."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            f"Sec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n\r\n"
        ).encode()
    )

    def drain() -> None:
        with contextlib.suppress(OSError):
            while s.recv(1 << 16):
                pass

    threading.Thread(target=drain, daemon=True).start()
    return s


def cli_seconds(tree: Path, capture: Path, *command: str) -> float:
    """``mcuprof info`` (a summary: counts, no profile), or ``command`` (export: the
    whole-capture loader, then the folded stacks written)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "backend")}
    began = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "mcuprof", *(command or ("info",)), str(capture)],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # export's "no --elf" warning
    )
    return time.monotonic() - began


def page_seconds(tree: Path, data: Path, total: int, tab: bool, replay: bool = False) -> float:
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    argv = [sys.executable, "-m", "mcuprof", "serve", "--http-port", str(port)]
    server = subprocess.Popen(
        [*argv, "--data-dir", str(data), "--no-connect"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree / "backend")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_server(base)
        client = open_tab(port) if tab else None
        began = time.monotonic()
        api(base, "api/sessions/1/replay", {"speed": "max", "open": not replay})
        while True:
            time.sleep(0.1)
            health = api(base, "api/state")["health"]
            if health.get("replay") is None and health["profile_records"] >= total:
                if client is not None:
                    client.close()
                return time.monotonic() - began
            if time.monotonic() - began > 1800:
                raise SystemExit("the session did not open in 30 minutes")
    finally:
        server.terminate()
        server.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--restarts", default="80,160,320")
    ap.add_argument("--calls", type=int, default=10_000, help="calls per run (10,000)")
    ap.add_argument("--baseline", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tab", action="store_true", help="a tab open meanwhile (WebSocket)")
    ap.add_argument("--replay", action="store_true", help="a max-speed Replay, not Open")
    ap.add_argument("--forward", action="store_true", help="no restart: runs one after another")
    args = ap.parse_args()
    trees = [("this", ROOT)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(
        "| restarts | records | tree | CLI (mcuprof info) | CLI loader (mcuprof export -f folded)"
        " | page (Open) | page / info | page / export |"
    )
    print("|---|---|---|---|---|---|---|---|")
    export = ("export", "-f", "folded", "-o", os.devnull)
    with tempfile.TemporaryDirectory() as tmp:
        for restarts in (int(r) for r in args.restarts.split(",")):
            capture = Path(tmp) / f"loop-{restarts}.bin"
            total = write_capture(capture, restarts, args.calls, args.forward)
            data = Path(tmp) / f"data-{restarts}"
            with SessionStore(data) as store:
                store.import_capture(f"{restarts} restarts", capture, None)
            for name, tree in trees:
                cli = min(cli_seconds(tree, capture) for _ in range(args.repeat))
                loader = min(cli_seconds(tree, capture, *export) for _ in range(args.repeat))
                page = min(
                    page_seconds(tree, data, total, args.tab, args.replay)
                    for _ in range(args.repeat)
                )
                print(
                    f"| {restarts} | {total:,} | {name} | {cli:.1f} s | {loader:.1f} s "
                    f"| {page:.1f} s | {page / cli:.1f}x | {page / loader:.1f}x |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
