"""``mcuprof qs decode CAPTURE``: QSPY's text (or JSON) for a raw QP/Spy capture."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..capture import read_capture
from ..errors import UserError
from ..files import read_file
from ..protocol.qs import (
    SIZE_OPTIONS,
    BadFrame,
    Discontinuity,
    Malformed,
    QSConfig,
    QSDecoder,
    QSEvent,
    Record,
    UserArg,
)
from ..qs.dicfile import DicError, format_dic, parse_dic
from ..qs.text import event_lines

# Feed the decoder in slices, as a live link would, so memory stays flat.
CHUNK = 1 << 20
_SIZE_HELP = {
    "T": "timestamp size (default 4)",
    "O": "object pointer size (default 4)",
    "F": "function pointer size (default 4)",
    "S": "signal size (default 2)",
    "E": "event size (default 2)",
    "Q": "queue counter size (default 1)",
    "P": "pool counter size (default 2)",
    "B": "pool block size (default 2)",
    "C": "time-event counter size (default 4)",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("qs", help="QP/Spy (QS) tools")
    qs_sub = p.add_subparsers(dest="qs_command", metavar="QS_COMMAND", required=True)
    d = qs_sub.add_parser(
        "decode",
        help="print QSPY's human-readable lines for a raw QS capture",
        description="Decode a raw QS byte stream as QSPY 7.4 does. The sizes apply until "
        "the target sends its target-info record, as QSPY's options do.",
    )
    d.add_argument("capture", help="raw target-to-host QS byte stream")
    d.add_argument("--dic", metavar="FILE", help="QSPY dictionary file (.dic) to start with")
    d.add_argument(
        "--save-dic",
        metavar="FILE",
        help="write the dictionaries as a QSPY .dic file (as they were at QS_QF_RUN, "
        "or at the end when the capture has none)",
    )
    d.add_argument("--json", action="store_true", help="one JSON object per record")
    for opt, text in _SIZE_HELP.items():
        d.add_argument(f"-{opt}", type=int, choices=(1, 2, 4, 8), metavar="N", help=text)
    d.set_defaults(func=run_decode)


def _config(args: argparse.Namespace) -> tuple[QSConfig, Any]:
    config = QSConfig()
    dicts = None
    if args.dic:
        text = read_file(args.dic, "dictionary file").decode("utf-8", "replace")
        try:
            config, dicts = parse_dic(text, config)
        except DicError as exc:
            raise UserError(f"{args.dic}: {exc}") from None
    options = {opt: getattr(args, opt) for opt in SIZE_OPTIONS}
    return config.with_options(**options), dicts


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, UserArg):
        out = {"kind": value.kind, "width": value.width, "value": _jsonable(value.value)}
        if value.kind == "ENUM":
            out["group"] = value.group
        return out
    if isinstance(value, QSConfig):
        return {k: _jsonable(getattr(value, k)) for k in value.__slots__ if k != "from_target"}
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def event_json(event: QSEvent) -> dict[str, Any]:
    lines = event_lines(event)
    if isinstance(event, Record):
        return {
            "type": "record",
            "index": event.index,
            "seq": event.seq,
            "rec": event.rec,
            "name": event.name,
            "group": event.group,
            "timestamp": event.timestamp,
            "fields": {k: _jsonable(v) for k, v in event.fields.items() if k != "ts"},
            "line": lines[0] if lines else None,
        }
    if isinstance(event, Malformed):
        return {"type": "malformed", "index": event.index, "seq": event.seq, "rec": event.rec,
                "message": event.message, "line": lines[0]}  # fmt: skip
    if isinstance(event, Discontinuity):
        return {"type": "discontinuity", "index": event.index, "prev_seq": event.prev_seq,
                "seq": event.seq, "line": lines[0]}  # fmt: skip
    assert isinstance(event, BadFrame)
    return {"type": "bad_frame", "kind": event.kind, "after_seq": event.seq,
            "raw": event.raw.hex(), "line": lines[0]}  # fmt: skip


def run_decode(args: argparse.Namespace) -> int:
    config, dicts = _config(args)
    data = read_capture(args.capture)
    decoder = QSDecoder(config, dicts)
    write = sys.stdout.write
    for start in range(0, len(data), CHUNK):
        events = decoder.feed(data[start : start + CHUNK])
        if args.json:
            out = [json.dumps(event_json(e)) for e in events]
        else:
            out = [line for e in events for line in event_lines(e)]
        if out:
            write("\n".join(out) + "\n")
    decoder.close()
    sys.stdout.flush()
    if args.save_dic:
        save = decoder.run_dicts if decoder.run_dicts is not None else decoder.dicts
        text = format_dic(decoder.config, save, args.O or 4, args.F or 4)
        try:
            Path(args.save_dic).write_text(text)
        except OSError as exc:
            raise UserError(f"cannot write {args.save_dic}: {exc.strerror}") from None
    f, s = decoder.frame_stats, decoder.stats
    print(
        f"mcuprof: {f.frames} frames, {f.bad_checksum} bad checksums, "
        f"{f.discontinuities} discontinuities, {f.too_short} too short, {f.too_long} too long, "
        f"{s.malformed} malformed, {s.unknown_records} unknown records",
        file=sys.stderr,
    )
    return 0
