"""Whole captures decoded into a profile, up to the last byte."""

from __future__ import annotations

import numpy as np

from mcuprof.link.replay import ReplayDevice
from mcuprof.profile import load_capture
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.summary import summarize


def capture_ending_behind_a_false_header() -> bytes:
    recs = np.zeros(3, RECORD_DTYPE)
    recs["func_addr"] = 0x0800_0101
    recs["entry_time"] = [100, 300, 500]
    recs["duration"] = 50
    # A stray METADATA header claims 28 payload bytes; the last real packet (25 bytes)
    # lies inside that claim, so only the end of the stream can release it.
    false_header = bytes.fromhex("AA 55 03 1C 00")
    return (
        encode_metadata(Metadata(1, 1_000_000, 7, "t"))
        + encode_profile_data(recs[:2])
        + false_header
        + encode_profile_data(recs[2:])
    )


def test_every_decoder_of_whole_captures_keeps_the_last_packet() -> None:
    data = capture_ending_behind_a_false_header()
    assert load_capture(data).profile.n_records == 3
    assert summarize(data)["records"] == 3
    assert summarize(data)["duration_us"] == 450.0  # entry 100 to exit 550
    assert ReplayDevice(data).total_records == 3
