"""Per-thread scratch memory: the same memory for a role, thread by thread, within a bound; and
objects kept per key and thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from aiotf.kernels import scratch as scratch_module
from aiotf.kernels.scratch import kept, scratch


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


class _Made:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def test_kept_makes_once_per_key_and_thread() -> None:
    made: list[_Made] = []

    def make() -> _Made:
        made.append(_Made(64))
        return made[-1]

    first = kept(("test kept", 1), make)
    assert kept(("test kept", 1), make) is first and len(made) == 1
    assert kept(("test kept", 2), make) is not first and len(made) == 2
    theirs: list[_Made] = []
    worker = threading.Thread(target=lambda: theirs.append(kept(("test kept", 1), make)))
    worker.start()
    worker.join()
    assert theirs[0] is not first and len(made) == 3


def test_kept_drops_the_longest_unused_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch_module, "KEPT_BYTES", 300)
    a = kept("test bound a", lambda: _Made(100))
    b = kept("test bound b", lambda: _Made(100))
    assert kept("test bound a", lambda: _Made(100)) is a  # a used again: b is the longest unused
    kept("test bound c", lambda: _Made(150))
    assert kept("test bound a", lambda: _Made(100)) is a
    assert kept("test bound b", lambda: _Made(100)) is not b


def test_one_past_the_bound_is_made_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch_module, "KEPT_BYTES", 100)
    big = kept("test too big", lambda: _Made(101))
    assert kept("test too big", lambda: _Made(101)) is not big
