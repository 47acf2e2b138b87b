"""Where stored sessions are decoded: a pool of their own, and one decode per session.

A stored session's first view decodes it whole (about 1 MB/s for QS): seconds to
minutes. On asyncio's default executor, six such requests took every thread that
``/api/state``, the live ticker and Stop run on, and the dashboard went silent for as
long as the decodes ran. So work that grows with a stored session runs here, in
DECODE_THREADS threads that nothing live shares (more requests queue), and
``single_flight`` makes concurrent first requests for one session wait for one decode
instead of each running its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# Threads decoding or rendering stored sessions at once (docs/limits.md); the rest queue.
# Two: on a two-core machine the live path keeps a core's worth of time.
DECODE_THREADS = 2

_pool = ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="mcuprof-decode")


async def in_decode_pool(fn: Callable[..., T], *args: Any) -> T:
    """``asyncio.to_thread`` for work on stored sessions: the same, on the decode pool.
    A request that goes away before its turn is dropped from the queue."""
    return await asyncio.get_running_loop().run_in_executor(_pool, fn, *args)


def submit_to_decode_pool(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Work on a stored session that nobody awaits (an open, whose progress the page
    polls): queued on the decode pool like the rest."""
    return _pool.submit(fn, *args)


class SingleFlight:
    """Calls with the same key at the same time run once: the first caller runs it in its
    own thread, the others wait for its result (or its exception). A waiter blocks its
    thread, so callers are the decode pool's threads (the decode runs in one of them:
    waiting can never hold up the decode it waits for)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, Future[Any]] = {}

    def run(self, key: Hashable, fn: Callable[[], T]) -> T:
        with self._lock:
            flight = self._flights.get(key)
            first = flight is None
            if first:
                flight = self._flights[key] = Future()
        assert flight is not None
        if not first:
            return flight.result()
        try:
            result = fn()
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        else:
            flight.set_result(result)
            return result
        finally:
            with self._lock:
                del self._flights[key]


async def iterate_in_decode_pool(items: Iterator[T]) -> AsyncIterator[T]:
    """A body that decodes a stored session as it is sent, each piece made on the pool
    (a StreamingResponse would pull it on the server's shared threads)."""
    end = object()
    while True:
        item = await in_decode_pool(next, items, end)
        if item is end:
            return
        yield item  # type: ignore[misc]
