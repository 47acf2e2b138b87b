"""Series time for QS records: the target's timestamp made monotonic."""

from __future__ import annotations


class SeriesClock:
    """The target's timestamp made monotonic across counter wraps (a drop by more than
    half the counter's range) and target resets (the clock starts again: carry on after
    the last time), so plots and timelines never run backwards."""

    __slots__ = ("_epoch", "_last_raw", "_restarted", "last")

    def __init__(self) -> None:
        self._last_raw: int | None = None
        self._epoch = 0
        self._restarted = False
        self.last = 0  # the last time given

    def target_reset(self) -> None:
        """The target reset: its next timestamp starts a new count."""
        self._restarted = self._last_raw is not None

    def __call__(self, raw: int, size: int) -> int:
        last = self._last_raw
        if last is not None:
            if self._restarted:
                self._epoch = self.last + 1 - raw
                self._restarted = False
            elif raw < last and last - raw > 1 << (8 * size - 1):
                self._epoch += 1 << (8 * size)
        self._last_raw = raw
        self.last = now = raw + self._epoch
        return now
