"""FIFOQueue end to end: concurrent runs on one Session hand elements to each other.

Error words are TensorFlow 2.21's (recorded with ``tf.compat.v1`` in graph mode). Tests never
sleep: a run is "blocked" once the event loop has run it to its await (``_settle``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.kernels.data_flow_kernels import FIFOQueue

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
STALL_S = 30.0  # generous: only a hang reaches it


async def _settle() -> None:
    """Let every ready task run until it blocks."""
    for _ in range(20):
        await asyncio.sleep(0)


async def _result(task: asyncio.Task[Any]) -> Any:
    """``task``'s result once it can finish; failing (not hanging) when it is still blocked."""
    await _settle()
    assert task.done(), "still blocked"
    return task.result()


class Model(NamedTuple):
    graph: aiotf.Graph
    queue: aiotf.FIFOQueue
    x: aiotf.Tensor
    enqueue: aiotf.Operation
    dequeue: aiotf.Tensor
    size: aiotf.Tensor
    close: aiotf.Operation
    cancel_close: aiotf.Operation


def build(capacity: int = 10) -> Model:
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(capacity, aiotf.int32, shapes=[[]], name="q")
        x = aiotf.placeholder(aiotf.int32, [], name="x")
        return Model(
            g,
            q,
            x,
            q.enqueue(x, name="enqueue"),
            q.dequeue(name="dequeue"),
            q.size(name="size"),
            q.close(name="close"),
            q.close(cancel_pending_enqueues=True, name="cancel_close"),
        )


@pytest.fixture
def m() -> Model:
    return build()


@pytest.fixture
async def sess(m: Model) -> AsyncIterator[aiotf.Session]:
    async with aiotf.Session(graph=m.graph) as s:
        yield s


async def test_producer_and_consumer_in_concurrent_runs(m: Model, sess: aiotf.Session) -> None:
    got, _ = await asyncio.gather(sess.run(m.dequeue), sess.run(m.enqueue, {m.x: 7}))
    assert got == 7 and isinstance(got, np.int32)
    assert await sess.run(m.size) == 0


async def test_many_consumers_each_get_one_element(m: Model, sess: aiotf.Session) -> None:
    consumers = [asyncio.create_task(sess.run(m.dequeue)) for _ in range(5)]
    await _settle()
    assert not any(c.done() for c in consumers)
    for i in range(5):
        await sess.run(m.enqueue, {m.x: i})
    assert sorted([int(await _result(c)) for c in consumers]) == [0, 1, 2, 3, 4]


async def test_blocked_dequeue_is_woken_by_an_enqueue(m: Model, sess: aiotf.Session) -> None:
    consumer = asyncio.create_task(sess.run([m.dequeue, m.size]))
    await _settle()
    assert not consumer.done()
    await sess.run(m.enqueue, {m.x: 3})
    value, _ = await _result(consumer)
    assert value == 3


async def test_a_dequeue_on_run_sync_s_loop_is_woken_from_the_caller_s_loop() -> None:
    """``run_sync`` runs on the session's private loop thread; an enqueue run on this loop
    must wake it (the queue is shared by steps on both loops), and the other way round."""
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(10, aiotf.int32, shapes=[[]], shared_name="shared", name="q")
        x = aiotf.placeholder(aiotf.int32, [], name="x")
        enqueue, dequeue, size = q.enqueue(x), q.dequeue(), q.size()
    async with aiotf.Session(graph=g) as sess:
        await sess.run(size)  # the queue exists
        queue = sess._impl.device_mgr.client_device.resource_manager.lookup("", "shared")
        assert isinstance(queue, FIFOQueue)
        waiting, loop, flush = asyncio.Event(), asyncio.get_running_loop(), queue._flush

        def flush_and_tell() -> None:  # runs on the private loop's thread
            flush()
            if queue.dequeuers:  # the dequeue waits in its line
                loop.call_soon_threadsafe(waiting.set)

        queue._flush = flush_and_tell  # type: ignore[method-assign]
        got = asyncio.ensure_future(asyncio.to_thread(sess.run_sync, dequeue))
        async with asyncio.timeout(STALL_S):
            await waiting.wait()
            await sess.run(enqueue, {x: 5})
            assert await got == 5
        consumer = asyncio.create_task(sess.run(dequeue))
        await _settle()
        assert not consumer.done()
        await asyncio.to_thread(sess.run_sync, enqueue, {x: 6})
        async with asyncio.timeout(STALL_S):
            assert await consumer == 6


async def test_full_queue_blocks_the_enqueue_run() -> None:
    m = build(capacity=1)
    async with aiotf.Session(graph=m.graph) as sess:
        await sess.run(m.enqueue, {m.x: 1})
        producer = asyncio.create_task(sess.run(m.enqueue, {m.x: 2}))
        await _settle()
        assert not producer.done()
        assert await sess.run(m.dequeue) == 1
        await _result(producer)
        assert await sess.run(m.dequeue) == 2


async def test_deadline_on_a_blocked_dequeue_loses_no_element(
    m: Model, sess: aiotf.Session
) -> None:
    options = aiotf.RunOptions(timeout_in_ms=20)
    with pytest.raises(errors.DeadlineExceededError):
        await sess.run(m.dequeue, options=options)
    await sess.run(m.enqueue, {m.x: 5})
    assert await sess.run(m.size) == 1
    assert await sess.run(m.dequeue) == 5


async def test_cancelling_the_awaiting_task_loses_no_element(m: Model, sess: aiotf.Session) -> None:
    consumer = asyncio.create_task(sess.run(m.dequeue))
    await _settle()
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    await sess.run(m.enqueue, {m.x: 9})
    assert await sess.run(m.size) == 1
    assert await sess.run(m.dequeue) == 9


async def test_element_handed_over_as_the_run_is_cancelled_is_kept(
    m: Model, sess: aiotf.Session
) -> None:
    consumer = asyncio.create_task(sess.run(m.dequeue))
    await _settle()
    # The run is cancelled, and before the cancellation reaches the waiting dequeue kernel an
    # enqueue straight into the queue (it never yields) hands 4 to that kernel.
    consumer.cancel()
    await _the_queue(sess).enqueue([(np.array(4, np.int32),)])
    assert _the_queue(sess).size() == 0  # handed over
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert await sess.run(m.size) == 1
    assert await sess.run(m.dequeue) == 4


def _the_queue(sess: aiotf.Session) -> FIFOQueue:
    """The one queue in the session's CPU:0 resource manager."""
    manager = sess._impl.device_mgr.lookup(CPU0).resource_manager  # type: ignore[attr-defined]
    (queue,) = [r for r in manager._containers["localhost"].values() if isinstance(r, FIFOQueue)]
    return queue


async def test_a_failing_step_cancels_its_blocked_dequeue(m: Model, sess: aiotf.Session) -> None:
    with m.graph.as_default():
        bad = aiotf.placeholder(aiotf.int32, [None], name="bad")
        failing = aiotf.add(bad, aiotf.constant([1, 2, 3]), name="failing")
    with pytest.raises(errors.InvalidArgumentError):
        await sess.run([m.dequeue, failing], {bad: np.zeros(2, np.int32)})
    await sess.run(m.enqueue, {m.x: 6})
    assert await sess.run(m.dequeue) == 6


async def test_close_semantics(m: Model, sess: aiotf.Session) -> None:
    await sess.run(m.enqueue, {m.x: 1})
    consumer_after = asyncio.create_task(sess.run(m.dequeue))
    await _result(consumer_after)
    blocked = asyncio.create_task(sess.run(m.dequeue))
    await _settle()
    await sess.run(m.close)
    with pytest.raises(errors.OutOfRangeError) as info:
        await _result(blocked)
    assert "is closed and has insufficient elements (requested 1, current size 0)" in str(
        info.value.message
    )
    assert "dequeue" in info.value.message and info.value.node_def.name == "dequeue"
    with pytest.raises(errors.CancelledError, match=r"FIFOQueue '_\d+_q' is closed\.") as cancel:
        await sess.run(m.enqueue, {m.x: 2})
    assert cancel.value.node_def.name == "enqueue"
    with pytest.raises(errors.CancelledError, match=r"Queue '_\d+_q' is already closed\."):
        await sess.run(m.close)
    with m.graph.as_default():
        is_closed = m.queue.is_closed()
    assert bool(await sess.run(is_closed))


async def test_close_cancels_pending_enqueues() -> None:
    m = build(capacity=1)
    async with aiotf.Session(graph=m.graph) as sess:
        await sess.run(m.enqueue, {m.x: 1})
        producer = asyncio.create_task(sess.run(m.enqueue, {m.x: 2}))
        await _settle()
        await sess.run(m.cancel_close)
        with pytest.raises(errors.CancelledError, match="Enqueue operation was cancelled"):
            await _result(producer)
        assert await sess.run(m.dequeue) == 1
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(m.dequeue)


async def test_multi_component_batches_and_static_shapes() -> None:
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(10, [aiotf.int32, aiotf.float32], shapes=[[], [2]])
        ids = aiotf.placeholder(aiotf.int32, [None])
        vals = aiotf.placeholder(aiotf.float32, [None, 2])
        enqueue_many = q.enqueue_many([ids, vals])
        many = q.dequeue_many(2)
        up_to = q.dequeue_up_to(5)
        one = q.dequeue()
        close = q.close()
    assert [t.shape.as_list() for t in many] == [[2], [2, 2]]
    assert [t.shape.as_list() for t in up_to] == [[None], [None, 2]]
    assert [t.shape.as_list() for t in one] == [[], [2]]
    assert (
        enqueue_many.name == "fifo_queue_EnqueueMany"
        and many[0].op.name == "fifo_queue_DequeueMany"
    )
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)
    async with aiotf.Session(graph=g) as sess:
        await sess.run(enqueue_many, {ids: np.arange(4, dtype=np.int32), vals: rows})
        a, b = await sess.run(many)
        np.testing.assert_array_equal(a, [0, 1])
        np.testing.assert_array_equal(b, rows[:2])
        assert a.dtype == np.int32 and b.dtype == np.float32
        a, b = await sess.run(one)
        assert a == 2
        np.testing.assert_array_equal(b, rows[2])
        await sess.run(close)
        a, b = await sess.run(up_to)
        np.testing.assert_array_equal(a, [3])
        assert b.shape == (1, 2)
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(many)


async def test_named_components_enqueue_and_dequeue_dicts() -> None:
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(4, [aiotf.int32, aiotf.string], names=["n", "s"])
        enqueue = q.enqueue({"n": 1, "s": b"one"})
        out = q.dequeue()
    assert set(out) == {"n", "s"}
    async with aiotf.Session(graph=g) as sess:
        await sess.run(enqueue)
        got = await sess.run(out)
    assert got == {"n": 1, "s": b"one"}


async def test_shape_mismatch_at_run_time_names_the_node() -> None:
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(4, aiotf.int32, shapes=[2], name="q")
        x = aiotf.placeholder(aiotf.int32)
        enqueue = q.enqueue(x, name="enq")
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await sess.run(enqueue, {x: [1, 2, 3]})
    assert "Shape mismatch in tuple component 0. Expected [2], got [3]" in info.value.message
    assert info.value.node_def.name == "enq"


def test_python_api_names_and_properties() -> None:
    g = aiotf.Graph()
    with g.as_default():
        with aiotf.name_scope("outer"):
            q = aiotf.FIFOQueue(3, aiotf.int32, name="myq", shared_name="sh")
        with aiotf.control_dependencies([aiotf.no_op(name="dep")]):
            q2 = aiotf.FIFOQueue(3, [aiotf.int32, aiotf.float32])
        e = q.enqueue(5)
    assert q.name == "outer/myq" and q.queue_ref.name == "outer/myq:0"
    assert q.queue_ref.dtype == aiotf.resource and q.queue_ref.shape.as_list() == []
    assert q.dtypes == [aiotf.int32] and q.shapes == [aiotf.TensorShape(None)]
    assert e.name == "myq_enqueue" and e.inputs[1].op.name == "myq_enqueue/component_0"
    assert q.queue_ref.op.device == "/device:CPU:*"
    assert q2.name == "fifo_queue" and not q2.queue_ref.op.control_inputs
    assert (
        q2.size().op.name == "fifo_queue_Size" and q2.is_closed().op.name == "fifo_queue_Is_Closed"
    )
    assert q2.close().name == "fifo_queue_Close" and q2.dequeue_up_to(2)[0].op.name == (
        "fifo_queue_DequeueUpTo"
    )
    attrs = q.queue_ref.op.node_def.attr
    assert attrs["shared_name"].s == b"sh" and attrs["capacity"].i == 3


def test_python_api_errors() -> None:
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(3, [aiotf.int32, aiotf.float32], shapes=[[], [2]])
        with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(\) are incompatible"):
            q.enqueue([[1, 2, 3], [1.0, 2.0]])
        with pytest.raises(ValueError, match="must have rank at least 1"):
            q.enqueue_many([3, [1.0, 2.0]])
        with pytest.raises(ValueError, match="Queue must have names to enqueue a dictionary"):
            q.enqueue({"a": 1})
        with pytest.raises(ValueError, match="All shapes must be fully defined"):
            aiotf.FIFOQueue(1, aiotf.int32, shapes=[[None]])
        with pytest.raises(ValueError, match="Queue shapes must have the same length as dtypes"):
            aiotf.FIFOQueue(1, [aiotf.int32], shapes=[[1], [2]])
        named = aiotf.FIFOQueue(1, [aiotf.int32], names=["a"])
        with pytest.raises(ValueError, match="You must enqueue a dictionary in a Queue with names"):
            named.enqueue(3)
