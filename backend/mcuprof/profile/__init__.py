"""The profile model: record store, call-tree reconstruction and aggregates. tables.py
describes the model (its call and stack tables, with a worked example)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .frames import UNKNOWN
    from .load import load_capture
    from .model import Profile, Window
    from .trees import TreeNode, prune

__all__ = [
    "UNKNOWN",
    "Profile",
    "TreeNode",
    "Window",
    "load_capture",
    "prune",
]

# Imported on first use (PEP 562): a command that needs one module (``mcuprof info``
# needs the span) does not pay at start for the whole model.
_HOME = {
    "UNKNOWN": "frames",
    "load_capture": "load",
    "Profile": "model",
    "Window": "model",
    "TreeNode": "trees",
    "prune": "trees",
}


__getattr__ = lazy_getattr(__name__, _HOME)
