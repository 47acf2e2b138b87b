"""Queue and pool margins from the reference capture, against QSPY's own lines."""

from __future__ import annotations

import json
import re

from mcuprof.protocol.qs import decode_capture
from mcuprof.qs.margins import margins

from .cli import mcuprof

_QUEUE = re.compile(
    r"^(\d{10}) AO-(?:Post |Get  ) .*?Obj=([^,]+),.*Que<Free=(\d+)(?:,Min=(\d+))?>$"
)
_POOL = re.compile(r"^(\d{10}) MP-(?:Get  |Put  ) Obj=([^,]+),Free=(\d+)(?:,Min=(\d+))?$")


def test_margins_match_qspy_text(capture, qspy_lines):
    expected: dict[str, list[tuple[int, int]]] = {}
    low: dict[str, int] = {}
    for line in qspy_lines:
        m = _QUEUE.match(line) or _POOL.match(line)
        if m:
            expected.setdefault(m[2], []).append((int(m[1]), int(m[3])))
            if m[4] is not None:
                low[m[2]] = min(low.get(m[2], 1 << 30), int(m[4]))
    events, _ = decode_capture(capture)
    found = {m.name: m for m in margins(events)}
    assert set(found) == set(expected)
    for name, samples in expected.items():
        assert list(zip(found[name].times, found[name].free, strict=True)) == samples
        assert found[name].low_water == low[name]
    assert found["EvtPool1"].kind == "pool" and found["EvtPool1"].low_water == 8
    assert found["Table_inst"].kind == "queue" and found["Table_inst"].lowest_free == 5


def test_margins_cli_json_agrees(capture, ref_dir):
    events, _ = decode_capture(capture)
    found = margins(events)
    out = mcuprof("qs", "margins", str(ref_dir / "dpp-posix64.bin"), "--json")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["object"], r["free"], r["low_water"]) for r in rows] == [
        (m.name, m.free, m.low_water) for m in found
    ]
