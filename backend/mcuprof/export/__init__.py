"""Exports: one module per format, each ``render(profile, **opts)`` a pure function."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..profile import Profile, Window

FORMATS = ("folded", "speedscope", "chrome", "csv", "svg", "callgrind")


def render(fmt: str, profile: Profile, window: Window = None) -> str:
    """The profile in one of FORMATS, over ``window`` (µs) or the whole capture."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    return importlib.import_module(f"{__name__}.{fmt}").render(profile, window=window)
