"""The layers of backend/mcuprof, as docs/architecture.md writes them ("Layers"): a
package or top-level module imports only from the lines below its own, never from its
own line or above, so the package import graph has no cycles. Every import counts,
including those inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import mcuprof

HOME = Path(mcuprof.__file__).parent
DOC = HOME.parents[1] / "docs" / "architecture.md"


def layers() -> list[list[str]]:
    """The document's layers, lowest first: one line each, names split by commas."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- layers -->\n```\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no layers block"
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    return [[n.strip() for n in line.split(",")] for line in reversed(lines) if line]


def _unit(path: Path) -> str:
    """The package (first folder) or top-level module a file belongs to."""
    rel = path.relative_to(HOME)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _targets(path: Path) -> set[str]:
    """The packages and top-level modules of mcuprof that a file imports."""
    rel = path.relative_to(HOME).with_suffix("")
    here = ["mcuprof", *rel.parts]  # the module's name; a package's __init__ is the package
    package = here[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (
                (node.module or "").split(".")
                if node.level == 0
                else package[: len(package) - node.level + 1]
            )
            if node.level and node.module:
                base = [*base, *node.module.split(".")]
            names = [".".join(base)]
            if base == ["mcuprof"]:  # from .. import kinds: submodules, or the root's names
                names = [f"mcuprof.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "mcuprof" and len(parts) > 1:
                target = parts[1]
                if (HOME / target).is_dir() or (HOME / f"{target}.py").is_file():
                    out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(HOME.rglob("*.py")):
        if path.parent == HOME and path.stem == "__init__":
            continue  # the root package: its version string only
        unit = _unit(path)
        edges.setdefault(unit, set()).update(_targets(path) - {unit})
    return edges


def test_every_package_has_a_layer() -> None:
    named = [n for line in layers() for n in line]
    assert len(named) == len(set(named)), "a name on two lines"
    assert set(named) == set(graph()), "the layers name each package and module once"


def test_each_layer_imports_only_from_the_layers_below() -> None:
    level = {n: i for i, line in enumerate(layers()) for n in line}
    wrong = sorted(
        f"{a} -> {b}" for a, targets in graph().items() for b in targets if level[b] >= level[a]
    )
    assert wrong == []


def test_the_package_import_graph_has_no_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (found := cycle_from(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            assert cycle_from(node, []) is None
