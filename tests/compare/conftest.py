"""Crafted captures: a known call tree, encoded with the real protocol encoders, using the
function addresses of the real sample ELF."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from mcuprof.paths import default_elf
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import SymbolTable


@dataclass
class Call:
    """A call: ``self_ticks`` of its own time first, then its children in order."""

    name: str
    self_ticks: int
    children: list[Call] = field(default_factory=list)


def records_for(
    tree: list[Call], iterations: int, addr_of: Callable[[str], int], gap: int = 0
) -> np.ndarray:
    """Records in return order (children before parents), as the device sends them."""
    rows: list[tuple[int, int, int, int]] = []

    def emit(call: Call, depth: int, start: int) -> int:
        t = start + call.self_ticks
        for child in call.children:
            t = emit(child, depth + 1, t)
        rows.append((addr_of(call.name), start, t - start, depth))
        return t

    t = 1000
    for _ in range(iterations):
        for root in tree:
            t = emit(root, 0, t) + gap
    rec = np.zeros(len(rows), dtype=RECORD_DTYPE)
    if rows:
        arr = np.array(rows, dtype=np.int64)
        rec["func_addr"], rec["entry_time"] = arr[:, 0], arr[:, 1] & 0xFFFFFFFF
        rec["duration"], rec["depth"] = arr[:, 2], arr[:, 3]
    return rec


def encode(rec: np.ndarray, meta: Metadata | None, per_packet: int = 64) -> bytes:
    out = [encode_metadata(meta)] if meta is not None else []
    for i in range(0, len(rec), per_packet):
        out.append(encode_profile_data(rec[i : i + per_packet]))
    return b"".join(out)


class Firmware:
    """The sample ELF: real names and addresses (Thumb bit set, as a device reports)."""

    def __init__(self) -> None:
        self.elf = default_elf()
        self.symbols = SymbolTable.from_elf(self.elf)
        self.by_name = {f.name: f for f in self.symbols.functions}
        self.meta = Metadata(25_000_000, 1_000_000, self.symbols.build_id or 0, "demo-1.0")

    def addr(self, name: str) -> int:
        return self.by_name[name].start | 1

    def capture(self, tree: list[Call], iterations: int, meta: bool = True) -> bytes:
        return encode(records_for(tree, iterations, self.addr), self.meta if meta else None)


def demo_tree(fir: int = 50, pid: int = 20, clamp: int = 5, extra: bool = False) -> list[Call]:
    control = Call(
        "control_step",
        4,
        [Call("app::Pid::step(long)", pid, [Call("int app::clamp<int>(int, int, int)", clamp)])],
    )
    kids = [Call("sensor_take", 8), Call("fir_filter", fir), control]
    if extra:
        kids.append(Call("actuator_write", 10))
    return [Call("control_iteration", 3, kids)]


@pytest.fixture(scope="session")
def firmware() -> Firmware:
    return Firmware()


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, bytes], Path]:
    def _write(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return _write


@pytest.fixture(scope="session")
def kit() -> SimpleNamespace:
    """The builders, for tests (conftest is not importable under --import-mode=importlib)."""
    return SimpleNamespace(demo_tree=demo_tree, encode=encode, records_for=records_for, Call=Call)


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    # Never let a test fall back to the user's real ~/.local/share/mcuprof.
    monkeypatch.setenv("MCUPROF_DATA_DIR", str(tmp_path_factory.mktemp("default-data")))
