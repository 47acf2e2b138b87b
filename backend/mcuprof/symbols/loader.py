"""Run the ELF reader in a child process: it may crash or spin on a hostile file, and a
child can be killed. Only plain JSON comes back."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import UserError
from .elfparse import ElfProblem, precheck

_WORKER = Path(__file__).with_name("elfparse.py")


# The ELF reader needs several times its input in memory (pyelftools, DWARF tables):
# parses run in parallel only while their inputs together stay under this budget, and a
# larger one runs alone. Six parallel 60 MB uploads then cost one parse, not six.
PARSE_BUDGET_BYTES = 64 << 20
_budget = threading.Condition()
_in_flight = [0]
_mine = threading.local()


@contextlib.contextmanager
def parse_slot(nbytes: int) -> Iterator[None]:
    """Wait until a parse of ``nbytes`` fits the budget. Re-entrant within a thread."""
    if getattr(_mine, "depth", 0):
        _mine.depth += 1
        try:
            yield
        finally:
            _mine.depth -= 1
        return
    nbytes = max(0, int(nbytes))
    with _budget:
        _budget.wait_for(lambda: _in_flight[0] == 0 or _in_flight[0] + nbytes <= PARSE_BUDGET_BYTES)
        _in_flight[0] += nbytes
    _mine.depth = 1
    try:
        yield
    finally:
        _mine.depth = 0
        with _budget:
            _in_flight[0] -= nbytes
            _budget.notify_all()


def _bad(name: str, why: str) -> UserError:
    return UserError(f"{name}: not a readable ELF ({why})")


def parse_elf_bytes(
    data: bytes, name: str, timeout_s: float, vectors: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Plain data from ``elfparse.parse``; UserError (one line) for anything unreadable.
    ``vectors`` asks for the S12Z vector table too (``elfparse.vector_bytes``)."""
    try:
        precheck(data)  # spares a process for files that are obviously not ELFs
    except ElfProblem as exc:
        raise _bad(name, str(exc)) from None
    # -I: the child ignores PYTHON* variables and the working directory, so nothing from
    # the user's environment changes what code parses the file.
    cmd = [sys.executable, "-I", str(_WORKER), f"{timeout_s * 0.5:.3f}"]
    if vectors is not None:
        cmd.append(json.dumps(vectors))
    try:
        with parse_slot(len(data)):
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
