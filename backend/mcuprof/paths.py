"""Where bundled files live: inside an installed wheel, or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent

DEFAULT_ELF_NAME = "mcuprof-demo.elf"


def _bundled(wheel_name: str, checkout_name: str) -> Path:
    # A wheel carries the folder inside the package; an editable install reads the checkout.
    inside = _PACKAGE / wheel_name
    return inside if inside.is_dir() else _CHECKOUT / checkout_name


def frontend_dir() -> Path:
    return _bundled("_frontend", "frontend")


def sample_elfs_dir() -> Path:
    return _bundled("_sample_elfs", "sample_elfs")


def default_elf() -> Path:
    return sample_elfs_dir() / DEFAULT_ELF_NAME
