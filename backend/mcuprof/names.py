"""Display names and colours shared by the views and the exports: one short name and
one colour per function everywhere (frontend/js/format.js mirrors both)."""

from __future__ import annotations

import math
import re

# The last "operator" that begins a name (after a space, "::" or the start), not a
# word that merely ends in it (``cooperator``).
_OPERATOR = re.compile(r"(?:^|[\s:])(operator)\b(?!.*[\s:]operator\b)")


def short_label(name: str) -> str:
    """Drop a C++ parameter list (the last balanced "(...)", maybe followed by
    qualifiers such as " const"): cells are narrow, the tooltip has the full name."""
    end = name.rfind(")")
    if end < 0 or name[end + 1 :].strip() not in (
        "",
        "const",
        "volatile",
        "const volatile",
        "&",
        "&&",
    ):
        return name
    depth = 0
    for i in range(end, -1, -1):
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                return _drop_return_type(name[:i]) if i > 0 else name
    return name


def _drop_return_type(head: str) -> str:
    """``int app::clamp<int>`` -> ``app::clamp<int>``: the last top-level space
    separates a return type (template arguments may hold spaces). An operator's name
    (``operator< <app::Key>``) holds brackets and spaces of its own: the return type
    is looked for before it."""
    m = _OPERATOR.search(head)
    end = m.start(1) if m else len(head)
    depth = 0
    for k in range(end - 1, -1, -1):
        c = head[k]
        if c in ">)":
            depth += 1
        elif c in "<(":
            depth -= 1
        elif c == " " and depth == 0 and not head[:k].endswith("operator"):
            return head[k + 1 :] or head
    return head


def name_colour(name: str) -> str:
    """FNV-1a over the name's code points into a warm hue, as the page's nameColor."""
    h = 2166136261
    for ch in name:
        h ^= ord(ch)
        h = (h * 16777619) & 0xFFFFFFFF
    u = h / 4294967295
    # floor(x + 0.5) is JavaScript's Math.round (Python's round() goes to even).
    hue = 8 + math.floor(u * 42 + 0.5)
    light = 46 + math.floor(((h >> 8) & 0xFF) / 255 * 14 + 0.5)
    return f"hsl({hue}, 78%, {light}%)"
