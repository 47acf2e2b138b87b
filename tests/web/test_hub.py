"""Live fan-out: a stalled client never blocks the producer and only misses frames."""

from __future__ import annotations

import asyncio

from mcuprof.web.live.hub import Hub


def test_stalled_client_gets_only_the_latest_update() -> None:
    async def scenario() -> tuple[list[str], list[str], int]:
        hub = Hub()
        release = asyncio.Event()
        slow_got: list[str] = []
        fast_got: list[str] = []

        async def slow_send(message: str) -> None:
            await release.wait()  # a browser that stopped reading
            slow_got.append(message)

        async def fast_send(message: str) -> None:
            fast_got.append(message)

        slow = hub.add(slow_send)
        fast = hub.add(fast_send)
        pumps = [asyncio.create_task(slow.pump()), asyncio.create_task(fast.pump())]
        for n in range(100):
            hub.publish(f"u{n}")  # returns at once, whatever the clients do
            await asyncio.sleep(0)
        release.set()
        for _ in range(10):
            await asyncio.sleep(0)
        dropped = slow.dropped
        for client in (slow, fast):
            hub.remove(client)
        await asyncio.gather(*pumps)
        return slow_got, fast_got, dropped

    slow_got, fast_got, dropped = asyncio.run(scenario())
    assert fast_got == [f"u{n}" for n in range(100)]
    # The stalled one got the message it was stuck on and then the newest one.
    assert slow_got == ["u0", "u99"]
    assert dropped == 98


def test_failed_send_closes_only_that_client() -> None:
    async def scenario() -> tuple[bool, list[str]]:
        hub = Hub()
        got: list[str] = []

        async def broken(message: str) -> None:
            raise ConnectionResetError

        async def fine(message: str) -> None:
            got.append(message)

        bad = hub.add(broken)
        good = hub.add(fine)
        pumps = [asyncio.create_task(bad.pump()), asyncio.create_task(good.pump())]
        hub.publish("a")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        hub.publish("b")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        hub.remove(good)
        hub.remove(bad)
        await asyncio.gather(*pumps)
        return bad.closed, got

    closed, got = asyncio.run(scenario())
    assert closed is True
    assert got == ["a", "b"]


def test_the_greeting_goes_first_whatever_is_published_around_it() -> None:
    """A tab's first message (the whole state) is never replaced by an update published
    while it waits: updates from before it are dropped, updates after it follow it."""

    async def scenario() -> list[str]:
        hub = Hub()
        got: list[str] = []

        async def send(message: str) -> None:
            got.append(message)

        client = hub.add(send)
        hub.publish("older")  # published while the greeting was being made
        client.greet("hello")
        hub.publish("newer")  # before the pump sent the greeting
        pump = asyncio.create_task(client.pump())
        for _ in range(10):
            await asyncio.sleep(0)
        hub.remove(client)
        await pump
        return got

    assert asyncio.run(scenario()) == ["hello", "newer"]
