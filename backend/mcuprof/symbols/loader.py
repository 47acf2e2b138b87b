"""Run the ELF reader in a child process: it may crash or spin on a hostile file, and a
child can be killed. Only plain JSON comes back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import UserError
from .elfparse import ElfProblem, precheck

_WORKER = Path(__file__).with_name("elfparse.py")


def _bad(name: str, why: str) -> UserError:
    return UserError(f"{name}: not a readable ELF ({why})")


def parse_elf_bytes(data: bytes, name: str, timeout_s: float) -> dict[str, Any]:
    """Plain data from ``elfparse.parse``; UserError (one line) for anything unreadable."""
    try:
        precheck(data)  # spares a process for files that are obviously not ELFs
    except ElfProblem as exc:
        raise _bad(name, str(exc)) from None
    # -I: the child ignores PYTHON* variables and the working directory, so nothing from
    # the user's environment changes what code parses the file.
    cmd = [sys.executable, "-I", str(_WORKER), f"{timeout_s * 0.5:.3f}"]
    try:
        proc = subprocess.run(cmd, input=data, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise _bad(name, f"gave up after {timeout_s:g} s") from None
    except OSError as exc:
        raise UserError(f"{name}: cannot start the ELF reader ({exc.strerror or exc})") from None
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"reader exited with status {proc.returncode}"
        raise _bad(name, " ".join(why.split())[:160]) from None
    if not result.get("ok"):
        raise _bad(name, str(result.get("error", "unknown error")))
    return result
