"""The text report of ``mcuprof s12z``: the analysis dict, for a terminal."""

from __future__ import annotations

from typing import Any

TOP = 20


def _n(x: int) -> str:
    return f"{x:,}"


def _cycles(c: float | None, us: float | None) -> str:
    if c is None:
        return "—"
    text = f"{c:,.0f} cycles"
    return text if us is None else f"{text} ({us:,.2f} µs)"


def format_report(name: str, a: dict[str, Any]) -> str:
    lines = a["lines"]
    out = [
        f"{name}: {_n(a['bytes'])} bytes, {_n(a['good_lines'])} lines ("
        + ", ".join(f"{k} {_n(v)}" for k, v in lines.items())
        + f"); reserved {_n(a['reserved'])}, malformed {_n(a['malformed'])}, "
        f"truncated {_n(a['truncated'])}",
    ]
    for bad in a["bad_lines"][:5]:
        out.append(f"  bad line at byte {bad['offset']}: {bad['kind']}: {bad['reason']}")
    c = a["cofs"]
    out.append(
        f"direct COFs: {_n(c['total'])} (taken {_n(c['taken'])}, not taken {_n(c['not_taken'])})"
    )
    for s in a["starts"][:3]:
        named = "" if s["function"] == s["pc"] else f" {s['function']}"
        out.append(f"start: {s['pc']}{named}")
    funcs = a["functions"]
    out.append(
        f"indirect jumps and returns: {_n(a['indirect'])} to {_n(len(a['destinations']))} "
        f"destinations in {_n(len(funcs))} functions"
        + ("" if a["elf"] else " (no ELF: give --elf to name them)")
    )
    if funcs:
        out.append(f"  {'entries':>9} {'share':>7} {'calls':>8} {'returns':>8}  function")
        for f in funcs[:TOP]:
            out.append(
                f"  {_n(f['entries']):>9} {f['share']:>6.2f}% {_n(f['calls']):>8} "
                f"{_n(f['returns']):>8}  {f['function']}"
            )
        if len(funcs) > TOP:
            out.append(f"  … {len(funcs) - TOP} more (--json lists all)")
    irq = a["interrupts"]
    out.append(f"interrupts: {_n(irq['total'])}")
    if irq["vectors"]:
        out.append(f"  {'count':>9} {'share':>7} {'vector':>7} {'offset':>7}  {'period':>24}  ISR")
        for v in irq["vectors"][:TOP]:
            out.append(
                f"  {_n(v['count']):>9} {v['share']:>6.2f}% {'0x{:02x}'.format(v['vector']):>7} "
                f"{v['offset']:>7}  {_cycles(v['period_cycles'], v['period_us']):>24}  "
                f"{v['name']}" + (f" @ {v['isr']}" if v["isr"] else "")
            )
    between = irq["between"]
    if between["count"]:
        us = between.get("unit_us", {})
        out.append(
            "cycles between interrupts: "
            + ", ".join(f"{k} {_cycles(between[k], us.get(k))}" for k in ("min", "median", "max"))
        )
    t = a["time"]
    out.append(
        f"trace time: {_cycles(t['cycles'], t['us'])}"
        + ("" if a["bus_hz"] else "; give --bus-hz for time")
    )
    end = a["end"]
    if end["tbovf"]:
        out.append(
            f"end: TBOVF at byte {end['tbovf_offset']}: trace buffer overflow, profiling "
            "stopped there and data was lost"
        )
    if end["term"]:
        out.append(f"end: TERM at byte {end['term_offset']}: profiling terminated by disarming")
    if not end["tbovf"] and not end["term"]:
        out.append("end: no TERM or TBOVF line: the capture stops mid-trace")
    if end["lines_after_end"]:
        out.append(f"  {_n(end['lines_after_end'])} lines follow the end")
    out.append(f"timestamp overflows (TSOVF): {_n(end['tsovf'])}")
    errors = a["errors"]
    out.append(
        "PTW errors: "
        + (", ".join(f"code {k}: {_n(v)}" for k, v in errors.items()) if errors else "none")
    )
    return "\n".join(out)
