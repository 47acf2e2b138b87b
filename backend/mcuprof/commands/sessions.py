"""``mcuprof sessions``: list, show, rename, annotate, delete, import and export the
captures kept in the session store."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .. import kinds
from ..console import for_terminal
from ..diff.sources import session_id_of
from ..errors import UserError
from ..files import open_regular
from ..history.summary import keep_summary
from ..loss import lost_text
from ..progress import ReadProgress
from ..store import SessionInfo, Store
from ..store.api import describe
from ..store.tags import parse_tags
from ._storeopt import add_store_option, open_from_args

NAME_COLUMN = 60  # longer names are cut in the list; `show` prints them whole

_DATA_DIR_HELP = "session store directory (default: $MCUPROF_DATA_DIR or ~/.local/share/mcuprof)"


def register(sub: argparse._SubParsersAction) -> None:
    # --data-dir works before or after the action. Parent parsers share their option
    # objects, so the action-level copy must keep SUPPRESS as its own default (set_defaults
    # on the outer parser would otherwise change it for every action).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS, help=_DATA_DIR_HELP)
    add_store_option(common, default=argparse.SUPPRESS)
    p = sub.add_parser("sessions", help="manage stored capture sessions")
    p.add_argument("--data-dir", default=None, help=_DATA_DIR_HELP)
    add_store_option(p)
    p.set_defaults(func=run_list, json=False)
    actions = p.add_subparsers(dest="action", metavar="ACTION")

    a = actions.add_parser("list", help="list sessions, newest first", parents=[common])
    a.add_argument("--json", action="store_true", help="print a JSON array")
    a.add_argument(
        "--where",
        action="append",
        metavar="KEY=VALUE",
        help="only sessions with this tag (repeatable: all must match)",
    )
    a.set_defaults(func=run_list)

    a = actions.add_parser("show", help="details of one session", parents=[common])
    a.add_argument("id", help="session id")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=run_show)

    a = actions.add_parser("rename", help="rename a session", parents=[common])
    a.add_argument("id", help="session id")
    a.add_argument("name", nargs="+", help="new name")
    a.set_defaults(func=run_rename)

    a = actions.add_parser("notes", help="set a session's notes", parents=[common])
    a.add_argument("id", help="session id")
    a.add_argument("text", help="the notes; '-' reads them from stdin")
    a.set_defaults(func=run_notes)

    a = actions.add_parser("tag", help="set a session's tags (build, board...)", parents=[common])
    a.add_argument("id", help="session id")
    a.add_argument("tags", nargs="*", metavar="KEY=VALUE", help="tags, such as branch=main")
    a.add_argument("--clear", action="store_true", help="remove the tags not given")
    a.set_defaults(func=run_tag)

    a = actions.add_parser("delete", help="delete sessions and their files", parents=[common])
    a.add_argument("ids", nargs="+", metavar="ID", help="session ids")
    a.set_defaults(func=run_delete)

    a = actions.add_parser("import", help="store a raw capture file", parents=[common])
    a.add_argument("capture", help="raw device-to-host byte stream")
    a.add_argument("--name", help="session name (default: the file name)")
    a.add_argument("--elf", help="firmware ELF to keep with the session")
    a.add_argument("--notes", default="", help="notes")
    add_tag_option(a)
    a.add_argument(
        "--kind",
        choices=("auto", *kinds.PROFILE_NAMES),
        type=kinds.input_name,
        default="auto",
        help="protocol of the capture (auto: told from its first bytes)",
    )
    a.add_argument("--json", action="store_true", help="print the new session as JSON")
    a.set_defaults(func=run_import, quick_exit=True)

    a = actions.add_parser("export", help="write a session's raw capture", parents=[common])
    a.add_argument("id", help="session id")
    a.add_argument("output", help="file to write; '-' for stdout")
    a.set_defaults(func=run_export)


def _store(args: argparse.Namespace) -> Store:
    return open_from_args(args, autoflush=False)


def _id(text: str) -> int:
    sid = session_id_of(text)
    if sid is None:
        raise UserError(f"{text!r} is not a session id (a number such as 7)")
    return sid


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _length(info: SessionInfo) -> str:
    if info.started_at is None or info.stopped_at is None:
        return "-"
    return f"{info.stopped_at - info.started_at:.1f} s"


def _records(info: SessionInfo) -> str:
    stats = info.link_stats or {}
    return f"{stats['records']:,}" if isinstance(stats.get("records"), int) else "-"


def add_tag_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tag",
        action="append",
        metavar="KEY=VALUE",
        help="tag the stored session (repeatable): commit=SHA, branch=main, board=...",
    )


def _lost(info: SessionInfo) -> str:
    return "-" if info.status == "recording" else lost_text(info.loss)


def run_list(args: argparse.Namespace) -> int:
    where = parse_tags(getattr(args, "where", None))
    with _store(args) as store:
        sessions = store.list(where)
        where_from = describe(store)
    if getattr(args, "json", False):
        print(json.dumps([s.as_dict() for s in sessions]))
        return 0
    if not sessions:
        which = " with those tags" if where else ""
        print(f"no sessions{which} in {where_from}")
        return 0
    print(
        f"{'id':>5}  {'status':<11} {'created':<19} {'length':>9} {'records':>11} "
        f"{'lost':>16}  name"
    )
    for s in sessions:
        print(
            f"{s.id:>5}  {s.status:<11} {_when(s.created_at):<19} {_length(s):>9} "
            f"{_records(s):>11} {_lost(s):>16}  {for_terminal(s.name, NAME_COLUMN)}"
        )
    return 0


def _show_dict(store: Store, sid: int) -> dict[str, Any]:
    info = store.get(sid)
    out = info.as_dict()
    out["raw_path"] = store.raw_location(sid)
    out["elf_path"] = store.elf_location(sid)
    kind = kinds.get(info.kind)
    counted = kind.count_stored(store, sid)
    if counted is not None:
        out["capture"] = counted
    else:  # counted when it was stored; its span too
        stats = info.link_stats or {}
        if "records" not in stats and kind.profiles:
            stats = _count_stored(store, sid, kind)
        out["capture"] = {"duration_us": info.duration_us, **stats}
    return out


def _count_stored(store: Store, sid: int, kind: kinds.Kind) -> dict[str, Any]:
    """The counts of a session stored without them (``qs scenario`` stores none; a
    writer killed with -9 never wrote its own), decoded from its bytes a piece at a time."""
    source = kind.new_source()
    for piece in store.raw_chunks(sid):
        source.feed(piece)
    source.close()
    return source.stats()


def run_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        d = _show_dict(store, _id(args.id))
    if args.json:
        print(json.dumps(d))
        return 0
    cap = d["capture"]
    meta = d["metadata"]
    lines = [
        f"session     {d['id']}: {for_terminal(d['name'])}",
        f"status      {d['status']} ({d['source']})",
        f"recorded    {_when(d['started_at'])} -> {_when(d['stopped_at'])}",
        f"raw         {d['raw_bytes']:,} bytes  {d['raw_path']}",
        f"elf         {for_terminal(d['elf_name'] or '-')}  {d['elf_path'] or ''}".rstrip(),
        "firmware    "
        + (
            f"{for_terminal(repr(meta['fw_version']))}, build id 0x{meta['elf_build_id']:08x}, "
            f"timer {meta['timer_freq'] / 1e6:g} MHz"
            if meta
            else "no METADATA"
        ),
        *kinds.get(d["kind"]).capture_lines(cap),
    ]
    if kinds.get(d["kind"]).counts_loss:
        lines.append(f"lost        {_loss_line(d['loss'])}")
    if d["tags"]:
        tags = " ".join(f"{k}={v}" for k, v in d["tags"].items())
        lines.append(f"tags        {for_terminal(tags)}")
    if d["notes"]:
        notes = for_terminal(d["notes"], multiline=True).expandtabs(4)
        lines.append("notes       " + notes.replace("\n", "\n            "))
    print("\n".join(lines))
    return 0


def _loss_line(loss: dict[str, Any] | None) -> str:
    """The device's counters as of Stop, and where the loss was (loss.py)."""
    text = lost_text(loss)
    if loss is None or loss.get("captured") is None:
        return text
    out = (
        f"{text} of {loss['captured']:,} captured; overflows {loss['overflows']:,}, "
        f"crc errors {loss['crc_errors']:,}, malformed {loss['malformed']:,}"
    )
    stretches = loss.get("stretches") or []
    if stretches:
        shown = ", ".join(f"{a / 1e6:.3f}-{b / 1e6:.3f} s ({n:,})" for a, b, n in stretches[:5])
        more = f", … {len(stretches) - 5} more" if len(stretches) > 5 else ""
        out += f"\n            dropped in {len(stretches)} stretch(es): {shown}{more}"
    return out


def run_rename(args: argparse.Namespace) -> int:
    with _store(args) as store:
        info = store.rename(_id(args.id), " ".join(args.name))
    print(f"session {info.id} renamed to {for_terminal(repr(info.name))}")
    return 0


def run_notes(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    with _store(args) as store:
        info = store.set_notes(_id(args.id), text)
    print(f"session {info.id}: notes saved ({len(info.notes)} characters)")
    return 0


def run_tag(args: argparse.Namespace) -> int:
    given = parse_tags(args.tags)
    with _store(args) as store:
        sid = _id(args.id)
        tags = given if args.clear else {**store.tags(sid), **given}
        info = store.set_tags(sid, tags)
    shown = " ".join(f"{k}={v}" for k, v in info.tags.items()) or "(none)"
    print(for_terminal(f"session {info.id} tags: {shown}"))
    return 0


def run_delete(args: argparse.Namespace) -> int:
    ids = [_id(t) for t in args.ids]
    with _store(args) as store:
        for sid in ids:
            store.delete(sid)
            print(f"deleted session {sid}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    with open_regular(args.capture, "capture file") as f:  # refused before the store opens
        size = os.fstat(f.fileno()).st_size
    name = args.name or Path(args.capture).name
    bar = ReadProgress("importing capture")  # on a terminal, after a second

    def progress(done: int, records: int) -> None:
        bar(done, max(size, done), records)

    with _store(args) as store:
        kind = getattr(args, "kind", "auto")
        # The path, not its bytes: the store reads it a chunk at a time (with the same
        # checks), so the capture is never held whole.
        info = store.import_capture(
            name,
            args.capture,
            args.elf,
            notes=args.notes,
            kind=None if kind == "auto" else kind,
            progress=progress,
            tags=parse_tags(getattr(args, "tag", None)),
        )
        keep_summary(store, info.id)
    bar.finish()
    if args.json:
        print(json.dumps(info.as_dict()))
    else:
        print(
            f"imported session {info.id}: {for_terminal(info.name)} "
            f"({info.kind}, {info.raw_bytes:,} bytes)"
        )
    return 0


def run_export(args: argparse.Namespace) -> int:
    # Copied a piece at a time: a session of hundreds of MB is never held whole.
    with _store(args) as store:
        chunks = store.raw_chunks(_id(args.id))
        if args.output == "-":
            for data in chunks:
                sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return 0
        out = Path(args.output)
        written = 0
        try:
            with open(out, "wb") as f:
                for data in chunks:
                    f.write(data)
                    written += len(data)
        except OSError as exc:
            raise UserError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {written:,} bytes to {args.output}", file=sys.stderr)
    return 0
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        raise UserError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {len(data):,} bytes to {args.output}", file=sys.stderr)
    return 0
