"""Structural validators for the export formats (the rules their readers enforce)."""

from __future__ import annotations

import json
from typing import Any

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
SPEEDSCOPE_UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def validate_speedscope(text: str) -> dict[str, Any]:
    """speedscope's file-format spec: $schema, shared.frames, evented profiles whose O/C
    events are time-ordered, inside [startValue, endValue] and balanced like a stack."""
    doc = json.loads(text)
    assert doc["$schema"] == SPEEDSCOPE_SCHEMA
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list)
    for f in frames:
        assert isinstance(f["name"], str)
        assert set(f) <= {"name", "file", "line", "col"}
        assert "file" not in f or isinstance(f["file"], str)
        assert "line" not in f or _num(f["line"])
    profiles = doc["profiles"]
    assert isinstance(profiles, list) and profiles
    if "activeProfileIndex" in doc:
        assert 0 <= doc["activeProfileIndex"] < len(profiles)
    for p in profiles:
        assert p["type"] == "evented"
        assert isinstance(p["name"], str)
        assert p["unit"] in SPEEDSCOPE_UNITS
        assert _num(p["startValue"]) and _num(p["endValue"])
        assert p["startValue"] <= p["endValue"]
        stack: list[int] = []
        last = p["startValue"]
        for ev in p["events"]:
            assert set(ev) == {"type", "frame", "at"}
            assert _num(ev["at"]) and ev["at"] >= last, "events out of time order"
            assert ev["at"] <= p["endValue"]
            last = ev["at"]
            assert isinstance(ev["frame"], int) and 0 <= ev["frame"] < len(frames)
            if ev["type"] == "O":
                stack.append(ev["frame"])
            else:
                assert ev["type"] == "C"
                assert stack and stack.pop() == ev["frame"], "close does not match open"
        assert not stack, "unclosed frames"
    return doc


def validate_chrome(text: str) -> dict[str, Any]:
    """Trace Event JSON: metadata events name the process and thread; complete events
    carry ts/dur in µs and, per thread, nest properly (no partial overlap)."""
    doc = json.loads(text)
    events = doc["traceEvents"]
    meta = {(e["name"], e["pid"], e["tid"]) for e in events if e["ph"] == "M"}
    xs = [e for e in events if e["ph"] == "X"]
    assert {e["ph"] for e in events} <= {"M", "X"}
    for e in xs:
        assert ("process_name", e["pid"], e["tid"]) in meta
        assert ("thread_name", e["pid"], e["tid"]) in meta
        assert isinstance(e["name"], str) and _num(e["ts"]) and _num(e["dur"])
        assert e["dur"] >= 0
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in xs:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    eps = 1e-6
    for evs in by_thread.values():
        # Parents first at equal start; then every event must end inside the innermost
        # still-open event that it starts in.
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends: list[float] = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while open_ends and open_ends[-1] < e["ts"] - eps:
                open_ends.pop()
            while open_ends and open_ends[-1] <= e["ts"] + eps and end > open_ends[-1] + eps:
                open_ends.pop()  # touches the end of the previous sibling
            if open_ends:
                assert end <= open_ends[-1] + eps, "events overlap without nesting"
            open_ends.append(end)
    return doc


def validate_callgrind(text: str) -> dict[str, Any]:
    """Header lines, then fn= blocks whose cost lines are 'position cost' pairs; every
    calls= line is followed by one cost line; compressed ids are defined before use."""
    lines = text.split("\n")
    assert lines[0] == "# callgrind format"
    header = {}
    i = 1
    while lines[i]:
        key, _, value = lines[i].partition(":")
        header[key.strip()] = value.strip()
        i += 1
    assert header["positions"] == "line"
    events = header["events"].split()
    assert events
    defined: dict[str, dict[str, str]] = {"fl": {}, "fn": {}}
    names: dict[str, str] = {}
    self_total = 0
    current = None
    expect_cost = False
    for line in lines[i:]:
        if not line:
            continue
        if "=" in line:
            key, _, value = line.partition("=")
            assert not expect_cost
            if key == "calls":
                count, pos = value.split()
                assert int(count) > 0 and int(pos) >= 0
                expect_cost = True
                continue
            kind = {"fl": "fl", "fn": "fn", "cfl": "fl", "cfn": "fn"}[key]
            ident, _, name = value.partition(" ")
            assert ident.startswith("(") and ident.endswith(")")
            if name:
                defined[kind][ident] = name
            assert ident in defined[kind], f"{key} id {ident} used before definition"
            if key == "fn":
                current = defined["fn"][ident]
                names[ident] = current
            continue
        parts = line.split()
        assert len(parts) == 1 + len(events), line
        assert all(p.lstrip("-").isdigit() for p in parts)
        assert current is not None
        if not expect_cost:
            self_total += int(parts[1])
        expect_cost = False
    assert not expect_cost
    assert int(header["summary"]) == self_total
    return {"header": header, "functions": set(names.values())}


CSV_NUMBERS = [
    "total_us",
    "self_us",
    "min_us",
    "max_us",
    "mean_us",
    "total_pct",
    "self_pct",
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
]


def validate_csv(text: str) -> list[dict[str, str]]:
    """The per-function CSV: the header, whole call counts, numbers with three decimals,
    and per row min <= p50 <= p90 <= p99 <= p99.9 <= max (all per call, inclusive)."""
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.split("\n", 1)[0].split(",")
    assert header == ["function", "file", "line", "calls", *CSV_NUMBERS, "signature"], header
    for r in rows:
        assert int(r["calls"]) >= 1
        for k in CSV_NUMBERS:
            whole, _, frac = r[k].partition(".")
            assert whole.isdigit() and len(frac) == 3, (k, r[k])
        chain = [float(r[k]) for k in ("min_us", "p50_us", "p90_us", "p99_us", "p999_us")]
        chain.append(float(r["max_us"]))
        assert chain == sorted(chain), r
    return rows
