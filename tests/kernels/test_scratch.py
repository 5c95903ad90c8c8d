"""Per-thread scratch memory: the same memory for a role, thread by thread, within a bound."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from aiotf.kernels import scratch as scratch_module
from aiotf.kernels.scratch import scratch


def test_a_role_gets_the_same_memory_again_on_its_thread_in_any_shape() -> None:
    a = scratch("test a", (4, 8))
    a[...] = 1.0
    again = scratch("test a", (8, 2), np.float64)
    assert np.shares_memory(a, again)
    assert again.shape == (8, 2) and again.dtype == np.float64 and again.flags.c_contiguous
    other = scratch("test b", (4, 8))
    assert not np.shares_memory(a, other)


def test_a_larger_shape_gets_larger_memory_and_keeps_it() -> None:
    small = scratch("test grow", (16,))
    big = scratch("test grow", (1024,))
    assert big.size == 1024 and not np.shares_memory(small, big)
    assert np.shares_memory(scratch("test grow", (16,)), big)


def test_each_thread_has_its_own_memory() -> None:
    mine = scratch("test thread", (64,))
    theirs: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: theirs.append(scratch("test thread", (64,))))
    worker.start()
    worker.join()
    assert not np.shares_memory(mine, theirs[0])


def test_past_the_bound_arrays_are_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch_module, "SCRATCH_BYTES", 0)
    first = scratch("test bound", (8,))
    assert not np.shares_memory(first, scratch("test bound", (8,)))
