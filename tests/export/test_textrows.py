"""textrows.build writes exactly what Python's own formatting writes, for any numbers,
strings and bytes, and gives each row's length."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcuprof.textrows import (
    Buffer,
    Chars,
    Ints,
    Strings,
    StringTable,
    build,
    join_rows,
    whole_floats,
)

ints = st.lists(st.integers(0, 2**63 - 1), max_size=40)
floats = st.lists(
    st.one_of(
        st.integers(0, 10**16 + 10).map(float),
        st.floats(-1e20, 1e20, allow_nan=False),
    ),
    max_size=40,
)


@given(ints)
def test_ints_as_str(values: list[int]) -> None:
    x = np.array(values, np.int64)
    assert join_rows(len(x), [b"<", Ints(x), b">"]) == "".join(f"<{v}>" for v in values)


@given(floats)
def test_whole_floats_as_repr_or_refused(values: list[float]) -> None:
    v = np.array(values, np.float64)
    got = whole_floats(v)
    whole = all(0 <= f < 1e16 and f == int(f) and repr(f)[0] != "-" for f in values)
    assert (got is not None) == whole
    if got is not None:
        assert join_rows(len(v), [Ints(got), b".0,"]) == "".join(f"{f!r}," for f in values)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([b",{", b'"frame":', b"<<<<<<<<<<<<"]),
            st.lists(
                st.tuples(
                    st.integers(0, 2**63 - 1) | st.integers(0, 12_345),
                    st.integers(0, 4),
                    st.integers(0, 99_999),
                    st.integers(0, 255),
                ),
                max_size=40,
            ),
        ),
        max_size=5,
    )
)
def test_rows_of_mixed_widths(chunks) -> None:
    """Numbers of every width next to each other, names of several lengths (the empty
    one, UTF-8 too) and single bytes (0: none), chunk after chunk in one buffer: the
    same text and row lengths as Python's own."""
    strings = [b"", b"n", b'"ab\\"c"', b"x" * 9, "été".encode()]
    table = StringTable(strings)
    buf = Buffer()
    for lead, rows in chunks:
        big = np.array([r[0] for r in rows], np.int64)
        idx = np.array([r[1] for r in rows], np.int64)
        small = np.array([r[2] for r in rows], np.int64)
        chars = np.array([r[3] for r in rows], np.uint8)
        parts = [lead, Ints(big), Strings(table, idx), Ints(small), b".0", Chars(chars), b"}"]
        text, lengths = build(len(rows), parts, buf, lengths=True)
        want = [
            lead + str(a).encode() + strings[i] + f"{s}.0".encode() + bytes([c] if c else []) + b"}"
            for a, i, s, c in rows
        ]
        assert text.tobytes() == b"".join(want)
        assert lengths.tolist() == [len(w) for w in want]


def test_a_string_with_nul_is_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        StringTable([b"a\0b"])


def test_negative_numbers_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        build(2, [Ints(np.array([1, -1]))])


def test_no_rows() -> None:
    assert build(0, [b"x", Ints(np.zeros(0, np.int64))]).tobytes() == b""
