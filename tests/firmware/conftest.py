"""Fixtures: the C library built for the host (see mcuprof_fwhost.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# --import-mode=importlib keeps test dirs off sys.path; the helper module has a
# unique name so it cannot collide with another directory's helpers.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcuprof_fwhost import (
    MAX_DEPTH,
    MAX_RPP,
    RING_SIZE,
    Device,
    build_library,
    fresh_device,
)


@pytest.fixture(scope="session")
def library_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mcuprof-host") / "libmcuprof.so"
    defines = [
        f"-DMCUPROF_RING_SIZE={RING_SIZE}u",
        f"-DMCUPROF_MAX_RECORDS_PER_PACKET={MAX_RPP}u",
        f"-DMCUPROF_MAX_DEPTH={MAX_DEPTH}u",
    ]
    return build_library(out, *defines)


@pytest.fixture(scope="session")
def disabled_library_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mcuprof-host-off") / "libmcuprof_off.so"
    return build_library(out, "-DMCUPROF_ENABLE=0")


@pytest.fixture
def device(library_path: Path, tmp_path: Path) -> Iterator[Device]:
    yield fresh_device(library_path, tmp_path)
