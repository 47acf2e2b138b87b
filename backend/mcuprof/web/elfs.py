"""The ELF files the dashboard can resolve symbols with: the bundled samples, the one
given on the command line, and uploads. The browser only ever names them by id, so no
path from the browser reaches the file system."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..paths import sample_elfs_dir
from ..symbols import SymbolTable
from .settings import Settings


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
        choice = ElfChoice(f"upload:{path.stem}", _display_name(original_name), path, "upload")
        with self._lock:
            self._uploads[choice.id] = choice
        return choice

    def forget(self, choice: ElfChoice) -> None:
        with self._lock:
            self._uploads.pop(choice.id, None)
        if choice.kind == "upload":
            choice.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Uploads live as long as the server: the catalog that names them is in memory."""
        with self._lock:
            uploads, self._uploads = list(self._uploads.values()), {}
        for choice in uploads:
            choice.path.unlink(missing_ok=True)

    def load(self, choice: ElfChoice) -> SymbolTable:
        """Parse with the time limit; UserError (one line) on a bad ELF."""
        timeout = self.settings.elf_parse_timeout_s
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
