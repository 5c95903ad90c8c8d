"""The FIFO queue and its kernels, without a Session.

Error words are TensorFlow 2.21's (recorded with ``tf.compat.v1`` in graph mode). Tests never
sleep: a waiter is "blocked" once the event loop has run it to its await (``_settle``).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices.resource_mgr import ResourceMgr
from aiotf.framework.op_def_registry import lookup
from aiotf.kernels import create_kernel
from aiotf.kernels.context import ResourceHandle, StepContext
from aiotf.kernels.data_flow_kernels import UNBOUNDED, FIFOQueue
from aiotf.kernels.registry import KernelNode

errors = aiotf.errors
I32, F32 = aiotf.int32, aiotf.float32
DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


async def _settle() -> None:
    """Let every ready task run until it blocks."""
    for _ in range(5):
        await asyncio.sleep(0)


async def _result(task: asyncio.Task[Any]) -> Any:
    """``task``'s result once it can finish; failing (not hanging) when it is still blocked."""
    await _settle()
    assert task.done(), "still blocked"
    return task.result()


def _el(*values: Any) -> tuple[np.ndarray[Any, Any], ...]:
    return tuple(np.asarray(v) for v in values)


def _ints(elements: list[Any]) -> list[int]:
    return [int(e[0]) for e in elements]


# ----------------------------------------------------------------------------------------------
# The queue object
# ----------------------------------------------------------------------------------------------


async def test_elements_come_out_in_order_with_all_components() -> None:
    q = FIFOQueue("q", 10, [I32, F32], [(), (2,)])
    await q.enqueue(q.elements_of([np.int32(1), np.array([1, 2], np.float32)]))
    await q.enqueue(q.elements_of_batch([np.array([2, 3], np.int32), np.ones((2, 2), np.float32)]))
    assert q.size() == 3
    got = await q.dequeue(3)
    assert _ints(got) == [1, 2, 3]
    np.testing.assert_array_equal(got[0][1], [1, 2])
    assert q.size() == 0


async def test_enqueued_values_are_copies() -> None:
    q = FIFOQueue("q", 10, [I32])
    x = np.array([1, 2], np.int32)
    await q.enqueue(q.elements_of([x]))
    x[0] = 99
    (got,) = await q.dequeue(1)
    np.testing.assert_array_equal(got[0], [1, 2])


async def test_blocked_dequeue_is_woken_by_an_enqueue() -> None:
    q = FIFOQueue("q", 10, [I32])
    waiter = asyncio.create_task(q.dequeue(1))
    await _settle()
    assert not waiter.done()
    await q.enqueue([_el(7)])
    assert _ints(await _result(waiter)) == [7]
    assert q.size() == 0


async def test_full_queue_blocks_enqueue_until_a_dequeue() -> None:
    q = FIFOQueue("q", 1, [I32])
    await q.enqueue([_el(1)])
    blocked = asyncio.create_task(q.enqueue([_el(2)]))
    await _settle()
    assert not blocked.done() and q.size() == 1
    assert _ints(await q.dequeue(1)) == [1]
    await _result(blocked)
    assert _ints(await q.dequeue(1)) == [2]


async def test_dequeue_many_larger_than_capacity_fills_incrementally() -> None:
    q = FIFOQueue("q", 2, [I32])
    waiter = asyncio.create_task(q.dequeue(5))
    await _settle()
    await q.enqueue([_el(i) for i in range(5)])
    assert _ints(await _result(waiter)) == [0, 1, 2, 3, 4]


async def test_a_waiting_dequeue_many_is_not_overtaken() -> None:
    q = FIFOQueue("q", 10, [I32])
    many = asyncio.create_task(q.dequeue(2))
    await _settle()
    one = asyncio.create_task(q.dequeue(1))
    await _settle()
    await q.enqueue([_el(1)])
    await _settle()
    assert not many.done() and not one.done()
    await q.enqueue([_el(2), _el(3)])
    assert _ints(await _result(many)) == [1, 2]
    assert _ints(await _result(one)) == [3]


async def test_unbounded_capacity() -> None:
    q = FIFOQueue("q", -1, [I32])
    assert q.capacity == UNBOUNDED
    await q.enqueue([_el(i) for i in range(1000)])
    assert q.size() == 1000


# -- cancellation ------------------------------------------------------------------------------


async def test_cancelled_dequeue_consumes_nothing() -> None:
    q = FIFOQueue("q", 10, [I32])
    waiter = asyncio.create_task(q.dequeue(1))
    await _settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await q.enqueue([_el(5)])
    assert q.size() == 1 and not q.dequeuers
    assert _ints(await q.dequeue(1)) == [5]


async def test_element_handed_to_a_dequeuer_cancelled_before_it_resumes_is_given_back() -> None:
    q = FIFOQueue("q", 10, [I32])
    waiter = asyncio.create_task(q.dequeue(1))
    await _settle()
    await q.enqueue([_el(5)])  # hands 5 over: the waiter's future is resolved, it has not run
    assert q.size() == 0
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert q.size() == 1
    assert _ints(await q.dequeue(1)) == [5]


async def test_cancelled_partial_dequeue_many_restores_its_elements_in_order() -> None:
    q = FIFOQueue("q", 10, [I32])
    many = asyncio.create_task(q.dequeue(3))
    await _settle()
    await q.enqueue([_el(1), _el(2)])
    assert q.size() == 0  # taken by the waiting DequeueMany, as in TensorFlow
    behind = asyncio.create_task(q.dequeue(1))
    await _settle()
    many.cancel()
    with pytest.raises(asyncio.CancelledError):
        await many
    assert _ints(await _result(behind)) == [1]
    assert _ints(await q.dequeue(1)) == [2]


async def test_cancelled_blocked_enqueue_lets_the_next_one_through() -> None:
    q = FIFOQueue("q", 1, [I32])
    await q.enqueue([_el(1)])
    first = asyncio.create_task(q.enqueue([_el(2)]))
    await _settle()
    second = asyncio.create_task(q.enqueue([_el(3)]))
    await _settle()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert _ints(await q.dequeue(1)) == [1]
    await _result(second)
    assert _ints(await q.dequeue(1)) == [3]
    assert q.size() == 0


# -- close -------------------------------------------------------------------------------------


async def test_enqueue_to_a_closed_queue_is_cancelled() -> None:
    q = FIFOQueue("_0_q", 10, [I32])
    await q.close()
    with pytest.raises(errors.CancelledError, match=r"^FIFOQueue '_0_q' is closed\.$"):
        await q.enqueue([_el(1)])
    await q.enqueue([])  # an empty EnqueueMany succeeds even then, as in TensorFlow


async def test_closing_twice() -> None:
    q = FIFOQueue("_0_q", 10, [I32])
    await q.close()
    assert q.closed
    with pytest.raises(errors.CancelledError, match=r"^Queue '_0_q' is already closed\.$"):
        await q.close()
    await q.close(cancel_pending_enqueues=True)  # no error


async def test_dequeue_from_a_closed_drained_queue_is_out_of_range() -> None:
    q = FIFOQueue("_0_q", 10, [I32])
    await q.enqueue([_el(1)])
    await q.close()
    with pytest.raises(errors.OutOfRangeError) as info:
        await q.dequeue(2)
    assert info.value.message == (
        "FIFOQueue '_0_q' is closed and has insufficient elements (requested 2, current size 1)"
    )
    assert _ints(await q.dequeue(1)) == [1]
    with pytest.raises(errors.OutOfRangeError, match=r"requested 1, current size 0"):
        await q.dequeue(1)
    assert await q.dequeue(0) == []


async def test_dequeue_up_to_returns_what_is_left_after_close() -> None:
    q = FIFOQueue("_0_q", 10, [I32])
    await q.enqueue([_el(1), _el(2)])
    await q.close()
    assert _ints(await q.dequeue(5, allow_small_batch=True)) == [1, 2]
    with pytest.raises(errors.OutOfRangeError, match=r"requested 5, current size 0"):
        await q.dequeue(5, allow_small_batch=True)


async def test_close_wakes_blocked_dequeuers() -> None:
    q = FIFOQueue("_0_q", 10, [I32])
    single = asyncio.create_task(q.dequeue(1))
    await _settle()
    await q.close()
    with pytest.raises(errors.OutOfRangeError):
        await single


async def test_close_fails_a_partial_dequeue_many_and_restores_its_elements() -> None:
    q = FIFOQueue("_0_q", 10, [I32])
    many = asyncio.create_task(q.dequeue(3))
    await _settle()
    await q.enqueue([_el(1), _el(2)])
    await q.close()
    # TensorFlow's words: the elements still missing, and the size before restoring.
    with pytest.raises(errors.OutOfRangeError, match=r"requested 1, current size 0"):
        await many
    assert _ints(await q.dequeue(2)) == [1, 2]


async def test_close_waits_behind_a_blocked_enqueue() -> None:
    q = FIFOQueue("_0_q", 1, [I32])
    await q.enqueue([_el(1)])
    blocked = asyncio.create_task(q.enqueue([_el(2)]))
    await _settle()
    closing = asyncio.create_task(q.close())
    await _settle()
    assert not closing.done() and not q.closed
    assert _ints(await q.dequeue(1)) == [1]
    await _result(blocked)
    await _result(closing)
    assert q.closed and q.size() == 1


async def test_close_cancelling_pending_enqueues() -> None:
    q = FIFOQueue("_0_q", 1, [I32])
    await q.enqueue([_el(1)])
    blocked = asyncio.create_task(q.enqueue([_el(2)]))
    await _settle()
    await q.close(cancel_pending_enqueues=True)
    with pytest.raises(errors.CancelledError, match=r"^Enqueue operation was cancelled$"):
        await blocked
    assert q.closed and q.size() == 1


# -- validation ----------------------------------------------------------------------------------


def test_element_shapes_are_checked() -> None:
    q = FIFOQueue("q", 10, [I32], [(2,)])
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape("Shape mismatch in tuple component 0. Expected [2], got [3]"),
    ):
        q.elements_of([np.zeros(3, np.int32)])
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape("Shape mismatch in tuple component 0. Expected [1,2], got [1,3]"),
    ):
        q.elements_of_batch([np.zeros((1, 3), np.int32)])
    with pytest.raises(errors.InvalidArgumentError, match="rank >= 1"):
        q.elements_of_batch([np.int32(1)])


def test_unshaped_batches_must_agree_on_dimension_0() -> None:
    q = FIFOQueue("q", 10, [I32, F32])
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape(
            "All input tensors must have the same size in the 0th dimension. "
            "Component 1 has 3, and should have 2"
        ),
    ):
        q.elements_of_batch([np.zeros(2, np.int32), np.zeros(3, np.float32)])
    rows = q.elements_of_batch([np.arange(2, dtype=np.int32), np.zeros((2, 4), np.float32)])
    assert [r[1].shape for r in rows] == [(4,), (4,)]


@pytest.mark.parametrize(
    ("capacity", "types", "shapes", "words"),
    [
        (3, [I32, F32], [], "has capacity 2147483647 but requested capacity was 3"),
        (
            -1,
            [I32],
            [],
            "has component types int32, float but requested component types were int32",
        ),
        (
            -1,
            [I32, F32],
            [(2,), ()],
            "has component shapes [] but requested component shapes were [[2], []]",
        ),
    ],
)
def test_a_shared_queue_must_match(capacity: int, types: Any, shapes: Any, words: str) -> None:
    q = FIFOQueue("s", -1, [I32, F32])
    with pytest.raises(errors.InvalidArgumentError, match=re.escape(f"Shared queue 's' {words}")):
        q.check_matches(capacity, types, shapes)
    q.check_matches(-5, [I32, F32], [])


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------


class _Device:
    name = DEVICE

    def __init__(self) -> None:
        self.resource_manager = ResourceMgr()


def _ctx(device: _Device) -> StepContext:
    return StepContext(0, None, [], [], device=device)  # type: ignore[arg-type]


def _kernel(op: str, name: str = "n", inputs: Any = (), outputs: Any = (), **attrs: Any) -> Any:
    full = {**lookup(op).default_attrs(), **attrs}
    node = KernelNode(name, op, full, tuple(inputs), tuple(outputs), DEVICE)
    return create_kernel(node, "CPU").compute


def _make_queue(ctx: StepContext, name: str = "q", **attrs: Any) -> np.ndarray[Any, Any]:
    attrs.setdefault("component_types", [I32])
    handle: np.ndarray[Any, Any] = _kernel("FIFOQueueV2", name, **attrs)(ctx)
    return handle


def test_fifo_queue_v2_names_a_private_queue_as_tensorflow_does() -> None:
    device = _Device()
    ctx = _ctx(device)
    handle = _make_queue(ctx, "q", capacity=5)
    h = handle.item()
    assert isinstance(h, ResourceHandle)
    assert re.fullmatch(r"_\d+_q", h.name) and h.kind == "FIFOQueue"
    assert h.container == "localhost" and h.device == DEVICE
    queue = device.resource_manager.lookup("localhost", h.name)
    assert isinstance(queue, FIFOQueue) and queue.capacity == 5
    assert _make_queue(ctx, "q", capacity=5).item() == h  # the same queue on every run
    other = _ctx(_Device())
    assert _make_queue(other, "q", capacity=5).item().name != h.name


def test_fifo_queue_v2_shared_name_and_container() -> None:
    device = _Device()
    ctx = _ctx(device)
    a = _make_queue(ctx, "a", shared_name=b"s", container=b"c").item()
    b = _make_queue(ctx, "b", shared_name=b"s", container=b"c").item()
    assert a.name == b.name == "s" and a.container == "c"
    with pytest.raises(errors.InvalidArgumentError, match="Shared queue 's' has capacity"):
        _make_queue(ctx, "d", shared_name=b"s", container=b"c", capacity=3)


def test_fifo_queue_v2_attr_errors() -> None:
    ctx = _ctx(_Device())
    with pytest.raises(errors.InvalidArgumentError, match=re.escape("Shape [?] is not fully")):
        _make_queue(ctx, shapes=[aiotf.TensorShape([None])])
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape("Different number of component types.  Types: int32, float, Shapes: [[2]]"),
    ):
        _make_queue(ctx, component_types=[I32, F32], shapes=[aiotf.TensorShape([2])])


async def test_kernels_enqueue_dequeue_size_close() -> None:
    ctx = _ctx(_Device())
    h = _make_queue(ctx, component_types=[I32, F32], shapes=[aiotf.TensorShape([])] * 2)
    types = [aiotf.resource, I32, F32]
    enqueue = _kernel("QueueEnqueueManyV2", "em", types, Tcomponents=[I32, F32])
    await enqueue(ctx, h, np.arange(3, dtype=np.int32), np.arange(3, dtype=np.float32))
    size = _kernel("QueueSizeV2", "size", [aiotf.resource], [I32])
    assert size(ctx, h) == np.int32(3) and size(ctx, h).dtype == np.int32
    dequeue = _kernel(
        "QueueDequeueV2", "d", [aiotf.resource], [I32, F32], component_types=[I32, F32]
    )
    a, b = await dequeue(ctx, h)
    assert (a, b) == (0, 0.0) and a.dtype == np.int32 and b.dtype == np.float32
    many = _kernel(
        "QueueDequeueManyV2", "dm", [aiotf.resource, I32], [I32, F32], component_types=[I32, F32]
    )
    a, b = await many(ctx, h, np.int32(2))
    np.testing.assert_array_equal(a, [1, 2])
    assert b.dtype == np.float32 and b.shape == (2,)
    a, b = await many(ctx, h, np.int32(0))
    assert a.shape == (0,) and a.dtype == np.int32 and b.dtype == np.float32
    is_closed = _kernel("QueueIsClosedV2", "ic", [aiotf.resource], [aiotf.bool])
    assert not is_closed(ctx, h)
    await _kernel("QueueCloseV2", "c", [aiotf.resource])(ctx, h)
    assert is_closed(ctx, h) and is_closed(ctx, h).dtype == np.bool_
    up_to = _kernel(
        "QueueDequeueUpToV2", "du", [aiotf.resource, I32], [I32, F32], component_types=[I32, F32]
    )
    with pytest.raises(errors.OutOfRangeError):
        await up_to(ctx, h, np.int32(2))


async def test_kernel_signature_and_argument_errors() -> None:
    ctx = _ctx(_Device())
    h = _make_queue(ctx, "q")
    enqueue = _kernel("QueueEnqueueV2", "e", [aiotf.resource, F32], Tcomponents=[F32])
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape("Signature mismatch, have: resource, float-> expected: resource, int32->"),
    ):
        await enqueue(ctx, h, np.float32(1))
    dequeue = _kernel("QueueDequeueV2", "d", [aiotf.resource], [F32], component_types=[F32])
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape("Signature mismatch, have: resource->float expected: resource->int32"),
    ):
        await dequeue(ctx, h)
    timed = _kernel(
        "QueueDequeueV2", "t", [aiotf.resource], [I32], component_types=[I32], timeout_ms=5
    )
    with pytest.raises(errors.InvalidArgumentError, match=r"^Timeout not supported yet\.$"):
        await timed(ctx, h)
    many = _kernel("QueueDequeueManyV2", "m", [aiotf.resource, I32], [I32], component_types=[I32])
    with pytest.raises(
        errors.InvalidArgumentError, match=r"^DequeueManyOp requested -1 < 0 elements$"
    ):
        await many(ctx, h, np.int32(-1))
    with pytest.raises(
        errors.InvalidArgumentError,
        match=re.escape(
            "FIFOQueue's DequeueMany and DequeueUpTo require the components to have specified shapes."
        ),
    ):
        await many(ctx, h, np.int32(1))
    size = _kernel("QueueSizeV2", "size", [aiotf.resource], [I32])
    missing = ResourceHandle(DEVICE, "localhost", "nope", "FIFOQueue").as_tensor()
    with pytest.raises(errors.NotFoundError, match="Resource localhost/nope/"):
        size(ctx, missing)
