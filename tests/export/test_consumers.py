"""Exports read by the real consumers installed on this machine (callgrind_annotate from
valgrind), and the display-name rule: one name per function in every export."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from mcuprof import export
from mcuprof.names import short_label
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable
from tests.export.conftest import NAMES

F = {name: 0x0800_0000 + i * 0x100 for i, name in enumerate(NAMES) if name != "helper"}
HELPER_A, HELPER_B = 0x0800_0600, 0x0800_0700  # two statics named "helper"
ISR = F["TIM2_IRQHandler"]


def _profile(table) -> Profile:
    """main > (clamp > helper[a], uart_send > ISR) repeated, plus the ISR and the other
    helper at the root: a function that runs both at the root and nested."""
    rows = []
    for k in range(50):
        t = k * 1000
        rows += [
            (HELPER_A, t + 20, 30, 2),
            (F["int app::clamp<int>(int, int, int)"], t + 10, 100, 1),
            (ISR, t + 200, 40, 2),
            (F["uart_send"], t + 150, 200, 1),
            (F["main"], t, 400, 0),
            (ISR, t + 500, 70, 0),
            (HELPER_B, t + 600, 25, 0),
        ]
    p = Profile(table)
    p.add(np.array(rows, RECORD_DTYPE))
    return p


@pytest.mark.skipif(shutil.which("callgrind_annotate") is None, reason="valgrind not installed")
def test_callgrind_annotate_reads_it_without_warning_and_counts_root_calls(
    table, tmp_path: Path
) -> None:
    p = _profile(table)
    path = tmp_path / "p.callgrind"
    path.write_text(export.render("callgrind", p))
    proc = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stdout + proc.stderr
    inclusive = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S+?):(.*)$", line)
        if m:
            inclusive[(m.group(2), m.group(3))] = int(m.group(1).replace(",", ""))
    stats = p.function_stats()
    for s in stats:  # no function here calls itself, so inclusive times must agree
        key = (s.file or "???", short_label(s.name))
        assert inclusive[key] == round(s.total_us * 1000), s.name
    # [root] calls what runs at the root: main, the ISR and one helper, 50 times each.
    assert inclusive[("???", "[root]")] == 50 * (400 + 70 + 25) * 1000


def test_one_display_name_per_function_in_every_export(table) -> None:
    p = _profile(table)
    folded_names = {
        frame
        for line in export.render("folded", p).splitlines()
        for frame in line.rsplit(" ", 1)[0].split(";")
    }
    assert "helper" in folded_names and not any("[" in n for n in folded_names)
    speedscope = {f["name"] for f in json.loads(export.render("speedscope", p))["shared"]["frames"]}
    chrome_events = [
        e for e in json.loads(export.render("chrome", p))["traceEvents"] if e["ph"] == "X"
    ]
    chrome = {e["name"] for e in chrome_events}
    callgrind = set(re.findall(r"^c?fn=\(\d+\) (.*)$", export.render("callgrind", p), re.M))
    svg_root = ET.fromstring(export.render("svg", p).encode())
    svg = {g.get("data-l") for g in svg_root.iter("{http://www.w3.org/2000/svg}g")} - {None}
    csv_names = {row[0] for row in list(csv.reader(io.StringIO(export.render("csv", p))))[1:]}
    # Folded frames are the full c++filt names (CLARIFICATIONS.md); every other export
    # shows the display name, the page's short one.
    shown = {short_label(n) for n in folded_names}
    assert speedscope == chrome == csv_names == shown
    assert callgrind == shown | {"[root]"}
    assert svg == shown | {"all"}
    # The two statics stay two functions where the format keys by file.
    helpers = [
        f
        for f in json.loads(export.render("speedscope", p))["shared"]["frames"]
        if f["name"] == "helper"
    ]
    assert len(helpers) == 2 and len({f["file"] for f in helpers}) == 2
    # The CSV names them as every view does, its file column telling them apart.
    rows = list(csv.DictReader(io.StringIO(export.render("csv", p))))
    assert "label" not in rows[0]
    assert sorted(r["file"] for r in rows if r["function"] == "helper") == [
        "src/file6.cpp",
        "src/file7.cpp",
    ]


def test_a_static_without_dwarf_is_told_apart_by_its_unit() -> None:
    """Two ``static void helper()`` with no line info: the file field carries the
    translation unit (STT_FILE), where the label used to carry it in brackets."""
    funcs = [
        Function("helper", "helper", 0x100, 0x200, is_static=True, unit="a.c"),
        Function("helper", "helper", 0x200, 0x300, is_static=True, unit="b.c"),
    ]
    p = Profile(SymbolTable.from_functions(funcs))
    recs = np.zeros(2, RECORD_DTYPE)
    recs["entry_time"] = [0, 100]
    recs["duration"] = [50, 30]
    recs["func_addr"] = [0x100, 0x200]
    p.add(recs)
    stats = p.function_stats()
    assert [(s.name, s.where) for s in stats] == [("helper", "a.c"), ("helper", "b.c")]
    rows = list(csv.DictReader(io.StringIO(export.render("csv", p))))
    assert [(r["function"], r["file"]) for r in rows] == [("helper", "a.c"), ("helper", "b.c")]


def test_chrome_events_give_one_frame_per_function(table) -> None:
    """speedscope's Chrome importer keys a frame by name and args: no per-call args."""
    p = _profile(table)
    events = [e for e in json.loads(export.render("chrome", p))["traceEvents"] if e["ph"] == "X"]
    keys = {(e["name"], json.dumps(e.get("args"), sort_keys=True)) for e in events}
    assert len(keys) == len({e["name"] for e in events}) == len(p.function_stats()) - 1
