"""Per-thread scratch memory: a kernel's intermediates in the same memory block after block.

A kernel that works in blocks (a convolution's im2col columns, Winograd's transformed tiles)
makes the same intermediates for every block. Fresh arrays would be other memory each time,
fetched into the core's cache anew; :func:`scratch` hands each thread the same memory for each
intermediate (its ``role``) instead, block after block. The cnn's second convolution's blocks on
two threads, alternated: 2979 -> 2775 us a step's worth (p10 2567 -> 2211).

A thread keeps up to SCRATCH_BYTES (a block's intermediates take 1-2 MiB); past that, arrays are
fresh. An array from :func:`scratch` is good until the thread asks for its role again: a role is a
name, each caller's own (``"im2col columns"``), and nothing holds its array across a block.

:func:`kept` keeps more: an object a kernel makes for a shape of block (its intermediates and the
views of them each step uses), so that a block runs no Python but its numpy calls.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

import numpy as np

Array = np.ndarray[Any, Any]

SCRATCH_BYTES = 16 << 20
KEPT_BYTES = 16 << 20
_local = threading.local()


class Measured(Protocol):
    """An object that says how much memory it holds."""

    @property
    def nbytes(self) -> int: ...


S = TypeVar("S", bound=Measured)


def scratch(role: str, shape: tuple[int, ...], dtype: Any = np.float32) -> Array:
    """An array of ``shape`` and ``dtype`` in this thread's scratch memory for intermediate
    ``role`` (its contents undefined)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    roles: dict[str, Array] | None = getattr(_local, "roles", None)
    if roles is None:
        roles = _local.roles = {}
    memory = roles.get(role)
    if memory is None or memory.size < nbytes:
        others = sum(a.nbytes for r, a in roles.items() if r != role)
        if others + nbytes > SCRATCH_BYTES:
            return np.empty(shape, dtype)
        memory = roles[role] = np.empty(nbytes, np.uint8)
    array: Array = memory[:nbytes].view(dtype).reshape(shape)
    return array


def kept(key: Hashable, make: Callable[[], S]) -> S:
    """The object ``make()`` made for ``key`` on this thread, made on the thread's first call
    for ``key``; the same object on its later calls, while it is kept. A thread keeps up to
    KEPT_BYTES of them (their ``nbytes``), dropping the longest unused first; one bigger than
    that is made anew every call."""
    objects: dict[Hashable, Any] | None = getattr(_local, "objects", None)
    if objects is None:
        objects = _local.objects = {}
    found = objects.pop(key, None)
    if found is None:
        found = make()
        if found.nbytes > KEPT_BYTES:
            return found
        total = sum(o.nbytes for o in objects.values()) + found.nbytes
        for old in list(objects):
            if total <= KEPT_BYTES:
                break
            total -= objects.pop(old).nbytes
    objects[key] = found  # the most recently used last
    return found  # type: ignore[no-any-return]
