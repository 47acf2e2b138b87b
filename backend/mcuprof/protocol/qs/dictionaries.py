"""QS dictionaries: names for object and function pointers, signals, user records and
enumerations, as the target's dictionary records (or a saved .dic file) give them.

A ``Dictionaries`` value never changes: the decoder replaces it with a new one when a
dictionary record arrives, and every record carries the one that was current when it
was decoded. Rendering a record later therefore names things exactly as QSPY would have
at that moment. The new tables share what did not change (``Layered``): a target that
renames one key over and over makes small snapshots, not a copy of the table each.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# QSPY pre-fills this user record after every reset.
QUTEST_ON_POST = (124, "QUTEST_ON_POST")

_EMPTY: Mapping = MappingProxyType({})


def _frozen(d: dict) -> Mapping:
    return MappingProxyType(d)


_KINDS = ("obj", "fun", "usr", "sig", "enum")
_MISSING = object()
# Below this many entries in the base, flattening is as cheap as layering.
_FLAT_BELOW = 64


class Layered(Mapping):
    """An immutable table as a shared ``base`` plus the few entries changed since
    (``top``), with dict semantics (a changed key keeps its place in the order).

    ``with_entry`` copies only ``top``; it folds ``top`` into a new base once the
    copies made since the last fold (``spent``) outgrow the base. Each entry put
    then costs amortised O(1) memory in a run of renames and O(sqrt(n)) while
    a table of n entries fills, however many snapshots records keep."""

    __slots__ = ("_base", "_len", "_spent", "_top")

    def __init__(self, base: Mapping, top: dict | None = None, spent: int = 0) -> None:
        self._base = base
        self._top = top or {}
        self._spent = spent
        self._len = len(base) + sum(1 for k in self._top if k not in base)

    @classmethod
    def _make(cls, base: Mapping, top: dict, spent: int, length: int) -> Layered:
        new = cls.__new__(cls)
        new._base, new._top, new._spent, new._len = base, top, spent, length
        return new

    def __getitem__(self, key):
        value = self._top.get(key, _MISSING)
        return self._base[key] if value is _MISSING else value

    def get(self, key, default=None):
        value = self._top.get(key, _MISSING)
        return self._base.get(key, default) if value is _MISSING else value

    def __contains__(self, key) -> bool:
        return key in self._top or key in self._base

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator:
        yield from self._base
        base = self._base
        yield from (k for k in self._top if k not in base)

    def __repr__(self) -> str:
        return f"Layered({dict(self)!r})"

    def with_entry(self, key, value) -> Layered:
        spent = self._spent + len(self._top) + 1
        if spent > max(len(self._base), _FLAT_BELOW):
            base = dict(self._base)
            base.update(self._top)
            base[key] = value
            return Layered(_frozen(base))
        top = dict(self._top)
        top[key] = value
        return Layered._make(self._base, top, spent, self._len + (key not in self))


@dataclass(frozen=True, slots=True)
class Dictionaries:
    obj: Mapping[int, str] = field(default_factory=lambda: _EMPTY)
    fun: Mapping[int, str] = field(default_factory=lambda: _EMPTY)
    usr: Mapping[int, str] = field(default_factory=lambda: _EMPTY)
    # Signals are named per (signal, object); object 0 is a global signal.
    sig: Mapping[tuple[int, int], str] = field(default_factory=lambda: _EMPTY)
    # Enumerations are named per (group, value).
    enum: Mapping[tuple[int, int], str] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def initial(cls) -> Dictionaries:
        """What QSPY holds after a reset: only QUTEST_ON_POST."""
        return cls(usr=_frozen(dict([QUTEST_ON_POST])))

    def with_entry(self, kind: str, key: int | tuple[int, int], name: str) -> Dictionaries:
        table = getattr(self, kind)
        if not isinstance(table, Layered):
            table = Layered(table)
        tables = {k: getattr(self, k) for k in _KINDS}
        tables[kind] = table.with_entry(key, name)
        return Dictionaries(**tables)

    def merged(self, other: Dictionaries) -> Dictionaries:
        """These entries with ``other``'s added (``other`` wins on the same key)."""
        return Dictionaries(
            **{kind: _frozen({**getattr(self, kind), **getattr(other, kind)}) for kind in _KINDS}
        )

    def sig_name(self, sig: int, obj: int) -> str | None:
        """QSPY's lookup: the object's own signal, else the global one; a lookup
        without an object takes any entry for the signal."""
        name = self.sig.get((sig, obj))
        if name is None and obj:
            name = self.sig.get((sig, 0))
        if name is None and not obj:
            for (s, _o), n in self.sig.items():
                if s == sig:
                    return n
        return name

    def __len__(self) -> int:
        return len(self.obj) + len(self.fun) + len(self.usr) + len(self.sig) + len(self.enum)


def clean_name(raw: bytes) -> str:
    """A name from the target, made safe to print: undecodable bytes and control
    characters become backslash escapes."""
    name = raw.decode("utf-8", "backslashreplace")
    if not name.isprintable():
        name = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in name)
    return name
