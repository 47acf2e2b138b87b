"""A hostile or broken QS target (issue 26, round 2): sizes no target can have, floods of
escapes, endless new pointers and renamed dictionary keys. Each is counted and shown,
memory stays bounded, and every good record after it stays."""

from __future__ import annotations

import pytest

from mcuprof.protocol.qs import Malformed, QSConfig, QSDecoder, Record, encode_frame
from mcuprof.qs.dicfile import DicError, parse_dic
from mcuprof.sources.qs import QSSource

from .cli import mcuprof


def _info(ts_size: int) -> bytes:
    """QS_TARGET_INFO data of a 32-bit QP 7.4.0 target with this timestamp size."""
    return bytes([0xFF, 0xE4, 0x02, 0x22, 0x41, 0x22, 0x44, ts_size, 8, 0x13, 0, 0, 0, 1, 1, 26])


# F1's capture: 24 bytes, a target info claiming 9-byte timestamps, then QS_QF_RUN.
WIDE_TS = encode_frame(0, 64, _info(9)) + encode_frame(1, 70)


@pytest.mark.parametrize("ts_size", [0, 3, 5, 9, 15])
def test_target_info_with_an_impossible_size_is_malformed(ts_size):
    decoder = QSDecoder()
    events = decoder.feed(encode_frame(0, 64, _info(ts_size)) + encode_frame(1, 70))
    bad, run = events
    assert isinstance(bad, Malformed) and f"tstamp size {ts_size} " in bad.message
    assert isinstance(run, Record) and run.rec == 70
    assert decoder.stats.malformed == 1
    assert decoder.config == QSConfig()  # the sizes in force before it stay


@pytest.mark.parametrize("ts_size", [1, 2, 4, 8])
def test_target_info_with_a_legal_size_is_applied(ts_size):
    decoder = QSDecoder()
    decoder.feed(encode_frame(0, 64, _info(ts_size)))
    assert decoder.config.tstamp_size == ts_size and decoder.stats.malformed == 0


@pytest.mark.parametrize("events", [True, False])
def test_source_counts_a_bad_target_info_instead_of_raising(events):
    source = QSSource(events=events)
    source.feed(WIDE_TS)
    source.close()
    stats = source.stats()
    assert stats["malformed"] == 1 and stats["frames"] == 2 and stats["rtc_steps"] == 0


def test_dictionary_file_with_an_impossible_size_is_one_line_error():
    with pytest.raises(DicError, match="tstamp size 9"):
        parse_dic("-T9\n")


def test_whole_capture_commands_report_a_bad_target_info(tmp_path):
    """F1: export, qs rtc, sessions import and compare raised OverflowError."""
    capture = tmp_path / "wide.qs"
    capture.write_bytes(WIDE_TS)
    runs = [
        ("qs", "rtc", str(capture)),
        ("export", "--format", "folded", "-o", str(tmp_path / "out"), str(capture)),
        ("sessions", "--data-dir", str(tmp_path / "store"), "import", str(capture)),
        ("compare", str(capture), str(capture)),
    ]
    for args in runs:
        done = mcuprof(*args, check=False)
        assert "internal error" not in done.stderr, args
        assert done.returncode in (0, 2), (args, done.stderr)  # 1 is compare's "slower"
    decode = mcuprof("qs", "decode", str(capture))
    assert "tstamp size 9 (-T) is not 1, 2, 4 or 8" in decode.stdout
    assert "1 malformed" in decode.stderr
