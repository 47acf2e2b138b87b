"""Progress of long CLI work on stderr: a tqdm bar on a terminal, shown only once the
work has taken a second, and nothing at all when stderr is not a terminal."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

# A bar for work that has taken this long (seconds); the environment variable exists so
# that a test can see a real bar on a pty without timing anything.
SHOW_AFTER_S = float(os.environ.get("MCUPROF_PROGRESS_AFTER_S", "1.0"))


class ReadProgress:
    """Called as (bytes done, bytes total, records so far) while a capture is read;
    ``step`` names the work that follows (rendering), ``finish`` clears the line."""

    def __init__(
        self,
        what: str = "reading capture",
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.what = what
        self.bar: tqdm | None = None
        self.status = False

    def __call__(self, done: int, total: int, records: int) -> None:
        if not self.tty:
            return
        if self.bar is None:
            if self.clock() - self.start < SHOW_AFTER_S:
                return
            from tqdm import tqdm  # only when a bar is shown: commands start faster

            tqdm.monitor_interval = 0  # no monitor thread: updates come from this loop
            # A pty that reports no size (0 x 0: `script`, some CI runners) would get no
            # bar at all (tqdm hides bars below the screen's last row): give it a size.
            sized = not _unsized(self.stream)
            self.bar = tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=f"mcuprof: {self.what}",
                file=self.stream,
                leave=False,
                dynamic_ncols=sized,
                ncols=None if sized else 80,
                nrows=None if sized else 24,
                mininterval=0.2,
            )
        self.bar.set_postfix_str(f"{records:,} records", refresh=False)
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.bar.refresh()  # the last figures, whatever the refresh interval

    def step(self, what: str) -> None:
        """A status line for work with no measure of its own, after a long read."""
        if self.tty and self.clock() - self.start >= SHOW_AFTER_S:
            self._close_bar()
            self.stream.write(f"\rmcuprof: {what}…\x1b[K")
            self.stream.flush()
            self.status = True

    def finish(self) -> None:
        self._close_bar()
        if self.status:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.status = False

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _unsized(stream: TextIO) -> bool:
    """A terminal that reports 0 columns (streams without a descriptor are left to tqdm)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns == 0
    except (OSError, ValueError, AttributeError):
        return False
