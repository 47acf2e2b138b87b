"""Helpers shared by test packages."""

from mcuprof.qemu import free_port

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling Google's hosts,
# which this machine's closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "free_port"]
