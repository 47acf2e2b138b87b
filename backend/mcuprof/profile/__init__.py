"""The profile model: record store, call-tree reconstruction and aggregates."""

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
