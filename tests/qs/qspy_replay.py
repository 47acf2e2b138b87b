"""Replay front-end datagrams through a QSPY-like host to a fake target and keep the
bytes the target receives, phase by phase (a new target connection per phase).

Run as a program, it starts the real ``qspy`` first (inside ``unshare -n`` the only
network is a private loopback, so QSPY's all-interface ports reach nobody else):
    python qspy_replay.py QSPY_BINARY SCRIPT.json OUT.json
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from qsfe import FakeTarget, FrontEnd, wait_for

ATTACHED = 0x80
TARGET_INFO = 64
BY_NAME = (0x87, 0x88, 0x89)  # front-end records the host turns into target commands


def replay(tport: int, uport: int, hello: bytes, phases: list[list[bytes]]) -> list[str]:
    """Per phase, the hex of everything the fake target received; last, the hex of the
    front end's binary-channel packets (the target's records as the host forwards them)."""
    fe = FrontEnd(uport)
    received = []
    try:

        def attached() -> bool:
            if any(p[1:2] == b"\x80" for p in fe.packets):
                return True
            fe.send(bytes([ATTACHED, 0x03]))  # again, until the host has its port open
            time.sleep(0.2)
            return False

        wait_for(attached, "the attach answer")
        for n, datagrams in enumerate(phases, 1):
            target = FakeTarget(tport, hello)
            try:
                wait_for(lambda n=n: _infos(fe) >= n, "the target info on the binary channel")
                for d in datagrams:
                    fe.send(d)
                    time.sleep(0.05)  # one at a time, as a user clicks
                expected = sum(1 for d in datagrams if d[0] < 0x80 or d[0] in BY_NAME)
                wait_for(lambda t=target, e=expected: len(t.frames()) >= e, "the frames", 30)
                received.append(bytes(target.received).hex())
            finally:
                target.close()
            time.sleep(0.5)  # the host sees the connection end before the next one comes
        received.append("".join(p.hex() + "\n" for p in fe.binaries()))
        received.append("\n".join(fe.texts()))
    finally:
        fe.close()
    return received


def _infos(fe: FrontEnd) -> int:
    return sum(1 for p in fe.binaries() if p[1] == TARGET_INFO)


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(qspy: str, script: str, out: str) -> None:
    spec = json.loads(Path(script).read_text())
    if spec.get("private_net"):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        tport, uport = 6601, 7701
    else:
        tport, uport = _free_port(socket.SOCK_STREAM), _free_port(socket.SOCK_DGRAM)
    log = open(out + ".txt", "wb")  # noqa: SIM115  QSPY's output, to see what went wrong
    proc = subprocess.Popen(
        [qspy, "-k", "-r", "c0", f"-t{tport}", f"-u{uport}"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        phases = [[bytes.fromhex(d) for d in phase] for phase in spec["phases"]]
        result = replay(tport, uport, bytes.fromhex(spec["hello"]), phases)
    finally:
        proc.kill()
        proc.wait()
        log.close()
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:4])
