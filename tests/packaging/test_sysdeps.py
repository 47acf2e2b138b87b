"""scripts/install-sysdeps.sh waits, bounded and saying so, while another package
manager holds its lock. A lock file in a temporary folder stands in for dpkg's: the
test never runs apt."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-sysdeps.sh"

pytestmark = pytest.mark.timeout(120)


def _run(lock: Path, wait_s: int) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "SYSDEPS_LOCKS": f"{lock} {lock.parent / 'absent'}"}
    env["SYSDEPS_LOCK_WAIT"] = str(wait_s)
    began = time.monotonic()
    result = subprocess.run(
        ["bash", str(SCRIPT), "wait"], capture_output=True, text=True, env=env, timeout=60
    )
    return result, time.monotonic() - began


def _hold(lock: Path) -> subprocess.Popen[str]:
    """Take the lock the way dpkg does (an fcntl write lock), in another process, since
    fcntl locks never conflict within one. It is held until the process's stdin closes."""
    proc = subprocess.Popen(
        [
            "python3",
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_free_package_manager_is_not_waited_for(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    lock.touch()
    result, took = _run(lock, 5)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and took < 5


def test_a_held_lock_is_waited_for_and_gives_up_with_a_clear_message(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    holder = _hold(lock)
    try:
        result, took = _run(lock, 2)
    finally:
        holder.communicate("")
    assert result.returncode == 1
    assert 2 <= took < 30
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (
        f"install-sysdeps: another package manager holds {lock}; waiting up to 2 s for it to finish"
    )
    assert lines[-1].startswith(f"install-sysdeps: gave up after 2 s: {lock} is still held")
    assert "SYSDEPS_LOCK_WAIT" in lines[-1]


def test_the_install_goes_on_once_the_lock_is_released(tmp_path: Path) -> None:
    """The lock is let go once the script says it waits (not after a fixed time: on a
    loaded machine the script may look only after a timer has already let go)."""
    lock = tmp_path / "lock-frontend"
    holder = _hold(lock)
    env = {**os.environ, "SYSDEPS_LOCKS": f"{lock} {lock.parent / 'absent'}"}
    env["SYSDEPS_LOCK_WAIT"] = "30"
    script = subprocess.Popen(
        ["bash", str(SCRIPT), "wait"], stderr=subprocess.PIPE, text=True, env=env
    )
    assert script.stderr is not None
    try:
        first = script.stderr.readline()
        holder.communicate("")
        rest = script.stderr.read()
        assert script.wait(timeout=60) == 0, first + rest
    finally:
        script.kill()
        holder.kill()
    assert "waiting up to 30 s" in first
    assert rest.startswith("install-sysdeps: the package manager is free after"), rest
