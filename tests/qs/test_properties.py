"""Property tests for the QS framer and decoder (hypothesis)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import (
    BadFrame,
    ByteFramer,
    Discontinuity,
    Framer,
    QSDecoder,
    QSFrame,
    Record,
    encode_frame,
)

SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])

# Bytes that matter to the framing, and others.
special = st.sampled_from([0x7E, 0x7D, 0x5E, 0x5D, 0x00, 0xFF, 0x01, 0x64])
noisy_bytes = st.lists(st.one_of(special, st.integers(0, 255)), max_size=300).map(bytes)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in pairwise(edges)]


def feed_all(decoder, chunks: list[bytes]) -> list:
    out = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.close()


@SETTINGS
@given(cuts=st.lists(st.integers(0, 30_000), max_size=40))
def test_any_split_of_the_reference_gives_the_same_events(capture, cuts):
    whole = QSDecoder().feed(capture)
    assert feed_all(QSDecoder(), split(capture, cuts)) == whole


@SETTINGS
@given(data=noisy_bytes, cuts=st.lists(st.integers(0, 400), max_size=8))
def test_framer_matches_byte_at_a_time_parser_on_any_bytes(data, cuts):
    expected = ByteFramer().feed(data)
    assert Framer().feed(data) == expected
    assert feed_all(Framer(), split(data, cuts)) == expected


@SETTINGS
@given(data=noisy_bytes, cuts=st.lists(st.integers(0, 400), max_size=8))
def test_decoder_never_raises_and_split_does_not_matter(data, cuts):
    whole = feed_all(QSDecoder(), [data])  # with close: a tail after a flag is judged
    assert feed_all(QSDecoder(), split(data, cuts)) == whole
    for event in whole:
        assert isinstance(event, Record | BadFrame | Discontinuity) or event.message


@SETTINGS
@given(
    payloads=st.lists(
        st.tuples(st.integers(1, 127), st.binary(max_size=24)), min_size=5, max_size=40
    ),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), min_size=1, max_size=4),
)
def test_bit_flips_lose_only_the_frames_they_touch(payloads, flips):
    wire = [encode_frame(i + 1, rec, p) for i, (rec, p) in enumerate(payloads)]
    stream = bytearray(b"".join(wire))
    # Frame k owns its bytes up to and including its closing flag.
    owner = [k for k, w in enumerate(wire) for _ in w]
    touched = set()
    for pos, bit in flips:
        pos %= len(stream)
        stream[pos] ^= 1 << bit
        k = owner[pos]
        # A damaged flag or a new escape before it can also merge in the next frame.
        touched |= {k, k + 1}
    got = [e for e in Framer().feed(bytes(stream)) if isinstance(e, QSFrame)]
    survivors = {(f.seq, f.rec, f.raw) for f in got}
    first_intact = min(set(range(len(wire))) - touched, default=None)
    for k, (rec, p) in enumerate(payloads):
        if k in touched or first_intact is None or k < first_intact:
            continue
        raw = bytes((k + 1, rec)) + p
        raw += bytes(((~sum(raw)) & 0xFF,))
        assert (k + 1, rec, raw) in survivors, f"untouched frame {k} lost"
    assert len(got) <= len(wire) + 2 * len(flips)


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_columns_and_records_agree_on_any_bytes(data):
    records = {e.index: e for e in QSDecoder().feed(data) if isinstance(e, Record)}
    batch = QSDecoder().feed_columns(data)
    for table in batch.tables.values():
        for index, row in zip(table.index.tolist(), table.fields.tolist(), strict=True):
            assert records[index].values == tuple(row)
