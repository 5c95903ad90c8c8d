"""The Executor, run directly over small single-device partitions."""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices
from aiotf.devices.device import Device
from aiotf.framework import errors
from aiotf.framework.op_def_registry import ArgDef, AttrDef, OpDef, lookup
from aiotf.framework.op_defs.script_ops import PyFuncCallback, py_funcs
from aiotf.kernels import registry as kernel_registry
from aiotf.kernels.context import StepContext
from aiotf.kernels.registry import POOL_MIN_COST, KernelNode, OpKernel, register_kernel
from aiotf.runtime.executor import Executor
from aiotf.runtime.flat_compiler import compile_flat
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.rendezvous import Rendezvous
from aiotf.runtime.step_stats import StepStatsCollector

TASK = "/job:localhost/replica:0/task:0"
F32 = aiotf.float32
STALL_S = 30.0  # generous: only a hang reaches it

# Test-only op types: their OpDefs are not registered (nothing else can build them); their kernels
# are registered under names no real op uses.
_X = ArgDef("x", type=F32)
TWO_OUTPUTS = OpDef(
    "_ExecTestTwoOutputs", (_X,), (ArgDef("a", type=F32), ArgDef("b", type=F32)), {}
)
_KIND = {"kind": AttrDef("kind", "string")}
RAISE = OpDef("_ExecTestRaise", (_X,), (ArgDef("y", type=F32),), _KIND)
ASYNC_RAISE = OpDef("_ExecTestAsyncRaise", (_X,), (ArgDef("y", type=F32),), _KIND)
EXCEPTIONS: dict[bytes, Callable[[], BaseException]] = {
    b"ValueError": lambda: ValueError("bad value"),
    b"RuntimeError": lambda: RuntimeError("broken"),
    b"MemoryError": lambda: MemoryError("no room"),
    b"OutOfRangeError": lambda: errors.OutOfRangeError(None, None, "end of it"),
    b"CancelledError": asyncio.CancelledError,  # raised by the kernel, not by a cancelled step
}
PROBE = OpDef(
    "_ExecTestProbe", (_X,), (ArgDef("y", type=F32),), {"probe": AttrDef("probe", "func")}
)
ASYNC_IDENTITY = OpDef("_ExecTestAsyncIdentity", (_X,), (ArgDef("y", type=F32),), {})


@register_kernel(TWO_OUTPUTS.name)
def _two_outputs(x: Any) -> tuple[Any, Any]:
    return x + 1, x * 2


@register_kernel(RAISE.name)
def _raise(x: Any, *, kind: bytes) -> Any:
    raise EXCEPTIONS[kind]()


@register_kernel(ASYNC_RAISE.name)
async def _async_raise(x: Any, *, kind: bytes) -> Any:
    await asyncio.sleep(0)
    raise EXCEPTIONS[kind]()


@register_kernel(PROBE.name)
def _probe(x: Any, *, probe: Callable[[], None]) -> Any:
    probe()
    return x


@register_kernel(ASYNC_IDENTITY.name)
async def _async_identity(x: Any) -> Any:
    return x


@pytest.fixture
def device() -> Iterator[Device]:
    mgr = DeviceMgr(add_devices(aiotf.ConfigProto(device_count={"CPU": 1}), TASK))
    yield mgr.client_device
    mgr.close()


def make_factory(device: Device) -> Callable[[Node], OpKernel]:
    def create(node: Node) -> OpKernel:
        kernel_node = KernelNode(
            node.name, node.op, node.attrs, node.input_dtypes(), node.output_dtypes, device.name
        )
        return kernel_registry.create_kernel(kernel_node, device.device_type)

    return create


class Builder:
    """Nodes on one device; ``retval`` nodes write the step's results."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.graph = Graph()
        self.num_retvals = 0

    def add(
        self,
        op: str | OpDef,
        name: str,
        inputs: list[tuple[str, int]] | None = None,
        controls: list[str] | None = None,
        **attrs: Any,
    ) -> str:
        op_def = lookup(op) if isinstance(op, str) else op
        full = {**op_def.default_attrs(), **attrs}
        self.graph.add(Node(name, op_def, full, inputs, controls, assigned_device=self.device.name))
        return name

    def const(self, name: str, value: Any) -> str:
        arr = np.asarray(value)
        return self.add("Const", name, value=arr, dtype=aiotf.as_dtype(arr.dtype))

    def op(self, op: str, name: str, *srcs: str, **attrs: Any) -> str:
        return self.add(op, name, [(s, 0) for s in srcs], **attrs)

    def retval(self, src: str, index: int = 0, dtype: aiotf.DType = F32) -> None:
        self.add(
            "_Retval", f"_retval_{src}_{index}", [(src, index)], T=dtype, index=self.num_retvals
        )
        self.num_retvals += 1

    def executor(self) -> Executor:
        return Executor(self.graph, self.device, make_factory(self.device))

    async def run(self, args: list[Any] | None = None, traced: bool = False) -> list[Any]:
        """One step; ``traced`` runs it with a stats collector (always interpreted)."""
        retvals: list[Any] = [None] * self.num_retvals
        stats = StepStatsCollector() if traced else None
        ctx = StepContext(1, Rendezvous(), args or [], retvals, self.device, stats=stats)
        await self.executor().run(ctx)
        return retvals


async def test_diamond(device: Device) -> None:
    b = Builder(device)
    a = b.const("a", np.array([1.0, 2.0], np.float32))
    left = b.op("Neg", "left", a, T=F32)
    right = b.op("Mul", "right", a, a, T=F32)
    d = b.op("AddV2", "d", left, right, T=F32)
    b.retval(d)
    (result,) = await b.run()
    np.testing.assert_array_equal(result, np.array([0.0, 2.0], np.float32))
    assert b.executor().num_nodes == 5


async def test_args_and_several_retvals(device: Device) -> None:
    b = Builder(device)
    b.add("_Arg", "x", T=F32, index=0)
    b.add("_Arg", "y", T=F32, index=1)
    s = b.op("Sub", "s", "x", "y", T=F32)
    b.retval(s)
    b.retval("x")
    out = await b.run([np.float32(5.0), np.float32(3.0)])
    assert out == [np.float32(2.0), np.float32(5.0)]


async def test_multi_output_node(device: Device) -> None:
    b = Builder(device)
    x = b.const("x", np.array([3.0], np.float32))
    b.add(TWO_OUTPUTS, "two", [(x, 0)])
    b.add("Neg", "neg_b", [("two", 1)], T=F32)
    b.add("Mul", "sq_b", [("two", 1), ("two", 1)], T=F32)
    b.retval("two", 0)
    b.retval("neg_b")
    b.retval("sq_b")
    first, neg_second, sq_second = await b.run()
    np.testing.assert_array_equal(first, [4.0])
    np.testing.assert_array_equal(neg_second, [-6.0])
    np.testing.assert_array_equal(sq_second, [36.0])


async def test_control_edge_orders_nodes(device: Device) -> None:
    order: list[str] = []
    b = Builder(device)
    x = b.const("x", np.float32(1.0))
    b.add(PROBE, "second", [(x, 0)], ["first"], probe=lambda: order.append("second"))
    b.add(PROBE, "first", [(x, 0)], probe=lambda: order.append("first"))
    b.add("NoOp", "done", None, ["second"])
    await b.run()
    assert order == ["first", "second"]


async def test_inputs_are_freed(device: Device) -> None:
    """The allocator's books, kept by interpreted steps (a traced one here)."""
    allocator = device.allocator
    b = Builder(device)
    prev = b.const("x", np.zeros(1000, np.float32))  # 4000 bytes per tensor
    for i in range(4):
        prev = b.op("Neg", f"neg{i}", prev, T=F32)
    b.retval(prev)
    (result,) = await b.run(traced=True)
    assert result.nbytes == 4000
    assert allocator.bytes_in_use == 0
    # Each tensor dies as soon as its consumer has run: at most an input and an output are live.
    assert allocator.peak_bytes_in_use == 8000


async def test_unconsumed_outputs_are_not_leaked(device: Device) -> None:
    b = Builder(device)
    x = b.const("x", np.ones(10, np.float32))
    b.add(TWO_OUTPUTS, "two", [(x, 0)])  # output 1 has no consumer
    b.retval("two", 0)
    await b.run(traced=True)
    assert device.allocator.bytes_in_use == 0
    assert device.allocator.peak_bytes_in_use > 0


async def test_a_compiled_step_keeps_no_books(device: Device) -> None:
    """A flat partition of sync kernels runs compiled (``flat_compiler.py``), which leaves the
    allocator's books alone: only interpreted steps keep them."""
    b = Builder(device)
    x = b.const("x", np.ones(10, np.float32))
    b.op("Neg", "neg", x, T=F32)
    b.retval("neg")
    executor = b.executor()
    assert executor._program is not None
    ctx = StepContext(1, Rendezvous(), [], [None], device)
    await executor.run(ctx)
    np.testing.assert_array_equal(ctx.retvals[0], -np.ones(10, np.float32))
    assert device.allocator.stats.num_allocs == 0


class PoolSpy:
    def __init__(self, device: Device) -> None:
        self.calls = 0
        self._inner = device.run_in_pool

    async def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return await self._inner(fn, *args, **kwargs)


def matmul_graph(device: Device, a: np.ndarray, c: np.ndarray) -> Builder:
    b = Builder(device)
    b.const("a", a)
    b.const("c", c)
    b.op("MatMul", "mm", "a", "c", T=F32)
    b.retval("mm")
    return b


async def test_expensive_matmul_256(device: Device, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256), dtype=np.float32)
    c = rng.standard_normal((256, 256), dtype=np.float32)
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    b = matmul_graph(device, a, c)
    (result,) = await b.run()
    np.testing.assert_allclose(result, a @ c, rtol=1e-4, atol=1e-3)
    kernel = kernel_registry.find_kernel_def("MatMul", "CPU", {"T": F32})
    assert kernel is not None and kernel.expensive
    assert spy.calls == (1 if kernel.cost(a, c) >= POOL_MIN_COST else 0)
    assert device.allocator.bytes_in_use == 0


async def test_big_matmul_goes_through_the_pool(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1024, 1024), dtype=np.float32)
    c = rng.standard_normal((1024, 64), dtype=np.float32)
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    (result,) = await matmul_graph(device, a, c).run()
    np.testing.assert_allclose(result, a @ c, rtol=1e-3, atol=1e-2)
    assert spy.calls == 1


async def test_small_matmul_runs_inline(device: Device, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    a = np.eye(2, dtype=np.float32)
    (result,) = await matmul_graph(device, a, a * 3).run()
    np.testing.assert_array_equal(result, a * 3)
    assert spy.calls == 0


async def test_kernel_error_names_the_node(device: Device) -> None:
    b = Builder(device)
    b.const("a", np.ones((2, 3), np.float32))
    b.op("MatMul", "bad_mm", "a", "a", T=F32)
    b.retval("bad_mm")
    with pytest.raises(errors.InvalidArgumentError, match="Matrix size-incompatible") as info:
        await b.run()
    assert "{{node bad_mm}}" in info.value.message
    assert info.value.node_def.name == "bad_mm"
    assert info.value.node_def.op == "MatMul"


@pytest.mark.parametrize(
    ("kind", "cls", "text"),
    [
        (b"ValueError", errors.InvalidArgumentError, "bad value"),
        (b"RuntimeError", errors.InternalError, "broken"),
        (b"MemoryError", errors.ResourceExhaustedError, "no room"),
        (b"OutOfRangeError", errors.OutOfRangeError, "end of it"),
    ],
)
@pytest.mark.parametrize("op", [RAISE, ASYNC_RAISE], ids=["sync", "async"])
async def test_errors_become_op_errors(
    device: Device, op: OpDef, kind: bytes, cls: type[errors.OpError], text: str
) -> None:
    b = Builder(device)
    x = b.const("x", np.float32(1.0))
    b.add(op, "boom", [(x, 0)], kind=kind)
    b.retval("boom")
    with pytest.raises(cls) as info:
        await b.run()
    assert type(info.value) is cls
    assert text in info.value.message
    assert "{{node boom}}" in info.value.message
    assert info.value.node_def.name == "boom"
    assert info.value.node_def.op == op.name


async def test_a_kernel_raising_cancelled_error_itself_fails_its_node(device: Device) -> None:
    """An async kernel whose own await was cancelled (not the step) is a failure of its node,
    not a task that never reports: the step ends instead of waiting forever."""
    b = Builder(device)
    x = b.const("x", np.float32(1.0))
    b.add(ASYNC_RAISE, "inner", [(x, 0)], kind=b"CancelledError")
    b.retval("inner")
    with pytest.raises(errors.CancelledError) as info:
        await asyncio.wait_for(b.run(), 10)
    assert "{{node inner}}" in info.value.message
    assert info.value.node_def.name == "inner"


async def test_error_aborts_rendezvous_and_cancels_pending_recv(device: Device) -> None:
    """A Recv whose Send never comes is woken by the step's error instead of hanging."""
    b = Builder(device)
    common = {
        "tensor_name": b"edge_1_never",
        "send_device": device.name.encode(),
        "send_device_incarnation": device.incarnation,
        "recv_device": device.name.encode(),
        "client_terminated": False,
    }
    b.add("_Recv", "recv", tensor_type=F32, **common)
    b.retval("recv")
    x = b.const("x", np.float32(1.0))
    b.add(RAISE, "boom", [(x, 0)], kind=b"ValueError")
    rendezvous = Rendezvous()
    ctx = StepContext(7, rendezvous, [], [None], device)
    with pytest.raises(errors.InvalidArgumentError, match="bad value"):
        await asyncio.wait_for(b.executor().run(ctx), 10)
    assert rendezvous.pending_keys == []
    with pytest.raises(errors.InvalidArgumentError, match="bad value"):
        await rendezvous.recv("any")


async def test_send_and_recv_within_one_step(device: Device) -> None:
    b = Builder(device)
    common = {
        "tensor_name": b"edge_1_x",
        "send_device": device.name.encode(),
        "send_device_incarnation": device.incarnation,
        "recv_device": device.name.encode(),
        "client_terminated": False,
    }
    x = b.const("x", np.array([1.0, 2.0], np.float32))
    b.add("_Send", "send", [(x, 0)], T=F32, **common)
    b.add("_Recv", "recv", tensor_type=F32, **common)
    b.op("Neg", "neg", "recv", T=F32)
    b.retval("neg")
    (result,) = await b.run()
    np.testing.assert_array_equal(result, [-1.0, -2.0])


async def test_executor_is_reusable_and_steps_are_independent(device: Device) -> None:
    b = Builder(device)
    b.add("_Arg", "x", T=F32, index=0)
    b.op("Neg", "n", "x", T=F32)
    b.retval("n")
    executor = b.executor()

    async def step(value: float) -> Any:
        retvals: list[Any] = [None]
        await executor.run(StepContext(1, Rendezvous(), [np.float32(value)], retvals, device))
        return retvals[0]

    assert await asyncio.gather(step(1.0), step(2.0), step(3.0)) == [-1.0, -2.0, -3.0]


@pytest.mark.parametrize("with_async_node", [False, True])
async def test_long_inline_chain_yields_to_the_event_loop(
    device: Device, with_async_node: bool
) -> None:
    other_task_ran = asyncio.Event()
    seen_at: list[int] = []
    tasks: list[asyncio.Task[None]] = []

    async def other() -> None:
        other_task_ran.set()

    def probe_for(i: int) -> Callable[[], None]:
        def probe() -> None:
            if i == 0:  # scheduled from inside the chain: runs only if the executor yields
                tasks.append(asyncio.get_running_loop().create_task(other()))
            elif other_task_ran.is_set() and not seen_at:
                seen_at.append(i)
            sum(
                [k * k for k in range(1000)]
            )  # a little real work per node: the chain takes a while

        return probe

    b = Builder(device)
    prev = b.const("x", np.float32(0.0))
    if with_async_node:  # the task-based scheduling loop rather than the all-inline one
        prev = b.add(ASYNC_IDENTITY, "async_start", [(prev, 0)])
    n = 2000
    for i in range(n):
        prev = b.add(PROBE, f"p{i}", [(prev, 0)], probe=probe_for(i))
    b.retval(prev)
    retvals: list[Any] = [None]
    await b.executor().run(StepContext(1, Rendezvous(), [], retvals, device))
    await tasks[0]
    assert seen_at, "the executor never yielded to the event loop during a long inline chain"
    assert seen_at[0] < n - 1


# -- the compiled flat schedule (flat_compiler.py) ------------------------------------------------

SIZED = OpDef("_ExecTestSized", (_X,), (ArgDef("y", type=F32),), {"pool": AttrDef("pool", "bool")})
SIZED_CALLS: list[tuple[str, str]] = []


@register_kernel(SIZED.name, cost=lambda x: float(POOL_MIN_COST * (x.size - 1)))
def _sized(x: Any, *, pool: bool) -> Any:
    """An expensive kernel: cheap (inline) on one element, pool-sized on more."""
    SIZED_CALLS.append((threading.current_thread().name, "pool" if pool else "inline"))
    return x + 1


def _py_func(b: Builder, name: str, fn: Callable[..., Any], inputs: list[str]) -> str:
    callback = PyFuncCallback(fn)  # the registry holds it weakly: the builder keeps it
    vars(b).setdefault("callbacks", []).append(callback)
    token = py_funcs.insert(callback)
    return b.add(
        "PyFunc", name, [(i, 0) for i in inputs], token=token.encode(), Tin=[F32], Tout=[F32]
    )


def _handover_graph(device: Device, negations: int = 0) -> Builder:
    """x (negated ``negations`` times first) -> an inline probe -> a pool kernel -> Neg; beside
    it a small expensive kernel that stays inline, and a py_func: groups {big, small, pf},
    {after}, where after needs only big and pf may wait for anything."""
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    for i in range(negations):
        x = b.op("Neg", f"neg{i}", x, T=F32)
    b.add(PROBE, "before", [(x, 0)], probe=lambda: None)
    b.add(SIZED, "big", [("before", 0)], pool=True)
    b.op("Neg", "after", "big", T=F32)
    b.add(SIZED, "small", [("const", 0)], pool=False)
    b.const("const", np.float32(1.0))
    _py_func(b, "pf", lambda v: v * 3, ["const"])
    b.retval("after")
    b.retval("small")
    b.retval("pf")
    return b


async def test_a_step_needing_the_pool_is_handed_over_and_the_program_demoted(
    device: Device,
) -> None:
    b = _handover_graph(device)
    executor = b.executor()
    assert executor._program is not None and not executor._program.grouped  # big, small apart
    SIZED_CALLS.clear()
    for _ in range(2):  # handed over mid-step, then interpreted from the start
        retvals: list[Any] = [None, None, None]
        x = np.ones(4, np.float32)
        await executor.run(StepContext(1, Rendezvous(), [x], retvals, device))
        np.testing.assert_array_equal(retvals[0], -(x + 1))
        assert retvals[1] == np.float32(2.0) and retvals[2] == np.float32(3.0)
        assert executor._program is None
    # each kernel ran once per step: the big one in a pool thread, the small one inline
    on_loop = threading.current_thread().name
    assert sorted(kind for _, kind in SIZED_CALLS) == ["inline", "inline", "pool", "pool"]
    assert all((thread == on_loop) == (kind == "inline") for thread, kind in SIZED_CALLS)


async def test_a_compiled_step_drops_each_value_after_its_last_use(device: Device) -> None:
    """A value lives until its last consumer has run, as on the interpreted schedule."""
    live: list[weakref.ref[Any]] = []
    alive_when: list[int] = []

    def record() -> None:
        alive_when.append(sum(r() is not None for r in live))

    b = Builder(device)
    prev = b.const("x", np.zeros(1000, np.float32))
    for i in range(6):
        prev = b.op("Neg", f"neg{i}", prev, T=F32)
        prev = b.add(PROBE, f"probe{i}", [(prev, 0)], probe=record)
    b.retval(prev)
    executor = b.executor()

    def watched(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            out = fn(*args)
            live.append(weakref.ref(out))
            return out

        return call

    for item in executor._items:
        if item.node.op == "Neg":
            item.compute = watched(item.compute)
    executor._program = compile_flat(executor._items, executor._roots)  # with the spies
    ctx = StepContext(1, Rendezvous(), [], [None], device)
    await executor.run(ctx)
    # a probe sees its own input alive (the Neg before it), never the ones before that
    assert alive_when == [1] * 6


async def test_a_compiled_error_names_its_node_and_the_next_step_works(device: Device) -> None:
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    b.op("Neg", "fine", x, T=F32)
    b.add(RAISE, "boom", [("fine", 0)], kind=b"ValueError")
    b.retval("boom")
    executor = b.executor()
    assert executor._program is not None
    with pytest.raises(errors.InvalidArgumentError) as info:
        await executor.run(StepContext(1, Rendezvous(), [np.float32(1)], [None], device))
    assert info.value.node_def.name == "boom"
    assert executor._program is not None  # an error does not demote


async def test_a_compiled_cost_verdict_follows_small_integer_values(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flat program keeps a pool kernel's verdict under its inputs' shapes and small integer
    values: a Tile with new multiples (same shapes) is estimated again."""
    b = Builder(device)
    x = b.const("x", np.zeros((8, 8), np.float32))
    m = b.add("_Arg", "m", T=aiotf.int32, index=0)
    b.add("Tile", "tile", [(x, 0), (m, 0)], T=F32, Tmultiples=aiotf.int32)
    b.retval("tile")
    executor = b.executor()
    assert executor._program is not None
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    for multiples, calls in (([1, 1], 0), ([2, 2], 0), ([400, 400], 1)):
        retvals: list[Any] = [None]
        ctx = StepContext(1, Rendezvous(), [np.array(multiples, np.int32)], retvals, device)
        await executor.run(ctx)
        assert retvals[0].shape == (8 * multiples[0], 8 * multiples[1])
        assert spy.calls == calls


GATE = OpDef("_ExecTestGate", (_X,), (ArgDef("y", type=F32),), _KIND)
GATES: dict[bytes, Callable[[], None]] = {}  # by the gate's kind: what it does (block, raise)


@register_kernel(GATE.name, cost=lambda x: float(POOL_MIN_COST))
def _gate(x: Any, *, kind: bytes) -> Any:
    """A pool kernel that calls ``GATES[kind]`` (which may block, or raise), then passes on x."""
    SIZED_CALLS.append((threading.current_thread().name, "gate"))
    GATES[kind]()
    return x


def _chain(device: Device, gate: Callable[[], None]) -> Builder:
    """x -> big1 -> Neg -> gate -> big2: every pool kernel depends on the one before it."""
    GATES[b"this"] = gate
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    b.add(SIZED, "big1", [(x, 0)], pool=True)
    b.op("Neg", "neg", "big1", T=F32)
    b.add(GATE, "gate", [("neg", 0)], kind=b"this")
    b.add(SIZED, "big2", [("gate", 0)], pool=True)
    b.retval("big2")
    return b


async def test_a_chained_step_finishes_in_one_pool_thread(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When its pool kernels form a chain, a compiled step moves into the pool at the first of
    them and finishes there: one thread hop, and the program is kept for the next step."""
    executor = _chain(device, lambda: None).executor()
    assert executor._program is not None and executor._program.grouped
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    for step in range(2):
        SIZED_CALLS.clear()
        retvals: list[Any] = [None]
        x = np.ones(4, np.float32)
        await executor.run(StepContext(1, Rendezvous(), [x], retvals, device))
        np.testing.assert_array_equal(retvals[0], -(x + 1) + 1)
        threads = {thread for thread, _ in SIZED_CALLS}
        assert len(SIZED_CALLS) == 3 and len(threads) == 1
        assert threads != {threading.current_thread().name}
        assert spy.calls == step + 1
        assert executor._program is not None  # not demoted


async def test_a_chained_step_names_its_failing_pool_kernel(device: Device) -> None:
    def fail() -> None:
        raise ValueError("gate shut")

    executor = _chain(device, fail).executor()
    x = np.ones(4, np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="gate shut") as info:
        await executor.run(StepContext(1, Rendezvous(), [x], [None], device))
    assert info.value.node_def.name == "gate"


async def test_cancelling_a_chained_step_stops_it_between_kernels(device: Device) -> None:
    entered, release = threading.Event(), threading.Event()

    def wait() -> None:
        entered.set()
        release.wait(STALL_S)

    executor = _chain(device, wait).executor()
    SIZED_CALLS.clear()
    ctx = StepContext(1, Rendezvous(), [np.ones(4, np.float32)], [None], device)
    step = asyncio.ensure_future(executor.run(ctx))
    await asyncio.to_thread(entered.wait, STALL_S)  # the gate is running in the pool
    step.cancel()
    await asyncio.sleep(0)  # the cancellation reaches the step, which waits for its thread
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await step
    assert [kind for _, kind in SIZED_CALLS] == ["pool", "gate"]  # big2 never ran
    assert ctx.retvals == [None]


@pytest.mark.parametrize("fail", [False, True])
async def test_a_program_compiled_in_parts_passes_values_across_them(
    device: Device, fail: bool
) -> None:
    """A long partition is compiled in parts (``PART_NODES``): a value made in the first part
    and read in the last one crosses every part; an error in a later part names its node."""
    from aiotf.runtime.flat_compiler import PART_NODES

    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    prev = x
    for i in range(3 * PART_NODES):
        prev = b.op("Neg", f"neg{i}", prev, T=F32)
    b.op("AddV2", "sum", prev, x, T=F32)  # x was made in part 0
    if fail:
        b.add(RAISE, "late", [("sum", 0)], kind=b"ValueError")
        b.retval("late")
    else:
        b.retval("sum")
    executor = b.executor()
    assert executor._program is not None and executor._program.source.count("def part_") >= 3
    ctx = StepContext(1, Rendezvous(), [np.float32(2.0)], [None], device)
    if fail:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await executor.run(ctx)
        assert info.value.node_def.name == "late"
    else:
        await executor.run(ctx)
        assert ctx.retvals[0] == np.float32(4.0)  # an even number of negations, plus x


async def test_a_fast_call_that_fails_gives_the_kernel_s_own_error(device: Device) -> None:
    """Compiled programs call an elementwise kernel's ``fast`` ufunc; when it raises, the kernel
    runs to raise TensorFlow's words ("Incompatible shapes"), not numpy's."""
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    y = b.add("_Arg", "y", T=F32, index=1)
    b.add("AddV2", "add", [(x, 0), (y, 0)], T=F32)
    b.retval("add")
    executor = b.executor()
    assert executor._program is not None and "f2(" in executor._program.source
    ok = StepContext(
        1, Rendezvous(), [np.ones(2, np.float32), np.ones(2, np.float32)], [None], device
    )
    await executor.run(ok)
    np.testing.assert_array_equal(ok.retvals[0], [2.0, 2.0])
    bad = StepContext(
        1, Rendezvous(), [np.ones(2, np.float32), np.ones(3, np.float32)], [None], device
    )
    with pytest.raises(errors.InvalidArgumentError, match=r"^Incompatible shapes: \[2\] vs. \[3\]"):
        await executor.run(bad)


def test_a_built_executor_s_edges_drop_out_of_the_garbage_collector_s_sight(
    device: Device,
) -> None:
    """An executor's edges never change once built; as tuples of ints the collector stops
    walking them, so a full collection in a process holding a big graph walks less."""
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    n = b.add("Neg", "n", [(x, 0)], T=F32)
    b.add("AddV2", "a", [(x, 0), (x, 0)], [n], T=F32)
    b.retval("a")
    executor = b.executor()
    gc.collect()
    gc.collect()  # a tuple of tuples goes once its inner tuples have gone
    for item in executor._items:
        for edges in (item.successors, item.out_edges, item.data_edges, item.control_plan):
            assert isinstance(edges, tuple) and not gc.is_tracked(edges), (item.node.name, edges)
    assert executor._items[0].successors  # x feeds n and a: there was something to drop


async def test_a_matmul_s_fast_call_that_fails_gives_the_kernel_s_own_error(
    device: Device,
) -> None:
    """MatMul's fast function (made for its node's attrs) runs small products in compiled
    programs; given a vector, the kernel runs and raises TensorFlow's words."""
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    y = b.add("_Arg", "y", T=F32, index=1)
    b.add("MatMul", "mm", [(x, 0), (y, 0)], T=F32, transpose_a=False, transpose_b=True)
    b.retval("mm")
    executor = b.executor()
    assert executor._program is not None and "f2(" in executor._program.source
    a, w = np.ones((2, 3), np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)
    ok = StepContext(1, Rendezvous(), [a, w], [None], device)
    await executor.run(ok)
    np.testing.assert_array_equal(ok.retvals[0], a @ w.T)
    bad = StepContext(1, Rendezvous(), [np.ones(3, np.float32), w], [None], device)
    with pytest.raises(errors.InvalidArgumentError, match=r"^In\[0\] and In\[1\] has different"):
        await executor.run(bad)


async def test_a_chained_kernel_that_raises_cancelled_error_itself_fails_its_node(
    device: Device,
) -> None:
    def cancelled() -> None:
        raise asyncio.CancelledError  # an inner wait of the kernel's, not the step's

    executor = _chain(device, cancelled).executor()
    ctx = StepContext(1, Rendezvous(), [np.ones(4, np.float32)], [None], device)
    with pytest.raises(errors.CancelledError) as info:
        await executor.run(ctx)
    assert info.value.node_def.name == "gate"


async def test_a_chained_step_drops_a_pool_kernel_s_output_after_its_last_reader(
    device: Device,
) -> None:
    """big1's output is read by Neg only: by the time the gate runs it must be gone, not held
    by the program or the thread that runs it."""
    seen: list[bool] = []
    watched: list[weakref.ref[Any]] = []

    def check() -> None:
        seen.append(watched[0]() is not None)

    executor = _chain(device, check).executor()
    for item in executor._items:
        if item.node.name == "big1":
            compute = item.compute

            def spy(x: Any, compute: Callable[..., Any] = compute, **kw: Any) -> Any:
                out = compute(x, **kw)
                watched.append(weakref.ref(out))
                return out

            item.compute = spy
    executor._program = compile_flat(executor._items, executor._roots)
    ctx = StepContext(1, Rendezvous(), [np.ones(4, np.float32)], [None], device)
    await executor.run(ctx)
    assert seen == [False]


# -- pool kernels side by side in a grouped program ----------------------------------------------


def _wide(device: Device, width: int, gate: Callable[[], None]) -> Builder:
    """x -> ``width`` independent gates (pool kernels) -> AddN of them all -> Neg."""
    GATES[b"wide"] = gate
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    for k in range(width):
        b.add(GATE, f"g{k}", [(x, 0)], kind=b"wide")
    b.add("AddN", "sum", [(f"g{k}", 0) for k in range(width)], T=F32, N=width)
    b.op("Neg", "neg", "sum", T=F32)
    b.retval("neg")
    return b


async def test_independent_pool_kernels_run_side_by_side_in_one_hop(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixteen MatMuls then their AddN (wide16): the kernels of a group run on both pool threads
    at once, the rest of the step in the thread that took the first hop, one hop a step."""
    pair = threading.Barrier(2, timeout=STALL_S)  # passes only two gates running at once
    executor = _wide(device, 4, pair.wait).executor()
    assert executor._program is not None and executor._program.grouped
    assert "yield grp" in executor._program.source
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    for step in range(2):
        SIZED_CALLS.clear()
        retvals: list[Any] = [None]
        x = np.arange(4, dtype=np.float32)
        await executor.run(StepContext(1, Rendezvous(), [x], retvals, device))
        np.testing.assert_array_equal(retvals[0], -4 * x)
        assert len(SIZED_CALLS) == 4 and len({thread for thread, _ in SIZED_CALLS}) == 2
        assert spy.calls == step + 1 and executor._program is not None


async def test_a_failing_kernel_of_a_group_is_named_and_the_next_step_works(
    device: Device,
) -> None:
    calls = itertools.count()
    fail = [True]

    def gate() -> None:
        if fail[0] and next(calls) == 2:  # the third gate to run, in whichever thread
            raise ValueError("one gate shut")

    executor = _wide(device, 6, gate).executor()
    ctx = StepContext(1, Rendezvous(), [np.ones(2, np.float32)], [None], device)
    with pytest.raises(errors.InvalidArgumentError, match="one gate shut") as info:
        await executor.run(ctx)
    assert info.value.node_def.name in {f"g{k}" for k in range(6)}
    fail[0] = False
    ctx = StepContext(1, Rendezvous(), [np.ones(2, np.float32)], [None], device)
    await executor.run(ctx)
    np.testing.assert_array_equal(ctx.retvals[0], [-6.0, -6.0])


async def test_a_group_s_members_are_gathered_around_the_nodes_between_them(
    device: Device,
) -> None:
    """x -> a, y -> q -> b, a -> pa, AddV2(pa, b): the flat order is x y a q pa b. a and b form
    a group; q (needs neither) runs before it and pa (reads a) after it."""
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    y = b.add("_Arg", "y", T=F32, index=1)
    b.add(SIZED, "a", [(x, 0)], pool=True)
    b.add(PROBE, "q", [(y, 0)], probe=lambda: None)
    b.add(PROBE, "pa", [("a", 0)], probe=lambda: None)
    b.add(SIZED, "b", [("q", 0)], pool=True)
    b.op("AddV2", "join", "pa", "b", T=F32)
    b.retval("join")
    executor = b.executor()
    program = executor._program
    assert program is not None and program.grouped
    names = [executor._items[i].node.name for i in program.order]
    assert names.index("q") < names.index("a") < names.index("b") < names.index("pa")
    assert names.index("b") == names.index("a") + 1
    for size in (1, 4):  # all inline (one element: cheap), then both in the pool
        xs, ys = np.full(size, 1, np.float32), np.full(size, 10, np.float32)
        ctx = StepContext(1, Rendezvous(), [xs, ys], [None], device)
        await executor.run(ctx)
        np.testing.assert_array_equal(ctx.retvals[0], xs + ys + 2)


async def test_groups_that_hold_a_kernel_back_still_run_as_groups(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x -> a -> c -> d beside x -> b and y -> e, b + e: c could start while b runs, but the
    groups {a, b, e}, {c, b + e}, {d} still beat a task and a hop per pool kernel (see
    _pool_groups; AddV2 is a pool kernel too, inline while its inputs are small).
    Every node still runs after its inputs (the probes between the groups see them made) and
    the step takes one hop."""
    made: list[str] = []

    def noting(name: str) -> Callable[[], None]:
        return lambda: made.append(name)

    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    y = b.add("_Arg", "y", T=F32, index=1)
    b.add(SIZED, "a", [(x, 0)], pool=True)
    b.add(SIZED, "b", [(x, 0)], pool=True)
    b.add(PROBE, "pa", [("a", 0)], probe=noting("pa"))
    b.add(SIZED, "c", [("pa", 0)], pool=True)
    b.add(PROBE, "pc", [("c", 0)], probe=noting("pc"))
    b.add(SIZED, "d", [("pc", 0)], pool=True)
    b.add(PROBE, "py", [(y, 0)], probe=noting("py"))
    b.add(SIZED, "e", [("py", 0)], pool=True)
    b.op("AddV2", "be", "b", "e", T=F32)
    b.retval("be")
    b.retval("d")
    executor = b.executor()
    program = executor._program
    assert program is not None and program.grouped
    names = [executor._items[i].node.name for i in program.order]
    assert names.index("py") < min(names.index(k) for k in "abe")  # before the group reading it
    assert sorted(names[names.index("a") : names.index("a") + 3]) == ["a", "b", "e"]
    assert names.index("e") < names.index("pa") < names.index("c") < names.index("pc")
    assert sorted(names[names.index("c") : names.index("c") + 2]) == ["be", "c"]
    assert names.index("pc") < names.index("d")
    spy = PoolSpy(device)
    monkeypatch.setattr(device, "run_in_pool", spy)
    for step in range(2):
        made.clear()
        xs, ys = np.arange(4, dtype=np.float32), np.full(4, 10, np.float32)
        retvals: list[Any] = [None, None]
        await executor.run(StepContext(1, Rendezvous(), [xs, ys], retvals, device))
        np.testing.assert_array_equal(retvals[0], xs + ys + 2)
        np.testing.assert_array_equal(retvals[1], xs + 3)
        assert made == ["py", "pa", "pc"]
        assert spy.calls == step + 1 and executor._program is not None


async def test_a_py_func_that_would_be_held_back_hands_the_step_over(device: Device) -> None:
    """x -> big -> setter beside x -> waiter, both py_funcs: as groups {big, waiter}, {setter}
    the waiter would wait for ever for the setter. A py_func may wait for any kernel of its
    step, so such a step is handed to the interpreted schedule, which starts the setter as soon
    as big is done."""
    ready = threading.Event()

    def waiter(v: Any) -> Any:
        if not ready.wait(STALL_S):
            raise RuntimeError("the setter never ran")
        return v

    def setter(v: Any) -> Any:
        ready.set()
        return v

    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    b.add(SIZED, "big", [(x, 0)], pool=True)
    _py_func(b, "setter", setter, ["big"])
    _py_func(b, "waiter", waiter, [x])
    b.retval("setter")
    b.retval("waiter")
    executor = b.executor()
    assert executor._program is not None and not executor._program.grouped
    retvals: list[Any] = [None, None]
    xs = np.ones(4, np.float32)
    await asyncio.wait_for(
        executor.run(StepContext(1, Rendezvous(), [xs], retvals, device)), STALL_S
    )
    np.testing.assert_array_equal(retvals[0], xs + 1)
    np.testing.assert_array_equal(retvals[1], xs)


async def test_a_group_s_inputs_are_dropped_after_their_last_reader(device: Device) -> None:
    """big's output is read only by the group {g0, g1}: by the time the AddN after them runs it
    must be gone, held neither by the program, nor by the thread that ran the group, nor by a
    helper job still queued."""
    watched: list[weakref.ref[Any]] = []
    seen: list[bool] = []
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    b.add(SIZED, "big", [(x, 0)], pool=True)
    b.add(SIZED, "g0", [("big", 0)], pool=True)
    b.add(SIZED, "g1", [("big", 0)], pool=True)
    b.add("AddN", "sum", [("g0", 0), ("g1", 0)], T=F32, N=2)
    b.retval("sum")
    executor = b.executor()
    for item in executor._items:
        compute = item.compute
        if item.node.name == "big":

            def spy(x: Any, compute: Callable[..., Any] = compute, **kw: Any) -> Any:
                out = compute(x, **kw)
                watched.append(weakref.ref(out))
                return out

            item.compute = spy
        elif item.node.name == "sum":

            def check(*xs: Any, compute: Callable[..., Any] = compute) -> Any:
                seen.append(watched[0]() is not None)
                return compute(*xs)

            item.compute = check
    executor._program = compile_flat(executor._items, executor._roots)
    assert executor._program is not None and "yield grp" in executor._program.source
    ctx = StepContext(1, Rendezvous(), [np.ones(4, np.float32)], [None], device)
    await executor.run(ctx)
    np.testing.assert_array_equal(ctx.retvals[0], [6.0] * 4)
    assert seen == [False]


async def test_a_group_s_kernels_meet_when_the_other_pool_thread_was_busy(device: Device) -> None:
    """Regression (found by review): with the pool's other thread busy when a group starts, its
    kernels ran one after another in the step's thread, and g0, waiting for g1, waited for ever.
    A helper is queued for every pool thread, busy or not: the busy one takes g1 once free."""
    met, blocking, release = threading.Event(), threading.Event(), threading.Event()

    def wait_for_g1() -> None:
        if not met.wait(STALL_S):
            raise RuntimeError("g1 never ran beside g0")

    GATES[b"wait"], GATES[b"meet"] = wait_for_g1, met.set
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    b.add(GATE, "g0", [(x, 0)], kind=b"wait")
    b.add(GATE, "g1", [(x, 0)], kind=b"meet")
    b.add("AddN", "sum", [("g0", 0), ("g1", 0)], T=F32, N=2)
    b.retval("sum")
    executor = b.executor()
    assert executor._program is not None and "yield grp" in executor._program.source

    def blocker() -> None:  # holds the pool's other thread as the step starts
        blocking.set()
        release.wait(STALL_S)

    busy = asyncio.ensure_future(device.run_in_pool(blocker))
    await asyncio.to_thread(blocking.wait, STALL_S)
    ctx = StepContext(1, Rendezvous(), [np.ones(2, np.float32)], [None], device)
    step = asyncio.ensure_future(executor.run(ctx))
    await asyncio.sleep(0.05)
    release.set()  # the other thread is free: its queued helper takes g1
    await asyncio.wait_for(step, STALL_S)
    await busy
    np.testing.assert_array_equal(ctx.retvals[0], [2.0, 2.0])


def pauses(executor: Executor, ctx: StepContext, deadline: float) -> int:
    """Drive ``executor``'s compiled program through a step, sending ``deadline`` each time it
    yields None (as the executor on the loop does): how many times it did."""
    assert executor._program is not None
    gen = executor._program.run(ctx, deadline)
    count = 0
    with pytest.raises(StopIteration):
        request = next(gen)
        while True:
            assert request is None
            count += 1
            request = gen.send(deadline)
    return count


async def test_a_program_in_lockstep_pauses_after_each_costly_pool_kernel(device: Device) -> None:
    """A step in lockstep (``loop_turns``; a negative deadline) yields after each product, not
    after an elementwise kernel, not at its end, and not otherwise before its time slice ends;
    the step's answer is the same."""
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    w = b.const("w", np.eye(4, dtype=np.float32))
    h = x
    for i in range(3):  # a product, then an elementwise kernel: three times
        h = b.op("AddV2", f"add{i}", b.op("MatMul", f"mm{i}", h, w, T=F32), h, T=F32)
    b.retval(h)
    ctx = StepContext(1, Rendezvous(), [np.ones((2, 4), np.float32)], [None], device)
    assert pauses(b.executor(), ctx, -(time.perf_counter() + 60.0)) == 3
    np.testing.assert_array_equal(ctx.retvals[0], np.full((2, 4), 8.0, np.float32))


async def test_a_chain_in_lockstep_pauses_only_when_its_time_is_up(device: Device) -> None:
    """Elementwise kernels alone: a step in lockstep never pauses before its time slice ends,
    and past it pauses as any step does."""
    b = Builder(device)
    h = b.add("_Arg", "x", T=F32, index=0)
    for i in range(40):
        h = b.op("AddV2", f"add{i}", h, h, T=F32)
    b.retval(h)
    executor = b.executor()
    args = [np.ones(4, np.float32)]
    ctx = StepContext(1, Rendezvous(), args, [None], device)
    assert pauses(executor, ctx, -(time.perf_counter() + 60.0)) == 0
    np.testing.assert_array_equal(ctx.retvals[0], np.full(4, 2.0**40, np.float32))
    assert pauses(executor, StepContext(2, Rendezvous(), args, [None], device), -1.0) > 0


async def test_parts_of_one_shape_are_compiled_once(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long chain is compiled in parts (``PART_NODES``), most of them of one shape: Python
    compiles each shape once, each part runs its own kernels and values, and an error in a
    late part still names its node."""
    from aiotf.runtime import flat_compiler

    compiled: list[str] = []
    real = compile

    def counting(source: Any, filename: str, mode: str) -> Any:
        compiled.append(filename)
        return real(source, filename, mode)

    monkeypatch.setattr(flat_compiler, "compile", counting, raising=False)
    b = Builder(device)
    x = b.add("_Arg", "x", T=F32, index=0)
    prev = x
    for i in range(8 * flat_compiler.PART_NODES):
        prev = b.op("AddV2" if i % 2 else "Mul", f"op{i}", prev, x, T=F32)
    b.retval(prev)
    executor = b.executor()
    assert executor._program is not None
    assert executor._program.source.count("def part_") >= 8
    assert len(compiled) <= 4  # the first part, the one shape in between, the last, the driver
    ctx = StepContext(1, Rendezvous(), [np.float32(0.5)], [None], device)
    await executor.run(ctx)
    want = np.float32(0.5)
    for i in range(8 * flat_compiler.PART_NODES):
        want = want + np.float32(0.5) if i % 2 else want * np.float32(0.5)
    assert ctx.retvals[0] == want


async def test_a_step_handed_over_from_a_later_part_keeps_its_values(device: Device) -> None:
    """The handover (see the test above) from the third part of a program compiled in parts,
    whose locals go by the part's own names: the executor still finds every value made so far,
    and the step's answers are those of the interpreted schedule."""
    from aiotf.runtime.flat_compiler import PART_NODES

    b = _handover_graph(device, negations=2 * PART_NODES + 5)
    executor = b.executor()
    assert executor._program is not None and executor._program.source.count("def part_") >= 3
    x_value = np.ones(4, np.float32)
    retvals: list[Any] = [None, None, None]
    await executor.run(StepContext(1, Rendezvous(), [x_value], retvals, device))
    assert executor._program is None  # handed over
    np.testing.assert_array_equal(retvals[0], -(-x_value + 1))  # an odd number of Negs first
    assert retvals[1] == np.float32(2.0) and retvals[2] == np.float32(3.0)


def test_two_parts_of_one_shape_read_the_same_once_renamed() -> None:
    """``flat_compiler._canonical``: names, node indices, strings and comments renamed in the
    order they appear, so that two parts that differ only in those come out the same (and still
    Python), each with its own renames."""
    from aiotf.runtime.flat_compiler import _canonical

    template = (
        "def part_{p}(ctx, deadline, v{a}_0):\n"
        "    # '{name}' (AddV2)\n"
        "    try: v{b}_0 = f{b}(v{a}_0, v0_0)\n"
        "    except Exception: v{b}_0 = k{b}(v{a}_0, v0_0)\n"
        "    known = q.get({b}); t0 = _deref(v{b}_0, '{name}:1')\n"
        "    box = yield ({b}, ctx, [v{b}_0, 2.5]); raise LoopError(_nodes_{p}[3])\n"
    )
    first, first_names = _canonical(template.format(p=1, a=63, b=64, name="add1"))
    second, second_names = _canonical(template.format(p=7, a=511, b=512, name="mul_9/x2"))
    assert first == second
    assert first_names["v64_0"] == second_names["v512_0"]
    assert first_names["'add1:1'"] == second_names["'mul_9/x2:1'"]
    assert "add1" not in first and "2.5" not in first and "64" not in first
    assert "known = q.get(" in first and "_deref(" in first  # the rest as it was
    compile(first, "<part>", "exec")


async def test_a_step_ignores_numpys_float_errors_and_restores_the_callers_state() -> None:
    """A step's kernels never warn (as TensorFlow's); the caller's own numpy error state, here
    "raise", is back after the run, and after a failing one."""
    import aiotf

    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None])
        y = x / aiotf.constant(0.0) + aiotf.exp(x * 1000.0)
        bad = aiotf.reshape(x, [2])  # fed three: fails in the step
    async with aiotf.Session(graph=g) as sess:
        with np.errstate(all="raise"):
            got = await sess.run(y, {x: np.array([1.0, -1.0, 0.0], np.float32)})
            assert np.geterr()["divide"] == "raise" and np.geterr()["over"] == "raise"
            with pytest.raises(aiotf.errors.InvalidArgumentError):
                await sess.run(bad, {x: np.zeros(3, np.float32)})
            assert np.geterr()["invalid"] == "raise"
    assert got[0] == np.inf and np.isnan(got[2])


def test_float_errors_are_switched_the_public_way_where_numpys_internals_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    import numpy._core

    from aiotf.runtime import executor

    for moved in (False, True):
        if moved:  # numpy's internals without the context variable: np.errstate instead
            monkeypatch.setattr(numpy._core, "_ufunc_config", types.ModuleType("moved"))
        ignore, restore = executor._float_error_switches()
        state = ignore()
        assert np.geterr()["over"] == "ignore" and np.geterr()["divide"] == "ignore"
        restore(state)
        assert np.geterr()["over"] == "warn" and np.geterr()["divide"] == "warn"
