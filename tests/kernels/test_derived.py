"""Values derived from frozen arrays: what counts as frozen, made once, dropped with the array,
bounded. (A Const's filter transformed once: ``test_winograd.py``.)"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from aiotf.kernels import derived


def read_only(a: Any) -> Any:
    a.flags.writeable = False
    return a


def test_frozen_means_read_only_down_to_the_memory() -> None:
    owned = read_only(np.ones(4))
    assert derived.frozen(owned)
    assert derived.frozen(read_only(owned[1:]))  # a view of a frozen array
    assert derived.frozen(np.frombuffer(b"\0" * 16, np.float32))  # bytes cannot change
    assert not derived.frozen(np.ones(4))
    assert not derived.frozen(read_only(np.ones(4)[1:]))  # its base is writable: a ref variable
    assert not derived.frozen(read_only(np.frombuffer(bytearray(16), np.float32)))
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


def test_a_frozen_arrays_value_is_made_once_and_dropped_with_the_array() -> None:
    calls: list[Any] = []
    before = derived.kept_bytes()
    source = read_only(np.arange(1000.0))
    first = derived.derived("test", source, counting(calls))
    again = derived.derived("test", source, counting(calls))
    assert again is first and len(calls) == 1 and not first.flags.writeable
    np.testing.assert_array_equal(first, np.arange(1000.0) * 2)
    assert derived.derived("other kind", source, counting(calls)) is not first
    assert derived.kept_bytes() == before + 2 * first.nbytes
    del source, calls[:]
    gc.collect()
    assert derived.kept_bytes() == before  # both entries went with their array


def test_a_writable_arrays_value_is_made_on_every_call() -> None:
    calls: list[Any] = []
    source = np.arange(10.0)
    derived.derived("test", source, counting(calls))
    source[0] = 5.0  # a ref variable's buffer, written in place by Assign
    assert derived.derived("test", source, counting(calls))[0] == 10.0
    assert len(calls) == 2


def test_past_the_budget_values_are_made_on_every_call_and_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(derived, "CACHE_BYTES", derived.kept_bytes() + 100)
    calls: list[Any] = []
    source = read_only(np.arange(100.0))  # 800 bytes doubled: no room
    assert not derived.room(800)
    derived.derived("test", source, counting(calls))
    derived.derived("test", source, counting(calls))
    assert len(calls) == 2
