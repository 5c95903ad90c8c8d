"""The Executor: runs one partition graph, on one device, for one step.

Design. Building an executor compiles the partition into flat arrays; running it is a dataflow
loop over those arrays. A partition without control flow runs on the *flat schedule*: one set of
per-step arrays, no per-node objects created. A partition with control flow (Switch, Merge,
Enter, Exit, NextIteration) or a ``_Recv`` (which may deliver a dead tensor) runs on the *frame
schedule*, TensorFlow's executor expressed in asyncio: pending counts, dead counts, frames and
iterations. A loop frame made only of sync kernels (and loops that compile) is compiled into a
Python generator that runs its iterations in order (``runtime/loop_compiler.py``); the frame
schedule starts it once every Enter into the frame has arrived, so a loop of scalar ops costs
its kernel calls, not a frame's bookkeeping per node. Likewise a flat partition of sync kernels
runs as one compiled generator (``runtime/flat_compiler.py``, ``_program``). When a kernel of it
needs the pool, the rest of the step moves into one pool thread (``_finish_program``), which
runs every later kernel there, a group of independent ones side by side on the pool's threads,
and a kernel split into parts (``register_kernel``'s ``parts``) on this thread and a helper, the
one that ends the last part carrying the step on (``intra_op.Relay``); but when that could run
a ``py_func`` before a sibling it may wait for, the step is handed over to the flat schedule,
which carries on from the same point, and the partition is interpreted from then on
(``_program`` becomes None), so its pool kernels overlap.

Compiled state (shared by concurrent steps; immutable but for ``_program``'s demotion):

- ``_items[i]``: node ``i``'s kernel and how to run it: ``INLINE`` (a cheap sync kernel, called
  right in the loop), ``POOL`` (an expensive sync kernel: in the device's thread pool when its
  estimated cost reaches ``POOL_MIN_COST``, else inline) or ``ASYNC`` (a coroutine kernel: a
  task of the step). Its ``kind`` says where its outputs go: ``NORMAL`` (same frame and
  iteration), ``ENTER`` (iteration 0 of a child frame), ``EXIT`` (the parent frame) or
  ``NEXT_ITERATION`` (the next iteration of its frame).
- Static frames (``_frames``): every node belongs to one loop frame (the root frame is index 0),
  found by walking from the roots: an Enter's successors are in the frame its ``frame_name``
  names, an Exit's in its frame's parent. Within a frame, node ``i`` has the local index
  ``_items[i].local``; ``_FrameInfo.pending0`` holds the initial pending counts by local index,
  and each data edge has a slot in its destination's frame (``input_slots``). A producer's
  ``data_edges`` and ``control_plan`` carry each consumer's local index and kind (node, Merge,
  ControlTrigger), so delivering along an edge reads no consumer item.
- ``_FrameInfo.program``: the compiled loop of an outermost frame that compiles (None when the
  frame, or its parent, runs on the frame schedule); an Enter into it has ``enter_pos``, its
  position among the program's arguments.
- ``pending0``: a node's incoming edges; for a Merge, ``2 * control edges + 1``: the low bit is
  cleared by the first live data input, so a Merge is ready when its control edges have all
  arrived and either one data input is live (count 1 → 0 bits left) or all are dead.
- ``derefs``: input positions where a ref output (a variable) feeds a non-ref input; the consumer
  gets the variable's value, or ``FailedPreconditionError`` while it is uninitialized.

Per-step state (local to :meth:`Executor.run`, so steps never share it):

- Flat schedule: ``slots`` (input values; a slot is cleared as soon as its consumer has run, so a
  tensor is freed after its last use), ``pending[i]`` (incoming edges not yet satisfied; ``i`` is
  ready exactly when it drops to 0, and is queued exactly once), ``refs[o]``/``nbytes[o]``
  (consumers of output ``o`` still to run, and its size, for the device allocator's books).
- Frame schedule: one ``_Frame`` per live loop execution (a child frame per parent iteration),
  one ``_Iteration`` per live iteration, each with its own ``pending``, ``dead`` (dead inputs
  seen) and ``slots`` arrays by local index and ``outstanding_ops`` (its nodes queued or
  running). An iteration is done when it has no outstanding ops or child frames and its
  predecessor is done (iteration 0: every Enter into the frame has arrived). At most
  ``parallel_iterations`` iterations are live; a NextIteration beyond that is parked in
  ``next_iter_roots`` until the oldest iteration finishes. A loop-invariant (``is_constant``)
  Enter's value is kept in ``inv_values`` and given to every iteration. A dead tensor is one
  with no value (an untaken Switch branch): a node with a dead input does not run and its
  outputs are dead (Send and Recv still run, to carry deadness across devices); a Merge fires on
  its first live input; a dead NextIteration ends the loop; the Exits of the last iteration
  that are dead reach the parent when the frame is deleted. A dead ``_Retval`` never runs, so
  its fetch has no value (the session reports TensorFlow's error). An iteration's ``ctx`` (its
  ``frame_iter`` for rendezvous keys) is made the first time one of its kernels takes ``ctx``.
- Compiled loops: an Enter into a frame with a ``program`` gathers its value into that frame
  execution's ``_LoopRun`` (in ``children``, counted in ``outstanding_frames`` like a child
  frame); the last Enter queues it on ``loops``. The loop runs when nothing is ready, for one
  time slice at a time; a pool kernel it hands over becomes a task (the loop waits on
  ``requests``, then back on ``loops`` with the outputs), and demotes the frame: later steps run
  it on the frame schedule, where its iterations can overlap in the pool. When its generator
  returns, its Exits (live ones, then the last iteration's dead ones) reach the parent
  iteration, as at frame deletion. A traced step runs every frame on the frame schedule.
- Frame schedule counts, per iteration: ``pending[d]`` starts at ``pending0`` and counts down
  as inputs arrive; ``dead[d]`` counts the dead inputs that reached ``d`` (a data input with no
  value, or a control edge from a dead node). A non-Merge node whose pending count reaches 0 is
  queued once, dead iff ``dead[d] > 0`` (a ControlTrigger never is); a Merge is queued dead only
  once its control edges are in and every data input is dead (or the dead input came through
  an Enter).
- Frame schedule books, per frame execution: ``num_pending_inputs`` is the number of Enters
  into it still to arrive; ``num_outstanding_iterations`` the live iterations (at most
  ``parallel_iterations``); ``iteration_count`` the newest iteration's number; ``dead_exits``
  the newest iteration's dead Exits (cleared when a newer iteration starts). Per iteration,
  ``outstanding_frames`` counts its live child frames (``children``, by frame name). A frame
  execution is deleted exactly when it has no pending inputs and no outstanding iterations.
- Tasks (either schedule): ``outstanding`` counts the kernel tasks started and not yet reported
  on the ``done`` queue; each task reports exactly once, so the step is over when nothing is
  ready and ``outstanding`` is 0.

Scheduling policy: ready nodes run in FIFO order; inline kernels run immediately; the loop
yields to the event loop every ``YIELD_INTERVAL`` seconds of inline work (a compiled loop: at
the end of an iteration past its time slice; a compiled program crowded with other steps on the
loop: after each costly pool kernel too, in lockstep with them, see ``loop_turns``, unless the
crowd runs it once for them all, stacked, see ``crowd``) so a long
chain never stalls other tasks; task results are picked up from a queue as they finish. Either
schedule runs inline until a node needs a task (an async kernel, or a pool kernel whose cost
reaches ``POOL_MIN_COST``): only then are the step's TaskGroup and queue made, and that node
(``held``, its inputs taken) is the first task. The first error (a kernel raising, or a task
failing) stops scheduling, cancels the step's tasks, aborts the step's rendezvous so other
partitions wake, and is raised naming the node. The device allocator's books are kept on the
(interpreted) flat schedule only.

Cancellation: when the task running the step is cancelled (its caller, a deadline, the session
closing), the step's TaskGroup cancels every kernel task and waits for each to end: an async
kernel's await unwinds (a waiting ``_Recv`` removes its key from the rendezvous, a queue waiter
gives back the elements it held), and a kernel in the pool first lets its thread finish
(``Device.run_in_pool``), so no input is released while a thread still reads it; a grouped
program's pool thread is told to stop between kernels, and waited for. Either way, when
:meth:`Executor.run` returns or raises, no task of the step is left.

Tracing: a step whose context carries a stats collector (``ctx.stats``) runs the same loops over
``_traced``, copies of the items whose kernels take ``ctx`` and report each execution to it
(``runtime/step_stats.py``); they are built once, so an untraced step pays nothing per node.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, cast

import numpy as np

from aiotf.devices import intra_op
from aiotf.devices.device import Device
from aiotf.devices.threads import RELAYED, Reply, Stop
from aiotf.framework import errors
from aiotf.kernels.context import DEAD, StepContext
from aiotf.kernels.registry import POOL_MIN_COST, OpKernel
from aiotf.runtime import loop_turns
from aiotf.runtime.crowd import Crowd
from aiotf.runtime.flat_compiler import FlatGenerator, FlatProgram, Handover, compile_flat
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.loop_compiler import (
    LoopError,
    LoopGenerator,
    LoopProgram,
    PoolRequest,
    compile_loops,
    deref,
)
from aiotf.runtime.step_stats import NodeTracer, is_traced, traced_compute

INLINE, POOL, ASYNC = 0, 1, 2
NORMAL, ENTER, EXIT, NEXT_ITERATION = 0, 1, 2, 3
_EDGE_NODE, _EDGE_MERGE, _EDGE_TRIGGER = 0, 1, 2  # a ControlTrigger runs with dead inputs
YIELD_INTERVAL = 0.002  # seconds of inline kernel work between yields to the event loop

_KINDS = {
    "Enter": ENTER,
    "RefEnter": ENTER,
    "Exit": EXIT,
    "RefExit": EXIT,
    "NextIteration": NEXT_ITERATION,
    "RefNextIteration": NEXT_ITERATION,
}
_MERGE_OPS = frozenset({"Merge", "RefMerge"})
_TRANSFER_OPS = frozenset({"_Send", "_Recv"})
# Ops that need the frame schedule: they make, consume or route dead tensors, or change frames.
_FRAME_OPS = (
    frozenset({"Switch", "RefSwitch", "ControlTrigger", "_Recv"}) | _MERGE_OPS | set(_KINDS)
)

KernelFactory = Callable[[Node], OpKernel]
Ready = deque[tuple[int, "_Iteration", bool]]
_Tag = tuple[int, "_Iteration | _LoopRun"]  # a task's node, and where its outputs go
_LOOP_DONE, _LOOP_SLICE, _LOOP_WAITS = 0, 1, 2  # how a compiled loop's turn ended


class _Item:
    __slots__ = (
        "compute",
        "control_edges",
        "control_plan",
        "cost",
        "data_edges",
        "derefs",
        "enter_pos",
        "fast",
        "forward",
        "frame",
        "input_refs",
        "input_slots",
        "is_constant_enter",
        "is_control_trigger",
        "is_enter",
        "is_exit",
        "is_merge",
        "is_next_iteration",
        "is_transfer",
        "kind",
        "local",
        "mode",
        "node",
        "num_data_inputs",
        "num_outputs",
        "out_base",
        "out_edges",
        "parts",
        "pooled",
        "successors",
        "sync",
        "target_frame",
        "wants_ctx",
    )

    def __init__(self, node: Node, kernel: OpKernel) -> None:
        self.node = node
        self.compute = kernel.compute
        self.fast = kernel.fast  # the compiled schedules' call (``register_kernel``'s ``fast``)
        self.forward = kernel.forward  # ... into a dying input's buffer (``forward``)
        self.parts = kernel.parts  # ... as pieces for the pool's threads (``parts``)
        self.cost = kernel.cost
        self.wants_ctx = kernel.wants_ctx
        self.mode = ASYNC if kernel.is_async else POOL if kernel.expensive else INLINE
        self.num_outputs = len(node.output_dtypes)
        self.num_data_inputs = len(node.inputs)
        self.kind = _KINDS.get(node.op, NORMAL)
        self.is_enter = self.kind == ENTER
        self.is_exit = self.kind == EXIT
        self.is_next_iteration = self.kind == NEXT_ITERATION
        self.is_merge = node.op in _MERGE_OPS
        self.is_transfer = node.op in _TRANSFER_OPS
        self.is_control_trigger = node.op == "ControlTrigger"
        self.is_constant_enter = self.is_enter and bool(node.attrs.get("is_constant"))
        self.sync = self.mode != ASYNC and not self.is_transfer  # runs here: inline or pooled
        self.pooled = self.mode == POOL
        self.enter_pos = 0  # an Enter into a compiled loop: its position in the program's enters
        self.frame = 0
        self.local = 0
        self.target_frame = 0  # an Enter's: the frame its output enters
        self.input_slots: tuple[int, ...] = ()
        self.input_refs: tuple[int, ...] = ()
        self.derefs: tuple[int, ...] = ()
        self.out_base = 0
        # Edges, set once the executor is built and never changed: tuples, which the garbage
        # collector stops walking once it has seen they hold only ints (a 10,000-node
        # executor's lists were a quarter of what a full collection walked).
        self.out_edges: tuple[tuple[int, ...], ...] = ((),) * self.num_outputs
        self.successors: tuple[int, ...] = ()
        # Frame schedule: (output, consumer, its slot, its local index, its _EDGE_* kind)
        self.data_edges: tuple[tuple[int, int, int, int, int], ...] = ()
        self.control_edges: tuple[int, ...] = ()
        self.control_plan: tuple[tuple[int, int, int], ...] = ()  # (consumer, local index, kind)


class _FrameInfo:
    """A static loop frame: its nodes' local indices, initial pending counts and slot count."""

    __slots__ = (
        "name",
        "num_enters",
        "num_slots",
        "parallel_iterations",
        "parent",
        "pending0",
        "program",
    )

    def __init__(self, name: str, parent: int) -> None:
        self.name = name
        self.parent = parent
        self.pending0: list[int] = []
        self.num_slots = 0
        self.num_enters = 0
        self.parallel_iterations = 1
        self.program: LoopProgram | None = None  # set when the frame runs compiled


class Executor:
    """A compiled partition graph; :meth:`run` executes one step of it."""

    def __init__(self, graph: Graph, device: Device, create_kernel: KernelFactory) -> None:
        self.graph = graph
        self.device = device
        nodes = graph.nodes
        index = {n.name: i for i, n in enumerate(nodes)}
        items = self._items = [_Item(n, create_kernel(n)) for n in nodes]
        out_base = 0
        for item in items:
            item.out_base = out_base
            out_base += item.num_outputs
        refs = [0] * out_base
        successors: list[list[int]] = [[] for _ in items]
        control_edges: list[list[int]] = [[] for _ in items]
        for i, node in enumerate(nodes):
            input_refs, derefs = [], []
            input_types = node.input_dtypes()
            for pos, (src, k) in enumerate(node.inputs):
                j = index[src]
                producer = items[j]
                successors[j].append(i)
                input_refs.append(producer.out_base + k)
                refs[producer.out_base + k] += 1
                if (
                    producer.node.output_dtypes[k].is_ref_dtype
                    and pos < len(input_types)
                    and not input_types[pos].is_ref_dtype
                ):
                    derefs.append(pos)
            for src in node.control_inputs:
                j = index[src]
                successors[j].append(i)
                control_edges[j].append(i)
            items[i].input_refs = tuple(input_refs)
            items[i].derefs = tuple(derefs)
        for item, after, controlled in zip(items, successors, control_edges, strict=True):
            item.successors = tuple(after)
            item.control_edges = tuple(controlled)
        self._refs0 = refs
        self._roots = [i for i, n in enumerate(nodes) if not n.inputs and not n.control_inputs]
        self._frames = self._compile_frames(index)
        self._flat = not any(n.op in _FRAME_OPS for n in nodes)
        if not self._flat:
            self._compile_loops()
        # A flat partition of sync kernels runs as compiled straight-line code (None: interpreted)
        self._program = compile_flat(items, self._roots) if self._flat else None
        # Steps of the program crowded in a turn of the loop run it once, stacked (``crowd``)
        self._crowd = Crowd(items, self._program) if self._program is not None else None
        self._pending0 = self._frames[0].pending0 if self._flat else []
        self._num_slots = self._frames[0].num_slots
        self._all_inline = all(item.mode == INLINE for item in items)
        self._traced: list[_Item] | None = None  # built by the first traced step

    def _compile_frames(self, index: dict[str, int]) -> list[_FrameInfo]:
        """Assign every node its static frame and local index, and lay out pending and slots."""
        items = self._items
        frames = [_FrameInfo("", -1)]
        by_name: dict[str, int] = {"": 0}
        frame_of = [-1] * len(items)
        queue = deque(self._roots)
        for i in queue:
            frame_of[i] = 0
        while queue:
            i = queue.popleft()
            item = items[i]
            frame = frame_of[i]
            if item.kind == ENTER:
                name = item.node.attrs["frame_name"]
                name = name.decode() if isinstance(name, bytes) else str(name)
                out = by_name.get(name)
                if out is None:
                    out = by_name[name] = len(frames)
                    frames.append(_FrameInfo(name, frame))
                    frames[out].parallel_iterations = max(
                        1, int(item.node.attrs.get("parallel_iterations", 10))
                    )
                frames[out].num_enters += 1
                item.target_frame = out
            elif item.kind == EXIT:
                out = frames[frame].parent
                if out < 0:
                    raise errors.InvalidArgumentError(
                        item.node.to_node_def(),
                        None,
                        f"Exit node {item.node.name} is not inside a while loop frame",
                    )
            else:
                out = frame
            for j in item.successors:  # one entry per data or control edge
                if frame_of[j] == -1:
                    frame_of[j] = out
                    queue.append(j)
                elif frame_of[j] != out and not (
                    items[j].is_merge and item.kind == NEXT_ITERATION and frame_of[j] == frame
                ):
                    raise errors.InvalidArgumentError(
                        items[j].node.to_node_def(),
                        None,
                        f"The node '{items[j].node.name}' has inputs from different frames. "
                        f"The input '{item.node.name}' is in frame '{frames[out].name}'. "
                        f"The input '{_other_input(items, j, frame_of, out, index)}' is in "
                        f"frame '{frames[frame_of[j]].name}'.",
                    )
        for i, item in enumerate(items):
            info = frames[max(frame_of[i], 0)]
            item.frame = max(frame_of[i], 0)
            item.local = len(info.pending0)
            num_control = len(item.node.control_inputs)
            info.pending0.append(
                2 * num_control + 1 if item.is_merge else item.num_data_inputs + num_control
            )
        out_edges: list[list[list[int]]] = [[[] for _ in range(it.num_outputs)] for it in items]
        data_edges: list[list[tuple[int, int, int, int, int]]] = [[] for _ in items]
        for i, item in enumerate(items):
            info = frames[item.frame]
            slots = []
            for src, k in item.node.inputs:
                slot = info.num_slots
                info.num_slots += 1
                slots.append(slot)
                j = index[src]
                out_edges[j][k].append(slot)
                data_edges[j].append((k, i, slot, item.local, _edge_kind(item)))
            item.input_slots = tuple(slots)
        for item, outs, edges in zip(items, out_edges, data_edges, strict=True):
            item.out_edges = tuple(tuple(slots) for slots in outs)
            item.data_edges = tuple(edges)
            item.control_plan = tuple(
                (j, items[j].local, _edge_kind(items[j])) for j in item.control_edges
            )
        return frames

    def _compile_loops(self) -> None:
        """Give each outermost frame that compiles its program (``runtime/loop_compiler.py``)."""
        frames = self._frames
        programs = compile_loops(self._items, frames)
        for f, program in enumerate(programs):
            if program is not None and programs[frames[f].parent] is None:
                frames[f].program = program
                for pos, e in enumerate(program.enters):
                    self._items[e].enter_pos = pos

    @property
    def num_nodes(self) -> int:
        return len(self._items)

    async def run(self, ctx: StepContext) -> None:
        """Execute one step; raise the first error as an ``aiotf.errors`` class."""
        crowd = self._crowd  # the compiled program's, while it has one
        if (
            crowd is not None
            and ctx.stats is None
            and loop_turns.crowded()  # other tasks' steps in this turn: maybe run stacked
            and await crowd.ran(ctx)
        ):
            return
        items = self._items if ctx.stats is None else self._traced_items()
        errors_state = _ignore_float_errors()
        try:
            if not self._flat:
                error = await self._run_frames(ctx, items)
            elif self._program is not None and ctx.stats is None:
                error = await self._run_program(ctx, self._program)
            elif self._all_inline:
                error = await self._run_inline(ctx, items)
            else:
                error = await self._run_with_tasks(ctx, items)
        finally:
            _restore_float_errors(errors_state)
        if error is not None:
            ctx.rendezvous.abort(error)
            raise error

    def _traced_items(self) -> list[_Item]:
        """The items with every traced kernel reporting to ``ctx.stats`` (see ``step_stats``)."""
        if self._traced is None:
            device = self.device
            self._traced = [
                _traced_item(item, NodeTracer(item.node, device.name, device.allocator.name))
                if is_traced(item.node)
                else item
                for item in self._items
            ]
        return self._traced

    # -- the compiled flat schedule ------------------------------------------------------------
    async def _run_program(self, ctx: StepContext, program: FlatProgram) -> errors.OpError | None:
        """One step of the compiled partition (``runtime/flat_compiler.py``): drive its
        generator, yielding to the event loop when it asks. When it hands the step over (a
        kernel needs the pool), carry on interpreting from there; the program is demoted, so
        later steps are interpreted from the start, their pool kernels side by side."""
        items = self._items
        deadline = _program_deadline()
        gen = program.run(ctx, deadline)
        try:
            request = next(gen)
            while request is None:
                if deadline < 0.0:  # in lockstep: the turn goes on while its steps pause
                    loop_turns.hold()
                await asyncio.sleep(0)
                deadline = _program_deadline()
                request = gen.send(deadline)
            if program.grouped:  # the rest of the step in a pool thread
                stop = Stop()
                await self.device.run_in_pool(
                    self._finish_program, gen, request, stop, cancel=stop, relayed=True
                )
                return None
        except StopIteration:
            return None
        except LoopError as exc:
            assert exc.__cause__ is not None
            return _as_op_error(exc.__cause__, items[exc.index].node)
        finally:
            gen.close()
        self._program = self._crowd = None  # interpreted from now on, never stacked
        position, frame_locals = cast(Handover, request)
        state = _StepState(self, items)
        ready = deque(self._roots)
        for i, outputs in program.outputs(frame_locals, position):
            popped = ready.popleft()  # the program ran the nodes in the schedule's own order
            assert popped == i, (popped, i)
            state.take_inputs(items[i])
            state.finish(i, outputs, ready)
        return await self._run_with_tasks(ctx, items, state, ready)

    def _finish_program(self, reply: Reply, gen: FlatGenerator, request: Any, stop: Stop) -> Any:
        """In a pool thread: run a grouped program's step to its end, calling each pool kernel
        it asks for right here, and a group of them side by side on this thread and the pool's
        idle ones (``intra_op.parallel_for``); between kernels, give up once ``stop`` is set
        (the step was cancelled). A kernel's exception comes out as :class:`LoopError` naming
        its node.

        A kernel with ``parts`` runs them as an ``intra_op.Relay``: when a helper ends the last
        one, that helper carries the step on (:meth:`_carry_on`, which sends ``reply``) and this
        returns ``RELAYED``. A caller done with its half first would otherwise sleep until the
        helper's end and take ~50 us to wake: mlp's step 845 against 931 us, alternated."""
        try:
            while not stop.is_set():
                if request is None:
                    request = gen.send(0.0)  # a deadline always past: it asks again soon
                    continue
                call, request = request, None
                # In a box the program empties: no frame here holds the outputs after it.
                if type(call) is list:
                    box: list[Any] = [self._side_by_side(call)]
                    del call  # the group's inputs: each can go once its last reader is done
                else:
                    i, ctx, args = call
                    del call
                    relay = self._relay(i, args)
                    if relay is None:
                        box = [self._pool_call(i, ctx, args)]
                        del args
                    else:
                        del args
                        carry_on = functools.partial(self._carry_on, reply, gen, stop, i, relay)
                        if not relay.run(carry_on):
                            return RELAYED
                        box = [_naming_node(i, relay.outputs)]
                request = gen.send(box)
        except StopIteration:  # the step is done (never let it into a future)
            pass
        return None

    def _relay(self, i: int, args: list[Any]) -> intra_op.Relay | None:
        """Node ``i``'s kernel's work as parts for the pool's threads, if it splits it so."""
        parts = self._items[i].parts
        if parts is None:
            return None
        split = _naming_node(i, parts, *args)
        return None if split is None else intra_op.Relay(*split)

    def _carry_on(
        self, reply: Reply, gen: FlatGenerator, stop: Stop, i: int, relay: intra_op.Relay
    ) -> None:
        """In the pool thread that ended the last part of node ``i``'s relay: the rest of the
        step (unless relayed on again), and its answer sent."""
        try:
            request = gen.send([_naming_node(i, relay.outputs)])
            value = self._finish_program(reply, gen, request, stop)
        except StopIteration:
            value = None
        except BaseException as exc:  # the step's failure, raised by the awaiting task
            reply(None, exc)
            return
        if value is not RELAYED:
            reply(value, None)

    def _pool_call(self, i: int, ctx: StepContext, args: list[Any]) -> Any:
        return _naming_node(i, _compute, self._items[i], ctx, args)

    def _side_by_side(self, calls: list[tuple[int, StepContext, list[Any]]]) -> dict[int, Any]:
        """The outputs of independent pool kernels by node, each run whole by whichever thread
        claims it, a pool thread busy with another step's work joining once it is free (the
        first failure stops the claiming, and is raised)."""
        outputs: dict[int, Any] = {}

        def run(j: int) -> None:
            i, ctx, args = calls[j]
            outputs[i] = self._pool_call(i, ctx, args)

        intra_op.parallel_for(len(calls), run, every_thread=True)  # a kernel may wait on another
        return outputs

    # -- the flat schedule ---------------------------------------------------------------------
    async def _run_inline(self, ctx: StepContext, items: list[_Item]) -> errors.OpError | None:
        state = _StepState(self, items)
        ready = deque(self._roots)
        deadline = time.perf_counter() + YIELD_INTERVAL
        while ready:
            i = ready.popleft()
            error = state.run_inline(i, ctx, ready)
            if error is not None:
                return error
            if time.perf_counter() > deadline:
                await asyncio.sleep(0)
                deadline = time.perf_counter() + YIELD_INTERVAL
        return None

    async def _run_with_tasks(
        self,
        ctx: StepContext,
        items: list[_Item],
        state: _StepState | None = None,
        ready: deque[int] | None = None,
    ) -> errors.OpError | None:
        """The flat schedule with tasks: from the start, or from ``state`` and ``ready`` (a
        step a compiled program handed over, its next node needing a task)."""
        error: errors.OpError | None = None
        if state is None or ready is None:
            state = _StepState(self, items)
            ready = deque(self._roots)
            # Inline until a node needs a task: a step whose pool kernels all turn out cheap (a
            # batch-1 MatMul) never pays for the TaskGroup and queue below.
            deadline = time.perf_counter() + YIELD_INTERVAL
            while ready:
                item = items[ready[0]]
                if item.mode == ASYNC or (item.mode == POOL and state.costly(item)):
                    break
                error = state.run_inline(ready.popleft(), ctx, ready)
                if error is not None:
                    return error
                if time.perf_counter() > deadline:
                    await asyncio.sleep(0)
                    deadline = time.perf_counter() + YIELD_INTERVAL
        if not ready:
            return None
        done: asyncio.Queue[tuple[tuple[int], Any, BaseException | None]] = asyncio.Queue()
        outstanding = 0
        tasks: set[asyncio.Task[None]] = set()
        async with asyncio.TaskGroup() as tg:
            deadline = time.perf_counter() + YIELD_INTERVAL
            while error is None:
                while ready and error is None:
                    i = ready.popleft()
                    item = items[i]
                    if item.mode == INLINE or (item.mode == POOL and not state.costly(item)):
                        error = state.run_inline(i, ctx, ready)
                        if time.perf_counter() > deadline:
                            await asyncio.sleep(0)
                            deadline = time.perf_counter() + YIELD_INTERVAL
                        continue
                    try:
                        args = state.take_inputs(item)
                    except errors.OpError as exc:
                        error = _as_op_error(exc, item.node)
                        break
                    task = tg.create_task(self._run_task(item, (i,), args, ctx, done))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    outstanding += 1
                if error is not None or outstanding == 0:
                    break
                (i,), outputs, failure = await done.get()
                outstanding -= 1
                if failure is not None:
                    error = _as_op_error(failure, items[i].node)
                else:
                    state.finish(i, outputs, ready)
            if error is not None:
                ctx.rendezvous.abort(error)  # wake this step's Recvs here and on other devices
                for task in tasks:
                    task.cancel()
        return error

    async def _run_task(
        self,
        item: _Item,
        tag: Any,
        args: list[Any],
        ctx: StepContext,
        done: asyncio.Queue[Any],
    ) -> None:
        try:
            if item.mode == ASYNC:
                out = await _compute(item, ctx, args)
            else:
                out = await self._in_pool(item, ctx, args)
        except Exception as exc:  # reported to the loop, which raises it naming the node
            done.put_nowait((tag, None, exc))
        except asyncio.CancelledError as exc:
            if not _raised_by_kernel():
                raise  # the step is being cancelled: the TaskGroup sees the task end
            # A failure of this node like any other, or the step would wait for its report
            # forever.
            done.put_nowait((tag, None, exc))
        else:
            done.put_nowait((tag, out, None))

    def _in_pool(self, item: _Item, ctx: StepContext, args: list[Any]) -> Awaitable[Any]:
        """Sync kernel ``item`` in the device's pool (``Device.run_in_pool``)."""
        if item.wants_ctx:
            return self.device.run_in_pool(item.compute, ctx, *args)
        return self.device.run_in_pool(item.compute, *args)

    # -- the frame schedule --------------------------------------------------------------------
    async def _run_frames(self, ctx: StepContext, items: list[_Item]) -> errors.OpError | None:
        run = _FrameRun(self, ctx, items)
        # Inline until a node needs a task: a step whose kernels are all cheap (a loop of scalar
        # ops) never pays for the TaskGroup and queue.
        if await self._frame_loop(run, None):
            run.done = asyncio.Queue()
            async with asyncio.TaskGroup() as tg:
                await self._frame_loop(run, tg)
                if run.error is not None:
                    ctx.rendezvous.abort(run.error)  # wake this step's Recvs here and elsewhere
                    for task in run.tasks:
                        task.cancel()
        return run.error

    async def _frame_loop(self, run: _FrameRun, tg: asyncio.TaskGroup | None) -> bool:
        """Run ready nodes and compiled loops until the step is done or fails; without ``tg``,
        stop (returning True) at the first node that needs a task, holding its inputs."""
        items = run.items
        ready = run.ready
        loops = run.loops
        if tg is not None:
            if run.held is not None:
                i, it, args = run.held
                run.held = None
                run.start_task(self, tg, i, it, args)
            run.start_requests(self, tg)
        deadline = time.perf_counter() + YIELD_INTERVAL
        while run.error is None:
            while ready:
                i, it, dead = ready.popleft()
                item = items[i]
                if dead and not item.is_transfer:
                    _clear_inputs(item, it.slots)
                    run.propagate(i, it, True, None)
                    continue
                try:
                    slots = it.slots
                    args = [slots[s] for s in item.input_slots]
                    for s in item.input_slots:
                        slots[s] = None
                    if item.derefs:
                        _deref(item, args)
                    if item.mode == INLINE or (
                        item.mode == POOL and item.cost(*args) < POOL_MIN_COST
                    ):
                        outputs = (
                            item.compute(it.ctx or run.ctx_of(it), *args)
                            if item.wants_ctx
                            else item.compute(*args)
                        )
                    elif tg is None:
                        run.held = (i, it, args)
                        return True
                    else:
                        run.start_task(self, tg, i, it, args)
                        continue
                except Exception as exc:
                    run.error = _as_op_error(exc, item.node)
                    break
                run.propagate(i, it, False, outputs)
                if time.perf_counter() > deadline:
                    await asyncio.sleep(0)
                    deadline = time.perf_counter() + YIELD_INTERVAL
            if run.error is not None:
                break
            if loops:
                turn = run.resume_loop(loops[0], deadline)
                if turn == _LOOP_SLICE:
                    await asyncio.sleep(0)  # the loop's time slice is up: let others run
                    deadline = time.perf_counter() + YIELD_INTERVAL
                    while run.outstanding and not run.done.empty():
                        run.settle(*run.done.get_nowait())
                elif turn == _LOOP_WAITS:
                    if tg is None:
                        return True
                    run.start_requests(self, tg)
                continue
            if run.outstanding == 0:
                break
            run.settle(*await run.done.get())
        return False


def _float_error_switches() -> tuple[Callable[[], Any], Callable[[Any], Any]]:
    """``(ignore, restore)``: ``ignore()`` makes numpy ignore floating-point errors in this
    context (a step's task: TensorFlow's kernels never warn, they check what they check) and
    returns what ``restore`` takes to undo it, as ``np.errstate(all="ignore")`` does on entry
    and exit. numpy 2 keeps the state in a context variable: set straight, with the state made
    once, it takes two C calls where ``errstate`` takes three Python calls and a new state
    (mlp_b1 ~5 us a run faster, tiny ~1.3 us, alternated run by run); elsewhere, ``errstate``."""
    try:
        from numpy._core import _ufunc_config

        variable = _ufunc_config._extobj_contextvar  # type: ignore[attr-defined]
        ignore_all = _ufunc_config._make_extobj(all="ignore")  # type: ignore[attr-defined]
        return functools.partial(variable.set, ignore_all), variable.reset
    except (ImportError, AttributeError, TypeError):  # numpy's internals moved: the public way

        def ignore() -> Any:
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        def restore(state: Any) -> None:
            state.__exit__(None, None, None)

        return ignore, restore


_ignore_float_errors, _restore_float_errors = _float_error_switches()


def _program_deadline() -> float:
    """When a compiled program running on the loop next yields: once YIELD_INTERVAL has passed;
    and after its next costly pool kernel too (a negative deadline: ``flat_compiler``), when
    other steps share the loop's turn. Those steps pause there as well, and the loop resumes
    them in the order they paused, so a crowd of steps of one program runs it kernel by kernel,
    each kernel for every step in a row, its code and weights still in cache (``loop_turns``,
    *Lockstep*)."""
    deadline = time.perf_counter() + YIELD_INTERVAL
    return -deadline if loop_turns.lockstep() else deadline


def _compute(item: _Item, ctx: StepContext, args: list[Any]) -> Any:
    """Call ``item``'s kernel (an async one's coroutine), ``ctx`` first when it asks."""
    return item.compute(ctx, *args) if item.wants_ctx else item.compute(*args)


def _naming_node(i: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` for node ``i`` in a pool thread (its kernel, its parts or their outputs),
    a failure, a kernel's own cancel too, raised as :class:`LoopError` naming the node."""
    try:
        return fn(*args)
    except (Exception, asyncio.CancelledError) as exc:
        raise LoopError(i) from exc


def _raised_by_kernel() -> bool:
    """Whether the ``CancelledError`` being handled came from a kernel itself (an inner task it
    awaited was cancelled), not from a cancellation of the task running it."""
    task = asyncio.current_task()
    return task is None or not task.cancelling()


def _edge_kind(consumer: _Item) -> int:
    """How an edge into ``consumer`` settles its counts (``_FrameRun.activate``)."""
    if consumer.is_merge:
        return _EDGE_MERGE
    return _EDGE_TRIGGER if consumer.is_control_trigger else _EDGE_NODE


def _deref(item: _Item, args: list[Any]) -> None:
    """Replace the ref inputs a non-ref input consumes by the variables' values."""
    for pos in item.derefs:
        src, k = item.node.inputs[pos]
        args[pos] = deref(args[pos], src if k == 0 else f"{src}:{k}")


def _take_inputs(item: _Item, slots: list[Any]) -> list[Any]:
    args = [slots[s] for s in item.input_slots]
    for s in item.input_slots:
        slots[s] = None
    if item.derefs:
        _deref(item, args)
    return args


def _traced_item(item: _Item, tracer: NodeTracer) -> _Item:
    """A copy of ``item`` whose kernel takes ``ctx`` and reports to ``ctx.stats``."""
    clone = copy.copy(item)
    clone.compute = traced_compute(item.compute, item.wants_ctx, item.mode == ASYNC, tracer)
    clone.wants_ctx = True
    return clone


def _clear_inputs(item: _Item, slots: list[Any]) -> None:
    for s in item.input_slots:
        slots[s] = None


def _other_input(
    items: list[_Item], j: int, frame_of: list[int], out: int, index: dict[str, int]
) -> str:
    """For the different-frames error: an input of node ``j`` already in another frame."""
    for src, _ in items[j].node.inputs:
        if frame_of[index[src]] != -1:
            return src
    return ""


class _StepState:
    """The per-step arrays of the flat schedule (see the module docstring)."""

    __slots__ = ("allocator", "items", "nbytes", "pending", "refs", "slots")

    def __init__(self, executor: Executor, items: list[_Item]) -> None:
        self.items = items
        self.slots: list[Any] = [None] * executor._num_slots
        self.pending = list(executor._pending0)
        self.refs = list(executor._refs0)
        self.nbytes = [0] * len(executor._refs0)
        self.allocator = executor.device.allocator

    def take_inputs(self, item: _Item) -> list[Any]:
        return _take_inputs(item, self.slots)

    def costly(self, item: _Item) -> bool:
        """Whether ``item`` is worth a thread hop: its estimated cost reaches POOL_MIN_COST."""
        slots = self.slots
        return item.cost(*[slots[s] for s in item.input_slots]) >= POOL_MIN_COST

    def run_inline(self, i: int, ctx: StepContext, ready: deque[int]) -> errors.OpError | None:
        item = self.items[i]
        try:
            args = self.take_inputs(item)
            outputs = _compute(item, ctx, args)
        except Exception as exc:
            return _as_op_error(exc, item.node)
        self.finish(i, outputs, ready)
        return None

    def finish(self, i: int, outputs: Any, ready: deque[int]) -> None:
        """Deliver node ``i``'s outputs, settle the allocator's books, and release successors."""
        item = self.items[i]
        slots = self.slots
        refs = self.refs
        nbytes = self.nbytes
        allocator = self.allocator
        n = item.num_outputs
        if n:
            values = (outputs,) if n == 1 else outputs
            base = item.out_base
            for k in range(n):
                value = values[k]
                size = getattr(value, "nbytes", 0)
                allocator.allocate(size)
                if refs[base + k] == 0:
                    allocator.deallocate(size)
                else:
                    nbytes[base + k] = size
                for s in item.out_edges[k]:
                    slots[s] = value
        for o in item.input_refs:
            refs[o] -= 1
            if refs[o] == 0:
                allocator.deallocate(nbytes[o])
        pending = self.pending
        for j in item.successors:
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)


class _Iteration:
    """One iteration of one frame execution: its pending and dead counts and input slots."""

    __slots__ = (
        "children",
        "ctx",
        "dead",
        "frame",
        "num",
        "outstanding_frames",
        "outstanding_ops",
        "pending",
        "slots",
    )

    def __init__(self, frame: _Frame, num: int, ctx: StepContext | None) -> None:
        info = frame.info
        self.frame = frame
        self.num = num
        self.ctx = ctx  # made on first use (``_FrameRun.ctx_of``): few kernels take ``ctx``
        self.pending = list(info.pending0)
        self.dead = [0] * len(info.pending0)
        self.slots: list[Any] = [None] * info.num_slots
        self.outstanding_ops = 0
        self.outstanding_frames = 0
        self.children: dict[str, _Frame | _LoopRun] = {}


class _Frame:
    """One execution of a static frame (a child frame exists per parent iteration)."""

    __slots__ = (
        "dead_exits",
        "info",
        "inv_values",
        "iteration_count",
        "iterations",
        "key",
        "next_iter_roots",
        "num_outstanding_iterations",
        "num_pending_inputs",
        "parent",
        "parent_iter",
    )

    def __init__(
        self, info: _FrameInfo, key: str, parent: _Frame | None, parent_iter: _Iteration | None
    ) -> None:
        self.info = info
        self.key = key
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations: dict[int, _Iteration] = {}
        self.iteration_count = 0
        self.num_outstanding_iterations = 1
        self.num_pending_inputs = info.num_enters
        self.next_iter_roots: list[tuple[int, Any]] = []
        self.inv_values: list[tuple[int, Any]] = []
        self.dead_exits: list[int] = []


class _LoopRun:
    """One execution of a compiled frame (``info.program``), entered from iteration ``parent``:
    the Enter values gathered so far, then the program's generator while it runs."""

    __slots__ = ("gen", "key", "name", "parent", "pending", "program", "reply", "request", "values")

    def __init__(self, program: LoopProgram, name: str, parent: _Iteration) -> None:
        self.program = program
        self.name = name
        self.parent = parent
        self.key = f"{parent.frame.key}/{parent.num}/{name}"
        self.values: list[Any] = [None] * len(program.enters)
        self.pending = len(program.enters)  # Enters still to arrive
        self.gen: LoopGenerator | None = None
        self.request: PoolRequest | None = None  # a kernel to run in the pool, then resume
        self.reply: tuple[Any] | None = None  # that kernel's outputs, to send in


class _FrameRun:
    """The frame schedule's bookkeeping for one step (TensorFlow's PropagatorState).

    ``ready``: nodes to run, with their iteration and whether they are dead. ``loops``: compiled
    frame executions ready to run (all Enters in, or a pool kernel's outputs back), first one
    running; ``requests``: those waiting for a pool kernel not yet started as a task.
    ``programs``: each static frame's program as this step found it (all None when traced).
    ``outstanding``: tasks started and not yet reported on ``done`` (made with the TaskGroup);
    ``held``: the node (and inputs) that stopped the inline prelude; ``error``: the step's
    first error.
    """

    __slots__ = (
        "ctx",
        "done",
        "error",
        "frames",
        "held",
        "items",
        "loops",
        "outstanding",
        "programs",
        "ready",
        "requests",
        "tasks",
    )

    def __init__(self, executor: Executor, ctx: StepContext, items: list[_Item]) -> None:
        self.items = items
        self.frames = executor._frames
        self.ctx = ctx
        # A traced step runs every loop node by node; a demoted program stays with its steps.
        traced = items is not executor._items
        self.programs = [None if traced else info.program for info in self.frames]
        root = _Frame(self.frames[0], "0", None, None)
        it = root.iterations[0] = _Iteration(root, 0, ctx)
        self.ready: Ready = deque((i, it, False) for i in executor._roots)
        it.outstanding_ops = len(self.ready)
        self.loops: deque[_LoopRun] = deque()
        self.requests: deque[_LoopRun] = deque()
        self.held: tuple[int, _Iteration, list[Any]] | None = None
        self.error: errors.OpError | None = None
        self.outstanding = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self.done: asyncio.Queue[tuple[_Tag, Any, BaseException | None]]

    def ctx_of(self, it: _Iteration) -> StepContext:
        """The step's context as iteration ``it``'s nodes see it (``frame_iter``)."""
        if it.ctx is None:
            it.ctx = self.ctx.for_frame(f"{it.frame.key}:{it.num}")
        return it.ctx

    def start_task(
        self, executor: Executor, tg: asyncio.TaskGroup, i: int, it: _Iteration, args: list[Any]
    ) -> None:
        item = self.items[i]
        coro = executor._run_task(item, (i, it), args, it.ctx or self.ctx_of(it), self.done)
        task = tg.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        self.outstanding += 1

    def start_requests(self, executor: Executor, tg: asyncio.TaskGroup) -> None:
        """Start the pool kernels compiled loops asked for; each loop resumes with the outputs."""
        while self.requests:
            loop = self.requests.popleft()
            assert loop.request is not None
            j, ctx, args = loop.request
            loop.request = None
            task = tg.create_task(
                executor._run_task(self.items[j], (j, loop), args, ctx, self.done)
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            self.outstanding += 1

    def settle(self, tag: _Tag, outputs: Any, failure: BaseException | None) -> None:
        """A task finished: deliver its outputs, or record its failure as the step's error."""
        self.outstanding -= 1
        i, it = tag
        if failure is not None:
            if self.error is None:
                self.error = _as_op_error(failure, self.items[i].node)
        elif self.error is None:
            if isinstance(it, _LoopRun):
                it.reply = (outputs,)
                self.loops.append(it)
            else:
                self.propagate(i, it, False, outputs)

    def resume_loop(self, loop: _LoopRun, deadline: float) -> int:
        """Run ``loops[0]`` until it finishes (``_LOOP_DONE``: its Exits delivered, or an error
        recorded), its time slice ends (``_LOOP_SLICE``) or it asks for a pool kernel
        (``_LOOP_WAITS``: it leaves ``loops`` for ``requests``)."""
        try:
            if loop.gen is None:
                loop.gen = loop.program.run(loop.values, loop.key, self.ctx, deadline)
                request = next(loop.gen)
            elif loop.reply is not None:
                (outputs,), loop.reply = loop.reply, None
                request = loop.gen.send((outputs, deadline))
            else:
                request = loop.gen.send(deadline)
        except StopIteration as stop:
            exits, _ = stop.value
            self.loops.popleft()
            self.finish_loop(loop, exits)
            return _LOOP_DONE
        except LoopError as exc:
            assert exc.__cause__ is not None
            self.error = _as_op_error(exc.__cause__, self.items[exc.index].node)
            return _LOOP_DONE
        if request is None:
            return _LOOP_SLICE
        self.loops.popleft()
        loop.request = request
        self.requests.append(loop)
        # Its kernels are big enough for the pool: from the next step on, the frame runs node by
        # node, so that its iterations can overlap there (parallel_iterations).
        self.frames[loop.program.frame].program = None
        return _LOOP_WAITS

    def enter_loop(self, item: _Item, it: _Iteration, program: LoopProgram, value: Any) -> None:
        """An Enter into a compiled frame arrived; the last one queues the loop."""
        name = self.frames[program.frame].name
        loop = it.children.get(name)
        if loop is None:
            loop = it.children[name] = _LoopRun(program, name, it)
            it.outstanding_frames += 1
        assert isinstance(loop, _LoopRun)
        loop.values[item.enter_pos] = value
        loop.pending -= 1
        if loop.pending == 0:
            self.loops.append(loop)

    def finish_loop(self, loop: _LoopRun, exits: list[tuple[int, Any]]) -> None:
        """A compiled frame returned: its Exits reach the parent iteration, as at frame deletion."""
        parent_it = loop.parent
        for j, value in exits:
            dead = value is DEAD
            parent_it.outstanding_ops += self.activate(
                self.items[j], parent_it, dead, None if dead else (value,)
            )
        del parent_it.children[loop.name]
        parent_it.outstanding_frames -= 1
        if parent_it.outstanding_ops == 0:
            self.cleanup(parent_it.frame, parent_it)

    def propagate(self, i: int, it: _Iteration, is_dead: bool, outputs: Any) -> None:
        """Deliver node ``i``'s outputs (all dead when ``is_dead``) and settle the books."""
        item = self.items[i]
        n = item.num_outputs
        values = None if is_dead else (outputs,) if n == 1 else outputs
        kind = item.kind
        if kind == NORMAL:
            it.outstanding_ops += self.activate(item, it, is_dead, values) - 1
            if it.outstanding_ops == 0:
                self.cleanup(it.frame, it)
            return
        frame = it.frame
        if kind == ENTER:
            program = self.programs[item.target_frame]
            if program is not None:
                self.enter_loop(item, it, program, DEAD if values is None else values[0])
                self.adjust(it, -1)
                return
            child = self.child_frame(it, item)
            if item.is_constant_enter:
                value = DEAD if values is None else values[0]
                child.inv_values.append((i, value))
                for child_it in list(child.iterations.values()):
                    self.adjust(child_it, self.activate(item, child_it, value is DEAD, (value,)))
            else:
                child_it = child.iterations[0]
                self.adjust(child_it, self.activate(item, child_it, is_dead, values))
            child.num_pending_inputs -= 1
            if child.num_pending_inputs == 0:
                self.cleanup(child, child.iterations[0])
        elif kind == EXIT:
            if values is None or values[0] is DEAD:
                if it.num == frame.iteration_count:
                    frame.dead_exits.append(i)
            else:
                assert frame.parent_iter is not None
                parent_it = frame.parent_iter
                parent_it.outstanding_ops += self.activate(item, parent_it, False, values)
        elif values is not None and values[0] is not DEAD:  # a live NextIteration
            if it.num == frame.iteration_count:
                if frame.num_outstanding_iterations == frame.info.parallel_iterations:
                    frame.next_iter_roots.append((i, values[0]))
                else:
                    next_it = self.next_iteration(frame)
                    self.adjust(next_it, self.activate(item, next_it, False, values))
            else:
                next_it = frame.iterations[it.num + 1]
                self.adjust(next_it, self.activate(item, next_it, False, values))
        self.adjust(it, -1)

    def activate(self, item: _Item, it: _Iteration, is_dead: bool, values: Any) -> int:
        """Deliver ``values`` along ``item``'s edges into ``it``; how many nodes became ready."""
        pending = it.pending
        dead = it.dead
        slots = it.slots
        ready = self.ready
        activated = 0
        for k, j, slot, d, edge in item.data_edges:
            value = DEAD if values is None else values[k]
            if edge == _EDGE_MERGE:
                if value is not DEAD:
                    slots[slot] = value
                    count = pending[d]
                    pending[d] = count & ~1
                    if count == 1:
                        ready.append((j, it, False))
                        activated += 1
                else:
                    dead[d] += 1
                    dst_dead = dead[d] == self.items[j].num_data_inputs or item.kind == ENTER
                    if dst_dead and pending[d] == 1:
                        ready.append((j, it, True))
                        activated += 1
            else:
                slots[slot] = value
                if value is DEAD:
                    dead[d] += 1
                count = pending[d] - 1
                pending[d] = count
                if count == 0:
                    ready.append((j, it, dead[d] > 0 and edge != _EDGE_TRIGGER))
                    activated += 1
        for j, d, edge in item.control_plan:
            if edge == _EDGE_MERGE:
                pending[d] -= 2
                count = pending[d]
                dst_dead = dead[d] == self.items[j].num_data_inputs
                if count == 0 or (count == 1 and dst_dead):
                    ready.append((j, it, dst_dead))
                    activated += 1
            else:
                if is_dead:
                    dead[d] += 1
                count = pending[d] - 1
                pending[d] = count
                if count == 0:
                    ready.append((j, it, dead[d] > 0 and edge != _EDGE_TRIGGER))
                    activated += 1
        return activated

    def adjust(self, it: _Iteration, delta: int) -> None:
        it.outstanding_ops += delta
        if it.outstanding_ops == 0:
            self.cleanup(it.frame, it)

    def child_frame(self, it: _Iteration, item: _Item) -> _Frame:
        """The execution of the frame ``item`` (an Enter) enters, from iteration ``it``."""
        info = self.frames[item.target_frame]
        name = info.name
        child = it.children.get(name)
        if child is None:
            key = f"{it.frame.key}/{it.num}/{name}"
            child = _Frame(info, key, it.frame, it)
            child.iterations[0] = _Iteration(child, 0, None)
            it.children[name] = child
            it.outstanding_frames += 1
        assert isinstance(child, _Frame)
        return child

    def next_iteration(self, frame: _Frame) -> _Iteration:
        """Start iteration ``iteration_count + 1`` of ``frame``, with its parked inputs."""
        frame.iteration_count += 1
        num = frame.iteration_count
        it = frame.iterations[num] = _Iteration(frame, num, None)
        frame.num_outstanding_iterations += 1
        frame.dead_exits.clear()
        roots, frame.next_iter_roots = frame.next_iter_roots, []
        activated = 0
        for i, value in roots:
            activated += self.activate(self.items[i], it, False, (value,))
        for i, value in frame.inv_values:
            activated += self.activate(self.items[i], it, value is DEAD, (value,))
        it.outstanding_ops += activated
        return it

    def cleanup(self, frame: _Frame, it: _Iteration) -> None:
        """Retire finished iterations from ``it`` on; delete ``frame`` when it is done."""
        num = it.num
        while num <= frame.iteration_count and self._iteration_done(frame, it):
            del frame.iterations[num]
            frame.num_outstanding_iterations -= 1
            num += 1
            if frame.next_iter_roots:
                self.next_iteration(frame)
            if num > frame.iteration_count:
                break
            it = frame.iterations[num]
        if (
            frame.parent is not None
            and frame.num_pending_inputs == 0
            and frame.num_outstanding_iterations == 0
        ):
            self.delete_frame(frame)

    @staticmethod
    def _iteration_done(frame: _Frame, it: _Iteration) -> bool:
        if it.outstanding_ops or it.outstanding_frames:
            return False
        if it.num == 0:
            return frame.num_pending_inputs == 0
        return it.num - 1 not in frame.iterations

    def delete_frame(self, frame: _Frame) -> None:
        """Frame done: its last iteration's dead Exits reach the parent; the parent may finish."""
        parent, parent_it = frame.parent, frame.parent_iter
        assert parent is not None and parent_it is not None
        for i in frame.dead_exits:
            parent_it.outstanding_ops += self.activate(self.items[i], parent_it, True, None)
        frame.dead_exits.clear()
        del parent_it.children[frame.info.name]
        parent_it.outstanding_frames -= 1
        if parent_it.outstanding_ops == 0:
            self.cleanup(parent, parent_it)


def _as_op_error(exc: BaseException, node: Node) -> errors.OpError:
    """``exc`` as the matching ``aiotf.errors`` class, naming ``node``."""
    if isinstance(exc, errors.OpError) and exc.node_def is not None:
        return exc  # already names its node (e.g. another partition's error, via the rendezvous)
    if isinstance(exc, errors.OpError):
        cls: type[errors.OpError] = type(exc)
        message = exc.message
    elif isinstance(exc, asyncio.CancelledError):
        cls, message = errors.CancelledError, "The kernel was cancelled (it raised CancelledError)"
    elif isinstance(exc, MemoryError):
        cls, message = errors.ResourceExhaustedError, f"OOM: {exc}"
    elif isinstance(exc, ValueError | TypeError | IndexError | ZeroDivisionError | OverflowError):
        cls, message = errors.InvalidArgumentError, f"{type(exc).__name__}: {exc}"
    else:
        cls, message = errors.InternalError, f"{type(exc).__name__}: {exc}"
    if "{{node " not in message:
        message = f"{message}\n\t [[{{{{node {node.name}}}}}]]"
    err = cls(node.to_node_def(), None, message)
    err.__cause__ = exc if exc is not err else None
    return err
