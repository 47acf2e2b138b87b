"""Exports: one module per format, each ``render(profile, **opts)`` a pure function."""

FORMATS = ("folded", "speedscope", "chrome", "csv", "svg", "callgrind")
