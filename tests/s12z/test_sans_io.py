"""The S12Z decoder is sans-IO: its modules import nothing that touches files, sockets,
processes or the clock."""

from __future__ import annotations

import ast
from pathlib import Path

import mcuprof.protocol.s12z as pkg

IO_MODULES = {"os", "io", "sys", "socket", "serial", "pathlib", "subprocess", "asyncio", "time"}


def test_no_io_imports() -> None:
    folder = Path(pkg.__file__).parent
    files = sorted(folder.glob("*.py"))
    assert {f.name for f in files} >= {"decoder.py", "events.py", "layout.py"}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in IO_MODULES, f"{path.name} imports {name}"
