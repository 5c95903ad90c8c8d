"""oneDNN's float32 GEMM for products OpenBLAS would multiply whole, when oneDNN is installed.

TensorFlow multiplies matrices with oneDNN, whose kernels run nearer a core's peak than
OpenBLAS's (on the AMD EPYC of ``docs/performance.md``, one core: a 512^3 product in 2.44-2.61
ms against OpenBLAS's 2.66-2.74; 32x3136x1024 2.46 against 3.28; 6272x800x64 7.2 against 8.3).
The optional extra ``aiotf[onednn]`` installs its library (the ``onednn-cpu-gomp`` wheel, its
OpenMP build); this module finds it, loads it once and calls ``dnnl_sgemm`` through ctypes,
which lets go of the GIL for the call as numpy does. ``products`` sends it the products it
would otherwise hand to numpy whole (not the panels and row stacks it makes of OpenBLAS's small
kernels, which were measured faster still), ``AIOTF_ONEDNN=0`` in the environment keeps to
numpy, and without the library nothing changes.

Threads: aiotf splits a product over its pool itself (``intra_op``), so oneDNN runs on the
calling thread alone. Its OpenMP build would start a team of one thread per core in every call
otherwise, and OpenMP's thread count is a per-thread setting: each thread that calls sets its own
to one before its first product (``omp_set_num_threads``). A build of another threading runtime
(TBB, a thread pool) is not used.

Bits: oneDNN adds up in its own order, so a product's last bits may differ from OpenBLAS's (the
same for some shapes, not for others), as TensorFlow's do. Each row and column comes out the same
however the product is cut into row or column blocks (measured over 17 shapes), so a split
product's answer does not depend on the split.

The library (53 MB, mapped rather than read) takes 4-7 ms to load, holding the GIL; it is loaded
with this module (by ``products``, with ``import aiotf``), so that no run pays it on the event
loop. Its first product settles glibc's malloc for its buffers, for the whole process
(:func:`_settle_malloc`).
"""

from __future__ import annotations

import ctypes
import glob
import importlib.metadata
import os
import sys
import threading
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

_DISTRIBUTIONS = ("onednn-cpu-gomp", "onednn")  # wheels that hold libdnnl.so.3
_RUNTIME_OMP = 2  # dnnl_version_t.cpu_runtime of an OpenMP build (DNNL_RUNTIME_OMP)
_RUNTIME_SEQ = 1  # ... of a sequential one


class _Version(ctypes.Structure):
    _fields_ = [  # noqa: RUF012 - ctypes reads it from the class
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
        ("patch", ctypes.c_int),
        ("hash", ctypes.c_char_p),
        ("cpu_runtime", ctypes.c_uint),
        ("gpu_runtime", ctypes.c_uint),
    ]


class _Library:
    """The loaded library's handle, its ``dnnl_sgemm``, the OpenMP thread count setter (None
    for a sequential build) and the version, as ``major.minor.patch``."""

    def __init__(self, handle: ctypes.CDLL, sgemm: Any, set_threads: Any, version: str) -> None:
        self.handle = handle
        self.sgemm = sgemm
        self.set_threads = set_threads
        self.version = version


_local = threading.local()  # .single: this thread's OpenMP thread count is one


def _candidates() -> list[str]:
    """Paths of ``libdnnl.so.3``: the files of an installed oneDNN wheel, else the
    environment's ``lib`` directory."""
    found: list[str] = []
    for name in _DISTRIBUTIONS:
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in files:
            if file.name == "libdnnl.so.3":
                found.append(os.path.realpath(str(file.locate())))
    found += [
        os.path.realpath(p) for p in glob.glob(os.path.join(sys.prefix, "lib", "libdnnl.so.3"))
    ]
    return list(dict.fromkeys(found))


def _load() -> _Library | None:
    if os.environ.get("AIOTF_ONEDNN", "1") == "0" or not sys.platform.startswith("linux"):
        return None
    for path in _candidates():
        cpus = os.sched_getaffinity(0)
        try:
            lib = ctypes.CDLL(path)
        except OSError:  # its OpenMP or TBB runtime missing, another platform's build
            continue
        finally:
            # GNU OpenMP binds the thread that loads it to one CPU when OMP_PROC_BIND,
            # OMP_PLACES or GOMP_CPU_AFFINITY ask for binding, and every thread started after
            # (the pools') would inherit it: the loading thread gets its CPUs back.
            if os.sched_getaffinity(0) != cpus:
                os.sched_setaffinity(0, cpus)
        loaded = _bind(lib)
        if loaded is not None:
            return loaded
    return None


def _bind(lib: ctypes.CDLL) -> _Library | None:
    """``lib``'s GEMM, if it is a oneDNN 3 build whose threads can be held to the caller's."""
    version_fn = getattr(lib, "dnnl_version", None)
    sgemm = getattr(lib, "dnnl_sgemm", None)
    if version_fn is None or sgemm is None:
        return None
    version_fn.argtypes, version_fn.restype = [], ctypes.POINTER(_Version)
    version = version_fn().contents
    if version.major < 3:
        return None
    set_threads = None
    if version.cpu_runtime == _RUNTIME_OMP:
        # Looked up through libdnnl's handle: the OpenMP runtime it is linked to, whatever other
        # copies (renamed in other wheels) the process has loaded.
        set_threads = getattr(lib, "omp_set_num_threads", None)
        if set_threads is None:
            return None
        set_threads.argtypes, set_threads.restype = [ctypes.c_int], None
    elif version.cpu_runtime != _RUNTIME_SEQ:
        return None
    dim, ptr = ctypes.c_int64, ctypes.c_void_p
    sgemm.argtypes = [
        ctypes.c_char, ctypes.c_char, dim, dim, dim, ctypes.c_float,
        ptr, dim, ptr, dim, ctypes.c_float, ptr, dim,
    ]  # fmt: skip
    sgemm.restype = ctypes.c_int
    return _Library(lib, sgemm, set_threads, f"{version.major}.{version.minor}.{version.patch}")


# The size of the block freed once, before oneDNN's first product (see _settle_malloc).
MALLOC_SETTLE_BYTES = 8 << 20


def _settle_malloc() -> None:
    """Free one block of MALLOC_SETTLE_BYTES, as any freed numpy array of that size would: glibc's
    malloc then serves blocks of up to that size from its heaps, and returns free memory to the
    system past twice that (its thresholds follow the largest block freed, from 128 KiB up).

    ``dnnl_sgemm`` allocates its packing buffers (~0.5 MiB for a 512^3 product) and frees them
    in every call. Mapped afresh each time, their pages were faulted in again by every product:
    wide16's sixteen took ~2,300 page faults a run, and 26.5-28.4 ms where OpenBLAS took
    25.1-25.7 (a process each); after this, none, and 22.6-24.5 against OpenBLAS's 23.4-26.6.
    The thresholds are the process's: from then on its free heap memory goes back to the
    system only past 16 MiB a heap (glibc's own rule once it has seen such a block freed).
    Elsewhere than glibc (no ``gnu_get_libc_version``) nothing is done."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "gnu_get_libc_version"):
        return
    malloc, free = libc.malloc, libc.free
    malloc.argtypes, malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None
    free(malloc(MALLOC_SETTLE_BYTES))


_LIBRARY = _load()
_settled = False  # _settle_malloc has run: the first product oneDNN makes runs it


def available() -> bool:
    """Whether products go to oneDNN (installed, loadable, not turned off)."""
    return _LIBRARY is not None


def version() -> str | None:
    """The loaded oneDNN's version, or None."""
    return None if _LIBRARY is None else _LIBRARY.version


def layout(x: Array) -> tuple[bytes, int, int] | None:
    """How a float32 matrix lies for a row-major GEMM, with its address: (b'N', its row stride
    in elements) by rows, (b'T', its column stride) by columns (its transpose by rows), None
    otherwise or for another dtype (also what ``onednn_matmul`` tells its primitives)."""
    if x.dtype != _F32:
        return None
    rows, cols = x.shape
    step0, step1 = x.strides
    address = x.__array_interface__["data"][0]
    if address % 4:
        return None
    if step1 == 4 and step0 % 4 == 0 and step0 >= max(cols, 1) * 4:
        return b"N", step0 // 4, address
    if step0 == 4 and step1 % 4 == 0 and step1 >= max(rows, 1) * 4:
        return b"T", step1 // 4, address
    return None


_F32 = np.dtype(np.float32)  # native byte order


_FLIP = {b"N": b"T", b"T": b"N"}


def matmul_into(a: Array, b: Array, out: Array) -> bool:
    """``out[...] = a @ b`` for float32 matrices, by oneDNN on the calling thread; False, having
    done nothing, where oneDNN is not available, an operand is laid out otherwise than by rows
    or by columns, or the shapes do not match (numpy then refuses them)."""
    library = _LIBRARY
    if library is None:
        return False
    left, right, result = layout(a), layout(b), layout(out)
    if left is None or right is None or result is None or not out.flags.writeable:
        return False
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return False  # numpy copies an operand the output overlaps; oneDNN would read it changed
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k or out.shape != (m, n):
        return False  # numpy's to refuse (found by review: the GEMM read past ``b``'s end)
    if result[0] == b"T":  # out by columns: out.T = b.T @ a.T, by rows
        left, right = (_FLIP[right[0]], *right[1:]), (_FLIP[left[0]], *left[1:])
        m, n = n, m
    hold_to_this_thread()
    status = library.sgemm(
        left[0], right[0], m, n, k, 1.0,
        left[2], left[1], right[2], right[1], 0.0, result[2], result[1],
    )  # fmt: skip
    if status != 0:
        raise RuntimeError(f"dnnl_sgemm failed with status {status} for a {m}x{k}x{n} product")
    return True


def library() -> _Library | None:
    """The loaded library, or None (``onednn_matmul`` calls its primitives)."""
    return _LIBRARY


def hold_to_this_thread() -> None:
    """Before this thread's first product: hold its OpenMP team to itself, and settle glibc's
    malloc the first time any thread multiplies (two threads doing both at once free two
    blocks: no harm)."""
    global _settled
    if getattr(_local, "single", False):
        return
    library = _LIBRARY
    assert library is not None
    if library.set_threads is not None:
        library.set_threads(1)
    _local.single = True
    if not _settled:
        _settle_malloc()
        _settled = True
