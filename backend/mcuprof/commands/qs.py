"""``mcuprof qs decode CAPTURE`` and ``mcuprof qs listen --port PORT``: QSPY's text (or
JSON) for a raw QP/Spy capture, or live from a target."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..capture import QS_CHUNK, iter_capture, read_capture
from ..errors import UserError
from ..files import read_file
from ..link.ports import open_transport
from ..link.qs_host import QSHost
from ..link.qs_link import LISTEN_SCHEME, validate_listen
from ..link.qs_udp_access import UdpAccess, udp_access
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
from ..qs.clock import SeriesClock
from ..qs.dicfile import DicError, format_dic, parse_dic
from ..qs.margins import SAMPLE_RECORDS, margins_columns
from ..qs.rtc import STEP_RECORDS, RtcRow, RtcTracker, folded, rtc_table_columns
from ..qs.seq_svg import SVG_ROWS_MAX, SeqSvg
from ..qs.sequence import FlowItem, SeqError, SeqText, flow_items, parse_seq_list
from ..qs.text import event_lines
from . import qs_scenario

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
    _common(d)
    d.set_defaults(func=run_decode)
    live = qs_sub.add_parser(
        "listen",
        help="print QSPY's lines live from a QS target on a port",
        description="Read a QS target live (a serial device, socket://HOST:PORT, "
        "sim://?proto=qs, or listen://HOST:PORT where the target connects, as QSPY's -t) "
        "and print QSPY's lines as records arrive, until --duration or Ctrl-C. With "
        "listen:// and --udp, front ends such as QView attach over UDP, as to QSPY's -u.",
    )
    live.add_argument(
        "--port",
        required=True,
        help="serial device, socket://HOST:PORT, sim:// or listen://HOST:PORT",
    )
    live.add_argument(
        "--udp",
        metavar="[HOST:]UPORT",
        help="serve QSPY's front-end protocol on this UDP port (with listen:// only; "
        "0 picks a free port, printed on stderr with the TCP one), on listen://'s address "
        "unless HOST is given",
    )
    live.add_argument(
        "--udp-allow",
        metavar="ADDR,...",
        help="only these addresses (or ADDR/BITS networks) may attach to --udp; "
        "required when --udp is reachable from other machines",
    )
    live.add_argument(
        "--allow-remote",
        action="store_true",
        help="let listen:// and --udp take connections from other machines",
    )
    live.add_argument("--baud", type=int, default=115_200, help="baud rate (115200)")
    live.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    live.add_argument("-o", "--output", metavar="CAPTURE", help="also save the raw bytes")
    _common(live)
    live.set_defaults(func=run_listen)
    rtc = qs_sub.add_parser(
        "rtc",
        help="run-to-completion steps per active object, state and signal",
        description="Time each RTC step (dispatch to transition, internal transition or "
        "ignored) and sum them per object, state and signal, in target timestamp units.",
    )
    rtc.add_argument("capture", help="raw target-to-host QS byte stream")
    rtc.add_argument(
        "--folded", action="store_true", help="object;state;signal total lines (flame graphs)"
    )
    _common(rtc)
    rtc.set_defaults(func=run_rtc)
    mar = qs_sub.add_parser(
        "margins",
        help="queue and pool margins: free entries and low-water marks per object",
    )
    mar.add_argument("capture", help="raw target-to-host QS byte stream")
    _common(mar)
    mar.set_defaults(func=run_margins)
    seq = qs_sub.add_parser(
        "seq",
        help="QSPY's -g sequence diagram (text, or SVG) for a list of objects",
        description="Draw posts, publishes, transitions, deferrals and ticks between the "
        "listed objects as QSPY 7.4's -g does (the same text, byte for byte). '?' in the "
        "list is the system border: posts from or to objects not listed end there.",
    )
    seq.add_argument("capture", help="raw target-to-host QS byte stream")
    seq.add_argument("-g", required=True, metavar="OBJ1,OBJ2,...", help="objects, one lane each")
    seq.add_argument("-o", "--output", metavar="FILE", help="write here, not to stdout")
    seq.add_argument("--svg", action="store_true", help="an SVG drawing instead of the text")
    _dic_option(seq)
    _size_options(seq)
    seq.set_defaults(func=run_seq)
    qs_scenario.add_parser(qs_sub)


def _common(p: argparse.ArgumentParser) -> None:
    _dic_option(p)
    p.add_argument(
        "--save-dic",
        metavar="FILE",
        help="write the dictionaries as a QSPY .dic file (as they were at QS_QF_RUN, "
        "or at the end when the stream has none)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per record")
    _size_options(p)


def _dic_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dic", metavar="FILE", help="QSPY dictionary file (.dic) to start with")


def _size_options(p: argparse.ArgumentParser) -> None:
    for opt, text in _SIZE_HELP.items():
        p.add_argument(f"-{opt}", type=int, choices=(1, 2, 4, 8), metavar="N", help=text)


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


def _write(events: list[QSEvent], as_json: bool) -> None:
    if as_json:
        out = [json.dumps(event_json(e)) for e in events]
    else:
        out = [line for e in events for line in event_lines(e)]
    if out:
        sys.stdout.write("\n".join(out) + "\n")


def _save_dic(args: argparse.Namespace, decoder: QSDecoder, dicts: Any) -> None:
    text = format_dic(decoder.config, dicts, args.O or 4, args.F or 4)
    try:
        Path(args.save_dic).write_text(text)
    except OSError as exc:
        raise UserError(f"cannot write {args.save_dic}: {exc.strerror}") from None


def _finish(args: argparse.Namespace, decoder: QSDecoder, closed: bool = False) -> None:
    """The end of the stream (``closed``: the caller closed the decoder and used what it
    gave, as seq and rtc do), the .dic file, and the summary line."""
    if not closed:
        _write(decoder.close(), args.json)  # a frame the end cut short is judged
    sys.stdout.flush()
    if getattr(args, "save_dic", None):
        save = decoder.run_dicts if decoder.run_dicts is not None else decoder.dicts
        _save_dic(args, decoder, save)
    f, s = decoder.frame_stats, decoder.stats
    print(
        f"mcuprof: {f.frames} frames, {f.bad_checksum} bad checksums, "
        f"{f.discontinuities} discontinuities, {f.too_short} too short, {f.too_long} too long, "
        f"{s.malformed} malformed, {s.unknown_records} unknown records" + _bounds_hit(decoder),
        file=sys.stderr,
    )


def _bounds_hit(decoder: QSDecoder) -> str:
    """The bounds a stream hit, said only when hit (docs/limits.md)."""
    out = ""
    if decoder.frame_stats.truncated:
        out += f", {decoder.frame_stats.truncated} truncated by the end of the stream"
    if decoder.stats.dictionary_overflow:
        out += f", {decoder.stats.dictionary_overflow} dictionary entries over capacity"
    return out


def run_decode(args: argparse.Namespace) -> int:
    config, dicts = _config(args)
    data = read_capture(args.capture)
    decoder = QSDecoder(config, dicts)
    for start in range(0, len(data), QS_CHUNK):
        _write(decoder.feed(data[start : start + QS_CHUNK]), args.json)
    _finish(args, decoder)
    return 0


def run_listen(args: argparse.Namespace) -> int:
    config, dicts = _config(args)
    if args.duration is not None and not args.duration > 0:
        raise UserError(f"--duration {args.duration}: must be a positive number of seconds")
    listen_at = None
    if args.port.strip().lower().startswith(LISTEN_SCHEME):
        listen_at = validate_listen(args.port, args.allow_remote)
    elif args.udp is not None:
        raise UserError("--udp needs --port listen://HOST:PORT (the target connects, as to QSPY)")
    udp = None
    if args.udp is not None:
        udp = udp_access(args.udp, listen_at[0], args.allow_remote, args.udp_allow, "--udp")
        if udp.warning():
            print(f"mcuprof: {udp.warning()}", file=sys.stderr, flush=True)
    elif args.udp_allow is not None:
        raise UserError("--udp-allow needs --udp")
    try:
        capture = open(args.output, "wb") if args.output else None  # noqa: SIM115
    except OSError as exc:
        raise UserError(f"cannot write {args.output}: {exc.strerror}") from None
    if listen_at is not None:
        return _listen_host(args, listen_at, udp, QSDecoder(config, dicts), capture)
    port = open_transport(args.port, args.baud)
    port.timeout = 0.05
    decoder = QSDecoder(config, dicts)
    end = None if args.duration is None else time.monotonic() + args.duration
    error = None
    try:
        while end is None or time.monotonic() < end:
            try:
                data = port.read(65536)
            except Exception as exc:  # an unplugged port: keep what arrived, then say so
                error = f"{args.port}: {str(exc).splitlines()[0] if str(exc) else 'read failed'}"
                break
            if data:
                if capture is not None:
                    capture.write(data)
                _write(decoder.feed(data), args.json)
                sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    finally:
        port.close()
        if capture is not None:
            capture.close()
    _finish(args, decoder)
    if error is not None:
        raise UserError(error)
    return 0


def _listen_host(
    args: argparse.Namespace,
    listen_at: tuple[str, int],
    udp: UdpAccess | None,
    decoder: QSDecoder,
    capture: Any,
) -> int:
    """The target connects to us (QSPY's -t); front ends attach over UDP (QSPY's -u)."""

    def out(line: str) -> None:
        # The host's own lines (connections, front ends); with --json, one object each.
        text = json.dumps({"type": "host", "line": line}) if args.json else line
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def write(events: list[QSEvent]) -> None:
        _write(events, args.json)
        sys.stdout.flush()

    def save() -> str:
        if not args.save_dic:
            return "   <QSPY-> Dictionaries NOT configured (no --save-dic option)"
        _save_dic(args, decoder, decoder.dicts)
        return f"   <QSPY-> Dictionaries saved to {args.save_dic}"

    try:
        host = QSHost(listen_at, decoder, write, out, udp=udp, capture=capture, save_dic=save)
    except BaseException:
        if capture is not None:
            capture.close()
        raise
    where = f"{host.listening.address[0]}:{host.listening.address[1]}"
    if host.frontends is not None:
        where += f", front ends on UDP {host.frontends.address[0]}:{host.frontends.address[1]}"
    print(f"mcuprof: waiting for a QS target on {where}", file=sys.stderr, flush=True)
    end = None if args.duration is None else time.monotonic() + args.duration
    try:
        host.run(end)
    except KeyboardInterrupt:
        pass
    finally:
        host.close()
        if capture is not None:
            capture.close()
    _finish(args, decoder)
    if host.frontends is not None:
        f = host.frontends
        print(
            f"mcuprof: {host.connections} target connections, {f.refused} front-end "
            f"datagrams refused, {f.send_failures} packets to front ends dropped, "
            f"{f.lost} records not forwarded to front ends, {f.foreign} datagrams from "
            "addresses not allowed",
            file=sys.stderr,
        )
    return 0


def run_rtc(args: argparse.Namespace) -> int:
    config, dicts = _config(args)
    data = read_capture(args.capture)
    decoder = QSDecoder(config, dicts)
    tracker = RtcTracker()
    # Only dispatches and the records that end steps become columns (no Python
    # object per record); the sum is the same as rtc_steps over every event.
    parts = []
    for start in range(0, len(data), QS_CHUNK):
        selected = decoder.feed_select(data[start : start + QS_CHUNK], STEP_RECORDS)
        parts.append(tracker.feed_selected(selected, decoder.dicts))
    decoder.close()
    rows, n_steps = rtc_table_columns(parts)
    unfinished = tracker.unfinished + len(tracker.pending)
    if args.folded:
        for line in folded(rows):
            print(line)
    elif args.json:
        for r in rows:
            row = {"object": r.obj, "state": r.state, "signal": r.signal, "count": r.count}
            row |= {"total": r.total, "min": r.min, "mean": r.mean, "max": r.max}
            print(json.dumps(row | {"outcomes": dict(r.outcomes)}))
    else:
        for line in rtc_lines(rows):
            print(line)
    if args.save_dic:
        _finish(args, decoder, closed=True)
    print(
        f"mcuprof: {n_steps} RTC steps in {len(rows)} (object, state, signal) groups, "
        f"{unfinished} unfinished",
        file=sys.stderr,
    )
    return 0


def rtc_lines(rows: list[RtcRow]) -> list[str]:
    """The RTC table as ``qs rtc`` prints it: one line per (object, state, signal)."""
    head = ("object", "state", "signal", "count", "total", "min", "mean", "max")
    table = [
        (
            r.obj,
            r.state,
            r.signal,
            str(r.count),
            str(r.total),
            str(r.min),
            f"{r.mean:.1f}",
            str(r.max),
            " ".join(f"{k}={v}" for k, v in r.outcomes),
        )
        for r in rows
    ]
    widths = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(head)]

    def fmt(cells: tuple[str, ...]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:3], widths[:3], strict=True)]
        right = [c.rjust(w) for c, w in zip(cells[3:8], widths[3:8], strict=True)]
        return "  ".join(left + right + list(cells[8:])).rstrip()

    return [fmt((*head, "outcomes"))] + [fmt(t) for t in table]


def run_margins(args: argparse.Namespace) -> int:
    config, dicts = _config(args)
    decoder = QSDecoder(config, dicts)
    data = read_capture(args.capture)
    chunks = []
    for start in range(0, len(data), QS_CHUNK):
        selected = decoder.feed_select(data[start : start + QS_CHUNK], SAMPLE_RECORDS)
        chunks.append((selected, decoder.dicts))
    decoder.close()
    found = margins_columns(chunks)
    if args.json:
        for m in found:
            row = {"object": m.name, "kind": m.kind, "samples": len(m.free)}
            row |= {"lowest_free": m.lowest_free, "low_water": m.low_water}
            print(json.dumps(row | {"times": m.times, "free": m.free}))
    else:
        width = max([len("object")] + [len(m.name) for m in found])
        print(f"{'object':<{width}}  kind   samples  last free  lowest free  low-water")
        for m in found:
            low = "" if m.low_water is None else str(m.low_water)
            print(
                f"{m.name:<{width}}  {m.kind:<5}  {len(m.free):>7}  {m.free[-1]:>9}"
                f"  {m.lowest_free:>11}  {low:>9}"
            )
    print(f"mcuprof: {len(found)} queues and pools", file=sys.stderr)
    return 0


def _flow(args: argparse.Namespace) -> tuple[QSDecoder, Iterator[FlowItem]]:
    """The capture's event flow, decoded a chunk at a time."""
    config, dicts = _config(args)
    decoder = QSDecoder(config, dicts)
    _size, chunks = iter_capture(args.capture, QS_CHUNK)

    def items() -> Iterator[FlowItem]:
        clock = SeriesClock()
        for chunk in chunks:
            yield from flow_items(decoder.feed(chunk), clock)
        yield from flow_items(decoder.close(), clock)

    return decoder, items()


def run_seq(args: argparse.Namespace) -> int:
    try:
        names = parse_seq_list(args.g)
    except SeqError as exc:
        raise UserError(f"-g: {exc}") from None
    decoder, items = _flow(args)
    # Bytes: QSPY's columns count bytes. Every name in them is escaped already.
    sys.stdout.flush()
    try:
        out = open(args.output, "wb") if args.output else sys.stdout.buffer  # noqa: SIM115
    except OSError as exc:
        raise UserError(f"cannot write {args.output}: {exc.strerror}") from None
    try:
        if args.svg:
            svg = SeqSvg(names)
            for item in items:
                svg.feed(item)
            out.write(svg.finish().encode())
            drawn, dropped = len(svg.rows), svg.dropped
        else:
            seq = SeqText(names, args.g)
            out.write(seq.header())
            drawn = dropped = 0
            for item in items:
                text = seq.feed(item)
                if text:
                    out.write(text)
                    drawn += 1
    finally:
        if args.output:
            out.close()
        else:
            out.flush()
    _finish(args, decoder, closed=True)
    print(f"mcuprof: {drawn} events drawn on {len(names)} lanes", file=sys.stderr)
    if dropped:
        print(
            f"mcuprof: {dropped} rows not drawn: an SVG holds at most {SVG_ROWS_MAX}",
            file=sys.stderr,
        )
    return 0
