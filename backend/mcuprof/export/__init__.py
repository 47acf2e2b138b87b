"""Exports: one module per format, each a pure function of the profile's tables.

Every format keeps one contract (``Format``): its file name suffix, its media type,
whether its file carries the page's title lines, and one module function
``write(profile, out, window, title)`` that hands the file's bytes to ``out`` a piece at
a time. ``FORMATS`` is the one list of them: the CLI's --format, the web downloads and
the page's Export menu (/api/export/formats) all read it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..profile import Profile, Window

Title = tuple[str, str] | None  # the title line and the subtitle (export/titles.py)

TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass(frozen=True)
class Format:
    name: str  # --format, /api/export/<name>, and the module export/<name>.py
    label: str  # the Export menu's item
    suffix: str  # of the file name
    media: str  # the download's media type
    titled: bool = False  # the file shows the page's title lines (firmware, time, span)

    def write(
        self,
        profile: Profile,
        out: Callable[[bytes], Any],
        window: Window = None,
        title: Title = None,
    ) -> None:
        _module(self.name).write(profile, out, window, title)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "suffix": self.suffix}


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("folded", "Folded stacks", ".folded", TEXT),
        Format("speedscope", "speedscope JSON", ".speedscope.json", JSON),
        Format("chrome", "Chrome trace", ".trace.json", JSON),
        Format("csv", "Functions CSV", ".csv", "text/csv; charset=utf-8"),
        Format("svg", "Flame graph SVG", ".svg", "image/svg+xml", titled=True),
        Format("callgrind", "Callgrind", ".callgrind", TEXT),
    )
}


def _module(fmt: str) -> Any:
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    return importlib.import_module(f"{__name__}.{fmt}")


def render(fmt: str, profile: Profile, window: Window = None) -> str:
    """The profile in one of FORMATS, over ``window`` (µs) or the whole capture."""
    return _module(fmt).render(profile, window=window)


def write(
    fmt: str,
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: Title = None,
) -> None:
    """The format's file as UTF-8, written piece by piece to ``out`` (e.g. a binary
    file's write). The event formats (speedscope, chrome) write ASCII chunk by chunk and
    never hold their whole text; they hand ``out`` views of buffers they reuse once it
    returns, so ``out`` must not keep them. (A writer thread overlapping the file's
    writes with the formatting gained no time on 2 cores: measured, it went.)"""
    _module(fmt)  # a one-line ValueError for a name not in FORMATS
    FORMATS[fmt].write(profile, out, window, title)
