"""RTC steps from the reference capture, checked against QSPY's own lines, and the
table, folded lines and JSON agreeing with each other."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from mcuprof.protocol.qs import decode_capture
from mcuprof.qs.rtc import RtcStep, RtcTally, folded, rtc_steps, rtc_table

from .cli import mcuprof

_DISP = re.compile(r"^(\d{10}) Disp===> Obj=([^,]+),Sig=([^,]+),State=(\S+)$")
_END = re.compile(r"^(\d{10}) (===>Tran|=>Intern|=>Ignore) Obj=([^,]+),")


def steps_from_qspy_text(lines: list[str]) -> list[tuple[str, str, str, int]]:
    """The same steps read off QSPY's text: an independent oracle."""
    pending: dict[str, tuple[int, str, str]] = {}
    out = []
    for line in lines:
        if m := _DISP.match(line):
            pending[m[2]] = (int(m[1]), m[3], m[4])
        elif (m := _END.match(line)) and m[3] in pending:
            start, sig, state = pending.pop(m[3])
            out.append((m[3], state, sig, int(m[1]) - start))
    return out


def test_steps_match_qspy_text(capture, qspy_lines):
    events, _ = decode_capture(capture)
    result = rtc_steps(events)
    assert result.unfinished == 0
    got = [(s.obj, s.state, s.signal, s.duration) for s in result.steps]
    assert got == steps_from_qspy_text(qspy_lines)
    assert len(got) == 107
    # 1522822695 Disp===> Obj=Philo_inst[4],Sig=TIMEOUT_SIG,State=Philo_thinking
    # 1522822726 ===>Tran Obj=Philo_inst[4],Sig=TIMEOUT_SIG,State=Philo_thinking->...
    first = result.steps[0]
    assert (first.obj, first.signal, first.start, first.duration) == (
        "Philo_inst[4]",
        "TIMEOUT_SIG",
        1522822695,
        31,
    )
    assert first.outcome == "transition"
    # Unhandled in a substate, then ignored: one step, one hop.
    assert any(s.unhandled == 1 and s.outcome == "ignored" for s in result.steps)


def test_table_folded_and_json_agree(capture, ref_dir):
    events, _ = decode_capture(capture)
    steps = rtc_steps(events).steps
    rows = rtc_table(steps)
    assert sum(r.count for r in rows) == len(steps)
    assert sum(r.total for r in rows) == sum(s.duration for s in steps)
    assert [line.rsplit(" ", 1) for line in folded(rows)] == [
        [f"{r.obj};{r.state};{r.signal}", str(r.total)] for r in rows
    ]
    out = mcuprof("qs", "rtc", str(ref_dir / "dpp-posix64.bin"), "--json")
    objects = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(o["object"], o["state"], o["signal"], o["count"], o["total"]) for o in objects] == [
        (r.obj, r.state, r.signal, r.count, r.total) for r in rows
    ]
    assert "107 RTC steps" in out.stderr
    text = mcuprof("qs", "rtc", str(ref_dir / "dpp-posix64.bin")).stdout.splitlines()
    assert text[0].split()[:8] == ["object", "state", "signal", "count", "total", "min", "mean",
                                   "max"]  # fmt: skip
    top = rows[0]
    assert text[1].split()[:5] == [top.obj, top.state, top.signal, str(top.count), str(top.total)]


def test_cut_stream_leaves_unfinished_steps(capture):
    events, _ = decode_capture(capture)
    cut = [e for e in events if not (hasattr(e, "rec") and e.rec in (5, 6, 7))][:600]
    result = rtc_steps(cut)
    assert result.steps == []
    assert result.unfinished > 0


steps_st = st.lists(
    st.builds(
        RtcStep,
        st.sampled_from(["a", "b"]),
        st.sampled_from(["s", "t"]),
        st.sampled_from(["X", "Y"]),
        st.just(0),
        st.integers(0, 2**40),
        st.sampled_from(["internal", "transition", "ignored"]),
        st.just(0),
        st.just(0),
    ),
    max_size=40,
)


@given(steps_st, st.integers(1, 5))
def test_the_tally_is_the_table_without_the_steps(steps, split) -> None:
    """Issue 35: qs scenario kept every step for its table; the tally keeps the rows."""
    tally = RtcTally()
    for i in range(0, len(steps), split):
        tally.add(steps[i : i + split])
    assert tally.rows() == rtc_table(steps) and tally.steps == len(steps)
    small = RtcTally(limit=2)
    small.add(steps)
    assert len(small.rows()) <= 2
    assert small.untallied == sum(r.count for r in rtc_table(steps)) - sum(
        r.count for r in small.rows()
    )
