"""Tags: what build a session is of, and where it ran (``commit=SHA``, ``branch=main``,
``board=nucleo-f4``). They come from the command line (``--tag KEY=VALUE``), the page and
the API, so each is checked here, once, before the store sees it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..errors import UserError

MAX_TAGS = 32  # per session
MAX_TAG_KEY = 64  # characters
MAX_TAG_VALUE = 200  # characters

# Keys are identifiers a shell and a URL carry unquoted; values are any printable text.
_KEY = re.compile(r"[A-Za-z0-9_.\-]+")


def check_tag(key: str, value: str) -> tuple[str, str]:
    """One tag, checked: a one-line UserError names what is wrong."""
    key, value = str(key), str(value)
    if not key or len(key) > MAX_TAG_KEY or not _KEY.fullmatch(key):
        raise UserError(
            f"tag key {key[:MAX_TAG_KEY]!r}: use 1 to {MAX_TAG_KEY} letters, digits, '_', "
            "'.' or '-'"
        )
    if len(value) > MAX_TAG_VALUE:
        raise UserError(f"tag {key}: value longer than {MAX_TAG_VALUE} characters")
    if not value.isprintable():
        raise UserError(f"tag {key}: value holds a control character")
    return key, value


def parse_tag(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (the value may hold '=' and be empty)."""
    key, sep, value = str(text).partition("=")
    if not sep:
        raise UserError(f"tag {text[:MAX_TAG_KEY]!r}: expected KEY=VALUE, such as branch=main")
    return check_tag(key.strip(), value.strip())


def parse_tags(texts: Iterable[str] | None) -> dict[str, str]:
    """``--tag`` options in order; a key given twice keeps its last value."""
    tags: dict[str, str] = {}
    for text in texts or ():
        key, value = parse_tag(text)
        tags[key] = value
    return check_tags(tags)


def check_tags(tags: Mapping[str, str] | None) -> dict[str, str]:
    checked = dict(check_tag(k, v) for k, v in (tags or {}).items())
    if len(checked) > MAX_TAGS:
        raise UserError(f"{len(checked)} tags: at most {MAX_TAGS} per session")
    return checked


def matches(tags: Mapping[str, str], where: Mapping[str, str]) -> bool:
    """Every ``where`` tag present with that value."""
    return all(tags.get(k) == v for k, v in where.items())
