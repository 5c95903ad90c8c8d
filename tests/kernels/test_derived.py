"""Values derived from frozen arrays: what counts as frozen, made once, found again through a
fresh view, dropped with the memory, bounded. (A Const's filter transformed once, and a user's
read-only feed transformed every run: ``test_winograd.py``.)"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from aiotf.kernels import derived


def frozen_copy(a: Any) -> Any:
    a = np.array(a)
    derived.freeze(a)
    return a


def test_frozen_means_made_read_only_by_aiotf_down_to_the_memory() -> None:
    mine = frozen_copy(np.ones(4))
    assert derived.frozen(mine) and derived.frozen(mine[1:])  # and any view of it
    in_bytes = np.frombuffer(b"\0" * 16, np.float32)[1:]
    derived.freeze(in_bytes)
    assert derived.frozen(in_bytes)
    # Read-only is not enough: its owner may make it writable again, or write through an
    # alias taken before (a user's read-only feed).
    users = np.ones(4)
    alias = users[...]
    users.flags.writeable = False
    assert not derived.frozen(users)
    alias[0] = 2.0
    assert not derived.frozen(np.ones(4))
    ref_value = np.ones(4)[1:]  # a ref variable's read-only view of its writable buffer
    ref_value.flags.writeable = False
    assert not derived.frozen(ref_value)
    in_bytearray = np.frombuffer(bytearray(16), np.float32)
    derived.freeze(in_bytearray)  # read-only now, but the bytearray's owner can still write
    assert not in_bytearray.flags.writeable and not derived.frozen(in_bytearray)
    assert not derived.frozen([1.0, 2.0])


def test_freeze_makes_every_array_viewed_read_only() -> None:
    base = np.ones((2, 3))
    view = base.reshape(3, 2)[1:]
    derived.freeze(view)
    assert not base.flags.writeable and not view.flags.writeable and derived.frozen(view)


def counting(calls: list[Any]) -> Any:
    def make(a: Any) -> Any:
        calls.append(a)
        return a * 2

    return make


def test_a_frozen_arrays_value_is_made_once_and_dropped_with_its_memory() -> None:
    calls: list[Any] = []
    gc.collect()  # other tests' constants go first
    before = derived.kept_bytes()
    source = frozen_copy(np.arange(1000.0))
    first = derived.derived("test", source, counting(calls))
    assert derived.derived("test", source, counting(calls)) is first
    assert derived.kept("test", source) is first
    assert len(calls) == 1 and not first.flags.writeable
    np.testing.assert_array_equal(first, np.arange(1000.0) * 2)
    # A fresh view of the same memory, as a Reshape of a Const makes on every run, finds it.
    assert derived.derived("test", source.reshape(10, 100).reshape(1000), counting(calls)) is first
    assert len(calls) == 1
    assert derived.derived("test", source[::2], counting(calls)) is not first  # other geometry
    assert derived.derived("other kind", source, counting(calls)) is not first
    assert derived.kept_bytes() == before + first.nbytes + first.nbytes // 2 + first.nbytes
    del source, calls[:]
    gc.collect()
    assert derived.kept_bytes() == before  # all three went with the memory


def test_a_value_not_frozen_is_made_on_every_call() -> None:
    calls: list[Any] = []
    source = np.arange(10.0)
    derived.derived("test", source, counting(calls))
    source[0] = 5.0  # a ref variable's buffer, written in place by Assign
    assert derived.derived("test", source, counting(calls))[0] == 10.0
    assert len(calls) == 2 and derived.kept("test", source) is None


def test_a_value_viewing_its_source_is_not_kept() -> None:
    gc.collect()
    before = derived.kept_bytes()
    source = frozen_copy(np.arange(10.0))
    assert derived.derived("test", source, lambda a: a[1:]) is not None
    assert derived.kept("test", source) is None and derived.kept_bytes() == before


def test_past_the_budget_values_are_made_on_every_call_and_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(derived, "CACHE_BYTES", derived.kept_bytes() + 100)
    calls: list[Any] = []
    source = frozen_copy(np.arange(100.0))  # 800 bytes doubled: no room
    assert not derived.room(800)
    derived.derived("test", source, counting(calls))
    derived.derived("test", source, counting(calls))
    assert len(calls) == 2


def test_found_by_identity_but_never_for_another_array_or_a_thawed_one() -> None:
    """Regression for the identity fast path: a value is remembered by the array it was found
    for, so a new array that happens to get a dead one's id finds nothing, and an owner made
    writable again stops finding it."""
    for _ in range(100):
        source = frozen_copy(np.arange(8.0))
        value = derived.derived("test", source, lambda a: a * 2)
        assert derived.kept("test", source) is value  # the slow path, then remembered
        assert derived.kept("test", source) is value  # by identity
        del source
        other = np.zeros(8)  # may reuse the dead array's id
        assert derived.kept("test", other) is None
        other.flags.writeable = False
        assert derived.kept("test", other) is None
    owner = frozen_copy(np.arange(8.0))
    view = owner[2:]
    value = derived.derived("test", view, lambda a: a * 2)
    assert derived.kept("test", view) is value and derived.kept("test", view) is value
    owner.flags.writeable = True  # its owner can: numpy allows it (aiotf's never does)
    assert derived.kept("test", view) is None


def test_an_array_reshaped_in_place_finds_nothing_by_its_identity() -> None:
    """Regression (found by review): ``a.shape = ...`` keeps the object, not its geometry."""
    source = frozen_copy(np.arange(12.0))
    flat = derived.derived("test", source, lambda a: a * 2)
    assert derived.kept("test", source) is flat  # remembered by identity
    view = source[...]
    view.shape = (3, 4)  # the same object from here on, another geometry
    assert derived.kept("test", view) is None
    grid = derived.derived("test", view, lambda a: a.T.copy())
    assert grid.shape == (4, 3) and derived.kept("test", view) is grid
    view.shape = (12,)
    assert derived.kept("test", view) is flat  # the flat geometry's, found through the memory
