"""Properties: any program flow survives encoder -> bytes in any split -> decoder; any
bytes at all decode the same whatever the split, with every byte accounted for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.protocol.s12z import LENGTH, BadLine, LineDecoder, LineFormat, Lines, decode_trace
from mcuprof.protocol.s12z.layout import LENGTH_BY_INFO
from mcuprof.s12z.flow import (
    Branch,
    End,
    Error,
    Interrupt,
    Jump,
    Start,
    Step,
    encode_flow,
    flow_of,
)

addresses = st.integers(0, 0xFFFFFF)
indirect = st.one_of(
    st.builds(Jump, addresses),
    st.builds(Interrupt, st.integers(0, 255), st.integers(0, 131_071)),
)
branches = st.lists(st.booleans(), max_size=70).map(lambda bs: [Branch(b) for b in bs])


@st.composite
def flows(draw: st.DrawFn) -> list[Step]:
    steps: list[Step] = []
    if draw(st.booleans()):
        steps.append(Start(draw(addresses)))
    for _ in range(draw(st.integers(0, 12))):
        steps += draw(branches)
        steps.append(draw(indirect))
        if draw(st.integers(0, 5)) == 0:
            steps.append(Error(draw(st.integers(0, 15))))
            steps.append(Start(draw(addresses)))  # a PTS after the error carries the end flag
        if draw(st.integers(0, 7)) == 0:
            steps.append(Start(draw(addresses)))
    if draw(st.booleans()):
        steps += [Branch(b) for b in draw(st.lists(st.booleans(), min_size=31, max_size=31))]
    elif steps and draw(st.booleans()):
        steps.append(End(draw(st.sampled_from(["term", "tbovf"]))))
    return steps


def split_feed(data: bytes, cuts: list[int]) -> tuple[list, LineDecoder]:
    dec = LineDecoder()
    events = []
    at = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        events += dec.feed(data[at:cut] if cut >= at else b"")
        at = max(at, cut)
    events += dec.feed(data[at:])
    events += dec.close()
    return events, dec


def lines_of(events: list) -> list:
    return [x for e in events for x in (e if isinstance(e, Lines) else [e])]


@settings(max_examples=200)
@given(flows(), st.lists(st.integers(0, 10_000), max_size=12))
def test_flow_round_trips_for_any_split(steps: list[Step], cuts: list[int]) -> None:
    data = encode_flow(steps)
    events, dec = split_feed(data, cuts)
    assert flow_of(events) == steps
    assert dec.stats.reserved == dec.stats.malformed == dec.stats.truncated == 0
    # Same COF sequence, destinations and vectors, counted the way the decoder counts.
    decoded = lines_of(events)
    assert [c for line in decoded for c in line.cofs] == [
        s.taken for s in steps if isinstance(s, Branch)
    ]
    assert [line.address for line in decoded if line.format == LineFormat.PTIB] == [
        s.dest for s in steps if isinstance(s, Jump)
    ]
    assert [line.vector for line in decoded if line.format == LineFormat.PTVB] == [
        s.vector for s in steps if isinstance(s, Interrupt)
    ]


def reference_lines(data: bytes) -> list[tuple[int, int]]:
    """The obvious sequential walk: (offset, length) of every complete line."""
    out, p = [], 0
    while p < len(data):
        n = int(LENGTH_BY_INFO[data[p]])
        if p + n > len(data):
            break
        out.append((p, n))
        p += n
    return out


@settings(max_examples=200)
@given(st.binary(max_size=3000), st.lists(st.integers(0, 5000), max_size=10))
def test_any_bytes_any_split_same_lines_every_byte_accounted(data: bytes, cuts: list[int]) -> None:
    whole, stats = decode_trace(data)
    events, dec = split_feed(data, cuts)
    got = lines_of(events)
    assert got == lines_of(whole)
    assert dec.stats.as_dict() == stats.as_dict()
    # Line boundaries agree with the sequential walk, and bytes are all accounted for.
    ref = reference_lines(data)
    complete = [x for x in got if not (isinstance(x, BadLine) and x.kind == "truncated")]
    assert [x.offset for x in complete] == [o for o, _ in ref]
    size = sum(len(x.raw) if isinstance(x, BadLine) else LENGTH[x.format] for x in got)
    assert size == len(data)
    counted = stats.good + stats.reserved + stats.malformed + stats.truncated
    assert counted == len(got)


def test_long_stream_crosses_many_blocks() -> None:
    """Lines of every length straddle the decoder's 512-byte blocks."""
    import random

    rng = random.Random(5)
    steps: list[Step] = [Start(0xFE0000)]
    for _ in range(5000):
        steps += [Branch(rng.random() < 0.5) for _ in range(rng.randrange(0, 40))]
        steps.append(
            Jump(rng.randrange(1 << 24))
            if rng.random() < 0.7
            else Interrupt(rng.randrange(256), rng.randrange(131_072))
        )
        if rng.random() < 0.05:
            steps.append(Error(rng.randrange(16)))
            steps.append(Start(rng.randrange(1 << 24)))
    data = encode_flow(steps)
    assert len(data) > 20 * 512
    events, stats = decode_trace(data)
    assert flow_of(events) == steps
    assert stats.bytes == len(data)
