"""The profile model sits below the views and exports: nothing in profile/ imports
from export/, web/ or diff/ (paths.py once took its row builder from export/)."""

from __future__ import annotations

import ast
from pathlib import Path

import mcuprof.profile

ABOVE = ("export", "web", "diff", "commands")


def _imported(path: Path) -> set[str]:
    """Modules a file imports, as absolute names under mcuprof."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                out.add(node.module or "")
            else:  # relative to mcuprof.profile: one dot is profile/, two are mcuprof/
                base = ["mcuprof", "profile"][: 3 - node.level]
                out.add(".".join([*base, *(node.module or "").split(".")]).rstrip("."))
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_profile_imports_nothing_from_the_layers_above() -> None:
    home = Path(mcuprof.profile.__file__).parent
    found = {
        f"{path.name}: {name}"
        for path in sorted(home.glob("*.py"))
        for name in _imported(path)
        if any(name == f"mcuprof.{up}" or name.startswith(f"mcuprof.{up}.") for up in ABOVE)
    }
    assert found == set()
