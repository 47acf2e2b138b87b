"""Running the ``mcuprof`` command as a user does, for the QS tests."""

from __future__ import annotations

import subprocess
import sys


def mcuprof(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess[str]:
    """``mcuprof ARGS`` in a subprocess; text output captured."""
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
        **kwargs,
    )
