"""The profile model: record store, call-tree reconstruction and aggregates."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aggregate import FunctionStat
    from .frames import UNKNOWN, Frame
    from .load import LoadResult, load_capture
    from .model import Profile, Window
    from .trees import TreeNode, prune

__all__ = [
    "UNKNOWN",
    "Frame",
    "FunctionStat",
    "LoadResult",
    "Profile",
    "TreeNode",
    "Window",
    "load_capture",
    "prune",
]

# Imported on first use (PEP 562): a command that needs one module (``mcuprof info``
# needs the span) does not pay at start for the whole model.
_HOME = {
    "FunctionStat": "aggregate",
    "UNKNOWN": "frames",
    "Frame": "frames",
    "LoadResult": "load",
    "load_capture": "load",
    "Profile": "model",
    "Window": "model",
    "TreeNode": "trees",
    "prune": "trees",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value
