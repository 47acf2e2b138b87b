"""One object per kind of capture (backend/mcuprof/kinds/): outside the packages that
hold a kind's protocol, no code compares a kind's name or tests for a kind's link or
source class; it asks the kind object."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mcuprof
from mcuprof import kinds
from mcuprof.errors import UserError

HOME = Path(mcuprof.__file__).parent
# The packages that know the protocols (issue 31).
ALLOWED = {"kinds", "protocol", "link", "sources", "qs", "s12z"}
NAMES = {*kinds.NAMES, *kinds.ALIASES}
# The classes of one kind: an isinstance on them is a branch on the kind.
KIND_CLASSES = {
    "DeviceSession",
    "QSLink",
    "ReplayDevice",
    "QSReplayDevice",
    "MiniProfilerSource",
    "QSSource",
}
KIND_CONSTANTS = {"QS_KIND", "KIND"}  # sources' and s12z's name constants


def _names_a_kind(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_a_kind(e) for e in node.elts)
    if isinstance(node, ast.Name):
        return node.id in KIND_CONSTANTS
    if isinstance(node, ast.Attribute):  # MiniProfilerSource.kind, sources.QS_KIND
        return node.attr in KIND_CONSTANTS or (
            node.attr == "kind"
            and isinstance(node.value, ast.Name)
            and node.value.id in KIND_CLASSES
        )
    return False


def _tests_a_kind_class(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("isinstance", "issubclass")
        and len(node.args) == 2
        and any(
            isinstance(n, ast.Name | ast.Attribute)
            and (n.id if isinstance(n, ast.Name) else n.attr) in KIND_CLASSES
            for n in ast.walk(node.args[1])
        )
    )


def _branches(tree: ast.AST) -> list[tuple[int, str]]:
    """Comparisons with a kind's name, and isinstance tests on a kind's classes."""
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if (
            isinstance(node, ast.Compare)
            and any(_names_a_kind(n) for n in (node.left, *node.comparators))
        )
        or _tests_a_kind_class(node)
    ]


def test_nothing_outside_the_protocol_packages_branches_on_a_kind() -> None:
    found = []
    for path in sorted(HOME.rglob("*.py")):
        rel = path.relative_to(HOME)
        if len(rel.parts) > 1 and rel.parts[0] in ALLOWED:
            continue
        for line, text in _branches(ast.parse(path.read_text(encoding="utf-8"))):
            found.append(f"{rel}:{line}: {text}")
    assert found == []


def test_the_check_finds_a_branch_on_a_kind() -> None:
    source = """
if info.kind == "qs": pass
if kind != 'miniprofiler': pass
if proto in ("mp", "x"): pass
if kind == QS_KIND: pass
if kind == MiniProfilerSource.kind: pass
if isinstance(link, QSLink): pass
if isinstance(d, (ReplayDevice, int)): pass
if item.kind == "dispatch": pass
"""
    assert [line for line, _ in _branches(ast.parse(source))] == [2, 3, 4, 5, 6, 7, 8]


def test_one_name_per_kind_and_mp_only_as_an_input_alias() -> None:
    assert kinds.NAMES == ("miniprofiler", "qs", "s12z")
    assert kinds.resolve("mp") is kinds.get("miniprofiler")
    assert kinds.resolve(" QS ") is kinds.get("qs")
    assert kinds.resolve(None) is kinds.DEFAULT
    with pytest.raises(UserError, match="unknown capture kind 'mp'"):
        kinds.get("mp")  # a stored name is the one name
    with pytest.raises(UserError, match="unknown capture kind 'nope'"):
        kinds.resolve("nope")


def test_each_kind_says_what_it_offers() -> None:
    mp, qs, s12z = (kinds.get(n) for n in kinds.NAMES)
    assert kinds.PROFILE_NAMES == ("miniprofiler", "qs")
    assert kinds.LIVE_NAMES == ("miniprofiler", "qs")
    assert qs.offers(kinds.QS_MONITOR) and not mp.offers(kinds.QS_MONITOR)
    assert s12z.offers(kinds.S12Z_REPORT) and not s12z.profiles
    assert mp.names_from_elf and not qs.names_from_elf
    assert mp.new_source().kind == "miniprofiler" and qs.new_source(1000).tick_hz == 1000
    with pytest.raises(UserError, match="S12Z captures do not decode to a profile"):
        s12z.new_source()
    assert mp.link_factory().__name__ == "DeviceSession"
    assert qs.link_factory().__name__ == "QSLink"
    assert not s12z.live


def test_detect_tells_the_kind_from_the_bytes(qs_stream: bytes) -> None:
    from tests.store.conftest import capture

    assert kinds.detect(capture(4)) is kinds.get("miniprofiler")
    assert kinds.detect(qs_stream) is kinds.get("qs")
    assert kinds.detect(b"hello, world") is None


@pytest.fixture(scope="module")
def qs_stream() -> bytes:
    from tests.sources.conftest import sim_stream

    return sim_stream(0.2)


def test_the_commands_take_mp_as_miniprofiler() -> None:
    from mcuprof.cli import build_parser

    parser = build_parser()
    assert (
        parser.parse_args(["export", "c.bin", "-f", "csv", "--kind", "mp"]).kind == "miniprofiler"
    )
    assert parser.parse_args(["sessions", "import", "c.bin", "--kind", "QS"]).kind == "qs"
    assert parser.parse_args(["serve", "--proto", "mp"]).proto == "miniprofiler"
    with pytest.raises(SystemExit):
        parser.parse_args(["export", "c.bin", "-f", "csv", "--kind", "s12z"])


# A kind's name compared in the page's scripts: `kind === "qs"`, `s.kind !== 's12z'`.
KIND_NAMES = "|".join(sorted(NAMES))
JS_BRANCH = re.compile(rf"""[kK]ind(\(\))?\s*[!=]==?\s*["']({KIND_NAMES})["']""")


def test_the_page_asks_the_kinds_too() -> None:
    """The page's scripts read /api/kinds (frontend/js/kinds.js) instead of comparing a
    kind's name (tests/web/test_kinds_api.py checks the list)."""
    found = []
    for path in sorted((HOME.parents[1] / "frontend" / "js").glob("*.js")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if JS_BRANCH.search(line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert found == []
    assert JS_BRANCH.search('const qs = state?.device?.kind === "qs";')
    assert JS_BRANCH.search("ctx.shownKind() !== 's12z'")
