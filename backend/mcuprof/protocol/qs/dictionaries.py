"""QS dictionaries: names for object and function pointers, signals, user records and
enumerations, as the target's dictionary records (or a saved .dic file) give them.

A ``Dictionaries`` value never changes: the decoder replaces it with a new one when a
dictionary record arrives, and every record carries the one that was current when it
was decoded. Rendering a record later therefore names things exactly as QSPY would have
at that moment, and dictionary records (rare, mostly at start-up) pay for the copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

# QSPY pre-fills this user record after every reset.
QUTEST_ON_POST = (124, "QUTEST_ON_POST")

_EMPTY: Mapping = MappingProxyType({})


def _frozen(d: dict) -> Mapping:
    return MappingProxyType(d)


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
        table = dict(getattr(self, kind))
        table[key] = name
        return replace(self, **{kind: _frozen(table)})

    def merged(self, other: Dictionaries) -> Dictionaries:
        """These entries with ``other``'s added (``other`` wins on the same key)."""
        return Dictionaries(
            **{
                kind: _frozen({**getattr(self, kind), **getattr(other, kind)})
                for kind in ("obj", "fun", "usr", "sig", "enum")
            }
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
