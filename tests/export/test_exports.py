"""Every export format: valid for its readers, and consistent with the profile."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.export import callgrind, chrome, folded, speedscope, svg
from mcuprof.export import csv as csv_export
from mcuprof.names import short_label
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE
from tests.export.validators import (
    validate_callgrind,
    validate_chrome,
    validate_csv,
    validate_speedscope,
)

SVG_NS = "{http://www.w3.org/2000/svg}"


def test_folded_is_byte_exact(profile: Profile) -> None:
    text = folded.render(profile)
    lines = text.split("\n")
    assert lines[-1] == "" and all(lines[:-1])
    pairs = [line.rsplit(" ", 1) for line in lines[:-1]]
    stacks = [p[0] for p in pairs]
    assert stacks == sorted(stacks, key=str.encode)
    assert len(set(stacks)) == len(stacks)
    assert all(int(p[1]) > 0 for p in pairs)
    assert {s: int(v) for s, v in pairs} == profile.folded()
    assert "[unknown];0x09000001" in stacks
    assert "0x08001001" in stacks


def test_folded_known_values() -> None:
    p = Profile(timer_freq=2_000_000)
    # main [0,20] ticks, child [2,7] and [9,10]; orphan at depth 3. 2 ticks = 1 µs.
    p.add(
        np.array(
            [(0x20, 2, 5, 1), (0x20, 9, 1, 1), (0x10, 0, 20, 0), (0x30, 30, 3, 3)], RECORD_DTYPE
        )
    )
    assert folded.render(p) == ("0x00000010 7\n0x00000010;0x00000020 3\n[unknown];0x00000030 2\n")


def test_speedscope_valid_and_complete(profile: Profile, frame_names: set[str]) -> None:
    doc = validate_speedscope(speedscope.render(profile))
    prof = doc["profiles"][0]
    assert prof["unit"] == "microseconds"
    frames = doc["shared"]["frames"]
    labels = {f["name"] for f in frames}
    # One display name (the folded one); the two static helpers differ by file.
    helpers = {f.get("file") for f in frames if f["name"] == "helper"}
    assert helpers == {"src/file6.cpp", "src/file7.cpp"}
    assert "[unknown]" in labels
    assert any(f.get("file") == "src/file1.cpp" and f.get("line") == 21 for f in frames)
    opens = sum(1 for e in prof["events"] if e["type"] == "O")
    assert opens == profile.n_records + profile.n_orphans  # one "[unknown]" per orphan
    assert prof["endValue"] == pytest.approx(profile.duration_us)
    # Self time per frame from the events equals the profile's self time per function.
    self_us: dict[tuple, float] = {}
    stack: list[tuple[tuple, float]] = []
    for e in prof["events"]:
        name = (frames[e["frame"]]["name"], frames[e["frame"]].get("file"))
        if stack:
            top, since = stack[-1]
            self_us[top] = self_us.get(top, 0.0) + e["at"] - since
            stack[-1] = (top, e["at"])
        if e["type"] == "O":
            stack.append((name, e["at"]))
        else:
            stack.pop()
            if stack:
                stack[-1] = (stack[-1][0], e["at"])
    for s in profile.function_stats():
        assert self_us.get((short_label(s.name), s.file), 0.0) == pytest.approx(s.self_us)


def test_speedscope_window(profile: Profile) -> None:
    a = profile.t0_us + profile.duration_us * 0.3
    b = profile.t0_us + profile.duration_us * 0.6
    doc = validate_speedscope(speedscope.render(profile, window=(a, b)))
    prof = doc["profiles"][0]
    assert prof["endValue"] - prof["startValue"] == pytest.approx(b - a)
    assert prof["events"]


def test_chrome_valid_and_complete(profile: Profile, frame_names: set[str]) -> None:
    doc = validate_chrome(chrome.render(profile))
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == profile.n_records + profile.n_orphans
    names = {e["name"] for e in xs}
    assert "app::clamp<int>" in names  # the display name, as the page's
    total = {s.label: s.total_us for s in profile.function_stats()}
    # No per-call args (they would split speedscope frames): only the signature, one
    # per function, where it differs from the display name.
    for e in xs:
        assert e.get("args", {"signature": e["name"] + "("}).keys() == {"signature"}
        assert e.get("args", {"signature": e["name"] + "("})["signature"] != e["name"]
    clamp = {e["args"]["signature"] for e in xs if e["name"] == "app::clamp<int>"}
    assert clamp == {"int app::clamp<int>(int, int, int)"}
    ends: list[float] = []  # events come in pre-order: nesting follows from the times
    top_level = []
    for e in xs:
        while ends and ends[-1] <= e["ts"]:
            ends.pop()
        if not ends and e["name"] == "main":
            top_level.append(e)
        ends.append(e["ts"] + e["dur"])
    assert sum(e["dur"] for e in top_level) <= total["main"] + 1e-6
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {e["name"] for e in meta} == {"process_name", "thread_name"}


def test_csv_parses_and_matches_stats(profile: Profile) -> None:
    rows = validate_csv(csv_export.render(profile))
    stats = profile.function_stats()
    assert len(rows) == len(stats)
    by_label = {(r["function"], r["file"]): r for r in rows}
    for s in stats:
        r = by_label[(short_label(s.name), s.where or "")]
        assert r["signature"] == s.name
        assert int(r["calls"]) == s.calls
        assert float(r["self_us"]) == pytest.approx(s.self_us, abs=1e-3)
        assert float(r["total_us"]) == pytest.approx(s.total_us, abs=1e-3)
    assert by_label[("uart_send", "")]["line"] == ""
    # Shares of the profiled time (the summed self time), as every view has them.
    assert sum(float(r["self_pct"]) for r in rows) == pytest.approx(100.0, abs=0.01)


def test_svg_well_formed_with_every_frame(profile: Profile, frame_names: set[str]) -> None:
    text = svg.render(profile)
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == f"{SVG_NS}svg"
    groups = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "f"]
    names = {g.get("data-n") for g in groups}
    assert frame_names <= names
    titles = [g.find(f"{SVG_NS}title").text for g in groups]
    # The tooltip: the display name with its figures, then the full signature.
    assert any(
        t.startswith("app::clamp<int> (") and "%)\nint app::clamp<int>(int, int, int)" in t
        for t in titles
    )
    scripts = list(root.iter(f"{SVG_NS}script"))
    assert len(scripts) == 1 and "zoom" in scripts[0].text and "search" in scripts[0].text
    assert "http://" not in scripts[0].text and "https://" not in scripts[0].text
    assert 'href="http' not in text and "src=" not in text


def test_svg_prunes_huge_trees() -> None:
    n = 20_000
    recs = np.empty(n, RECORD_DTYPE)
    recs["func_addr"] = np.arange(n) * 4  # every call a distinct frame
    recs["entry_time"] = np.arange(n) * 10
    recs["duration"] = 5
    recs["depth"] = 0
    p = Profile()
    p.add(recs)
    root = ET.fromstring(svg.render(p, max_nodes=500).encode())
    groups = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "f"]
    assert len(groups) <= 500
    assert any(g.get("data-n") == "other" for g in groups)


def test_callgrind_structure(profile: Profile) -> None:
    text = callgrind.render(profile)
    info = validate_callgrind(text)
    assert info["header"]["events"] == "ns"
    labels = {short_label(s.name) for s in profile.function_stats()}
    assert labels | {"[unknown]", "[root]"} == info["functions"]
    assert "fl=(1) src/" in text or "fl=(1) ???" in text
    # Self costs add up to the profile's self time.
    total_self_ns = sum(s.self_us for s in profile.function_stats()) * 1000
    assert int(info["header"]["summary"]) == pytest.approx(total_self_ns, abs=len(labels))


def test_exports_of_an_empty_profile() -> None:
    p = Profile()
    assert folded.render(p) == ""
    validate_speedscope(speedscope.render(p))
    validate_chrome(chrome.render(p))
    assert csv_export.render(p).count("\n") == 1
    ET.fromstring(svg.render(p).encode())
    validate_callgrind(callgrind.render(p))


def test_nesting_is_repaired_for_corrupt_streams() -> None:
    """Same-depth calls that overlap (a corrupt stream) still give balanced events."""
    recs = np.array(
        [(0x1, 0, 10, 1), (0x2, 5, 10, 1), (0x3, 0, 30, 0), (0x4, 2, 30, 0), (0x5, 8, 1, 2)],
        RECORD_DTYPE,
    )
    p = Profile()
    p.add(recs)
    validate_speedscope(speedscope.render(p))
    validate_chrome(chrome.render(p))
    json.loads(chrome.render(p))


@settings(max_examples=300)
@given(text=st.text(alphabet=st.sampled_from(list("ab&<>\"'\n\r\t ;é\x01")), max_size=30))
def test_svg_escapes_equal_saxutils(text) -> None:
    """svg.py's own escape and quoteattr (spared the import of xml.sax.saxutils) make
    what the standard library makes."""
    from xml.sax.saxutils import escape, quoteattr

    assert svg.escape(text) == escape(text)
    assert svg.quoteattr(text) == quoteattr(text)
