"""Package attributes imported on first use (PEP 562), so a command pays at start only
for the modules it touches."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_getattr(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``package.<homes[name]>`` when ``name`` is
    first asked for, and keeps the value in the package so it is asked only once."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{homes[name]}", package), name)
        vars(importlib.import_module(package))[name] = value
        return value

    return __getattr__
