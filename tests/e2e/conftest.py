"""Fixtures for the end-to-end tests: a fresh firmware build and QEMU running it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcuprof.qemu import QemuProcess


@pytest.fixture(scope="session")
def built_elf(firmware_build: Path) -> Path:
    """The demo firmware built from source (the run's one `make -C firmware`)."""
    elf = firmware_build / "mcuprof-demo.elf"
    assert elf.is_file()
    return elf


@pytest.fixture
def qemu(built_elf: Path) -> Iterator[QemuProcess]:
    with QemuProcess(built_elf) as proc:
        yield proc
