"""The S12Z demo firmware and trace, built by the tests' own code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcuprof.s12z.flow import encode_flow
from mcuprof.s12z.sample import demo_elf, demo_flow


@pytest.fixture(scope="session")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("s12z")
    elf, trace = folder / "s12z-demo.elf", folder / "s12z-demo.trace"
    elf.write_bytes(demo_elf())
    trace.write_bytes(encode_flow(demo_flow()))
    return elf, trace
