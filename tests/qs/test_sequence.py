"""The event flow and QSPY's -g sequence diagram.

The golden files in tests/qs/seq/ were written by the real QSPY 7.4.0
(../shared/reference/qs/real/qspy) with ``qspy -k -r c0 -u 0 -f CAPTURE -g LIST``
(plus ``-O 8 -F 8`` for dpp-posix64), for the reference DPP capture and for
tests/qs/seq/synth.bin (seq_capture.py); dpp-posix32.1.seq was written live by QSPY
(``qspy -t6601 -s -g ...``) from the real 32-bit DPP target, and dpp-posix32.bin is the
raw stream it saved (``-s``). Each file's first line is QSPY's echo of its list.
test_real_qspy_agrees runs QSPY again when it is there.
"""

from __future__ import annotations

import itertools
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import QSDecoder, decode_capture, encode_frame
from mcuprof.qs.rtc import rtc_steps
from mcuprof.qs.seq_svg import SeqSvg, seq_svg
from mcuprof.qs.sequence import (
    SEQ_NAMES_MAX,
    FlowItem,
    SeqError,
    SeqText,
    flow_items,
    parse_seq_list,
    seq_text,
    state_intervals,
)

from .cli import mcuprof
from .seq_capture import STEP_KINDS, made_up
from .seq_capture import capture as synth_capture

SEQ = Path(__file__).parent / "seq"
GOLDEN = sorted(SEQ.glob("*.seq"))
QSPY = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "qs" / "real" / "qspy"


def _list_of(golden: Path) -> str:
    return golden.read_bytes().split(b"\n", 1)[0][3:].decode()


def _capture_for(golden: Path, ref_dir: Path) -> Path:
    name = golden.name.split(".")[0]
    return ref_dir / f"{name}.bin" if name == "dpp-posix64" else SEQ / f"{name}.bin"


def _items(data: bytes) -> list[FlowItem]:
    events, _ = decode_capture(data)
    return list(flow_items(events))


def _render(data: bytes, text: str) -> bytes:
    return b"".join(seq_text(_items(data), parse_seq_list(text)))


def test_golden_files_are_there():
    assert len(GOLDEN) == 15


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_seq_text_is_qspys(golden, ref_dir):
    data = _capture_for(golden, ref_dir).read_bytes()
    assert _render(data, _list_of(golden)) == golden.read_bytes()


def test_synth_capture_is_the_one_goldens_were_made_from():
    assert (SEQ / "synth.bin").read_bytes() == synth_capture()


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_real_qspy_agrees(golden, ref_dir, tmp_path):
    if not QSPY.is_file():
        pytest.skip(f"the real QSPY is not at {QSPY} (see shared/reference/qs/real/README.md)")
    cap = _capture_for(golden, ref_dir)
    shutil.copy(cap, tmp_path / "c.bin")
    sizes = ["-O", "8", "-F", "8"] if cap.name.startswith("dpp") else []
    cmd = [str(QSPY), "-k", "-r", "c0", "-u", "0", "-f", "c.bin", *sizes, "-g", _list_of(golden)]
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    (written,) = tmp_path.glob("*.seq")
    assert written.read_bytes() == golden.read_bytes()
    assert _render(cap.read_bytes(), _list_of(golden)) == written.read_bytes()


def _qspy_seq(data: bytes, text: str, where: Path) -> bytes:
    where.mkdir()
    (where / "c.bin").write_bytes(data)
    cmd = [str(QSPY), "-k", "-r", "c0", "-u", "0", "-f", "c.bin", "-g", text]
    subprocess.run(cmd, cwd=where, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    (written,) = where.glob("*.seq")
    return written.read_bytes()


# Letters, digits, punctuation and symbols, ASCII or not (QSPY counts their UTF-8 bytes).
# QSPY's command line takes no -g list that starts with "-".
_NAME = st.text(st.characters(categories=("L", "N", "P", "S"), exclude_characters=","),
                min_size=1, max_size=22).filter(lambda n: n[0] != "-")  # fmt: skip


@st.composite
def _made_up(draw):
    objects = draw(st.lists(_NAME, min_size=1, max_size=6, unique=True))
    states = draw(st.lists(_NAME, min_size=1, max_size=4))
    signals = draw(st.lists(_NAME, min_size=1, max_size=4))
    small = st.integers(0, 12)
    steps = draw(st.lists(st.tuples(st.sampled_from(STEP_KINDS), small, small, small), max_size=60))
    pool = st.sampled_from([*objects, "?", "NULL", "nobody", ""])
    names = draw(st.lists(pool, min_size=1, max_size=SEQ_NAMES_MAX))
    text = ",".join(names)
    assume(text)  # an empty list is refused (parse_seq_list)
    return made_up(objects, states, signals, steps), text


@given(_made_up())
@settings(max_examples=40)
def test_made_up_captures_match_real_qspy(tmp_path_factory, case):
    """Random names (1-22 characters, not only ASCII), lists (with '?', NULL, unknown
    names, repeats) and steps of every kind drawn: ours equals what the real QSPY writes."""
    if not QSPY.is_file():
        pytest.skip(f"the real QSPY is not at {QSPY} (see shared/reference/qs/real/README.md)")
    data, text = case
    want = _qspy_seq(data, text, tmp_path_factory.mktemp("q") / "run")
    assert _render(data, text) == want


def test_header_repeats_every_100_lines(ref_dir):
    text = (SEQ / "dpp-posix64.3.seq").read_text().splitlines()
    boxes = [i for i, line in enumerate(text) if line.startswith("           +---")]
    assert boxes == [2, 4, 102, 104]


# ------------------------------------------------------------------ the items


def test_items_name_senders_receivers_and_signals(capture, qspy_lines):
    items = _items(capture)
    kinds = {k: sum(1 for i in items if i.kind == k) for k in {i.kind for i in items}}
    # One item per line of QSPY's text of the same capture.
    labels = {"publish": " QF-Pub ", "time_event": " TE0-Post ", "init": " Init===> ",
              "post": " AO-Post ", "tran": " ===>Tran ", "dispatch": " Disp===> "}  # fmt: skip
    for kind, label in labels.items():
        assert kinds[kind] == sum(1 for line in qspy_lines if label in line), kind
    assert sum(kinds.values()) == sum(kinds[k] for k in labels)
    first_post = next(i for i in items if i.kind == "post")
    assert (first_post.sender, first_post.receiver, first_post.signal) == (
        "l_clock_tick", "Philo_inst[4]", "TIMEOUT_SIG",
    )  # fmt: skip
    te = next(i for i in items if i.kind == "time_event")
    assert (te.sender, te.receiver, te.signal) == (
        "Philo_inst[4].timeEvt",
        "Philo_inst[4]",
        "TIMEOUT_SIG",
    )
    tran = next(i for i in items if i.kind == "tran")
    assert (tran.obj, tran.source, tran.state) == (
        "Philo_inst[4]",
        "Philo_thinking",
        "Philo_hungry",
    )


def test_each_dispatch_links_to_its_rtc_step(capture):
    events, _ = decode_capture(capture)
    dispatches = {i.index: i for i in flow_items(events) if i.kind == "dispatch"}
    steps = rtc_steps(events).steps
    assert len(steps) == 107
    for s in steps:
        d = dispatches[s.index]
        assert (d.receiver, d.signal, d.state, d.ts) == (s.obj, s.signal, s.state, s.start)


def test_items_are_a_stream():
    """flow_items takes one event at a time: an endless stream gives items at once."""
    one = encode_frame(1, 6, struct.pack("<IHIII", 5, 4, 0x10, 0x20, 0x30))
    events = QSDecoder().feed(one)

    def endless():
        while True:
            yield from events

    first = list(itertools.islice(flow_items(endless()), 1000))
    assert len(first) == 1000 and all(i.kind == "tran" for i in first)


def test_time_runs_on_across_a_timestamp_wrap():
    frames = b"".join(
        encode_frame(k + 1, 6, struct.pack("<IHIII", ts, 4, 0x10, 0x20, 0x30 + k))
        for k, ts in enumerate((0xFFFF_FFF0, 0xFFFF_FFFE, 0x10, 0x40))
    )
    times = [i.time for i in flow_items(QSDecoder().feed(frames))]
    assert times == [0xFFFF_FFF0, 0xFFFF_FFFE, 0x1_0000_0010, 0x1_0000_0040]
    lanes = list(state_intervals(flow_items(QSDecoder().feed(frames))))
    assert [(iv.t0, iv.t1) for iv in lanes] == [
        (0xFFFF_FFF0, 0xFFFF_FFFE), (0xFFFF_FFFE, 0x1_0000_0010),
        (0x1_0000_0010, 0x1_0000_0040), (0x1_0000_0040, None),
    ]  # fmt: skip


# ------------------------------------------------------------------ state timeline


def test_state_timeline_of_dpp(capture, qspy_lines):
    lanes: dict[str, list] = {}
    for iv in state_intervals(_items(capture)):
        lanes.setdefault(iv.obj, []).append(iv)
    assert sorted(lanes) == ["Philo_inst[0]", "Philo_inst[1]", "Philo_inst[2]",
                             "Philo_inst[3]", "Philo_inst[4]", "Table_inst"]  # fmt: skip
    table = lanes["Table_inst"]
    init = next(line for line in qspy_lines if "Init===> Obj=Table_inst" in line)
    assert (table[0].state, table[0].t0) == ("Table_serving", int(init[:10]))
    assert table[0].t1 == 1537722241  # the first <paused> in the -g files
    assert [iv.state for iv in table[1:4]] == ["Table_paused", "Table_serving", "Table_paused"]


_OBJS = ("sm_a", "sm_b", "sm_c")


@st.composite
def _state_changes(draw):
    n = draw(st.integers(0, 60))
    t = draw(st.integers(0, 1000))
    items = []
    for index in range(n):
        t += draw(st.integers(0, 50))
        kind = draw(st.sampled_from(("tran", "init", "post", "dispatch")))
        obj = draw(st.sampled_from(_OBJS))
        state = draw(st.sampled_from(("s1", "s2", "s3")))
        items.append(FlowItem(kind, index, t & 0xFFFF_FFFF, t, obj=obj, state=state, receiver=obj))
    return items


@given(_state_changes())
@settings(max_examples=150)
def test_state_intervals_properties(items):
    intervals = list(state_intervals(items))
    changes = [i for i in items if i.kind in ("tran", "init")]
    # Every transition starts exactly one interval, with its state and time.
    assert sorted(iv.index for iv in intervals) == [c.index for c in changes]
    by_index = {c.index: c for c in changes}
    for iv in intervals:
        c = by_index[iv.index]
        assert (iv.obj, iv.state, iv.t0) == (c.obj, c.state, c.time)
    for obj in _OBJS:
        lane = sorted((iv for iv in intervals if iv.obj == obj), key=lambda iv: iv.index)
        # In time order, never overlapping: each ends where the next begins; only the
        # last is still open.
        for a, b in itertools.pairwise(lane):
            assert a.t0 <= a.t1 == b.t0
        assert all(iv.t1 is not None for iv in lane[:-1])
        if lane:
            assert lane[-1].t1 is None


# ------------------------------------------------------------------ the text, any input


_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)


_ALL_KINDS = ("post", "post_attempt", "post_lifo", "publish", "tran", "defer", "recall",
              "recall_attempt", "tick", "dispatch")  # fmt: skip


@st.composite
def _diagram(draw):
    names = draw(st.lists(st.one_of(st.sampled_from(("?", "NULL", "a")), _NAMES), min_size=1,
                          max_size=SEQ_NAMES_MAX))  # fmt: skip
    pool = [*names, "outsider", None]
    items = []
    for index in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(_ALL_KINDS))
        label = draw(_NAMES)
        items.append(FlowItem(
            kind, index, draw(st.integers(0, 0xFFFF_FFFF)), index,
            sender=draw(st.sampled_from(pool)), receiver=draw(st.sampled_from(pool)),
            signal=label, obj=draw(st.sampled_from(pool)), state=label,
            rate=draw(st.integers(0, 9)), ctr=draw(st.integers(0, 0xFFFF_FFFF)),
        ))  # fmt: skip
    return names, items


@given(_diagram())
@settings(max_examples=150)
def test_any_items_make_whole_lines(diagram):
    names, items = diagram
    seq = SeqText(names)
    out = seq.header()
    for item in items:
        text = seq.feed(item)
        assert text == b"" or text.endswith(b"\n")
        out += text
    lines = out.split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == seq.lines + 2  # +2: "-g ..." and blank
    svg = SeqSvg(names)
    for item in items:
        svg.feed(item)
    ET.fromstring(svg.finish())  # well-formed, whatever the names


# ------------------------------------------------------------------ lists, CLI, SVG


def test_lists_qspy_cannot_draw_are_refused():
    with pytest.raises(SeqError, match="11 names, at most 10"):
        parse_seq_list(",".join("abcdefghijk"))
    with pytest.raises(SeqError, match="empty"):
        parse_seq_list("")
    with pytest.raises(SeqError, match="1024 bytes, at most 1023"):
        parse_seq_list("x" * 1024)
    with pytest.raises(SeqError, match="1024 bytes, at most 1023"):
        parse_seq_list("é" * 512)  # 512 characters, 1024 bytes
    assert len(parse_seq_list("é" * 511 + "x")) == 1
    assert parse_seq_list("a,,?") == ["a", "", "?"]
    # Lone surrogates (a hostile query, or bytes the command line could not decode) split too.
    assert parse_seq_list("\ud800,\udcff") == ["\ud800", "\udcff"]


@given(st.lists(st.text(st.characters(exclude_characters=","), max_size=30), min_size=1,
                max_size=SEQ_NAMES_MAX))  # fmt: skip
def test_lists_split_as_qspy_splits_them(names):
    text = ",".join(names)
    if not text:
        return
    assert parse_seq_list(text) == names


def test_cli_writes_qspys_file(ref_dir, tmp_path):
    out = tmp_path / "d.seq"
    golden = SEQ / "dpp-posix64.1.seq"
    r = mcuprof("qs", "seq", str(ref_dir / "dpp-posix64.bin"), "-g", _list_of(golden),
                "-o", str(out))  # fmt: skip
    assert out.read_bytes() == golden.read_bytes()
    assert "66 events drawn on 3 lanes" in r.stderr


def test_cli_names_from_a_dic_file(ref_dir, tmp_path):
    """The capture cut after QS_QF_RUN has no dictionaries; with QSPY's .dic of the same
    target the diagram is the whole capture's (QSPY 7.4 with -d writes the same file)."""
    data = (ref_dir / "dpp-posix64.bin").read_bytes()
    run = next(e for e in decode_capture(data)[0] if getattr(e, "rec", None) == 70)
    cut = data.index(b"\x7e", data.index(run.raw[:2]))
    (tmp_path / "tail.bin").write_bytes(data[cut + 1 :])
    golden = SEQ / "dpp-posix64.1.seq"
    out = tmp_path / "tail.seq"
    mcuprof("qs", "seq", str(tmp_path / "tail.bin"), "--dic", str(ref_dir / "dpp-posix64.dic"),
            "-g", _list_of(golden), "-o", str(out))  # fmt: skip
    assert out.read_bytes() == golden.read_bytes()
    bare = mcuprof("qs", "seq", str(tmp_path / "tail.bin"), "-O", "8", "-F", "8",
                   "-g", _list_of(golden))  # fmt: skip
    assert bare.stdout.count("\n") == 5  # no names: the header only


def test_cli_refuses_a_long_list_in_one_line(ref_dir):
    r = mcuprof("qs", "seq", str(ref_dir / "dpp-posix64.bin"), "-g", ",".join("abcdefghijk"),
                check=False)  # fmt: skip
    assert r.returncode != 0 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "mcuprof: error: -g: the object list has 11 names, at most 10"
    ]


def test_svg_escapes_names(tmp_path):
    evil = "<b>&\x1b[31m"
    data = b"".join((
        encode_frame(1, 61, struct.pack("<I", 0x10) + evil.encode() + b"\0"),
        encode_frame(2, 14, struct.pack("<IIHIBBBB", 5, 0x10, 4, 0x20, 0, 0, 1, 1)),
        encode_frame(3, 61, struct.pack("<I", 0x20) + b"B\0"),
        encode_frame(4, 14, struct.pack("<IIHIBBBB", 6, 0x10, 4, 0x20, 0, 0, 1, 1)),
    ))  # fmt: skip
    items = _items(data)
    assert items[0].sender == "<b>&\\x1b[31m"  # the decoder's clean_name
    svg, dropped = seq_svg(items, [items[0].sender, "B", "<i>\x07"])
    assert dropped == 0
    root = ET.fromstring(svg)
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "<b>&\\x1b[31m" in texts and "<i>\\x07" in texts
    assert "<b>" not in svg and "\x1b" not in svg and "\x07" not in svg
    # Only the second post is drawn: when the first came, 0x20 had no name yet.
    assert sum(1 for t in texts if "00000004,Obj=0x00000020" in t) == 1


def test_cli_svg(ref_dir, tmp_path):
    out = tmp_path / "d.svg"
    mcuprof("qs", "seq", str(ref_dir / "dpp-posix64.bin"), "-g", "?,Table_inst,Philo_inst[0]",
            "--svg", "-o", str(out))  # fmt: skip
    root = ET.fromstring(out.read_text())
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts[:3] == ["?", "Table_inst", "Philo_inst[0]"]
    assert "hungry" in texts and "EAT_SIG" in texts


def test_state_machines_past_the_bound_are_counted(monkeypatch):
    from mcuprof.qs import sequence

    monkeypatch.setattr(sequence, "STATE_MACHINES_MAX", 2)
    items = [FlowItem("tran", k, k, k, obj=f"sm{k % 4}", state="s") for k in range(8)]
    timeline = sequence.StateTimeline()
    closed = list(timeline.feed(items))
    assert [(iv.obj, iv.t0, iv.t1) for iv in closed] == [("sm0", 0, 4), ("sm1", 1, 5)]
    assert timeline.dropped == 4  # sm2 and sm3, twice each
    assert [iv.obj for iv in timeline.still_open()] == ["sm0", "sm1"]


def test_svg_rows_past_the_bound_are_counted(capture, monkeypatch):
    from mcuprof.qs import seq_svg as module

    monkeypatch.setattr(module, "SVG_ROWS_MAX", 10)
    svg, dropped = seq_svg(_items(capture), ["Table_inst", "Philo_inst[0]", "Philo_inst[1]"])
    assert dropped == 66 - 10  # the golden text has 66 event lines
    root = ET.fromstring(svg)
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts[-1] == "56 more rows not drawn (at most 10 rows)"


def test_the_last_question_mark_is_the_system_border(tmp_path):
    """Found by test_made_up_captures_match_real_qspy: QSPY's list parser keeps the
    last '?' it meets as the border; the first is an empty lane."""
    data = made_up(["a"], ["s"], ["S"], [("post", 0, 0, 1)])  # a posts S to NULL
    got = _render(data, "a,?,?").decode().splitlines()
    assert got[-1] == "0000001007         *--S----------------+------------------>/"
    if QSPY.is_file():
        assert _qspy_seq(data, "a,?,?", tmp_path / "q").decode().splitlines() == got


def test_columns_count_utf8_bytes_as_qspys_do(tmp_path):
    """QSPY 7.4.0 wrote exactly this: each 'é' or 'Ï' takes two columns."""
    steps = [("post", 0, 0, 1), ("post", 1, 0, 0), ("tran", 0, 0, 0)]
    data = made_up(["Café", "b"], ["X_é"], ["SÏG"], steps)
    want = (
        "-g Café,b\n\n"
        "           +-------+-------+   +-------+-------+\n"
        "           |     Café     |   |       b       |\n"
        "           +-------+-------+   +-------+-------+\n"
        "0000001007         *--SÏG------------>|\n"
        "0000001014         |<------------SÏG--*\n"
        "0000001021        <é>                 |\n"
    ).encode()
    assert _render(data, "Café,b") == want
    if QSPY.is_file():
        assert _qspy_seq(data, "Café,b", tmp_path / "q") == want
