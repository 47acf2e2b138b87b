"""The ELF files the dashboard can resolve symbols with: the bundled samples, the one
given on the command line, and uploads. The browser only ever names them by id, so no
path from the browser reaches the file system."""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..paths import sample_elfs_dir
from ..symbols import SymbolTable
from ..symbols.loader import parse_slot
from .settings import Settings
from .uploads import adopt, discard, sweep


@dataclass(frozen=True)
class ElfChoice:
    id: str
    label: str
    path: Path
    kind: str  # "sample" | "cli" | "upload"

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "label": self.label, "kind": self.kind}


def _display_name(name: str) -> str:
    base = re.split(r"[\\/]", name)[-1]
    base = re.sub(r"[^\w.+-]", "_", base)[:80]
    return base or "upload.elf"


class ElfCatalog:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._uploads: dict[str, ElfChoice] = {}
        self._lock = threading.Lock()
        # Uploads left by a server that died (kill -9) are nobody's: no catalog names them.
        sweep(self.upload_dir)

    @property
    def upload_dir(self) -> Path:
        return self.settings.upload_dir

    def choices(self) -> list[ElfChoice]:
        out: list[ElfChoice] = []
        if self.settings.elf is not None:
            out.append(ElfChoice("cli", self.settings.elf.name, self.settings.elf, "cli"))
        folder = sample_elfs_dir()
        if folder.is_dir():
            for path in sorted(folder.glob("*.elf")):
                out.append(ElfChoice(f"sample:{path.name}", path.name, path, "sample"))
        with self._lock:
            out.extend(self._uploads.values())
        return out

    def default(self) -> ElfChoice | None:
        choices = self.choices()
        if not choices:
            return None
        wanted = self.settings.elf_path.resolve()
        for choice in choices:
            if choice.path.resolve() == wanted:
                return choice
        return choices[0]

    def get(self, elf_id: str) -> ElfChoice:
        for choice in self.choices():
            if choice.id == elf_id:
                return choice
        raise UserError(f"unknown ELF {elf_id!r}: pick one from the list or upload it")

    def add_upload(self, path: Path, original_name: str) -> ElfChoice:
        """Take a received upload. Stored under its content hash, so the same ELF
        uploaded again (under any name) is one file and one entry, named as last given."""
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        sha = digest.hexdigest()
        with self._lock:
            stored = adopt(path, path.with_name(f"{sha}.elf"))
            choice = ElfChoice(f"upload:{sha[:16]}", _display_name(original_name), stored, "upload")
            self._uploads[choice.id] = choice
        return choice

    def forget(self, choice: ElfChoice) -> None:
        with self._lock:
            self._uploads.pop(choice.id, None)
        if choice.kind == "upload":
            discard(choice.path)

    def close(self) -> None:
        """Uploads live as long as the server: the catalog that names them is in memory."""
        with self._lock:
            uploads, self._uploads = list(self._uploads.values()), {}
        for choice in uploads:
            discard(choice.path)

    def load(self, choice: ElfChoice) -> SymbolTable:
        """Parse with the time limit; UserError (one line) on a bad ELF."""
        timeout = self.settings.elf_parse_timeout_s
        try:
            size = choice.path.stat().st_size
        except OSError:
            size = 0
        # Reading and parsing take memory in proportion to the file: within the budget
        # (parallel uploads of large ELFs are parsed one after the other).
        with parse_slot(size):
            return self._load(choice, timeout)

    def _load(self, choice: ElfChoice, timeout: float) -> SymbolTable:
        if choice.kind == "upload":
            # Errors then name the file the user chose, not our generated storage path.
            try:
                data = choice.path.read_bytes()
            except OSError as exc:
                raise UserError(
                    f"{choice.label}: cannot read the upload ({exc.strerror})"
                ) from None
            return SymbolTable.from_elf_bytes(data, name=choice.label, timeout_s=timeout)
        return SymbolTable.from_elf(choice.path, timeout_s=timeout)
