"""Exports: one module per format, each ``render(profile, **opts)`` a pure function."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..profile import Profile, Window

FORMATS = ("folded", "speedscope", "chrome", "csv", "svg", "callgrind")


def _module(fmt: str) -> Any:
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    return importlib.import_module(f"{__name__}.{fmt}")


def render(fmt: str, profile: Profile, window: Window = None) -> str:
    """The profile in one of FORMATS, over ``window`` (µs) or the whole capture."""
    return _module(fmt).render(profile, window=window)


def write(fmt: str, profile: Profile, out: Callable[[bytes], Any], window: Window = None) -> None:
    """``render`` as UTF-8, written piece by piece to ``out`` (e.g. a binary file's
    write). The event formats (speedscope, chrome) write ASCII chunk by chunk and never
    hold their whole text; they hand ``out`` views of buffers they reuse once it returns,
    so ``out`` must not keep them. (A writer thread overlapping the file's writes with
    the formatting gained no time on 2 cores: measured, it went.)"""
    module = _module(fmt)
    if fmt in ("speedscope", "chrome"):  # their ``write`` takes bytes
        module.write(profile, out, window=window)
    elif hasattr(module, "write_utf8"):  # makes its bytes itself
        module.write_utf8(profile, out, window=window)
    else:
        out(module.render(profile, window=window).encode("utf-8"))
