"""Exports: one module per format, each ``render(profile, **opts)`` a pure function."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..profile import Profile, Window

FORMATS = ("folded", "speedscope", "chrome", "csv", "svg", "callgrind")


def render(fmt: str, profile: Profile, window: Window = None) -> str:
    """The profile in one of FORMATS, over ``window`` (µs) or the whole capture."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    return importlib.import_module(f"{__name__}.{fmt}").render(profile, window=window)


def write(fmt: str, profile: Profile, out: Callable[[bytes], Any], window: Window = None) -> None:
    """``render`` as UTF-8, written piece by piece to ``out`` (e.g. a binary file's
    write): the event formats (speedscope, chrome) write ASCII bytes chunk by chunk and
    never hold their whole text in memory (``out`` must not keep what it is handed:
    their buffers are reused once it returns)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    module = importlib.import_module(f"{__name__}.{fmt}")
    if fmt in _BYTES:
        from .sink import Sink

        sink = Sink(out)
        try:
            module.write(profile, sink.write, window=window)
        finally:
            sink.close()
    elif hasattr(module, "write_utf8"):  # makes its bytes itself
        module.write_utf8(profile, out, window=window)
    elif hasattr(module, "write"):
        module.write(profile, lambda text: out(text.encode("utf-8")), window=window)
    else:
        out(module.render(profile, window=window).encode("utf-8"))


_BYTES = ("speedscope", "chrome")  # formats whose ``write`` takes bytes
