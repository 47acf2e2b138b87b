"""Issue 35: what a QS stream keeps is bounded by configuration, and the end of a stream
judges the frame still open (findings 5 and 11)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import BadFrame, ByteFramer, Framer, QSDecoder, encode_frame
from mcuprof.protocol.qs.decoder import DICT_CAPACITY
from mcuprof.sources.qs import PREAMBLE_CAPACITY, QSSource

from .cli import mcuprof

OBJ, FUN, SIG = 61, 62, 60


def _churn(n: int) -> bytes:
    """Dictionary churn: ever new objects, functions and signals, and renames of one key."""
    frames = []
    for i in range(n):
        frames.append(encode_frame(i, OBJ, struct.pack("<I", 0x1000 + i) + b"o%d\0" % i))
        frames.append(encode_frame(i, FUN, struct.pack("<I", 0x1000 + i) + b"f%d\0" % i))
        frames.append(encode_frame(i, SIG, struct.pack("<HI", 4 + i % 60000, 0) + b"s\0"))
        frames.append(encode_frame(i, OBJ, struct.pack("<I", 0x10) + b"renamed%d\0" % i))
    return b"".join(frames)


@pytest.mark.parametrize("events", [True, False])
def test_dictionary_churn_keeps_a_bounded_preamble(events):
    """F5: every distinct dictionary record was kept for the preamble (1,137 MiB after
    80 s of churn). Now one record per key, at most the decoder's capacities."""
    data = _churn(3000)
    source = QSSource(events=events)
    for at in range(0, len(data), 1 << 16):
        source.feed(data[at : at + (1 << 16)])
    source.close()
    kept = len(source._preamble)
    assert kept <= sum(PREAMBLE_CAPACITY.values())
    assert kept == DICT_CAPACITY["obj"] + 3000 + 3000
    assert source.preamble_dropped > 0 and source.stats()["dictionary_overflow"] > 0
    # What is kept still names what the decoder names: the renamed key's last name.
    again = QSDecoder()
    again.feed(source.preamble())
    assert again.dicts.obj[0x10] == source.decoder.dicts.obj[0x10] == "renamed2999"
    assert dict(again.dicts.obj) == dict(source.decoder.dicts.obj)
    assert dict(again.dicts.fun) == dict(source.decoder.dicts.fun)


# ------------------------------------------------------------ end of stream (finding 11)

_piece = st.one_of(
    st.tuples(st.integers(0, 255), st.integers(1, 127), st.binary(max_size=40)).map(
        lambda t: encode_frame(*t)
    ),
    st.tuples(st.sampled_from([b"\x7d", b"\x7e", b"\x7d\x7e", b"A"]), st.integers(0, 1100)).map(
        lambda t: t[0] * t[1]
    ),
    st.binary(max_size=20),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_piece, max_size=8), cuts=st.lists(st.integers(0, 5_000), max_size=6))
def test_the_frame_open_at_the_end_is_judged_the_same_for_any_split(pieces, cuts):
    """A frame still open when the stream ends is counted "truncated" (once the stream
    has started, and unless it was already "too long"), whatever the split, as the
    byte-at-a-time parser judges it."""
    data = b"".join(pieces)
    oracle = ByteFramer()
    expected = oracle.feed(data) + oracle.close()
    framer = Framer()
    got = []
    at = 0
    for cut in sorted(cuts):
        got += framer.feed(data[at:cut])
        at = max(at, cut)
    got += framer.feed(data[at:]) + framer.close()
    assert [e for e in got if isinstance(e, BadFrame)] == [
        e for e in expected if isinstance(e, BadFrame)
    ]
    truncated = [e for e in expected if isinstance(e, BadFrame) and e.kind == "truncated"]
    assert framer.stats.truncated == len(truncated) <= 1


def test_a_short_flood_cut_by_the_end_is_truncated_in_the_source_stats():
    """F11: a 0x7D flood shorter than MAX_FRAME, then the end: "0 too long" and nothing
    else. Now one bad frame, "truncated", in the stats health and the CLI show."""
    source = QSSource(events=False)
    source.feed(encode_frame(1, 70) + b"\x7d" * 600)
    source.close()
    stats = source.stats()
    assert source.decoder.frame_stats.truncated == 1
    assert stats["bad_frames"] == 1 and stats["malformed"] == 1


def test_qs_listen_reports_a_frame_cut_by_a_disconnect():
    """The issue's case over TCP: ``qs listen`` says the cut frame on its last lines."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def target():
            conn, _ = server.accept()
            with conn:
                conn.sendall(encode_frame(1, 70) + b"\x7d" * 600)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        url = f"socket://127.0.0.1:{port}"
        done = mcuprof("qs", "listen", "--port", url, "--duration", "10", check=False)
        thread.join(8)
    assert "1 frames" in done.stderr and ", 1 truncated by the end of the stream" in done.stderr
    assert done.stdout.splitlines()[-1] == (
        "   <COMMS> ERROR    Record cut short by the end of the stream at Seq=1(?)"
    )
