"""Talking to a device: ports, the device session, and the simulated device.

Importing this package registers the ``sim://`` scheme with pyserial.
"""

import serial

from .base import DeviceControl, Link, LinkState
from .ports import PortInfo, list_ports, open_transport, validate_baud, validate_port
from .session import (
    CONNECTING,
    DISCONNECTED,
    PROFILING,
    READY,
    DeviceSession,
    LinkError,
    NullListener,
    SessionListener,
)
from .simulator import SimDevice, SimOptions

_HANDLERS = "mcuprof.link.urlhandler"
if _HANDLERS not in serial.protocol_handler_packages:
    serial.protocol_handler_packages.append(_HANDLERS)

__all__ = [
    "CONNECTING",
    "DISCONNECTED",
    "PROFILING",
    "READY",
    "DeviceControl",
    "DeviceSession",
    "Link",
    "LinkError",
    "LinkState",
    "NullListener",
    "PortInfo",
    "SessionListener",
    "SimDevice",
    "SimOptions",
    "list_ports",
    "open_transport",
    "validate_baud",
    "validate_port",
]
