"""Host build of the C target library against a fake port, driven through ctypes."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

from mcuprof.protocol import ResponseDecoder, ResponseEvent, encode_command

ROOT = Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware"
FAKE_PORT = Path(__file__).resolve().parent / "fake_port.c"

# Small sizes so wrap-around and overflow happen within a few calls.
RING_SIZE = 16
MAX_RPP = 4
MAX_DEPTH = 8
TIMER_FREQ = 1_000_000
FLUSH_TICKS = 1000
STRICT = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Werror"]


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"


def build_library(out: Path, *defines: str) -> Path:
    gcc = shutil.which("gcc")
    assert gcc is not None, "host gcc is required (apt-get install gcc)"
    sources = sorted((FIRMWARE / "src").glob("*.c"))
    lib_objs = []
    for src in sources:
        obj = out.with_name(f"{out.stem}-{src.stem}.o")
        cmd = [gcc, *STRICT, "-O2", "-fPIC", "-c", str(src), "-o", str(obj)]
        cmd += ["-I", str(FIRMWARE / "include"), *defines]
        _run(cmd)
        lib_objs.append(str(obj))
    # The fake port is test code; only the library itself is held to the strict flags.
    # -Bsymbolic: glibc has its own no-op __cyg_profile_func_* that would otherwise
    # win symbol interposition for the fake port's calls into the library.
    cmd = [gcc, "-std=c99", "-O1", "-fPIC", "-shared", "-Wl,-Bsymbolic", "-o", str(out)]
    cmd += [str(FAKE_PORT), *lib_objs]
    cmd += ["-I", str(FIRMWARE / "include"), *defines]
    _run(cmd)
    return out


class Device:
    """The C library behind a fake port: feed commands in, get decoded responses out."""

    def __init__(self, path: Path, text: bytes = b"fake .text section bytes") -> None:
        self.lib = ctypes.CDLL(str(path))
        lib = self.lib
        u8p = ctypes.POINTER(ctypes.c_uint8)
        lib.fake_init.argtypes = [u8p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint16]
        lib.fake_init.argtypes += [ctypes.c_uint32]
        for name in ("fake_set_time", "fake_advance"):
            getattr(lib, name).argtypes = [ctypes.c_uint32]
        lib.fake_time.restype = ctypes.c_uint32
        lib.fake_set_tx_room.argtypes = [ctypes.c_int32]
        lib.fake_feed.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
        lib.fake_take_output.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
        lib.fake_take_output.restype = ctypes.c_uint32
        lib.fake_pending_input.restype = ctypes.c_uint32
        lib.fake_schedule_irq.argtypes = [ctypes.c_uint32] * 3
        lib.fake_port_calls.restype = ctypes.c_uint32
        # getattr: a literal lib.__cyg... inside a class body would be name-mangled.
        self._enter = getattr(lib, "__cyg_profile_func_enter")
        self._exit = getattr(lib, "__cyg_profile_func_exit")
        self._enter.argtypes = self._exit.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.mcuprof_crc16.argtypes = [ctypes.c_uint16, ctypes.c_char_p, ctypes.c_uint32]
        lib.mcuprof_crc16.restype = ctypes.c_uint16
        lib.mcuprof_crc32.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32]
        lib.mcuprof_crc32.restype = ctypes.c_uint32
        lib.mcuprof_build_id.restype = ctypes.c_uint32
        lib.mcuprof_depth_drops.restype = ctypes.c_uint32
        self.decoder = ResponseDecoder()
        self.raw = bytearray()
        self.init(text)

    def init(self, text: bytes, rpp: int = 0, flush_ticks: int = FLUSH_TICKS) -> None:
        self._text = (ctypes.c_uint8 * max(len(text), 1)).from_buffer_copy(text or b"\0")
        self.lib.fake_init(self._text, len(text), TIMER_FREQ, rpp, flush_ticks)

    # time and calls
    @property
    def now(self) -> int:
        return int(self.lib.fake_time())

    def set_time(self, t: int) -> None:
        self.lib.fake_set_time(t & 0xFFFFFFFF)

    def advance(self, dt: int) -> None:
        self.lib.fake_advance(dt)

    def enter(self, fn: int) -> None:
        self._enter(fn, 0)

    def exit(self, fn: int) -> None:
        self._exit(fn, 0)

    def call(self, fn: int, ticks: int = 5) -> None:
        self.enter(fn)
        self.advance(ticks)
        self.exit(fn)

    # link
    def send(self, data: bytes) -> None:
        self.lib.fake_feed(data, len(data))

    def command(self, cmd: int, payload: bytes = b"") -> list[ResponseEvent]:
        self.send(encode_command(cmd, payload))
        return self.poll()

    def poll(self, times: int = 1) -> list[ResponseEvent]:
        for _ in range(times):
            self.lib.mcuprof_poll()
        return self.read()

    def read(self) -> list[ResponseEvent]:
        buf = ctypes.create_string_buffer(1 << 16)
        events: list[ResponseEvent] = []
        while n := self.lib.fake_take_output(buf, len(buf)):
            chunk = buf.raw[:n]
            self.raw += chunk
            events += self.decoder.feed(chunk)
        return events

    def drain(self) -> list[ResponseEvent]:
        """Poll until the device has nothing more to say."""
        events: list[ResponseEvent] = []
        for _ in range(10_000):
            got = self.poll()
            if not got and not self.lib.fake_pending_input():
                return events
            events += got
        raise AssertionError("device never went quiet")


def fresh_device(library_path: Path, tmp_dir: Path, **kwargs: object) -> Device:
    # dlopen shares one copy per path, so each test loads its own file to start
    # from fresh static state (the call-depth counter is never reset by init).
    copy = tmp_dir / f"dev-{len(list(tmp_dir.glob('dev-*.so')))}.so"
    shutil.copyfile(library_path, copy)
    return Device(copy, **kwargs)  # type: ignore[arg-type]
