"""Values derived from frozen arrays: made once, kept while the array's memory lives.

A kernel that derives the same thing from the same constant input on every run (a convolution's
transformed filter, :mod:`aiotf.kernels.winograd`) asks :func:`derived` for it instead, as
TensorFlow's oneDNN kernels keep a constant filter reordered.

Only *frozen* arrays qualify: views of memory that aiotf itself made read-only with
:func:`freeze` and that no one else holds (a Const's private value, frozen by the Const kernel,
and so a folded constant's; a resource variable's value, replaced on assignment, never written
into). Read-only is not enough: numpy lets an array's owner make it writable again,
and a writable view taken earlier still writes, so a user's read-only fed array is derived anew
on every run, as is a ref variable's buffer (Assign writes into it). An entry is keyed by the
memory's owner and the view's geometry (a Reshape of a Const, a new view each run, finds it;
a Transpose copies), and dropped when the owner is freed (a weak reference's callback).

A kernel asks with the same array object run after run (a compiled schedule's Const value), so
what was found for an array is also remembered by its identity while it lives: found again in
~0.3 us, where working out its owner and key takes ~3 us (and three to five times that in a step,
out of cache: ~15 us of each of mlp's split MatMuls went to finding their weight's columns).

The entries take at most CACHE_BYTES in all; past that, values are derived on every call and not
kept, so a model with more constants than fit keeps the first ones and never churns. A value
that views its source is not kept (the entry would keep the source alive for ever).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, overload

import numpy as np

Array = np.ndarray[Any, Any]

CACHE_BYTES = 256 << 20

_lock = threading.RLock()  # a weak reference's callback may run in any thread, even mid-insert
_frozen_owners: dict[int, weakref.ref[Array]] = {}  # id -> the memory owners freeze() froze
_entries: dict[Hashable, tuple[weakref.ref[Any], Array]] = {}
_bytes = 0
# id -> (the array, its memory's owner, what was found for it by kind and geometry): kept()'s
# fast path
_by_array: dict[int, tuple[weakref.ref[Array], weakref.ref[Array], dict[Hashable, Array]]] = {}


def _owner(a: Array) -> Array | None:
    """The last array on ``a``'s chain of bases (the one holding the memory), if every array on
    the way is read-only, else None."""
    view = a
    while True:
        if view.flags.writeable:
            return None
        if not isinstance(view.base, np.ndarray):
            return view
        view = view.base


def freeze(a: Array) -> None:
    """Make ``a`` and every array it views read-only for good: a value aiotf owns and shares
    by every run (a Const's, a resource variable's), so values derived from it may be kept."""
    view = a
    while True:
        view.flags.writeable = False
        if not isinstance(view.base, np.ndarray):
            break
        view = view.base
    if view.base is not None and not isinstance(view.base, bytes):
        return  # memory of some other buffer (a bytearray, an mmap) may change under it
    key = id(view)
    known = _frozen_owners.get(key)
    if known is not None and known() is view:
        return  # frozen before: an interpreted schedule runs its Consts every step
    with _lock:
        _frozen_owners[key] = weakref.ref(view, lambda ref: _forget_owner(key, ref))


def _forget_owner(key: int, ref: weakref.ref[Array]) -> None:
    with _lock:
        if _frozen_owners.get(key) is ref:
            del _frozen_owners[key]


def frozen(a: Any) -> bool:
    """Whether ``a``'s memory can no longer change: read-only down to memory :func:`freeze`
    froze."""
    if not isinstance(a, np.ndarray):
        return False
    owner = _owner(a)
    ref = _frozen_owners.get(id(owner)) if owner is not None else None
    return ref is not None and ref() is owner


def _key(kind: Hashable, a: Array, owner: Array | None) -> Hashable:
    return (kind, id(owner), a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)


def kept(kind: Hashable, source: Array) -> Array | None:
    """The value of ``kind`` kept for ``source``'s memory and geometry, or None."""
    return derived(kind, source, None)


def _remember(kind: Hashable, source: Array, owner: Array, value: Array) -> None:
    """Note ``value`` under ``source``'s identity, until ``source`` is freed. The note holds
    neither ``source`` nor its owner, and ``value`` is kept while the owner lives anyway: no
    bytes to count."""
    key = id(source)
    with _lock:
        known = _by_array.get(key)
        if known is None or known[0]() is not source:
            ref = weakref.ref(source, lambda dead: _forget(key, dead))
            known = _by_array[key] = (ref, weakref.ref(owner), {})
        known[2][_geometry(kind, source)] = value


def _geometry(kind: Hashable, a: Array) -> Hashable:
    """``kind`` and ``a``'s geometry: an array's shape, strides and dtype can be set in place,
    the same object then viewing its memory another way."""
    return kind, a.shape, a.strides, a.dtype


def _forget(key: int, ref: weakref.ref[Array]) -> None:
    with _lock:
        known = _by_array.get(key)
        if known is not None and known[0] is ref:
            del _by_array[key]


def room(nbytes: int) -> bool:
    """Whether a derived value of ``nbytes`` more would be kept."""
    return _bytes + nbytes <= CACHE_BYTES


@overload
def derived(kind: Hashable, source: Array, make: Callable[[Array], Array]) -> Array: ...
@overload
def derived(kind: Hashable, source: Array, make: None) -> Array | None: ...


def derived(kind: Hashable, source: Array, make: Callable[[Array], Array] | None) -> Array | None:
    """``make(source)``, made once per frozen ``source`` (and ``kind``) while its memory lives;
    without ``make``, what is kept, or None (:func:`kept`).

    Found again by ``source``'s identity first, in this function itself: a kernel asks run
    after run (a bias's tile between two of mlp's products), and each Python call on the way
    costs about a microsecond in a step's cold caches."""
    known = _by_array.get(id(source))
    if known is not None and known[0]() is source:
        owner = known[1]()  # alive while source is; still frozen? (it could be made writable)
        value = known[2].get((kind, source.shape, source.strides, source.dtype))  # _geometry's
        if value is not None and owner is not None and not owner.flags.writeable:
            return value
    is_frozen = frozen(source)
    if is_frozen:
        owner = _owner(source)
        entry = _entries.get(_key(kind, source, owner))
        if entry is not None and entry[0]() is owner:
            assert owner is not None  # source is frozen
            _remember(kind, source, owner, entry[1])
            return entry[1]
    if make is None:
        return None
    value = make(source)
    if is_frozen and not np.may_share_memory(value, source):
        value.flags.writeable = False
        _keep(kind, source, value)
    return value


def _keep(kind: Hashable, source: Array, value: Array) -> None:
    global _bytes
    owner = _owner(source)
    assert owner is not None  # source is frozen
    key = _key(kind, source, owner)
    with _lock:
        if key in _entries or not room(value.nbytes):
            return  # another thread made it meanwhile, or no room
        _entries[key] = (weakref.ref(owner, lambda dead: _drop(key, dead)), value)
        _bytes += value.nbytes


def _drop(key: Hashable, ref: weakref.ref[Any]) -> None:
    global _bytes
    with _lock:
        entry = _entries.get(key)
        if entry is not None and entry[0] is ref:
            del _entries[key]
            _bytes -= entry[1].nbytes


def kept_bytes() -> int:
    """The bytes of derived values kept now."""
    return _bytes
