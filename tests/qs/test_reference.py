"""mcuprof against QSPY 7.4 on the reference DPP capture: frames, sequence numbers,
error counts, dictionaries and text, line for line."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from mcuprof.protocol.qs import (
    BadFrame,
    Discontinuity,
    Framer,
    QSDecoder,
    QSFrame,
    Record,
    decode_capture,
)
from mcuprof.qs.dicfile import dic_filename, format_dic, parse_dic
from mcuprof.qs.text import render_lines

from .cli import mcuprof


def test_frames_match_qspy(capture, ref_frames):
    expected, summary = ref_frames
    events = Framer().feed(capture)
    frames = [e for e in events if isinstance(e, QSFrame)]
    got = [(f.index, f.seq, f.rec, len(f.raw), f.raw.hex().upper()) for f in frames]
    assert got == expected
    assert len(frames) == summary["frames"] == 938


def test_error_counts_match_qspy(capture, ref_frames):
    _, summary = ref_frames
    framer = Framer()
    events = framer.feed(capture)
    stats = framer.stats
    assert stats.bad_checksum == summary["bad_checksum"]
    assert stats.discontinuities == summary["discontinuity"]
    assert stats.too_short == summary["too_short"]
    assert stats.too_long == summary["too_long"]
    assert not [e for e in events if isinstance(e, BadFrame | Discontinuity)]


def test_sequence_numbers_wrap(capture):
    frames = [e for e in Framer().feed(capture) if isinstance(e, QSFrame)]
    seqs = [f.seq for f in frames]
    assert seqs[0] == 1
    # 938 frames wrap the 8-bit counter three times, with no gap.
    assert all((b - a) & 0xFF == 1 for a, b in pairwise(seqs))
    assert seqs.count(0) == 3


def test_text_matches_qspy_line_for_line(capture, qspy_lines):
    events, _ = decode_capture(capture)
    assert list(render_lines(events)) == qspy_lines


def test_target_info_applied(capture):
    events, decoder = decode_capture(capture)
    info = events[1]
    assert isinstance(info, Record) and info.name == "QS_TARGET_INFO"
    cfg = decoder.config
    assert (cfg.version, cfg.obj_ptr_size, cfg.fun_ptr_size, cfg.tstamp_size) == (740, 8, 8, 4)
    assert (cfg.sig_size, cfg.evt_size, cfg.queue_ctr_size, cfg.tevt_ctr_size) == (2, 2, 2, 4)
    assert (cfg.pool_ctr_size, cfg.pool_blk_size, cfg.max_active) == (2, 2, 64)
    assert cfg.build_stamp == "261122_182611"
    assert decoder.stats.target_resets == 1
    assert decoder.stats.malformed == 0 and decoder.stats.unknown_records == 0


def test_records_decode_to_typed_fields(capture):
    events, _ = decode_capture(capture)
    post = next(e for e in events if isinstance(e, Record) and e.name == "QS_QF_ACTIVE_POST")
    # 1522821753 AO-Post  Sdr=l_clock_tick,Obj=Philo_inst[4],Evt<Sig=TIMEOUT_SIG,...>
    assert post.timestamp == 1522821753
    assert post.fields == {
        "ts": 1522821753,
        "sender": 0x40A136,
        "sig": 10,
        "obj": 0x40E680,
        "pool": 0,
        "ref": 0,
        "free": 10,
        "min": 10,
    }
    assert post.dicts.obj[post.sender] == "l_clock_tick"
    user = next(e for e in events if isinstance(e, Record) and e.rec == 100)
    assert [(a.kind, a.width, a.value) for a in user.args] == [("U8", 1, 0), ("STR", 0, "thinking")]


def test_columns_agree_with_records(capture):
    events, _ = decode_capture(capture)
    batch = QSDecoder().feed_columns(capture)
    by_index = {e.index: e for e in events}
    columnar = 0
    for rec, table in batch.tables.items():
        for index, row in zip(table.index.tolist(), table.fields.tolist(), strict=True):
            assert by_index[index].rec == rec
            assert by_index[index].values == tuple(row)
            columnar += 1
    others = [e.index for e in batch.others]
    assert [by_index[i] for i in others] == batch.others
    assert columnar + len(others) == len(events) == 938
    assert columnar > 800  # the running application is nearly all fixed layouts


def test_dictionaries_match_qspy_dic_file(capture, ref_dir):
    _, decoder = decode_capture(capture)
    reference = (ref_dir / "dpp-posix64.dic").read_text()
    assert decoder.run_dicts is not None
    assert format_dic(decoder.config, decoder.run_dicts) == reference
    assert dic_filename(decoder.config) == "qspy261122_182611.dic"
    config, dicts = parse_dic(reference)
    assert dict(dicts.obj) == dict(decoder.run_dicts.obj)
    assert dict(dicts.fun) == dict(decoder.run_dicts.fun)
    assert dict(dicts.sig) == dict(decoder.run_dicts.sig)
    assert dict(dicts.usr) == dict(decoder.run_dicts.usr)
    assert (config.obj_ptr_size, config.build_stamp) == (8, "261122_182611")


def test_dic_file_gives_names_and_sizes_without_target_info(capture, ref_dir, qspy_lines):
    """Cut off the start-up (target info and dictionaries): with QSPY's .dic file
    the running application still renders with QSPY's names."""
    frames = [e for e in Framer().feed(capture) if isinstance(e, QSFrame)]
    cut = capture.index(bytes([frames[87].raw[0]]) + bytes([frames[87].rec]))
    config, dicts = parse_dic((ref_dir / "dpp-posix64.dic").read_text())
    events, decoder = decode_capture(capture[cut - 1 :], config, dicts)
    lines = list(render_lines(events))
    assert decoder.stats.malformed == 0
    assert lines == qspy_lines[-len(lines) :]
    assert len(lines) == 938 - 87


def test_cli_decode_matches_qspy(ref_dir, qspy_lines, tmp_path):
    dic = tmp_path / "x.dic"
    out = mcuprof("qs", "decode", str(ref_dir / "dpp-posix64.bin"), "--save-dic", str(dic))
    assert out.stdout.splitlines() == qspy_lines
    assert "938 frames, 0 bad checksums, 0 discontinuities" in out.stderr
    assert (tmp_path / "x.dic").read_text() == (ref_dir / "dpp-posix64.dic").read_text()


def test_cli_json_one_object_per_record(ref_dir, qspy_lines):
    out = mcuprof("qs", "decode", str(ref_dir / "dpp-posix64.bin"), "--json")
    objects = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(objects) == 938
    assert [o["index"] for o in objects] == list(range(938))
    lines = [o["line"] for o in objects if o["line"] is not None]
    assert lines == qspy_lines
    tran = next(o for o in objects if o["name"] == "QS_QEP_TRAN")
    assert set(tran["fields"]) == {"sig", "obj", "source", "target"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.bin"], "missing.bin"),
        (["CAPTURE", "--dic", "missing.dic"], "missing.dic"),
        (["CAPTURE", "--dic", "BAD"], "line 1"),
    ],
)
def test_cli_errors_are_one_line(ref_dir, tmp_path: Path, args, message):
    bad = tmp_path / "bad.dic"
    bad.write_text("hello\n")
    argv = [
        str(ref_dir / "dpp-posix64.bin") if a == "CAPTURE" else str(bad) if a == "BAD" else a
        for a in args
    ]
    out = mcuprof("qs", "decode", *argv, check=False, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr
