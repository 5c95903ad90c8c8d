"""Values derived from frozen arrays: made once, kept while the array lives.

A kernel that derives the same thing from the same constant input on every run (a convolution's
transformed filter, :mod:`aiotf.kernels.winograd`) asks :func:`derived` for it instead, as
TensorFlow's oneDNN kernels keep a constant filter reordered. The entry is keyed by the input
array's identity and dropped when that array is freed (a weak reference's callback); it is kept
only for a *frozen* array, one read-only down to the memory it views (an array that owns its data,
or bytes): a Const's value (the Const kernel freezes it), a folded constant, a resource
variable's value (assignment replaces it, never writes into it). A ref variable's buffer (Assign
writes into it) or a writable fed array is not frozen, and its value is derived on every call.

The entries take at most CACHE_BYTES in all; past that, values are derived on every call and not
kept, so a model with more constants than fit keeps the first ones and never churns.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

CACHE_BYTES = 256 << 20

_lock = threading.RLock()  # a weak reference's callback may run in any thread, even mid-insert
_entries: dict[tuple[Hashable, int], tuple[weakref.ref[Array], Array]] = {}
_bytes = 0


def frozen(a: Any) -> bool:
    """Whether no one can write into ``a``'s memory: read-only down to what owns it."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return a is None or isinstance(a, bytes)


def freeze(a: Array) -> None:
    """Make ``a`` and every array it views read-only (a constant, shared by every run)."""
    view: Any = a
    while isinstance(view, np.ndarray):
        view.flags.writeable = False
        view = view.base


def room(nbytes: int) -> bool:
    """Whether a derived value of ``nbytes`` would be kept."""
    return _bytes + nbytes <= CACHE_BYTES


def derived(kind: Hashable, source: Array, make: Callable[[Array], Array]) -> Array:
    """``make(source)``, made once per frozen ``source`` (and ``kind``) while both live."""
    if not frozen(source):
        return make(source)
    key = (kind, id(source))
    entry = _entries.get(key)
    if entry is not None and entry[0]() is source:
        return entry[1]
    value = make(source)
    value.flags.writeable = False
    _keep(key, source, value)
    return value


def _keep(key: tuple[Hashable, int], source: Array, value: Array) -> None:
    global _bytes
    with _lock:
        if key in _entries or not room(value.nbytes):
            return  # another thread made it meanwhile, or no room
        _entries[key] = (weakref.ref(source, lambda ref: _drop(key, ref)), value)
        _bytes += value.nbytes


def _drop(key: tuple[Hashable, int], ref: weakref.ref[Array]) -> None:
    global _bytes
    with _lock:
        entry = _entries.get(key)
        if entry is not None and entry[0] is ref:
            del _entries[key]
            _bytes -= entry[1].nbytes


def kept_bytes() -> int:
    """The bytes of derived values kept now."""
    return _bytes
