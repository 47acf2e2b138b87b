"""Properties the streaming decoder must keep on any input."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol import (
    MAX_PACKET_SIZE,
    RECORD_DTYPE,
    ProfileData,
    ResponseDecoder,
    ResponseEvent,
    decode_stream,
    encode_event,
)
from tests.protocol.conftest import events_st

FAST = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def feed_in_pieces(stream: bytes, cuts: list[int]) -> tuple[list[ResponseEvent], dict]:
    decoder = ResponseDecoder()
    events: list[ResponseEvent] = []
    last = 0
    for cut in sorted(set(cuts)):
        events += decoder.feed(stream[last:cut])
        last = cut
    events += decoder.feed(stream[last:])
    events += decoder.close()
    assert decoder.max_buffered <= MAX_PACKET_SIZE
    return events, decoder.stats.as_dict()


@FAST
@given(st.lists(events_st, max_size=12), st.data())
def test_any_split_yields_the_same_events(events: list[ResponseEvent], data: st.DataObject) -> None:
    stream = b"".join(encode_event(e) for e in events)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
    whole, whole_stats = feed_in_pieces(stream, [])
    split, split_stats = feed_in_pieces(stream, cuts)
    assert whole == events
    assert split == events
    assert split_stats == whole_stats


@FAST
@given(st.lists(events_st, max_size=6))
def test_one_byte_at_a_time_equals_all_at_once(events: list[ResponseEvent]) -> None:
    stream = b"".join(encode_event(e) for e in events)
    bytewise, bytewise_stats = feed_in_pieces(stream, list(range(len(stream))))
    whole, whole_stats = feed_in_pieces(stream, [])
    assert bytewise == whole == events
    assert bytewise_stats == whole_stats


@FAST
@given(st.lists(st.tuples(st.binary(max_size=40), events_st), max_size=10), st.binary(max_size=40))
def test_garbage_between_packets_loses_no_intact_packet(
    pairs: list[tuple[bytes, ResponseEvent]], tail: bytes
) -> None:
    stream = b"".join(junk + encode_event(event) for junk, event in pairs) + tail
    events, stats = decode_stream(stream)
    assert events == [event for _, event in pairs]
    good = sum(len(encode_event(event)) for _, event in pairs)
    assert stats.skipped_bytes == len(stream) - good


@FAST
@given(st.lists(events_st, min_size=1, max_size=10), st.data())
def test_a_flipped_bit_loses_only_the_packet_it_hit(
    events: list[ResponseEvent], data: st.DataObject
) -> None:
    packets = [encode_event(e) for e in events]
    stream = bytearray(b"".join(packets))
    at = data.draw(st.integers(0, len(stream) - 1))
    stream[at] ^= 1 << data.draw(st.integers(0, 7))
    hit, offset = 0, 0
    while offset + len(packets[hit]) <= at:
        offset += len(packets[hit])
        hit += 1
    decoded, stats = decode_stream(bytes(stream))
    assert decoded == events[:hit] + events[hit + 1 :]
    assert stats.skipped_bytes == len(packets[hit])


@FAST
@given(st.lists(st.binary(max_size=3000), max_size=8))
def test_random_bytes_raise_nothing_and_stay_bounded(chunks: list[bytes]) -> None:
    decoder = ResponseDecoder()
    for chunk in chunks:
        decoder.feed(chunk)
    decoder.close()
    assert decoder.max_buffered <= MAX_PACKET_SIZE
    assert decoder.buffered == 0
    assert decoder.stats.bytes == sum(map(len, chunks))


@settings(max_examples=20)
@given(st.integers(1, 5), st.integers(1, 200_000))
def test_headers_claiming_huge_lengths_never_grow_the_buffer(repeat: int, chunk: int) -> None:
    # A PROFILE_DATA header with a plausible maximal length and an unsupported
    # version: the decoder has to wait for its whole body before it can reject it.
    false_header = bytes.fromhex("AA 55 05") + (MAX_PACKET_SIZE - 8).to_bytes(2, "little")
    stream = (false_header + b"\x07" + bytes(MAX_PACKET_SIZE)) * repeat
    decoder = ResponseDecoder()
    for i in range(0, len(stream), chunk):
        decoder.feed(stream[i : i + chunk])
        assert decoder.buffered <= MAX_PACKET_SIZE
    decoder.close()
    assert decoder.max_buffered <= MAX_PACKET_SIZE
    assert decoder.stats.malformed + decoder.stats.crc_errors >= repeat


@FAST
@given(
    st.integers(5, 40),
    st.integers(0, 12),
    st.integers(0, 2**32 - 1),
    st.data(),
)
def test_runs_of_same_sized_packets_survive_splits_and_a_flipped_bit(
    n_packets: int, per_packet: int, seed: int, data: st.DataObject
) -> None:
    # Long runs of identical headers take the decoder's batched path; it must give
    # exactly what packet-by-packet decoding gives, wherever the stream is cut or hit.
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(n_packets, per_packet * 14), dtype=np.uint8)
    events = [ProfileData(row.view(RECORD_DTYPE)) for row in raw]
    packets = [encode_event(e) for e in events]
    stream = bytearray(b"".join(packets))
    hit = None
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(stream) - 1))
        stream[at] ^= 1 << data.draw(st.integers(0, 7))
        hit = at // len(packets[0])
    expected = [e for i, e in enumerate(events) if i != hit]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    whole, whole_stats = feed_in_pieces(bytes(stream), [])
    split, split_stats = feed_in_pieces(bytes(stream), cuts)
    assert whole == expected
    assert split == expected
    assert split_stats == whole_stats
    assert whole_stats["records"] == per_packet * len(expected)


# A false header: PROFILE_DATA claiming 4,680 records (a 65,531-byte packet) whose body
# never comes. Fed live, it holds back every packet behind it until 64 KiB more arrive.
FALSE_HEADER = bytes([0xAA, 0x55, 0x05]) + (3 + 4680 * 14).to_bytes(2, "little") + b"\x01"
FALSE_HEADER += (4680).to_bytes(2, "little")


@FAST
@given(
    st.lists(st.tuples(st.binary(max_size=40), events_st, st.booleans()), max_size=10),
    st.binary(max_size=40),
    st.data(),
)
def test_closing_when_idle_delivers_every_intact_packet_once(
    items: list[tuple[bytes, ResponseEvent, bool]], tail: bytes, data: st.DataObject
) -> None:
    # The link goes quiet after some packets (False/True per packet): there close()
    # judges what waits, then bytes keep coming on the same decoder.
    decoder = ResponseDecoder()
    got: list[ResponseEvent] = []
    pending = b""
    for junk, event, idle_after in items:
        pending += data.draw(st.sampled_from([b"", FALSE_HEADER])) + junk + encode_event(event)
        if idle_after:
            got += decoder.feed(pending)
            got += decoder.close()
            assert decoder.buffered == 0
            pending = b""
    got += decoder.feed(pending + tail)
    got += decoder.close()
    assert got == [event for _, event, _ in items]


def test_a_false_header_holds_back_nothing_once_closed() -> None:
    packets = [encode_event(ProfileData(np.zeros(5, dtype=RECORD_DTYPE))) for _ in range(20)]
    decoder = ResponseDecoder()
    assert decoder.feed(FALSE_HEADER + b"".join(packets)) == []  # all waiting on the header
    flushed = decoder.close()
    assert len(flushed) == 20 and decoder.buffered == 0
    # Feeding goes on: the next packet is decoded once, nothing from before comes again.
    assert len(decoder.feed(packets[0])) == 1 and decoder.close() == []


@FAST
@given(st.lists(events_st, max_size=10), st.data())
def test_closing_anywhere_never_decodes_a_packet_twice(
    events: list[ResponseEvent], data: st.DataObject
) -> None:
    # Idle flushes may fall inside a packet (a device that paused mid-packet): that packet
    # may be lost, but what comes out is always the sent packets, in order, each once.
    stream = FALSE_HEADER + b"".join(encode_event(e) for e in events)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=6))))
    decoder = ResponseDecoder()
    got: list[ResponseEvent] = []
    last = 0
    for cut in [*cuts, len(stream)]:
        got += decoder.feed(stream[last:cut])
        got += decoder.close()
        last = cut
    it = iter(events)
    assert all(any(e == sent for sent in it) for e in got)  # an in-order subsequence


def _batched(events: list[ResponseEvent]) -> list[object]:
    """Events with back-to-back ProfileData merged, as ``batch=True`` promises."""
    out: list[object] = []
    for e in events:
        if isinstance(e, ProfileData) and out and isinstance(out[-1], list):
            out[-1].append(e.records.tobytes())
        elif isinstance(e, ProfileData):
            out.append([e.records.tobytes()])
        else:
            out.append(e)
    return [b"".join(x) if isinstance(x, list) else x for x in out]


@FAST
@given(
    st.lists(st.tuples(st.binary(max_size=30), events_st), max_size=12),
    st.integers(0, 40),
    st.data(),
)
def test_batch_mode_gives_the_same_records_and_counts(
    items: list[tuple[bytes, ResponseEvent]], run: int, data: st.DataObject
) -> None:
    # Garbage, any events, and a run of same-sized packets (the batched path), cut anywhere.
    rng = np.random.default_rng(run)
    raw = rng.integers(0, 256, size=(run, 20 * 14), dtype=np.uint8)
    runs = [encode_event(ProfileData(row.view(RECORD_DTYPE))) for row in raw]
    stream = b"".join(g + encode_event(e) for g, e in items) + b"".join(runs)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=6))))
    results = []
    for batch in (False, True):
        decoder = ResponseDecoder(batch=batch)
        events: list[ResponseEvent] = []
        last = 0
        for cut in [*cuts, len(stream)]:
            events += decoder.feed(stream[last:cut])
            last = cut
        events += decoder.close()
        results.append((events, decoder.stats.as_dict()))
    (single, single_stats), (merged, merged_stats) = results
    assert merged_stats == single_stats
    # Within one feed, a run comes out whole; across feeds it may come in pieces.
    assert _batched(merged) == _batched(single)
    assert all(not e.records.flags.writeable for e in merged if isinstance(e, ProfileData))


@FAST
@given(st.lists(events_st, min_size=1, max_size=8), st.data())
def test_a_packet_cut_by_the_end_of_the_stream_is_counted_for_any_split(
    events: list[ResponseEvent], data: st.DataObject
) -> None:
    """Issue 35: every packet is judged at the end. A stream cut inside its last packet
    (after its header AA 55) counts that packet as malformed at close(), the same for
    any split of what came."""
    stream = b"".join(encode_event(e) for e in events)
    last = len(encode_event(events[-1]))
    end = len(stream) - data.draw(st.integers(1, last - 2))
    cut = stream[:end]
    cuts = data.draw(st.lists(st.integers(0, end), max_size=10))
    whole, whole_stats = feed_in_pieces(cut, [])
    split, split_stats = feed_in_pieces(cut, cuts)
    assert split == whole == events[:-1]
    assert split_stats == whole_stats and whole_stats["malformed"] >= 1
