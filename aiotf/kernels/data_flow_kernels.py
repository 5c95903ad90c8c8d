"""FIFO queue kernels: ``FIFOQueueV2`` and the ops that enqueue to, dequeue from, close and
inspect it (TensorFlow's ``QueueBase`` and ``FIFOQueue``, with awaits where TensorFlow parks
callbacks).

Design. A :class:`FIFOQueue` lives in its device's ResourceMgr and is shared by every step of
the session, so a dequeue blocked in one ``sess.run`` is woken by an enqueue in another. Those
steps may run on different event loops (``sess.run`` on the application's loop, ``run_sync`` on
the session's private loop thread), so the queue's state is changed only under ``_lock``, and a
waiter waits on a thread-safe ``concurrent.futures.Future`` that any loop may resolve (its own
loop is woken through ``asyncio.wrap_future``). The lock is never held across an ``await``.

State and invariants:

- ``elements``: the queued element tuples, oldest first; ``len(elements) <= capacity`` except
  right after a cancelled dequeuer gave elements back (below).
- ``enqueuers`` / ``dequeuers``: waiting attempts, each line served strictly in order. Only the
  head of a line makes progress, so a DequeueMany at the head is never overtaken by a later
  Dequeue, and an enqueue blocked on a full queue keeps later enqueues behind it. A Close
  without ``cancel_pending_enqueues`` waits in the enqueue line, as in TensorFlow.
- ``closed``: set once, never cleared.

Every change of state ends with :meth:`FIFOQueue._flush`, which serves both heads until neither
makes progress. An attempt finishes by resolving its future; an attempt whose wait is cancelled
leaves its line at once (``_withdraw``, under the lock), so every attempt in a line is waited on.

Cancellation (a deadline, a failing step, a cancelled task) never loses an element. A dequeuer
takes elements only while it is the head of its line, into ``taken``; if its wait is cancelled
before it finished, ``taken`` goes back to the front of the queue, where it belongs (nothing
taken later can precede it). If the elements were already handed over (its future resolved)
but the task is cancelled before it resumes, they go back to the front too: the only case where
an element comes out after one queued behind it, and where the queue may briefly hold more than
``capacity``. Once a dequeue kernel has returned, its elements belong to the step: a step that
fails or is cancelled after that drops them, as TensorFlow does. A finished enqueue stays
enqueued; a cancelled EnqueueMany keeps the elements it already pushed, as in TensorFlow.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.framework.tensor_shape import TensorShape, as_shape
from aiotf.kernels.context import ResourceHandle, StepContext
from aiotf.kernels.registry import KernelNode, register_kernel
from aiotf.kernels.state_kernels import shape_text, tf_type_name

Array = np.ndarray[Any, Any]
Element = tuple[Array, ...]
QUEUE_KIND = "FIFOQueue"
UNBOUNDED = 2**31 - 1  # TensorFlow's kUnbounded: a capacity below 0 means this
NO_PROGRESS, PROGRESS, COMPLETE = 0, 1, 2


def _types_text(types: Sequence[dtypes.DType]) -> str:
    return ", ".join(tf_type_name(t) for t in types)


def _shapes_text(shapes: Sequence[tuple[int, ...]]) -> str:
    return "[" + ", ".join(shape_text(s) for s in shapes) + "]"


# ----------------------------------------------------------------------------------------------
# Attempts: one blocked enqueue, dequeue or close each
# ----------------------------------------------------------------------------------------------


class _Attempt:
    """A waiter in one of the queue's lines; ``run`` tries to make progress at the head.

    Its future is marked running at once, so it is never cancelled: a cancelled wait withdraws
    the attempt instead, under the queue's lock, and the future is either done or not then.
    """

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.future.set_running_or_notify_cancel()

    def run(self, queue: FIFOQueue) -> int:
        raise NotImplementedError

    def fail(self, error: errors.OpError) -> int:
        self.future.set_exception(error)
        return COMPLETE

    def abandon(self, queue: FIFOQueue) -> None:
        """Undo partial work after the wait was cancelled (idempotent)."""

    def give_back(self, queue: FIFOQueue) -> None:
        """Undo a finished attempt whose task was cancelled before it resumed."""


class _Enqueue(_Attempt):
    __slots__ = ("pending",)

    def __init__(self, elements: Sequence[Element]) -> None:
        super().__init__()
        self.pending = deque(elements)

    def run(self, queue: FIFOQueue) -> int:
        if queue.closed:
            return self.fail(errors.CancelledError(None, None, f"{queue.label} is closed."))
        moved = 0
        while self.pending and len(queue.elements) < queue.capacity:
            queue.elements.append(self.pending.popleft())
            moved += 1
        if not self.pending:
            self.future.set_result(None)
            return COMPLETE
        return PROGRESS if moved else NO_PROGRESS


class _Close(_Attempt):
    __slots__ = ()

    def run(self, queue: FIFOQueue) -> int:
        if queue.closed:
            message = f"Queue '{queue.name}' is already closed."
            return self.fail(errors.CancelledError(None, None, message))
        queue.closed = True
        self.future.set_result(None)
        return COMPLETE


class _Dequeue(_Attempt):
    __slots__ = ("allow_small_batch", "n", "taken")

    def __init__(self, n: int, allow_small_batch: bool) -> None:
        super().__init__()
        self.n = n
        self.allow_small_batch = allow_small_batch
        self.taken: list[Element] = []

    def run(self, queue: FIFOQueue) -> int:
        remaining = self.n - len(self.taken)
        size = len(queue.elements)
        if queue.closed and size < remaining:
            self.abandon(queue)
            if not (self.allow_small_batch and queue.elements):
                return self.fail(
                    errors.OutOfRangeError(
                        None,
                        None,
                        f"{queue.label} is closed and has insufficient elements "
                        f"(requested {remaining}, current size {size})",
                    )
                )
            self.n = remaining = len(queue.elements)
        took = min(remaining, len(queue.elements))
        self.taken.extend(queue.elements.popleft() for _ in range(took))
        if len(self.taken) == self.n:
            taken, self.taken = self.taken, []
            self.future.set_result(taken)
            return COMPLETE
        return PROGRESS if took else NO_PROGRESS

    def abandon(self, queue: FIFOQueue) -> None:
        queue.elements.extendleft(reversed(self.taken))
        self.taken = []

    def give_back(self, queue: FIFOQueue) -> None:
        queue.elements.extendleft(reversed(self.future.result()))


# ----------------------------------------------------------------------------------------------
# The queue
# ----------------------------------------------------------------------------------------------


class FIFOQueue:
    """A first-in first-out queue of element tuples (see the module docstring)."""

    def __init__(
        self,
        name: str,
        capacity: int,
        component_types: Sequence[dtypes.DType],
        shapes: Sequence[tuple[int, ...]] = (),
    ) -> None:
        self.name = name
        self.label = f"FIFOQueue '{name}'"
        self.capacity = UNBOUNDED if capacity < 0 else capacity
        self.component_types = tuple(dtypes.as_dtype(t) for t in component_types)
        self.shapes = tuple(tuple(s) for s in shapes)
        self.elements: deque[Element] = deque()
        self.enqueuers: deque[_Attempt] = deque()
        self.dequeuers: deque[_Attempt] = deque()
        self.closed = False
        self._lock = threading.Lock()  # guards all of the above (see the module docstring)

    def __repr__(self) -> str:
        return f"FIFOQueue({self.name!r}, size={self.size()}, closed={self.closed})"

    def size(self) -> int:
        return len(self.elements)

    # -- checks -----------------------------------------------------------------------------
    def check_matches(
        self, capacity: int, types: Sequence[dtypes.DType], shapes: Sequence[tuple[int, ...]]
    ) -> None:
        """A shared queue must be asked for with the attrs it was created with."""
        shared = f"Shared queue '{self.name}' has"
        requested = UNBOUNDED if capacity < 0 else capacity
        if requested != self.capacity:
            raise _invalid(
                f"{shared} capacity {self.capacity} but requested capacity was {requested}"
            )
        if tuple(types) != self.component_types:
            raise _invalid(
                f"{shared} component types {_types_text(self.component_types)} but requested "
                f"component types were {_types_text(types)}"
            )
        if tuple(shapes) != self.shapes:
            raise _invalid(
                f"{shared} component shapes {_shapes_text(self.shapes)} but requested "
                f"component shapes were {_shapes_text(shapes)}"
            )

    def elements_of(self, components: Sequence[Array]) -> list[Element]:
        """``components`` as one element, after TensorFlow's ``ValidateTuple``."""
        for i, c in enumerate(components):
            if self.shapes and c.shape != self.shapes[i]:
                raise _invalid(
                    f"Shape mismatch in tuple component {i}. Expected "
                    f"{shape_text(self.shapes[i])}, got {shape_text(c.shape)}"
                )
        return [tuple(np.array(c, copy=True) for c in components)]

    def elements_of_batch(self, components: Sequence[Array]) -> list[Element]:
        """``components`` split along dim 0, after TensorFlow's ``ValidateManyTuple``."""
        for i, c in enumerate(components):
            if c.ndim == 0:
                raise _invalid(
                    f"Shape mismatch in tuple component {i}. Expected a batch of elements "
                    f"(rank >= 1), got {shape_text(c.shape)}"
                )
        batch = components[0].shape[0]
        for i, c in enumerate(components):
            if self.shapes and c.shape != (batch, *self.shapes[i]):
                raise _invalid(
                    f"Shape mismatch in tuple component {i}. Expected "
                    f"{shape_text((batch, *self.shapes[i]))}, got {shape_text(c.shape)}"
                )
            if not self.shapes and c.shape[0] != batch:
                raise _invalid(
                    "All input tensors must have the same size in the 0th dimension. "
                    f"Component {i} has {c.shape[0]}, and should have {batch}"
                )
        return [tuple(np.array(c[k], copy=True) for c in components) for k in range(batch)]

    # -- operations ---------------------------------------------------------------------------
    async def enqueue(self, elements: Sequence[Element]) -> None:
        """Append ``elements`` in order, waiting while the queue is full."""
        if elements:
            await self._wait(_Enqueue(elements), self.enqueuers)

    async def dequeue(self, n: int, allow_small_batch: bool = False) -> list[Element]:
        """The oldest ``n`` elements, waiting until there are enough (fewer only if
        ``allow_small_batch`` and the queue is closed)."""
        if n == 0:
            return []
        taken: list[Element] = await self._wait(_Dequeue(n, allow_small_batch), self.dequeuers)
        return taken

    async def close(self, cancel_pending_enqueues: bool = False) -> None:
        if not cancel_pending_enqueues:
            await self._wait(_Close(), self.enqueuers)
            return
        with self._lock:
            self.closed = True
            cancelled = errors.CancelledError(None, None, "Enqueue operation was cancelled")
            for attempt in self.enqueuers:
                attempt.future.set_exception(cancelled)
            self.enqueuers.clear()
            self._flush()

    # -- the lines ----------------------------------------------------------------------------
    async def _wait(self, attempt: _Attempt, line: deque[_Attempt]) -> Any:
        with self._lock:
            line.append(attempt)
            self._flush()
        future = attempt.future
        if future.done():  # served at once: no need to wait
            return future.result()
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            self._withdraw(attempt, line)
            raise

    def _withdraw(self, attempt: _Attempt, line: deque[_Attempt]) -> None:
        """The task waiting on ``attempt`` was cancelled: undo, so nothing is lost."""
        with self._lock:
            future = attempt.future
            if future.done():
                if future.exception() is None:
                    attempt.give_back(self)
            else:
                with contextlib.suppress(ValueError):
                    line.remove(attempt)
                attempt.abandon(self)
            self._flush()

    def _flush(self) -> None:
        """Serve both lines' heads until neither makes progress (the lock is held)."""
        changed = True
        while changed:
            changed = self._serve(self.enqueuers)
            changed = self._serve(self.dequeuers) or changed

    def _serve(self, line: deque[_Attempt]) -> bool:
        progress = False
        while line:
            head = line[0]
            result = head.run(self)
            if result == COMPLETE:
                line.popleft()
                progress = True
                continue
            return progress or result == PROGRESS
        return progress


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------

# Where a queue without a shared_name lives: TensorFlow's ``_<unique id>_<node name>``, chosen once
# per ResourceMgr and node, the id counted over the process as TensorFlow 2.21 counts it (three
# sessions of one graph: '_0_q', '_1_q', '_2_q').
_UNIQUE_IDS = itertools.count()
_PRIVATE_NAMES: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], str]] = (
    weakref.WeakKeyDictionary()
)
_PRIVATE_LOCK = threading.Lock()


def _private_name(manager: Any, container: str, node_name: str) -> str:
    with _PRIVATE_LOCK:
        names = _PRIVATE_NAMES.setdefault(manager, {})
        key = (container, node_name)
        if key not in names:
            names[key] = f"_{next(_UNIQUE_IDS)}_{node_name}"
        return names[key]


def _queue_shapes(types: Sequence[Any], shapes: Sequence[Any]) -> list[tuple[int, ...]]:
    out = []
    for shape in map(as_shape, shapes):
        if not shape.is_fully_defined():
            raise _invalid(f"Shape {_partial_text(shape)} is not fully defined")
        out.append(tuple(d for d in shape.as_list() if d is not None))
    if out and len(out) != len(types):
        raise _invalid(
            f"Different number of component types.  Types: {_types_text(types)}, "
            f"Shapes: {_shapes_text(out)}"
        )
    return out


def _partial_text(shape: TensorShape) -> str:
    if shape.rank is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


@register_kernel("FIFOQueueV2")
def fifo_queue_v2(
    ctx: StepContext,
    *,
    component_types: list[dtypes.DType],
    shapes: list[Any],
    capacity: int,
    container: bytes,
    shared_name: bytes,
    node: KernelNode,
) -> Array:
    types = [dtypes.as_dtype(t) for t in component_types]
    queue_shapes = _queue_shapes(types, shapes)
    manager = ctx.device.resource_manager
    where = container.decode() or manager.default_container
    name = shared_name.decode() or _private_name(manager, where, node.name)
    queue = manager.lookup_or_create(
        where, name, lambda: FIFOQueue(name, capacity, types, queue_shapes)
    )
    if not isinstance(queue, FIFOQueue):
        raise _invalid(
            f"Resource {where}/{name} is a {type(queue).__name__}, not a FIFOQueue "
            f"(node '{node.name}' asked for a queue under that name)"
        )
    queue.check_matches(capacity, types, queue_shapes)
    return ResourceHandle(
        device=node.device or getattr(ctx.device, "name", ""),
        container=where,
        name=name,
        kind=QUEUE_KIND,
    ).as_tensor()


def _lookup(ctx: StepContext, resource: Array) -> FIFOQueue:
    handle = resource.item() if isinstance(resource, np.ndarray) else resource
    if not isinstance(handle, ResourceHandle):
        raise _invalid(f"Expected a resource handle, got {type(handle).__name__}")
    queue = ctx.device.resource_manager.lookup(handle.container, handle.name)
    if not isinstance(queue, FIFOQueue):
        raise errors.NotFoundError(
            None,
            None,
            f"Resource {handle.container}/{handle.name}/N10tensorflow14QueueInterfaceE "
            "does not exist.",
        )
    return queue


def _check_signature(
    queue: FIFOQueue,
    node: KernelNode,
    timeout_ms: int,
    extra_inputs: Sequence[dtypes.DType] = (),
    outputs: bool = False,
) -> None:
    """TensorFlow's ``MatchSignature``: the node's dtypes against the queue's components."""
    if timeout_ms != -1:
        raise _invalid("Timeout not supported yet.")
    expected_in = [dtypes.resource, *extra_inputs]
    expected_out: list[dtypes.DType] = []
    if outputs:
        expected_out = list(queue.component_types)
    else:
        expected_in += queue.component_types
    have_in = [t.base_dtype for t in node.input_dtypes]
    have_out = [t.base_dtype for t in node.output_dtypes]
    if have_in != expected_in or have_out != expected_out:
        raise _invalid(
            f"Signature mismatch, have: {_types_text(have_in)}->{_types_text(have_out)} "
            f"expected: {_types_text(expected_in)}->{_types_text(expected_out)}"
        )


@register_kernel("QueueEnqueueV2")
async def queue_enqueue_v2(
    ctx: StepContext, handle: Array, *components: Array, timeout_ms: int, node: KernelNode
) -> None:
    queue = _lookup(ctx, handle)
    _check_signature(queue, node, timeout_ms)
    await queue.enqueue(queue.elements_of(components))


@register_kernel("QueueEnqueueManyV2")
async def queue_enqueue_many_v2(
    ctx: StepContext, handle: Array, *components: Array, timeout_ms: int, node: KernelNode
) -> None:
    queue = _lookup(ctx, handle)
    _check_signature(queue, node, timeout_ms)
    await queue.enqueue(queue.elements_of_batch(components))


@register_kernel("QueueDequeueV2")
async def queue_dequeue_v2(
    ctx: StepContext, handle: Array, *, timeout_ms: int, node: KernelNode
) -> Any:
    queue = _lookup(ctx, handle)
    _check_signature(queue, node, timeout_ms, outputs=True)
    (element,) = await queue.dequeue(1)
    return element[0] if len(element) == 1 else element


async def _dequeue_many(
    ctx: StepContext, handle: Array, n: Array, timeout_ms: int, node: KernelNode, up_to: bool
) -> Any:
    count = np.asarray(n).reshape(-1)
    if count.size == 0:
        raise _invalid(f"{node.op} expects a scalar n, got shape {shape_text(np.shape(n))}")
    if int(count[0]) < 0:
        op = "DequeueUpToOp" if up_to else "DequeueManyOp"
        raise _invalid(f"{op} requested {int(count[0])} < 0 elements")
    queue = _lookup(ctx, handle)
    _check_signature(queue, node, timeout_ms, extra_inputs=[dtypes.int32], outputs=True)
    if not queue.shapes:
        raise _invalid(
            "FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
            "specified shapes."
        )
    taken = await queue.dequeue(int(count[0]), allow_small_batch=up_to)
    out = tuple(
        np.stack([element[i] for element in taken])
        if taken
        else np.empty((0, *shape), dtype=dtype.as_numpy_dtype)
        for i, (shape, dtype) in enumerate(zip(queue.shapes, queue.component_types, strict=True))
    )
    return out[0] if len(out) == 1 else out


@register_kernel("QueueDequeueManyV2")
async def queue_dequeue_many_v2(
    ctx: StepContext, handle: Array, n: Array, *, timeout_ms: int, node: KernelNode
) -> Any:
    return await _dequeue_many(ctx, handle, n, timeout_ms, node, up_to=False)


@register_kernel("QueueDequeueUpToV2")
async def queue_dequeue_up_to_v2(
    ctx: StepContext, handle: Array, n: Array, *, timeout_ms: int, node: KernelNode
) -> Any:
    return await _dequeue_many(ctx, handle, n, timeout_ms, node, up_to=True)


@register_kernel("QueueCloseV2")
async def queue_close_v2(ctx: StepContext, handle: Array, *, cancel_pending_enqueues: bool) -> None:
    await _lookup(ctx, handle).close(cancel_pending_enqueues)


@register_kernel("QueueSizeV2")
def queue_size_v2(ctx: StepContext, handle: Array) -> Array:
    return np.array(_lookup(ctx, handle).size(), dtype=np.int32)


@register_kernel("QueueIsClosedV2")
def queue_is_closed_v2(ctx: StepContext, handle: Array) -> Array:
    return np.array(_lookup(ctx, handle).closed)
