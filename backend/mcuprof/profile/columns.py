"""Growable columns, in RAM or in a memory-mapped file (so a long capture lives on disk).

A ``Spill`` is one unnamed temporary file (O_TMPFILE: nothing is left behind whatever
happens to the process), sparse and mapped once at a large size, so a profile with
thousands of depth levels still holds two file descriptors. Columns are regions of it,
allocated at its end; a column that outgrows its region moves to a new one twice as
large, copied by the kernel (copy_file_range), and the old region is left as is (views
taken before the move keep reading it), so the file holds at most twice the data.

The columns are numpy arrays over the mapping and the profile's code runs on them
unchanged. Pages touched count in the process's RSS until they are unmapped;
``Spill.drop`` unmaps them (MADV_DONTNEED, which on a shared file mapping loses
nothing: the data stays in the page cache, written back by the kernel), and the profile
calls it after each public method, so what stays resident is what one call touches.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import tempfile
import threading
import weakref
from pathlib import Path

import numpy as np

from ..errors import UserError

_GROWTH = 1.5
_FILE_GROWTH = 2
_PAGE = mmap.PAGESIZE
_MIN_REGION = _PAGE  # bytes
_FAULT_AROUND = 1 << 16
_KERNEL_COPY = 1 << 20  # bytes: smaller copies go through the mapping (a syscall costs more)
RAM_COLUMN = 1 << 16  # bytes: a spilled profile's columns go to the file past this size
RAM_BUDGET = 1 << 26  # bytes of such small columns per profile, at most
RESERVE = 1 << 40  # bytes of address space (and sparse file) per spill, at most
OWN_AT = 1 << 23  # bytes: a column this large moves to a file of its own
OWN_RESERVE = 1 << 36  # bytes of address space (and sparse file) per such column, at most
# Under an address-space limit (ulimit -v), a mapping takes at most this share of it:
# a 4 GB limit gives each spill 256 MiB and each big column 128 MiB.
RESERVE_SHARE = 16
_OWN_STEP = 1 << 23  # bytes: a big column's file is allocated this much at a time


class ColumnsFull(UserError):
    """No room for more columns: the disk holding them is full, or the mapping is."""


def _room(wanted: int, share: int) -> int:
    """Bytes a mapping may reserve: ``wanted``, or under RLIMIT_AS a 1/share of it. The
    reservation is what lets columns grow without remapping (views stay valid)."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return wanted
    if limit == resource.RLIM_INFINITY:
        return wanted
    return max(_PAGE, min(wanted, limit // share // _PAGE * _PAGE))


def _allocate(fd: int, offset: int, nbytes: int, directory: Path) -> None:
    """Give the file real blocks before its pages are written through the mapping: a
    store into a sparse page the full disk cannot back kills the process with SIGBUS;
    here it is an error the caller can report."""
    try:
        os.posix_fallocate(fd, offset, nbytes)
    except OSError as exc:
        raise ColumnsFull(
            f"no room for the profile's columns in {directory} ({exc.strerror or exc}); "
            "free space on that disk"
        ) from None


class Spill:
    """The file one profile's columns live in, and the hook that unmaps their pages."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        bound_the_heap()
        self.dir = Path(directory) if directory is not None else default_spill_dir()
        self.reserve = _room(RESERVE, RESERVE_SHARE)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._file = tempfile.TemporaryFile(dir=self.dir)  # noqa: SIM115 (lives with the profile)
            os.ftruncate(self._file.fileno(), self.reserve)
            self._mm = mmap.mmap(self._file.fileno(), self.reserve)
        except OSError as exc:
            why = "not a directory" if isinstance(exc, FileExistsError) else exc.strerror or exc
            raise ColumnsFull(
                f"cannot keep the profile's columns in {self.dir} ({why}); "
                "make it a writable directory"
            ) from None
        self._bytes = np.frombuffer(self._mm, np.uint8)
        self._end = 0  # bytes allocated
        self._lock = threading.Lock()
        self.ram_used = 0  # bytes of the columns still in RAM (small ones)
        self.own: weakref.WeakSet[_OwnFile] = weakref.WeakSet()  # big columns' files

    def ram_room(self, nbytes: int, current: int) -> bool:
        """May a column grow to ``nbytes`` in RAM (from ``current``)?"""
        return nbytes <= RAM_COLUMN and self.ram_used + nbytes - current <= RAM_BUDGET

    @property
    def fileno(self) -> int:
        return self._file.fileno()

    @property
    def disk_bytes(self) -> int:
        """Bytes of the files in use (regions allocated, old ones included)."""
        return self._end + sum(own.extent for own in list(self.own))

    def alloc(self, nbytes: int) -> int:
        size = -(-max(nbytes, _MIN_REGION) // _PAGE) * _PAGE
        with self._lock:
            off = self._end
            if off + size > self.reserve:
                raise ColumnsFull(
                    f"the profile's column file is full ({self.reserve >> 20:,} MiB reserved)"
                )
            _allocate(self.fileno, off, size, self.dir)
            self._end = off + size
        return off

    def view(self, offset: int, nbytes: int, dtype: np.dtype) -> np.ndarray:
        return self._bytes[offset : offset + nbytes].view(dtype)

    def drop(self) -> None:
        """Unmap every page the columns have touched (their data stays on disk)."""
        end = self._end
        if end:
            self._mm.madvise(mmap.MADV_DONTNEED, 0, _reach(end))
        for own in list(self.own):
            own.drop()


def _reach(nbytes: int) -> int:
    """How far pages may be mapped when ``nbytes`` were touched: a fault maps the pages
    around it that are in the page cache (fault-around, 64 KB aligned by default)."""
    return (-(-nbytes // _FAULT_AROUND) + 1) * _FAULT_AROUND


def _copy(src: int, src_off: int, dst: int, dst_off: int, nbytes: int) -> None:
    done = 0
    while done < nbytes:
        step = os.copy_file_range(src, dst, nbytes - done, src_off + done, dst_off + done)
        if step <= 0:
            raise OSError("copy_file_range made no progress")
        done += step


class _OwnFile:
    """A big column's own sparse file, mapped once at OWN_RESERVE bytes, so it grows
    without ever being copied (a copy of a column of 100M records, under the profile's
    lock, would stall every query for seconds)."""

    __slots__ = ("__weakref__", "allocated", "dir", "extent", "file", "mm", "size")

    def __init__(self, directory: Path) -> None:
        self.file = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 (lives with the column)
        self.dir = directory
        self.size = _room(OWN_RESERVE, 2 * RESERVE_SHARE)
        os.ftruncate(self.file.fileno(), self.size)
        self.mm = mmap.mmap(self.file.fileno(), self.size)
        self.extent = 0  # bytes that may have been touched
        self.allocated = 0  # bytes given real blocks (see _allocate)

    def grow(self, nbytes: int) -> None:
        """Make the first ``nbytes`` writable through the mapping."""
        if nbytes > self.size:
            raise ColumnsFull(f"a profile column is full ({self.size >> 20:,} MiB reserved)")
        if nbytes > self.allocated:
            upto = min(self.size, -(-nbytes // _OWN_STEP) * _OWN_STEP)
            _allocate(self.file.fileno(), self.allocated, upto - self.allocated, self.dir)
            self.allocated = upto
        self.extent = max(self.extent, nbytes)

    def drop(self) -> None:
        if self.extent:
            self.mm.madvise(mmap.MADV_DONTNEED, 0, _reach(self.extent))


class Column:
    """A 1-D array with amortised growth, in RAM or on disk with a Spill: small columns
    in RAM (within the spill's budget), then in a region of the spill's shared file,
    then (past OWN_AT bytes) in a file of their own. ``a`` is the whole capacity; the
    owner keeps the count of items in use."""

    __slots__ = ("_off", "_own", "a", "spill")

    def __init__(self, dtype: np.dtype | type, spill: Spill | None = None) -> None:
        self.a = np.empty(0, dtype)
        self.spill = spill
        self._off = -1  # offset of the region in the spill's file
        self._own: _OwnFile | None = None

    @property
    def ram_bytes(self) -> int:
        return 0 if self._off >= 0 or self._own is not None else self.a.nbytes

    def _file(self) -> tuple[int, int] | None:
        """(file descriptor, offset) of the data when it is on disk."""
        if self._own is not None:
            return self._own.file.fileno(), 0
        if self._off >= 0:
            return self.spill.fileno, self._off  # type: ignore[union-attr]
        return None

    def reserve(self, need: int, keep: int) -> np.ndarray:
        """Room for ``need`` items, the first ``keep`` preserved. Returns ``a``."""
        dtype = self.a.dtype
        if self._own is not None:
            self._own.grow(need * dtype.itemsize)
        cap = len(self.a)
        if need <= cap:
            return self.a
        spill = self.spill
        on_disk = self._file()
        if spill is None or (
            on_disk is None and spill.ram_room(need * dtype.itemsize, self.a.nbytes)
        ):
            # Small columns stay in RAM even when spilling: a deep call chain has
            # thousands of one-record levels, and a file page costs a fault to write.
            grown = np.empty(max(need, int(cap * _GROWTH) + 64), dtype)
            grown[:keep] = self.a[:keep]
            if spill is not None:
                spill.ram_used += grown.nbytes - self.a.nbytes
            self.a = grown
            return grown
        if need * dtype.itemsize >= OWN_AT:
            own = _OwnFile(spill.dir)
            own.grow(need * dtype.itemsize)
            grown = np.frombuffer(own.mm, dtype)
            dst: tuple[int, int] = (own.file.fileno(), 0)
            spill.own.add(own)
            off = -1
        else:
            own = None
            nbytes = max(need, cap * _FILE_GROWTH) * dtype.itemsize
            off = spill.alloc(nbytes)
            nbytes = (nbytes // dtype.itemsize) * dtype.itemsize
            grown = spill.view(off, nbytes, dtype)
            dst = (spill.fileno, off)
        if on_disk is not None and keep * dtype.itemsize >= _KERNEL_COPY:
            _copy(*on_disk, *dst, keep * dtype.itemsize)
        elif keep:
            grown[:keep] = self.a[:keep]
        if on_disk is None:
            spill.ram_used -= self.a.nbytes
        self._off, self._own, self.a = off, own, grown
        return grown

    def copy(self, n: int, spill: Spill | None) -> Column:
        """The first ``n`` items in a new column (on disk with ``spill``). File to file
        goes through the kernel, never through this process's memory."""
        src = self._file()
        if src is None:  # small (or not spilled): a plain copy, trimmed
            out = Column.__new__(Column)
            out.a, out.spill, out._off, out._own = self.a[:n].copy(), spill, -1, None
            if spill is not None:
                spill.ram_used += out.a.nbytes
            return out
        out = Column(self.a.dtype, spill)
        dst = out.reserve(n, 0)
        if n == 0:
            return out
        nbytes = n * self.a.dtype.itemsize
        where = out._file()
        if where is None or nbytes < _KERNEL_COPY:
            dst[:n] = self.a[:n]
        else:
            _copy(*src, *where, nbytes)
        return out


try:
    _LIBC = ctypes.CDLL(None)  # glibc's malloc_trim and mallopt
    _TRIM, _MALLOPT = _LIBC.malloc_trim, _LIBC.mallopt
except (OSError, AttributeError):
    _TRIM = _MALLOPT = None
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8


@functools.cache  # once per process
def bound_the_heap() -> None:
    """Make glibc give big temporaries back at once. By default it raises its mmap
    threshold to the largest block freed (up to 32 MB), after which an add's or an
    aggregate's temporaries come from heaps it keeps, one per thread that ever ran a
    query: a long capture then pays their high-water mark many times over."""
    if _MALLOPT is not None:
        _MALLOPT(_M_MMAP_THRESHOLD, 1 << 20)
        _MALLOPT(_M_ARENA_MAX, 2)


def release_free_memory() -> None:
    """Give the heap's free pages back to the system: glibc keeps those of freed
    temporaries in its arenas, and a long capture would pay for them as records."""
    if _TRIM is not None:
        _TRIM(0)


def default_spill_dir() -> Path:
    """Where spilled columns go unless told: $MCUPROF_COLUMNS_DIR, else the temporary dir."""
    return Path(os.environ.get("MCUPROF_COLUMNS_DIR") or tempfile.gettempdir())
