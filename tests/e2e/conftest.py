"""Fixtures for the end-to-end tests: a fresh firmware build and QEMU running it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcuprof.qemu import QemuProcess

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo firmware built from source with `make -C firmware` (needs arm-none-eabi-gcc:
    a missing cross compiler fails here, it is never skipped)."""
    build_dir = tmp_path_factory.mktemp("firmware-build")
    done = subprocess.run(
        ["make", "-C", str(ROOT / "firmware"), f"BUILD_DIR={build_dir}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"firmware build failed:\n{done.stdout}\n{done.stderr}"
    elf = build_dir / "mcuprof-demo.elf"
    assert elf.is_file()
    return elf


@pytest.fixture
def qemu(built_elf: Path) -> Iterator[QemuProcess]:
    with QemuProcess(built_elf) as proc:
        yield proc
