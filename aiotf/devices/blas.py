"""OpenBLAS's thread count while aiotf's pool threads run kernels.

numpy's OpenBLAS (a pthreads build) runs a large matmul on every core by itself, and its threads
meet at spin-wait barriers. A device's pool already runs kernels on every core, so a BLAS call
that fans out again from each pool thread oversubscribes them; and when one BLAS thread loses its
core (to another kernel, the event loop or another process) the call stalls for a scheduler
slice: on the 2-core benchmark machine with other work running, a 512x512 float32 matmul takes
2.2 ms on one thread and 48 ms on two.

So while any pool thread runs a kernel (:func:`hold_single_threaded`, called by the device around
each pool job) OpenBLAS uses one thread, and the count it had is restored when the last such job
ends; a kernel that wants more cores splits its work across the pool instead
(:mod:`aiotf.devices.intra_op`). OpenBLAS has no per-thread setting in pthreads builds, so the
setting is process-wide: numpy called from another thread during a pool kernel runs on one
thread too (correct, only slower). Without a loaded OpenBLAS (another BLAS, another platform)
this module does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

_FLAVOURS = (  # (prefix, suffix) of the exported names, by OpenBLAS flavour
    ("scipy_openblas_", "64_"),
    ("scipy_openblas_", ""),
    ("openblas_", ""),
)


class _Controls:
    """The loaded OpenBLAS's ``set_num_threads`` / ``get_num_threads``, and what it says of
    itself (``get_config``: version and build options; ``get_corename``: the kernels chosen
    for this CPU)."""

    def __init__(
        self,
        set_threads: Callable[[int], Any],
        get_threads: Callable[[], int],
        config: str,
        corename: str,
    ) -> None:
        self.set = set_threads
        self.get = get_threads
        self.config = config
        self.corename = corename


def _library_paths() -> list[str]:
    """Shared libraries named like OpenBLAS: mapped into this process, else beside numpy."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            mapped = {line.split()[-1] for line in maps if "openblas" in line.lower()}
        return sorted(p for p in mapped if os.path.isfile(p))
    except OSError:
        site = os.path.dirname(os.path.dirname(np.__file__))
        patterns = ("numpy.libs", "numpy/.libs", "numpy/.dylibs")
        return sorted(
            path for p in patterns for path in glob.glob(os.path.join(site, p, "*openblas*"))
        )


def _find_controls() -> _Controls | None:
    for path in _library_paths():
        try:
            lib = ctypes.CDLL(path)  # already loaded by numpy: the same handle
        except OSError:
            continue
        for prefix, suffix in _FLAVOURS:
            set_fn = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
            get_fn = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
            if set_fn is None or get_fn is None:
                continue
            set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
            get_fn.argtypes, get_fn.restype = [], ctypes.c_int
            return _Controls(
                set_fn,
                get_fn,
                _text(lib, f"{prefix}get_config{suffix}"),
                _text(lib, f"{prefix}get_corename{suffix}"),
            )
    return None


def _text(lib: ctypes.CDLL, name: str) -> str:
    """What the library's function ``name`` of no arguments returns as a C string, or ''."""
    fn = getattr(lib, name, None)
    if fn is None:
        return ""
    fn.argtypes, fn.restype = [], ctypes.c_char_p
    value = fn()
    return value.decode("ascii", "replace") if isinstance(value, bytes) else ""


class _SingleThreaded:
    """A process-wide count of pool jobs running; OpenBLAS has one thread while it is > 0."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = 0
        self._controls: _Controls | None = None
        self._looked = False

    def enter(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                controls = self._get_controls()
                if controls is not None:
                    self._saved = controls.get()
                    if self._saved != 1:
                        controls.set(1)

    def exit(self) -> None:
        with self._lock:
            self._depth -= 1
            controls = self._controls
            if self._depth == 0 and controls is not None and self._saved not in (0, 1):
                controls.set(self._saved)

    def _get_controls(self) -> _Controls | None:
        if not self._looked:
            self._looked = True
            self._controls = _find_controls()
        return self._controls

    def threads(self) -> int | None:
        """OpenBLAS's current thread count, or None without a loaded OpenBLAS."""
        with self._lock:
            controls = self._get_controls()
        return None if controls is None else int(controls.get())

    def controls(self) -> _Controls | None:
        with self._lock:
            return self._get_controls()


_STATE = _SingleThreaded()


# OpenBLAS on one thread from ``hold_single_threaded()`` to the matching
# ``release_single_threaded()`` (nested and concurrent holds are counted): a pool job calls the
# two itself, a context manager's generator costing it ~10 more Python calls in cold caches.
hold_single_threaded = _STATE.enter
release_single_threaded = _STATE.exit


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """OpenBLAS on one thread for the duration (nested and concurrent uses are counted)."""
    hold_single_threaded()
    try:
        yield
    finally:
        release_single_threaded()


def describe() -> str | None:
    """The loaded OpenBLAS's name and version, with the kernels it picked for this CPU
    (``OpenBLAS 0.3.31 (SkylakeX)``), or None when no OpenBLAS is loaded."""
    controls = _STATE.controls()
    if controls is None:
        return None
    name = " ".join(controls.config.split()[:2]) or "OpenBLAS"
    return f"{name} ({controls.corename})" if controls.corename else name


def blas_threads() -> int | None:
    """OpenBLAS's thread count now, or None when no OpenBLAS is loaded."""
    return _STATE.threads()


# x86 cores whose OpenBLAS kernels include small-matrix sgemm (no packing of the operands; the
# SkylakeX kernels, which Cooperlake and Sapphire Rapids reuse), and the first version with them
# in every DYNAMIC_ARCH build.
_SMALL_GEMM_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids"})
_SMALL_GEMM_SINCE = (0, 3, 20)


@functools.cache
def cpu_vendor() -> str:
    """The CPU's vendor as Linux names it (``GenuineIntel``, ``AuthenticAMD``), or '' where
    ``/proc/cpuinfo`` does not say: the same OpenBLAS kernels (SkylakeX) run on both, and some
    choices between them were measured to differ (``products.panel_max_rows``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return _vendor(info)
    except OSError:
        return ""


def _vendor(cpuinfo: Iterable[str]) -> str:
    for line in cpuinfo:
        key, _, value = line.partition(":")
        if key.strip() == "vendor_id":
            return value.strip()
    return ""


@functools.cache
def small_gemm_kernels() -> bool:
    """Whether the loaded OpenBLAS multiplies small float32 matrices with its small-matrix
    kernels, which read the operands where they lie instead of packing them first (taken when
    m·n·k <= 100^3; with a transposed right operand, only when m·n <= 1200 and k >= 32, as
    ``sgemm_small_kernel_permit`` of the SkylakeX kernels decides)."""
    controls = _STATE.controls()
    if controls is None or controls.corename.lower() not in _SMALL_GEMM_CORES:
        return False
    found = re.match(r"OpenBLAS (\d+)\.(\d+)\.(\d+)", controls.config)
    return found is not None and tuple(map(int, found.groups())) >= _SMALL_GEMM_SINCE
