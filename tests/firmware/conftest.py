"""Fixtures: the C library built for the host (see mcuprof_fwhost.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import built_once

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
    defines = [
        f"-DMCUPROF_RING_SIZE={RING_SIZE}u",
        f"-DMCUPROF_MAX_RECORDS_PER_PACKET={MAX_RPP}u",
        f"-DMCUPROF_MAX_DEPTH={MAX_DEPTH}u",
    ]
    out = built_once(  # once per run, shared by pytest-xdist workers
        tmp_path_factory, "mcuprof-host", lambda d: build_library(d / "libmcuprof.so", *defines)
    )
    return out / "libmcuprof.so"


@pytest.fixture(scope="session")
def disabled_library_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = built_once(
        tmp_path_factory,
        "mcuprof-host-off",
        lambda d: build_library(d / "libmcuprof_off.so", "-DMCUPROF_ENABLE=0"),
    )
    return out / "libmcuprof_off.so"


@pytest.fixture
def device(library_path: Path, tmp_path: Path) -> Iterator[Device]:
    yield fresh_device(library_path, tmp_path)
