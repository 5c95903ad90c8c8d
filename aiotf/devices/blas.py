"""OpenBLAS's thread count while aiotf's pool threads run kernels.

numpy's OpenBLAS (a pthreads build) runs a large matmul on every core by itself, and its threads
meet at spin-wait barriers. A device's pool already runs kernels on every core, so a BLAS call
that fans out again from each pool thread oversubscribes them; and when one BLAS thread loses its
core (to another kernel, the event loop or another process) the call stalls for a scheduler
slice: on the 2-core benchmark machine with other work running, a 512x512 float32 matmul takes
2.2 ms on one thread and 48 ms on two.

So while any pool thread runs a kernel (:func:`single_threaded`, entered by the device around
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
import glob
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

_SYMBOLS = (  # (set, get) thread-count functions, by OpenBLAS flavour
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


class _Controls:
    """The loaded OpenBLAS's ``set_num_threads`` / ``get_num_threads``, if found."""

    def __init__(self, set_threads: Callable[[int], Any], get_threads: Callable[[], int]) -> None:
        self.set = set_threads
        self.get = get_threads


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
        for set_name, get_name in _SYMBOLS:
            set_fn = getattr(lib, set_name, None)
            get_fn = getattr(lib, get_name, None)
            if set_fn is not None and get_fn is not None:
                set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
                get_fn.argtypes, get_fn.restype = [], ctypes.c_int
                return _Controls(set_fn, get_fn)
    return None


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


_STATE = _SingleThreaded()


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """OpenBLAS on one thread for the duration (nested and concurrent uses are counted)."""
    _STATE.enter()
    try:
        yield
    finally:
        _STATE.exit()


def blas_threads() -> int | None:
    """OpenBLAS's thread count now, or None when no OpenBLAS is loaded."""
    return _STATE.threads()
