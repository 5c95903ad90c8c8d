"""Compiled flat schedules writing a kernel's result over its dying first input
(``register_kernel``'s ``forward``, ``flat_compiler._sole``): only an array the program alone
holds, of at least FORWARD_MIN elements, is written over; a fetched, fed, constant, viewed or
still-read value never is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices
from aiotf.devices.device import Device
from aiotf.framework.op_def_registry import ArgDef, OpDef
from aiotf.kernels.context import StepContext
from aiotf.kernels.registry import register_kernel
from aiotf.runtime import flat_compiler
from aiotf.runtime.rendezvous import Rendezvous
from tests.runtime.test_executor import TASK, Builder

F32 = aiotf.float32
N = flat_compiler.FORWARD_MIN  # elements: arrays big enough to be written over
_X = ArgDef("x", type=F32)
_Y = (ArgDef("y", type=F32),)
# Test-only ops (their OpDefs are not registered): FRESH makes a new array, VIEW a view of one,
# DOUBLE doubles its input and has a forward function that records the arrays it wrote over.
FRESH = OpDef("_FwdTestFresh", (_X,), _Y, {})
VIEW = OpDef("_FwdTestView", (_X,), _Y, {})
DOUBLE = OpDef("_FwdTestDouble", (_X,), _Y, {})
written_over: list[int] = []


@register_kernel(FRESH.name)
def _fresh(x: Any) -> Any:
    return np.array(x, np.float32) + 1


@register_kernel(VIEW.name)
def _view(x: Any) -> Any:
    return (np.array(x, np.float32) + 1)[::1]


def _double_forward(x: Any) -> Any:
    written_over.append(id(x))
    return np.multiply(x, 2, out=x)


@register_kernel(DOUBLE.name, forward=_double_forward)
def _double(x: Any) -> Any:
    return np.multiply(x, 2)


@pytest.fixture
def device() -> Iterator[Device]:
    mgr = DeviceMgr(add_devices(aiotf.ConfigProto(device_count={"CPU": 1}), TASK))
    yield mgr.client_device
    mgr.close()


@pytest.fixture(autouse=True)
def clear() -> Iterator[None]:
    written_over.clear()
    yield
    written_over.clear()


def chain(device: Device) -> Builder:
    """``const -> fresh -> double``, fetching the double."""
    b = Builder(device)
    b.const("x", np.arange(N, dtype=np.float32))
    b.add(FRESH, "fresh", [("x", 0)])
    b.add(DOUBLE, "double", [("fresh", 0)])
    b.retval("double")
    return b


async def test_the_last_reader_of_a_fresh_array_writes_over_it(device: Device) -> None:
    executor = chain(device).executor()
    assert executor._program is not None  # compiled
    expected = (np.arange(N, dtype=np.float32) + 1) * 2
    for _ in range(3):  # the same program, run again
        ctx = StepContext(1, Rendezvous(), [], [None], device)
        await executor.run(ctx)
        np.testing.assert_array_equal(ctx.retvals[0], expected)
        assert id(ctx.retvals[0]) == written_over[-1]  # the fresh array, doubled in place
    assert len(written_over) == 3


async def test_a_fetched_value_is_not_written_over(device: Device) -> None:
    b = chain(device)
    b.retval("fresh")
    double, fresh = await b.run()
    np.testing.assert_array_equal(fresh, np.arange(N, dtype=np.float32) + 1)
    np.testing.assert_array_equal(double, (np.arange(N, dtype=np.float32) + 1) * 2)
    assert written_over == []


async def test_a_value_read_again_later_is_not_written_over(device: Device) -> None:
    b = chain(device)
    b.add("AddV2", "sum", [("fresh", 0), ("double", 0)], T=F32)  # reads fresh after double
    b.retval("sum")
    double, total = await b.run()
    fresh = np.arange(N, dtype=np.float32) + 1
    np.testing.assert_array_equal(total, fresh * 3)  # 4x had double written over fresh
    np.testing.assert_array_equal(double, fresh * 2)
    assert written_over == []


async def test_a_feed_a_const_and_a_view_are_not_written_over(device: Device) -> None:
    fed = Builder(device)
    fed.add("_Arg", "x", T=F32, index=0)
    fed.add(DOUBLE, "double", [("x", 0)])
    fed.retval("double")
    feed = np.arange(N, dtype=np.float32)
    (double,) = await fed.run([feed])
    np.testing.assert_array_equal(feed, np.arange(N, dtype=np.float32))
    np.testing.assert_array_equal(double, feed * 2)

    const = Builder(device)
    const.const("x", np.arange(N, dtype=np.float32))
    const.add(DOUBLE, "double", [("x", 0)])
    const.retval("double")
    for _ in range(2):  # the Const's value is the same on every run
        (double,) = await const.run()
        np.testing.assert_array_equal(double, np.arange(N, dtype=np.float32) * 2)

    view = Builder(device)
    view.const("x", np.arange(N, dtype=np.float32))
    view.add(VIEW, "view", [("x", 0)])
    view.add(DOUBLE, "double", [("view", 0)])
    view.retval("double")
    (double,) = await view.run()
    np.testing.assert_array_equal(double, (np.arange(N, dtype=np.float32) + 1) * 2)
    assert written_over == []


async def test_a_small_array_is_not_written_over(device: Device) -> None:
    """Below FORWARD_MIN elements the check would cost what it saves."""
    b = Builder(device)
    b.const("x", np.arange(N - 1, dtype=np.float32))
    b.add(FRESH, "fresh", [("x", 0)])
    b.add(DOUBLE, "double", [("fresh", 0)])
    b.retval("double")
    (double,) = await b.run()
    np.testing.assert_array_equal(double, (np.arange(N - 1, dtype=np.float32) + 1) * 2)
    assert written_over == []


def test_sole_counts_the_generated_codes_reference_only() -> None:
    def program() -> tuple[bool, bool]:
        mine = np.zeros(3)
        alone = flat_compiler._sole(mine)
        other = mine  # noqa: F841 (a second reference)
        return alone, flat_compiler._sole(mine)

    assert program() == (True, False)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    assert not flat_compiler._sole(frozen)


async def test_bias_and_relu_of_an_mlp_layer_write_over_the_product() -> None:
    """The real forward functions, end to end: the values are the kernels', the layer's fetched
    product is left as it was, and a fed input too."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 64)).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)
    feed = rng.standard_normal((N // 64, 8)).astype(np.float32)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, 8])
        product = aiotf.matmul(x, aiotf.constant(w))
        out = aiotf.nn.relu(aiotf.nn.bias_add(product, aiotf.constant(bias)))
    expected_product = feed @ w
    fed = feed.copy()
    async with aiotf.Session(graph=g) as sess:
        for _ in range(2):
            (y,) = await sess.run([out], {x: feed})
            np.testing.assert_allclose(y, np.maximum(expected_product + bias, 0), rtol=1e-6)
        y, p = await sess.run([out, product], {x: feed})
    np.testing.assert_allclose(p, expected_product, rtol=1e-6)
    np.testing.assert_allclose(y, np.maximum(expected_product + bias, 0), rtol=1e-6)
    np.testing.assert_array_equal(feed, fed)
