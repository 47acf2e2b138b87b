"""C++ names as ``c++filt`` prints them: one c++filt process for the whole table, else
libstdc++'s __cxa_demangle through ctypes, else the raw names."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

# c++filt reading stdin demangles word by word; a name made only of these characters is
# one word, so it prints exactly what ``c++filt NAME`` would.
_ONE_WORD = re.compile(r"[A-Za-z0-9_.]+")
_TOOLS = ("c++filt", "arm-none-eabi-c++filt")


def demangle_cxxfilt(names: Sequence[str], timeout_s: float = 10.0) -> list[str] | None:
    """None when no c++filt could do it."""
    todo = [i for i, n in enumerate(names) if _ONE_WORD.fullmatch(n)]
    out = list(names)
    if not todo:
        return out
    text = "".join(names[i] + "\n" for i in todo)
    for tool in _TOOLS:
        exe = shutil.which(tool)
        if exe is None:
            continue
        try:
            proc = subprocess.run(
                [exe], input=text.encode(), capture_output=True, timeout=timeout_s
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = proc.stdout.decode("utf-8", "replace").split("\n")
        if proc.returncode != 0 or len(lines) != len(todo) + 1 or lines[-1] != "":
            continue
        for i, line in zip(todo, lines, strict=False):
            out[i] = line
        return out
    return None


@functools.cache
def _cxa_demangle() -> tuple[Any, Any] | None:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = lib.__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free = libc.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return fn, free


def demangle_ctypes(names: Sequence[str]) -> list[str] | None:
    """None when libstdc++ is not loadable."""
    found = _cxa_demangle()
    if found is None:
        return None
    fn, free = found
    out = []
    for name in names:
        # __cxa_demangle also decodes bare type codes ("i" -> "int"); c++filt does not.
        if not name.startswith("_Z"):
            out.append(name)
            continue
        status = ctypes.c_int(-1)
        ptr = fn(name.encode("utf-8", "replace"), None, None, ctypes.byref(status))
        if status.value == 0 and ptr:
            out.append(ctypes.string_at(ptr).decode("utf-8", "replace"))
        else:
            out.append(name)
        if ptr:
            free(ptr)
    return out


def demangle_all(names: Sequence[str]) -> list[str]:
    """Same length and order as ``names``; a name nothing can demangle stays as it is."""
    if not names:
        return []
    return demangle_cxxfilt(names) or demangle_ctypes(names) or list(names)
