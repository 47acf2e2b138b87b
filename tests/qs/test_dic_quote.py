"""Issue 26 F15: a bad .dic line is quoted cut short, not echoed whole (5 MB as filed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.qs.dicfile import QUOTED_CHARS, DicError, parse_dic


@pytest.mark.parametrize(
    "make",
    [
        lambda junk: f"-v{junk}\n",  # bad option value
        lambda junk: f"{junk}\n",  # unexpected line
        lambda junk: f"Obj-Dic:\n4\n{junk}\n***\n",  # bad entry
    ],
)
def test_a_huge_bad_line_is_quoted_truncated_with_its_length(make) -> None:
    junk = "x" * 5_000_000
    with pytest.raises(DicError) as err:
        parse_dic(make(junk))
    msg = str(err.value)
    assert len(msg) < 200 and "\n" not in msg
    assert "x" * (QUOTED_CHARS - 2) in msg and "characters)" in msg


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_any_dic_text_is_read_or_refused_in_one_short_line(text: str) -> None:
    try:
        parse_dic(text)
    except DicError as exc:
        msg = str(exc)
        assert "\n" not in msg and len(msg) < 200
