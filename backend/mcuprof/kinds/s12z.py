"""S12Z DBG traces (PDO captures): stored as sessions of their own and analysed in the
S12Z tab (s12z/); not decoded into a profile, so no source, live link or replay. Their
counts are taken when they are stored (s12z/store.py)."""

from __future__ import annotations

from typing import Any

from .base import S12Z_REPORT, Kind


class S12Z(Kind):
    name = "s12z"
    label = "S12Z"
    views = (S12Z_REPORT,)
    names_from_elf = True  # the trace's addresses are named with the firmware's ELF
    nothing_found = "S12Z capture: no valid line"

    def capture_lines(self, capture: dict[str, Any]) -> list[str]:
        # `mcuprof s12z` on the raw file gives the full analysis.
        return [
            f"s12z        {capture['records']:,} lines; reserved {capture['reserved']:,}, "
            f"malformed {capture['malformed']:,}, truncated {capture['truncated']:,}"
            + ("; ended by TBOVF (data lost)" if capture["tbovf"] else "")
        ]


KIND = S12Z()
