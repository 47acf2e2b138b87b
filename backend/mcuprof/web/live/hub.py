"""Fan-out of live updates to every open tab.

Each client owns a one-message slot: a new update replaces an unsent one, so a slow or
stalled browser only ever misses frames; it never queues memory and never makes the
producer wait. The producer (the 10 Hz ticker) calls ``publish`` and returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(eq=False)  # identity semantics: clients live in a set
class Client:
    send: Callable[[str], Awaitable[None]]
    slot: str | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    sent: int = 0
    dropped: int = 0
    closed: bool = False

    first: str | None = None

    def offer(self, message: str) -> None:
        if self.slot is not None:
            self.dropped += 1
        self.slot = message
        self.ready.set()

    def greet(self, message: str) -> None:
        """The tab's first message (the whole state): sent before any update, which a
        later update could otherwise replace in the slot. Updates offered before it are
        older than it, so they go."""
        if self.slot is not None:
            self.dropped += 1
        self.slot = None
        self.first = message
        self.ready.set()

    def _take(self) -> str | None:
        if self.first is not None:
            message, self.first = self.first, None
            if self.slot is not None:
                self.ready.set()  # an update came after the greeting: it goes next
            return message
        message, self.slot = self.slot, None
        return message

    async def pump(self) -> None:
        """Send the greeting, then the latest message whenever there is one, until the
        socket fails."""
        while not self.closed:
            await self.ready.wait()
            self.ready.clear()
            message = self._take()
            if message is None:
                continue
            try:
                await self.send(message)
            except Exception:  # the peer went away; the reader side cleans up
                self.closed = True
                return
            self.sent += 1

    def close(self) -> None:
        self.closed = True
        self.ready.set()


class Hub:
    def __init__(self) -> None:
        self.clients: set[Client] = set()

    def add(self, send: Callable[[str], Awaitable[None]]) -> Client:
        client = Client(send)
        self.clients.add(client)
        return client

    def remove(self, client: Client) -> None:
        client.close()
        self.clients.discard(client)

    def publish(self, message: str) -> None:
        for client in list(self.clients):
            client.offer(message)

    @property
    def dropped(self) -> int:
        return sum(c.dropped for c in self.clients)


async def run_client(
    client: Client, receive: Callable[[], Awaitable[str]], on_message: Callable[[str], None]
) -> None:
    """Pump updates out while reading the client's messages in; ends when either side ends."""
    pump = asyncio.create_task(client.pump())
    try:
        while not client.closed:
            text = await receive()
            on_message(text)
    finally:
        client.close()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump
