"""The target's sizes: from QS_TARGET_INFO, or from the user (QSPY's options) until then."""

from __future__ import annotations

from dataclasses import dataclass, replace

# QSPY's short options for each size, as on its command line and in .dic files.
SIZE_OPTIONS = {
    "T": "tstamp_size",
    "O": "obj_ptr_size",
    "F": "fun_ptr_size",
    "S": "sig_size",
    "E": "evt_size",
    "Q": "queue_ctr_size",
    "P": "pool_ctr_size",
    "B": "pool_blk_size",
    "C": "tevt_ctr_size",
}
# The sizes a field may have: the widths the decoder reads (QSPY's options offer the same).
SIZE_CHOICES = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class QSConfig:
    """Sizes in bytes. The defaults are QSPY 7.4's command-line defaults; ``build`` is
    the target's build time (seconds, minutes, hours, day, month, two-digit year) and
    stays None until a target-info record or a dictionary file gives it."""

    version: int = 740
    big_endian: bool = False
    obj_ptr_size: int = 4
    fun_ptr_size: int = 4
    tstamp_size: int = 4
    sig_size: int = 2
    evt_size: int = 2
    queue_ctr_size: int = 1
    pool_ctr_size: int = 2
    pool_blk_size: int = 2
    tevt_ctr_size: int = 4
    max_active: int | None = None
    max_epool: int | None = None
    max_tick_rate: int | None = None
    build: tuple[int, int, int, int, int, int] | None = None
    from_target: bool = False

    def __post_init__(self) -> None:
        # A size the record layouts cannot read would fail later, far from its cause
        # (a 9-byte timestamp overflowed the RTC tracker's 64-bit arithmetic).
        for opt, attr in SIZE_OPTIONS.items():
            size = getattr(self, attr)
            if size not in SIZE_CHOICES:
                raise ValueError(f"{attr.replace('_', ' ')} {size} (-{opt}) is not 1, 2, 4 or 8")

    def with_options(self, **sizes: int | None) -> QSConfig:
        """QSPY-style overrides, e.g. ``with_options(O=8, T=2)``; None keeps a size."""
        changes = {}
        for opt, value in sizes.items():
            if value is None:
                continue
            if opt not in SIZE_OPTIONS:
                raise ValueError(f"unknown QS size option -{opt}")
            changes[SIZE_OPTIONS[opt]] = value
        return replace(self, **changes)

    @property
    def build_stamp(self) -> str | None:
        """The build time as QSPY prints it, e.g. ``261122_182611``."""
        if self.build is None:
            return None
        sec, minute, hour, day, month, year = self.build
        return f"{year:02d}{month:02d}{day:02d}_{hour:02d}{minute:02d}{sec:02d}"

    def sizes_differ(self, other: QSConfig) -> bool:
        return any(getattr(self, f) != getattr(other, f) for f in SIZE_OPTIONS.values())


def parse_target_info(payload: bytes) -> tuple[bool, int, QSConfig]:
    """QS_TARGET_INFO's data: (is_reset, raw 16-bit version word, config).

    Raises ValueError when the payload is not the 16 bytes QP 7.x sends, or claims a
    size other than 1, 2, 4 or 8 bytes."""
    if len(payload) != 16:
        raise ValueError(f"target info has {len(payload)} data bytes, expected 16")
    is_reset = payload[0] != 0
    word = payload[1] | (payload[2] << 8)
    b = payload[3:]
    config = QSConfig(
        version=word & 0x7FFF,
        big_endian=bool(word >> 15),
        sig_size=b[0] & 0xF,
        evt_size=b[0] >> 4,
        queue_ctr_size=b[1] & 0xF,
        tevt_ctr_size=b[1] >> 4,
        pool_blk_size=b[2] & 0xF,
        pool_ctr_size=b[2] >> 4,
        obj_ptr_size=b[3] & 0xF,
        fun_ptr_size=b[3] >> 4,
        tstamp_size=b[4] & 0xF,
        max_active=b[5],
        max_epool=b[6] & 0xF,
        max_tick_rate=b[6] >> 4,
        build=(b[7], b[8], b[9], b[10], b[11], b[12]),
        from_target=True,
    )
    return is_reset, word, config
