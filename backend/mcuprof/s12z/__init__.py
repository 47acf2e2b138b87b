"""S12Z DBG profiling traces: what they say about the firmware (the decoder itself is
``mcuprof.protocol.s12z``), program flows and the traces they produce, the demo sample."""

from .analysis import Trace, analyse
from .elf import DEFAULT_VECTOR_BASE, Firmware, load_firmware
from .flow import Branch, End, Error, Interrupt, Jump, Start, Step, encode_flow, flow_of

__all__ = [
    "DEFAULT_VECTOR_BASE",
    "Branch",
    "End",
    "Error",
    "Firmware",
    "Interrupt",
    "Jump",
    "Start",
    "Step",
    "Trace",
    "analyse",
    "encode_flow",
    "flow_of",
    "load_firmware",
    "load_trace",
]


def load_trace(data: bytes) -> Trace:
    """Decode a whole capture."""
    from ..protocol.s12z import decode_trace

    events, stats = decode_trace(data)
    return Trace.from_events(events, stats)
