"""rows.py writes exactly what Python's own formatting writes, for any numbers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.export.rows import Chars, Ints, Scratch, Table, join_rows, render_rows, whole_floats

ints = st.lists(st.integers(0, 2**63 - 1), max_size=40)
floats = st.lists(
    st.one_of(
        st.integers(0, 10**16 + 10).map(float),
        st.floats(-1e20, 1e20, allow_nan=False),
    ),
    max_size=40,
)


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(ints)
def test_ints_as_str(values: list[int]) -> None:
    x = np.array(values, np.int64)
    assert join_rows(len(x), [b"<", Ints(x), b">"]) == "".join(f"<{v}>" for v in values)


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(floats)
def test_whole_floats_as_repr_or_refused(values: list[float]) -> None:
    v = np.array(values, np.float64)
    col = whole_floats(v)
    whole = all(0 <= f < 1e16 and f == int(f) and repr(f)[0] != "-" for f in values)
    assert (col is not None) == whole
    if col is not None:
        assert join_rows(len(v), [col, b","]) == "".join(f"{f!r}," for f in values)


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(st.lists(st.integers(0, 2), max_size=30), st.lists(st.integers(0, 99), max_size=30))
def test_table_and_chars(index: list[int], codes: list[int]) -> None:
    n = min(len(index), len(codes))
    strings = [b'{"name":"a\\u0000"', b"", b"xyz"]
    chars = np.array([ord("A") + c % 26 for c in codes[:n]], np.uint8)
    idx = np.array(index[:n], np.int64)
    got = join_rows(n, [Table(strings, idx), Chars(chars), b";"])
    want = "".join(strings[i].decode() + chr(c) + ";" for i, c in zip(idx, chars, strict=True))
    assert got == want


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**63 - 1) | st.integers(0, 12_345),
            st.integers(0, 4),
            st.integers(0, 99_999),
            st.integers(0, 255),
        ),
        max_size=60,
    ),
    st.sampled_from([b"", b"a", b'"x":']),
)
def test_rows_of_mixed_widths(rows, lead) -> None:
    """Numbers of every width next to each other, at the start of a row or after a few
    bytes (where a short number's word would reach before the row), names of several
    lengths (the empty one too) and single bytes: the same text as Python's own."""
    strings = [b"", b"n", b'"ab\\"c"', b"x" * 9, b"\xc3\xa9t\xc3\xa9"]
    big = np.array([r[0] for r in rows], np.int64)
    idx = np.array([r[1] for r in rows], np.int64)
    small = np.array([r[2] for r in rows], np.int64)
    chars = np.array([r[3] for r in rows], np.uint8)
    parts = [lead, Ints(big), Table(strings, idx), Ints(small, b".0"), Chars(chars), b"}"]
    got = render_rows(len(rows), parts).tobytes()
    want = b"".join(
        lead + str(a).encode() + strings[i] + f"{s}.0".encode() + bytes([c]) + b"}"
        for a, i, s, c in rows
    )
    assert got == want


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(
    st.lists(
        st.tuples(st.integers(0, 300), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1)),
        max_size=40,
    )
)
def test_many_combinations_of_widths(rows) -> None:
    """Names of 0-300 bytes between numbers of 1-19 digits: more combinations of widths
    than a 16-bit code numbers, so only those present are."""
    strings = [b"n" * k for k in range(301)]
    idx = np.array([r[0] for r in rows], np.int64)
    a = np.array([r[1] for r in rows], np.int64)
    b = np.array([r[2] for r in rows], np.int64)
    got = render_rows(len(rows), [Ints(a), b",", Table(strings, idx), Ints(b), b";"]).tobytes()
    want = b"".join(
        str(x).encode() + b"," + strings[i] + str(y).encode() + b";" for i, x, y in rows
    )
    assert got == want


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(
    st.lists(
        st.tuples(
            st.sampled_from([b"", b"a", b'"x":', b"<<<<<<"]),
            st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 3)), max_size=30),
        ),
        max_size=8,
    )
)
def test_one_scratch_for_chunk_after_chunk(chunks) -> None:
    """A scratch reused for chunk after chunk (its block keeps the last template, taller
    or shorter than the next chunk's, the same or another one) gives each chunk the text
    a fresh one gives, as the trace exports use it."""
    strings = [b"", b"nm", b"xyz", b"q"]
    scratch = Scratch()
    for lead, rows in chunks:
        v = np.array([r[0] for r in rows], np.int64)
        idx = np.array([r[1] for r in rows], np.int64)
        chars = np.array([65 + r[1] for r in rows], np.uint8)
        parts = [lead, Ints(v), b",", Chars(chars), Table(strings, idx), b"}"]
        got = render_rows(len(rows), parts, scratch).tobytes()
        want = b"".join(
            lead + str(x).encode() + b"," + bytes([65 + i]) + strings[i] + b"}" for x, i in rows
        )
        assert got == want


@settings(deadline=None)  # no timing in tests: a busy machine failed them on time
@given(
    st.lists(
        st.tuples(
            st.sampled_from([b",{", b'"frame":', b"<<<<<<<<<<<<<<<<<<<<<<<"]),
            st.integers(0, 2),  # largest number: 4, 7 or 19 digits at most
            st.lists(
                st.tuples(
                    st.integers(0, 2**63 - 1),
                    st.integers(0, 99),
                    st.integers(0, 3),
                    st.integers(65, 90),
                ),
                min_size=1,
                max_size=40,
            ),
        ),
        max_size=6,
    )
)
def test_one_column_of_many_widths(chunks) -> None:
    """Rows where one column only, of numbers, varies in width (the speedscope events
    of frames numbered past 9): formatted padded and scattered into place, with the
    columns before it (a byte, a number of one width, a name of one length) taken from
    the next row; the text is Python's, chunk after chunk with one scratch."""
    strings = [b"ab", b"cd", b"e\\", b"zz"]
    scratch = Scratch()
    for pre, size, rows in chunks:
        top = (10**4, 10**7, 2**63)[size]
        v = np.array([r[0] % top for r in rows], np.int64)
        two = np.array([10 + r[1] % 90 for r in rows], np.int64)  # two digits each
        idx = np.array([r[2] for r in rows], np.int64)
        chars = np.array([r[3] for r in rows], np.uint8)
        parts = [b"{", Chars(chars), Ints(two), Table(strings, idx), pre, Ints(v), b",9}"]
        got = render_rows(len(rows), parts, scratch).tobytes()
        want = b"".join(
            b"{" + bytes([c]) + str(t).encode() + strings[i] + pre + str(x).encode() + b",9}"
            for x, t, i, c in zip(
                v.tolist(), two.tolist(), idx.tolist(), chars.tolist(), strict=True
            )
        )
        assert got == want


def test_blocks_after_others_are_dropped() -> None:
    """A scratch that dropped all blocks but one (as a chunk formatted in one block
    does) names the next ones apart from it: each template keeps its own rows."""
    scratch = Scratch()
    for row in (b"aa", b"bb", b"cc"):
        scratch.block(3, row)
    scratch.drop_blocks_but(b"cc")
    for row in (b"dd", b"ee", b"cc", b"dd"):
        assert scratch.block(3, row).tobytes() == row * 3
