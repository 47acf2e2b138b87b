"""QSPY's dictionary files (``.dic``): the target's sizes and build time, then the
object, function, user and signal dictionaries, each as a key-size line, one
``0xKEY name`` line per entry and a ``***`` end marker.

QSPY writes keys at the width of its command-line pointer sizes (-O/-F, 4 by default),
not the target's: a 64-bit target's pointers appear as 8 hex digits. mcuprof does the
same so its files are byte-identical to QSPY's, except that a key that would not fit
is written at 16 digits instead of being cut.
"""

from __future__ import annotations

from dataclasses import replace

from ..protocol.qs import SIZE_OPTIONS, Dictionaries, QSConfig

_SECTIONS = (("Obj-Dic:", "obj"), ("Fun-Dic:", "fun"), ("Usr-Dic:", "usr"), ("Sig-Dic:", "sig"))


def dic_filename(config: QSConfig) -> str:
    """The name QSPY gives the file: ``qspyYYMMDD_HHMMSS.dic`` from the build time."""
    return f"qspy{config.build_stamp}.dic"


def _key_width(size: int, keys) -> int:
    wide = size > 4 or any(k > 0xFFFF_FFFF for k in keys)
    return 16 if wide else 8


def format_dic(
    config: QSConfig, dicts: Dictionaries, obj_key_size: int = 4, fun_key_size: int = 4
) -> str:
    """The text of a .dic file. ``*_key_size`` are the command-line pointer sizes."""
    lines = [f"-v{config.version:03d}"]
    lines += [f"-{opt}{getattr(config, attr)}" for opt, attr in SIZE_OPTIONS.items()]
    lines += [f"-t{config.build_stamp or '000000_000000'}", ""]
    for title, kind in _SECTIONS:
        lines.append(title)
        if kind == "sig":
            objs = [o for _s, o in dicts.sig]
            width = _key_width(obj_key_size, objs)
            lines.append(str(obj_key_size if width == 8 else 8))
            for (sig, obj), name in sorted(dicts.sig.items()):
                lines.append(f"{sig:08d} 0x{obj:0{width}X} {name}")
        else:
            table = getattr(dicts, kind)
            size = {"obj": obj_key_size, "fun": fun_key_size, "usr": 1}[kind]
            width = _key_width(size, table)
            lines.append(str(size if width == 8 else 8))
            lines += [f"0x{key:0{width}X} {name}" for key, name in sorted(table.items())]
        lines.append("***")
    return "\n".join(lines) + "\n"


class DicError(ValueError):
    pass


QUOTED_CHARS = 40  # of a bad line quoted in a DicError; a .dic line can be megabytes


def _quoted(line: str) -> str:
    if len(line) <= QUOTED_CHARS:
        return repr(line)
    return f"{line[:QUOTED_CHARS]!r}... ({len(line):,} characters)"


def parse_dic(text: str, base: QSConfig | None = None) -> tuple[QSConfig, Dictionaries]:
    """Read a .dic file's text; the sizes in it replace ``base``'s. Raises DicError
    with a one-line message naming the bad line."""
    config = base or QSConfig()
    tables: dict[str, dict] = {"obj": {}, "fun": {}, "usr": {}, "sig": {}}
    lines = text.splitlines()
    i = 0
    changes: dict[str, object] = {}
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("-") and len(line) >= 3:
            opt, value = line[1], line[2:].strip()
            try:
                if opt == "v":
                    changes["version"] = int(value)
                elif opt == "t":
                    date, _, clock = value.partition("_")
                    stamp = [int(date[k : k + 2]) for k in (0, 2, 4)]
                    stamp += [int(clock[k : k + 2]) for k in (0, 2, 4)]
                    year, month, day, hour, minute, sec = stamp
                    changes["build"] = (sec, minute, hour, day, month, year)
                elif opt in SIZE_OPTIONS:
                    changes[SIZE_OPTIONS[opt]] = int(value)
                else:
                    raise DicError(f"line {i}: unexpected option -{_quoted(opt)}")
            except (ValueError, IndexError) as exc:
                if isinstance(exc, DicError):
                    raise
                raise DicError(f"line {i}: bad option {_quoted(line)}") from None
            continue
        kind = {title: k for title, k in _SECTIONS}.get(line.strip())
        if kind is None:
            raise DicError(f"line {i}: unexpected line {_quoted(line)}")
        if i >= len(lines) or not lines[i].strip().isdigit():
            raise DicError(f"line {i + 1}: key size expected after {line.strip()}")
        i += 1
        while i < len(lines) and lines[i].strip() != "***":
            entry = lines[i]
            i += 1
            try:
                if kind == "sig":
                    sig, obj, name = entry.split(" ", 2)
                    tables["sig"][(int(sig, 10), int(obj, 16))] = name
                else:
                    key, name = entry.split(" ", 1)
                    if not key.lower().startswith("0x"):
                        raise ValueError
                    tables[kind][int(key, 16)] = name
            except ValueError:
                raise DicError(f"line {i}: bad {kind} entry {_quoted(entry)}") from None
        i += 1  # the *** marker
    dicts = Dictionaries().merged(Dictionaries(**tables))
    try:
        return replace(config, **changes), dicts
    except ValueError as exc:
        raise DicError(f"bad sizes: {exc}") from None
