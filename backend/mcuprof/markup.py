"""XML escaping for the SVG writers (export/svg.py, qs/seq_svg.py): a module of its own
below both, so qs/ need not import export/."""

from __future__ import annotations


def escape(text: str) -> str:
    """XML character data: &, < and > as entities (xml.sax.saxutils.escape, without the
    import of urllib that it brings, 40 ms of every export's start)."""
    return text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def quoteattr(text: str) -> str:
    """An XML attribute value with its quotes, as xml.sax.saxutils.quoteattr makes it:
    escaped, line breaks and tabs as character references, in double quotes unless the
    value holds a double quote and no single one."""
    text = escape(text).replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    if '"' not in text:
        return f'"{text}"'
    if "'" not in text:
        return f"'{text}'"
    return '"{}"'.format(text.replace('"', "&quot;"))
