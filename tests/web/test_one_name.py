"""One name everywhere (issue 34): a C++ function of the sample ELF is named by the same
string, the page's short demangled name, in the page's Functions and flame JSON, in
every export and in Compare; its full signature is in a field of its own. The folded
export alone keeps c++filt's full name: CLARIFICATIONS.md defines its frames so."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from mcuprof import export
from mcuprof.cli import main
from mcuprof.paths import default_elf
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import Function, SymbolTable
from mcuprof.web import views

SIGNATURE = "int app::clamp<int>(int, int, int)"
NAME = "app::clamp<int>"
STATIC = "control_iteration"  # static in main.c: its file is a field, not in its name
SVG_G = "{http://www.w3.org/2000/svg}g"


def _records(table: SymbolTable, calls: int, clamp: int = 10) -> np.ndarray:
    """control_iteration (depth 0) calling app::clamp<int> (depth 1, about ``clamp``
    µs), ``calls`` times."""
    start = {f.name: f.start for f in table.functions}
    recs = np.zeros(2 * calls, RECORD_DTYPE)
    for k in range(calls):
        t = 1000 + 100 * k
        recs[2 * k] = (start[STATIC] | 1, t, 40, 0)
        recs[2 * k + 1] = (start[SIGNATURE] | 1, t + 5, clamp + k % 3, 1)
    return recs


@pytest.fixture(scope="module")
def table() -> SymbolTable:
    return SymbolTable.from_elf(default_elf())


@pytest.fixture(scope="module")
def profile(table: SymbolTable) -> Profile:
    p = Profile(table)
    p.add(_records(table, 30))
    return p


def _export_names(p: Profile) -> dict[str, tuple[str, str | None]]:
    """Per export: (the function's name, its full signature where the format has a field)."""
    rows = list(csv.DictReader(io.StringIO(export.render("csv", p))))
    row = next(r for r in rows if r["function"] == NAME)
    svg = ET.fromstring(export.render("svg", p).encode())
    g = next(g for g in svg.iter(SVG_G) if g.get("data-l") == NAME)
    tip = g.find("{http://www.w3.org/2000/svg}title").text
    frames = json.loads(export.render("speedscope", p))["shared"]["frames"]
    events = json.loads(export.render("chrome", p))["traceEvents"]
    chrome = next(e for e in events if e["ph"] == "X" and e["name"] == NAME)
    callgrind = re.findall(r"^c?fn=\(\d+\) (.*)$", export.render("callgrind", p), re.M)
    return {
        "csv": (row["function"], row["signature"]),
        "svg": (g.get("data-l"), tip.split("\n")[1]),
        "speedscope": (next(f["name"] for f in frames if "clamp" in f["name"]), None),
        "chrome": (chrome["name"], chrome["args"]["signature"]),
        "callgrind": (next(n for n in callgrind if "clamp" in n), None),
    }


def test_one_name_in_the_page_and_every_export(profile: Profile) -> None:
    names = _export_names(profile)
    rows = views.functions(profile, None)["functions"]
    row = next(r for r in rows if r["display"] == NAME)
    names["functions"] = (row["display"], row["name"])
    flame = views.flame_graph(profile, None, 1000)
    at = flame["labels"].index(NAME)
    names["flame"] = (flame["labels"][at], flame["names"][at])  # names: the tooltip's
    assert {k: v[0] for k, v in names.items()} == dict.fromkeys(names, NAME)
    signatures = {k: v[1] for k, v in names.items() if v[1] is not None}
    assert signatures == dict.fromkeys(signatures, SIGNATURE)
    # Folded stacks are c++filt's names, as CLARIFICATIONS.md defines them.
    assert f"{STATIC};{SIGNATURE} " in export.render("folded", profile)
    # A static is named alone; its file is a field of its own.
    csv_rows = list(csv.DictReader(io.StringIO(export.render("csv", profile))))
    static = next(r for r in csv_rows if r["function"] == STATIC)
    assert static["file"] == "main.c"
    assert next(r for r in rows if r["display"] == STATIC)["file"] == "main.c"


def test_compare_names_as_the_page(table: SymbolTable, tmp_path: Path, capsys) -> None:
    meta = encode_metadata(Metadata(168_000_000, 1_000_000, table.build_id or 0, "one-name"))
    paths = []
    for n, clamp in (("base", 10), ("new", 20)):  # app::clamp<int> regresses
        path = tmp_path / f"{n}.bin"
        path.write_bytes(meta + encode_profile_data(_records(table, 30, clamp)))
        paths.append(str(path))
    elf = str(default_elf())
    main(["compare", *paths, "--elf", elf, "--json"])
    report = json.loads(capsys.readouterr().out)
    (row,) = report["regressions"]
    assert (row["key"], row["name"], row["signature"]) == (SIGNATURE, NAME, SIGNATURE)
    # The key still matches captures (a static's file in it); the name is the display one.
    verdicts = {v["key"]: v["name"] for v in report["verdicts"]}
    assert verdicts == {SIGNATURE: NAME, f"{STATIC} [main.c]": STATIC}
    svg_path = tmp_path / "diff.svg"
    main(["compare", *paths, "--elf", elf, "--diff-svg", str(svg_path)])
    text = capsys.readouterr().out
    assert f"  {NAME} " in text and SIGNATURE not in text, text
    assert f"{STATIC} [main.c]" not in text
    # The differential flame graph: the cell reads the display name; its tooltip gives
    # the full signature and the gate's verdict (found by the name the frame carries).
    svg = ET.fromstring(svg_path.read_bytes())
    g = next(g for g in svg.iter(SVG_G) if g.findtext("{http://www.w3.org/2000/svg}text") == NAME)
    tip = g.findtext("{http://www.w3.org/2000/svg}title").split("\n")
    assert tip[:2] == [NAME, SIGNATURE] and tip[-1].startswith("regressed: +")


def test_two_statics_of_one_name_stay_two_frames_in_flame_graphs() -> None:
    """``static void helper()`` in a.c and in b.c, both called from main: one label,
    two frames in the page's flame graph (keyed by function identity). The folded
    stacks merge them, as their format (one line per name path) requires, and so does
    the SVG export, a flamegraph.pl graph of those stacks (tests/profile/test_trees.py
    holds it to the name-path tree)."""
    funcs = [
        Function("main", "main", 0x100, 0x200, file="main.c"),
        Function("helper", "helper", 0x200, 0x300, file="a.c", is_static=True),
        Function("helper", "helper", 0x300, 0x400, file="b.c", is_static=True),
    ]
    p = Profile(SymbolTable.from_functions(funcs))
    recs = np.zeros(3, RECORD_DTYPE)
    recs[0] = (0x101, 1000, 100, 0)
    recs[1] = (0x201, 1010, 20, 1)
    recs[2] = (0x301, 1040, 30, 1)
    p.add(recs)
    svg = ET.fromstring(export.render("svg", p).encode())
    helpers = [g for g in svg.iter(SVG_G) if g.get("data-l") == "helper"]
    assert [g.get("data-v") for g in helpers] == ["50.000"]
    flame = views.flame_graph(p, None, 1000)
    at = [i for i, k in enumerate(flame["name"]) if flame["labels"][k] == "helper"]
    assert sorted(flame["total"][i] for i in at) == [
        20 * flame["units_per_us"],
        30 * flame["units_per_us"],
    ]
    rows = views.functions(p, None)["functions"]
    assert sorted((r["display"], r["file"]) for r in rows if r["display"] == "helper") == [
        ("helper", "a.c"),
        ("helper", "b.c"),
    ]
    assert export.render("folded", p).splitlines() == ["main 50", "main;helper 50"]
