"""Differential analysis of two captures: per-function deltas and differential flame
graphs (widths from the newer capture, red grew, blue shrank)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .flame import DiffNode, build_tree, colour, flame_data
    from .profiles import ProfileDiff, diff_profiles
    from .table import (
        Basis,
        FunctionDelta,
        Metric,
        Side,
        capture_span,
        function_deltas,
        pct_change,
    )

__all__ = [
    "Basis",
    "DiffNode",
    "FunctionDelta",
    "Metric",
    "ProfileDiff",
    "Side",
    "build_tree",
    "capture_span",
    "colour",
    "diff_profiles",
    "flame_data",
    "function_deltas",
    "pct_change",
]

# Imported on first use (PEP 562): ``mcuprof sessions`` reads session ids through
# diff.sources and must not pay at start for the whole comparison machinery.
_HOME = {
    "Basis": "table",
    "DiffNode": "flame",
    "FunctionDelta": "table",
    "Metric": "table",
    "ProfileDiff": "profiles",
    "Side": "table",
    "build_tree": "flame",
    "capture_span": "table",
    "colour": "flame",
    "diff_profiles": "profiles",
    "flame_data": "flame",
    "function_deltas": "table",
    "pct_change": "table",
}


__getattr__ = lazy_getattr(__name__, _HOME)
