"""Compiled flat schedules: a partition without control flow run as straight-line Python.

Why. The executor's flat schedule (``runtime/executor.py``) interprets the graph: every node pops
a ready entry, takes its inputs from the step's slots, keeps the allocator's books and walks its
out-edges decrementing pending counts. That is a couple of microseconds a node, several times
the cost of a numpy call on a small array. For a partition whose kernels are all synchronous,
the order is known in advance, so this module writes it out as one Python generator function
whose locals are the graph's tensors: a node costs its kernel call, and a Const nothing.

Which partitions compile (:func:`compile_flat`): no control flow (the executor's ``_flat``), every
kernel synchronous and on this device (no async kernel, no ``_Send``/``_Recv``), the graph
acyclic, and at most ``MAX_COMPILED_NODES`` nodes (bigger ones would take longer to compile
than they save).

What the program computes is what the flat schedule computes, in the same order (Kahn's
algorithm with a FIFO queue from the roots, as the schedule's ready queue when every kernel
runs inline):

- A Const's value is made once, when the program is compiled (the kernel returns the same
  read-only array on every call). Every other node calls its kernel, ``ctx`` first when it asks,
  with ref inputs dereferenced as the executor does (``loop_compiler.deref``), or its ``fast``
  function if it was registered with one (``loop_compiler.kernel_call``).
- A value is dropped after its last consumer (``del``), so a long chain holds no more live
  tensors than the interpreter does. That last consumer, when its kernel has a ``forward``
  function (BiasAdd, Relu: TensorFlow's ``forward_input_or_allocate_output``), computes into the
  value's own buffer if the array turns out to be the program's alone (``_sole``: not fetched,
  fed, viewed or held anywhere else) and has at least FORWARD_MIN elements; an MLP's bias and
  Relu then write over the product they read instead of into fresh memory (mlp: ~25 µs a run
  of ~1.1-1.4 ms, alternated).
- A pool kernel (registered ``expensive``) is called inline while its cost estimate stays below
  ``POOL_MIN_COST`` (``loop_compiler.cost_gate``; its verdicts kept in ``state`` from run to
  run). From ``POOL_MIN_COST`` up, what happens depends on the partition's shape:

  - *Grouped*: the pool kernels are cut into groups, each kernel's group one after the latest
    group among its pool ancestors (:func:`_pool_groups`): an MLP or a CNN is groups of one,
    sixteen MatMuls and their AddN a group of sixteen, then one; a ResNet block's shortcut
    convolution joins the group of the main branch's first. The program yields
    ``(node, ctx, inputs)`` for a kernel, or a list of them for a group; the executor moves the
    rest of the step into a pool thread, where it answers every later request there: a kernel
    by calling it, each big one still splitting its work over the pool's idle threads
    (``devices/intra_op.py``), a group by running its kernels whole on this thread and the idle
    ones, each taking the next (``intra_op.parallel_for``). One thread hop per step instead of
    two per pool kernel; wide16 went from 27.6-28.3 to 24.1-25.3 ms a step in an A/B against
    the handover below (its start, the hops between the products and the AddN's two hops were
    ~1.5 ms of loop and thread hand-offs), a ResNet-style block 8-14% faster.
  - A kernel may wait in its group for one of the group before that it does not need (``x ->
    a -> c`` beside ``x -> b``: groups ``{a, b}``, ``{c}``). A ``py_func`` must not (it may
    wait for a sibling: run before that sibling's group, it would wait for ever), so a step
    where one would is handed over: the program yields the kernel's position in the order and
    its locals, and the executor carries on interpreting the step from there
    (``FlatProgram.outputs``), so that each pool kernel starts as soon as its inputs are
    ready; the partition is interpreted from then on.
- The device allocator's books are not kept (the interpreted schedules keep them).
- Python compiles each *shape* of part once (``_canonical``): parts that differ only in their
  nodes' names, indices and kernels (a chain's, a stack of layers') share one code object, each
  with its own globals. A 10,000-node chain's executor was built in 195-232 µs a node instead
  of 281-307, most of which had been Python's compiler.

The generator's protocol with the executor (as a compiled loop's, ``loop_compiler.py``): it yields
``None`` once ``deadline`` (a ``time.perf_counter`` value) has passed, and the executor yields to
the event loop (or, in a pool thread, checks that the step is still wanted) and sends the next
deadline in. A negative deadline ``-d`` is a step in lockstep (``runtime/loop_turns.py``): it
yields after its next costly pool kernel (any but an elementwise one), and otherwise once ``d``
has passed. A grouped program yields ``(node, ctx, inputs)`` for a pool kernel and is sent
``[outputs]`` (a box it empties, so that nothing else holds them), or a list of those for a
group and is sent ``[{node: outputs}]``; another yields ``(position, locals())`` to hand the
step over and is never resumed after that; it returns None when the
step is done. A kernel's exception comes out as :class:`LoopError` naming the node.
"""

from __future__ import annotations

import ast
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from types import CodeType, FunctionType
from typing import Any

import numpy as np

from aiotf.kernels.registry import POOL_MIN_COST, elementwise_cost
from aiotf.runtime.loop_compiler import (
    ELEMENTWISE_LIMIT,
    LoopError,
    LoopItem,
    cost_gate,
    deref,
    kernel_call,
)

MAX_COMPILED_NODES = 1 << 14  # a bigger partition is interpreted (compiling: ~40 us a node)
# Python's compiler holds the GIL and takes ~40 us a node: the program is compiled in parts of
# this many nodes, so that a build in a worker thread lets the event loop run between them.
PART_NODES = 64
# The program checks the clock once this much kernel work has run since the last check: a plain
# (cheap) kernel counts 1, an elementwise pool kernel (run inline below ELEMENTWISE_LIMIT
# elements) POOLED_WORK. And after each other pool kernel (a product, a convolution: run inline
# up to POOL_MIN_COST, ~260 us): there a step in lockstep pauses (the protocol, above), and
# the steps crowded with it run the same kernel, its weights in cache, before any runs the next.
# A pause costs ~2 us (the Task resuming the run's coroutines); after small elementwise kernels
# it bought nothing (256 runs of x + 1).
YIELD_EVERY = 16
POOLED_WORK = 4
# The fewest elements a kernel's input must have to be written over (``forward``): below, the
# check costs about what a fresh array does (mlp_b1's rows of 512: ~2 µs a run slower with it).
FORWARD_MIN = 4096
# The test of a check that only the time slice ends: ``_clock() > abs(deadline)`` (the
# protocol), with one clock read and no call while the slice lasts (most checks, in a chain).
_SLICE_OVER = "_clock() > deadline and _clock() > -deadline"

Handover = tuple[int, dict[str, Any]]  # (position in the order, the program's locals)
PoolCall = tuple[int, Any, list[Any]]  # (node, ctx, inputs): run it in the pool, send outputs
# A group's calls: run them side by side, send ``[{node: outputs}]``
FlatGenerator = Generator[Handover | PoolCall | list[PoolCall] | None, Any, None]


class FlatProgram:
    """One compiled partition: ``run(ctx, deadline)`` runs one step of it.

    ``order`` is the node order it runs; ``consts`` the Consts' values (made once); ``grouped``
    says how it asks for the pool (see the module docstring); ``state`` holds, per pool kernel,
    the key of its last cost estimate and the verdict (``loop_compiler.cost_gate``; shared by
    concurrent steps: both are plain facts about inputs); ``parts`` each part's first position
    in the order and the names its compiled code gives the source's (``_canonical``).
    """

    __slots__ = ("consts", "grouped", "num_outputs", "order", "parts", "run", "source", "state")

    def __init__(
        self,
        run: Callable[[Any, float], FlatGenerator],
        source: str,
        order: list[int],
        num_outputs: list[int],
        consts: dict[str, Any],
        state: dict[int, Any],
        grouped: bool,
        parts: list[tuple[int, dict[str, str]]],
    ) -> None:
        self.run = run
        self.source = source
        self.order = order
        self.num_outputs = num_outputs
        self.consts = consts
        self.state = state
        self.grouped = grouped
        self.parts = parts

    def outputs(self, frame_locals: dict[str, Any], position: int) -> Iterator[tuple[int, Any]]:
        """``(node, outputs)`` for the nodes a handed-over step ran (``order[:position]``), as
        the executor delivers them (one value, a tuple of them, or None), from the locals of
        the part that handed it over; a value no node still to run reads was dropped, and is
        None here."""
        renamed = next(names for start, names in reversed(self.parts) if start <= position)
        for i in self.order[:position]:
            n = self.num_outputs[i]
            values = []
            for k in range(n):
                name = f"v{i}_{k}"
                values.append(frame_locals.get(renamed.get(name, name), self.consts.get(name)))
            yield i, (values[0] if n == 1 else tuple(values) if n else None)


def compile_flat(items: Sequence[LoopItem], roots: Sequence[int]) -> FlatProgram | None:
    """The program of a flat partition (the module docstring says which compile), else None."""
    if len(items) > MAX_COMPILED_NODES or not all(item.sync for item in items):
        return None
    order = _order(items, roots)
    if order is None:
        return None
    grouped = _pool_groups(items, order)
    if grouped is None:
        return _Codegen(items, order, None).program()
    return _Codegen(items, *grouped).program()


def _order(items: Sequence[LoopItem], roots: Sequence[int]) -> list[int] | None:
    """The flat schedule's order when every kernel runs inline (None: a cycle)."""
    pending = [0] * len(items)
    for item in items:
        for j in item.successors:
            pending[j] += 1
    ready = deque(roots)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for j in items[i].successors:
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)
    return order if len(order) == len(items) else None


# Kernels that run a user's Python, which may wait for another kernel of the same step.
_MAY_WAIT = frozenset({"PyFunc", "PyFuncStateless"})


def _pool_groups(
    items: Sequence[LoopItem], order: list[int]
) -> tuple[list[int], list[list[int]]] | None:
    """The pool kernels in groups to run one after another, and ``order`` rearranged so that
    each group's members sit together; None when the step must be handed over instead.

    A pool kernel's group is one more than the latest group among its pool ancestors (0 for
    none), so no kernel depends on another of its group, and each depends on one of the group
    before. A chain of groups is *exact* when every kernel depends on every kernel of the group
    before (mlp's MatMuls: groups of one; wide16's sixteen MatMuls: one group, then the AddN):
    run group after group, nothing can start sooner than in the flat schedule. Otherwise
    (``x -> a -> c`` beside ``x -> b``: groups ``{a, b}``, ``{c}``) ``c`` waits for ``b`` for
    nothing; but the flat schedule that would start it sooner pays a task and a thread hop per
    pool kernel, and a kernel started beside another cannot split its work over the pool.
    That cost more on every graph measured, alternated in one process: ResNet-style bottleneck
    blocks with a projection shortcut (batch 1-8, 14x14 to 56x56) 10-19%, chains of four or
    eight MatMuls beside a bigger one 6-13%; a kernel that cannot split (an elementwise op on
    36M floats) beside a chain of eight, the chain waiting for it: within 5%. So the groups
    are kept, unless one holds a kernel that runs a user's Python (``_MAY_WAIT``): a
    ``py_func`` may wait for a sibling, and must not run before a sibling of a later group.

    One pass, in ``order``. What a node depends on is summed up by ``level``, the latest group
    holding one of its pool ancestors (-1: none), and ``members``, a bit mask of the members of
    that group among them: all that exactness needs, checked once the groups are complete.
    (Masks over all the pool kernels took 48 ms for a chain of 10,000, growing as its square.)
    """
    level = [-1] * len(items)
    members = [0] * len(items)
    groups: list[list[int]] = []
    before: list[tuple[int, int]] = []  # per pool kernel: its group, and its mask of the last
    # (the members of the group before its own that it depends on)
    for i in order:
        item = items[i]
        if item.pooled:
            g = level[i] + 1
            if g == len(groups):
                groups.append([])
            before.append((g, members[i]))
            level[i], members[i] = g, 1 << len(groups[g])
            groups[g].append(i)
        for j in item.successors:
            if level[i] > level[j]:
                level[j], members[j] = level[i], members[i]
            elif level[i] == level[j]:
                members[j] |= members[i]
    exact = all(g == 0 or mask == (1 << len(groups[g - 1])) - 1 for g, mask in before)
    if not exact and any(items[i].node.op in _MAY_WAIT for group in groups for i in group):
        return None
    return _gathered(items, order, groups, level), groups


def _gathered(
    items: Sequence[LoopItem], order: list[int], groups: list[list[int]], level: list[int]
) -> list[int]:
    """``order`` with the groups one after another, each group's members together (see
    _pool_groups), and every other node between two groups: one that reads a pool kernel's
    output right after the last group it reads from (``level``), freeing what it reads as the
    flat schedule would; one that does not just before the first group that reads it, through
    any path (after the last group when none does), so that it runs in the step's pool thread
    unless a pool kernel needs it first. Nodes placed alike keep their places in ``order``.
    """
    place = [0] * len(items)  # group g at 2g + 1, the other nodes at even places
    for i in order:
        if items[i].pooled:
            place[i] = 2 * level[i] + 1
        elif level[i] >= 0:
            place[i] = 2 * level[i] + 2
    for i in reversed(order):
        if level[i] < 0 and not items[i].pooled:  # as late as all that read it allow
            place[i] = min(
                (place[j] - 1 if items[j].pooled else place[j] for j in items[i].successors),
                default=2 * len(groups),
            )
    return sorted(order, key=place.__getitem__)  # stable: ``order`` within a place


class _Codegen:
    """The source of one partition's generator function, and its compiled form."""

    def __init__(
        self, items: Sequence[LoopItem], order: list[int], groups: list[list[int]] | None
    ) -> None:
        self.items = items
        self.order = order
        self.grouped = groups is not None  # else the step is handed over at a pool kernel
        # pool kernels run side by side, by their first member (their places in the order)
        self.groups = {g[0]: g for g in groups or () if len(g) > 1}
        self.in_group = {i for g in self.groups.values() for i in g[1:]}
        self.index = {item.node.name: i for i, item in enumerate(items)}
        self.names: dict[str, Any] = {
            "LoopError": LoopError,
            "_clock": time.perf_counter,
            "_deref": deref,
            "_sole": _sole,
            "_FORWARD_MIN": FORWARD_MIN,
            "_POOL_MIN_COST": POOL_MIN_COST,
            "_SIZE": ELEMENTWISE_LIMIT,
        }
        self.lines: list[str] = []  # the part being written
        self.line_nodes: list[int] = []  # the node each of its lines belongs to
        self.lifetimes = self._lifetimes()
        self.last_use = self._last_uses()
        self.work = 0  # kernel work since the last deadline check (YIELD_EVERY)
        self.position = 0  # of the node being written, in the order

    def program(self) -> FlatProgram:
        """Compile the order in parts of PART_NODES nodes (see PART_NODES), and a driver
        ``flat`` that runs them one after another, passing the values still live from part to
        part."""
        state: dict[int, Any] = {}
        self.names["state"] = state
        shared = dict(self.names)  # what every part reads under its own name
        codes: dict[str, CodeType] = {}  # each shape of part, compiled once
        driver = ["def flat(ctx, deadline):"]
        sources = []
        parts: list[tuple[int, dict[str, str]]] = []  # each part's start, its names renamed
        live_in: list[str] = []
        for part, (start, end) in enumerate(self._parts()):
            source, live_out = self._part(part, start, end, live_in)
            function, renamed = self._function(part, source, shared, codes)
            self.names[f"part_{part}"] = function
            parts.append((start, renamed))
            sources.append(source)
            time.sleep(0)  # a chance for the event loop's thread to take the GIL
            args = "".join(f", {v}" for v in live_in)
            outs = f"({''.join(f'{v}, ' for v in live_out)})" if live_out else "_"
            driver.append(f"    deadline, {outs} = yield from part_{part}(ctx, deadline{args})")
            live_in = live_out
        sources.append("\n".join(driver) + "\n")
        exec(compile(sources[-1], "<aiotf flat partition>", "exec"), self.names)
        consts = {name: v for name, v in self.names.items() if name.startswith("v")}
        num_outputs = [item.num_outputs for item in self.items]
        return FlatProgram(
            self.names["flat"], "".join(sources), self.order, num_outputs, consts, state,
            self.grouped, parts,
        )  # fmt: skip

    def _function(
        self, part: int, source: str, shared: dict[str, Any], codes: dict[str, CodeType]
    ) -> tuple[Callable[..., FlatGenerator], dict[str, str]]:
        """Part ``part``'s generator function from its ``source``, compiled only if no part of
        the same shape was (see _canonical), and how its names were renamed."""
        canonical, renamed = _canonical(source)
        code = codes.get(canonical)
        if code is None:
            module: dict[str, Any] = {}
            exec(compile(canonical, "<aiotf flat partition>", "exec"), module)
            code = codes[canonical] = module[renamed[f"part_{part}"]].__code__
        scope = dict(shared)
        for token, name in renamed.items():
            if token in self.names:  # a kernel, a Const's value, the line-to-node map
                scope[name] = self.names[token]
            elif token.isdigit():  # a node's index or position
                scope[name] = int(token)
            elif not token[0].isalpha():  # a ref's source, a decimal
                scope[name] = ast.literal_eval(token)
        label = f"<aiotf flat partition, part {part}>"
        code = code.replace(co_name=f"part_{part}", co_qualname=f"part_{part}", co_filename=label)
        return FunctionType(code, scope, f"part_{part}"), renamed

    def _parts(self) -> Iterator[tuple[int, int]]:
        """Ranges of about PART_NODES positions of the order, none splitting a group."""
        start, n = 0, len(self.order)
        while start < n:
            end = min(start + PART_NODES, n)
            while end < n and self.order[end] in self.in_group:
                end += 1
            yield start, end
            start = end

    def _part(self, part: int, start: int, end: int, live_in: list[str]) -> tuple[str, list[str]]:
        """The source of part ``part`` (``order[start:end]``), a generator function that takes
        the values ``live_in`` and returns ``(deadline, values live after it)``."""
        self.lines, self.line_nodes = [], []
        emit = self._emit
        emit(0, f"def part_{part}(ctx, deadline{''.join(f', {v}' for v in live_in)}):")
        emit(1, "q = state")
        emit(1, "try:")
        for position in range(start, end):
            self.position = position
            self._node(self.order[position], position)
        if end < len(self.order):
            emit(2, f"if {_SLICE_OVER}: deadline = yield None")  # a generator, too
        else:  # the step ends here: nothing to yield for (a crowded step would pause in vain)
            emit(2, "if False: yield None")  # a generator all the same
        emit(1, "except Exception as exc:")
        emit(2, f"raise LoopError(_nodes_{part}[exc.__traceback__.tb_lineno]) from exc")
        made_here = [
            f"v{self.order[p]}_{k}" for p in range(start, end) for k in range(self._outputs_of(p))
        ]
        live_out = [  # the values read after ``end``, consts (global names) aside
            name
            for name in [*live_in, *made_here]
            if self.lifetimes[name][1] >= end and name not in self.names
        ]
        emit(1, f"return deadline, ({''.join(f'{v}, ' for v in live_out)})")
        self.names[f"_nodes_{part}"] = [-1, *self.line_nodes]  # line numbers count from 1
        return "\n".join(self.lines) + "\n", live_out

    def _emit(self, indent: int, line: str, node: int = -1) -> None:
        self.lines.append("    " * indent + line)
        self.line_nodes.append(node)

    def _outputs_of(self, position: int) -> int:
        return self.items[self.order[position]].num_outputs

    def _lifetimes(self) -> dict[str, tuple[int, int]]:
        """Each value's positions in the order: where it is made, and its last reader's (an
        output nothing reads dies where it is made)."""
        lifetimes: dict[str, tuple[int, int]] = {}
        for position, i in enumerate(self.order):
            item = self.items[i]
            for k in range(item.num_outputs):
                lifetimes[f"v{i}_{k}"] = (position, position)
            for src, k in item.node.inputs:
                name = f"v{self.index[src]}_{k}"
                lifetimes[name] = (lifetimes[name][0], position)
        return lifetimes

    def _last_uses(self) -> dict[int, list[str]]:
        """For each position in the order, the values no later node reads."""
        dying: dict[int, list[str]] = {}
        for name, (_, last) in self.lifetimes.items():
            dying.setdefault(last, []).append(name)
        return dying

    def _node(self, i: int, position: int) -> None:
        if i in self.in_group:
            return  # written with its group's first member
        item = self.items[i]
        group = self.groups.get(i)
        if group is not None:
            self._group(group)  # a comment for each member
        else:
            self._emit(2, f"# {item.node.name!r} ({item.node.op})")
            if _is_const(item):
                self.names[f"v{i}_0"] = item.compute()  # the same read-only array on every call
            else:
                self._call(i)
        positions = range(position, position + (len(group) if group else 1))
        dying = [
            name for p in positions for name in self.last_use.get(p, ()) if name not in self.names
        ]
        if dying:
            self._emit(2, f"del {', '.join(dying)}")

    def _call(self, i: int) -> None:
        """Node ``i``'s kernel call, its ref inputs dereferenced, then maybe a deadline check."""
        item = self.items[i]
        data = self._inputs(i)
        forward = self._forwards(i, data)
        if not item.pooled:
            for line in self._calls(i, data, forward):
                self._emit(2, line, i)
            self.work += 0 if item.wants_ctx else 1  # _Arg, _Retval, variables: no work
        else:
            self._inline_when_cheap(i, data, forward)
            if self.grouped:  # the executor runs it in the pool, and the rest of the step there
                take = f"{self._target(i) or '_ = '}box.pop()"
                self._emit(2, f"else: box = yield ({i}, ctx, [{', '.join(data)}]); {take}", i)
            else:  # hand the step over
                self._emit(2, f"else: yield ({self.position}, locals())", i)
            self.work += POOLED_WORK
        self._check_deadline(i, item.pooled and _costly(item))

    def _group(self, group: list[int]) -> None:
        """Pool kernels side by side: each too cheap for the pool runs inline, the others are
        asked for together as a list ``[(node, ctx, inputs), ...]``, and the executor sends back
        ``[{node: outputs}]`` (a box the program empties, as for one kernel)."""
        self._emit(2, "grp = []")
        for i in group:
            item = self.items[i]
            self._emit(2, f"# {item.node.name!r} ({item.node.op}), side by side", i)
            data = self._inputs(i)
            self._inline_when_cheap(i, data)
            self._emit(2, f"else: grp.append(({i}, ctx, [{', '.join(data)}]))", i)
        self._emit(2, "if grp:")
        self._emit(3, "box = yield grp; got = box.pop(); del grp")
        for i in group:
            if self.items[i].num_outputs:
                self._emit(3, f"if {i} in got: {self._target(i)}got[{i}]", i)
        self._emit(3, "del got")
        self.work += POOLED_WORK * len(group)
        self._check_deadline(group[-1], any(_costly(self.items[i]) for i in group))

    def _calls(self, i: int, data: list[str], forward: bool = False) -> list[str]:
        """The statements that call node ``i``'s kernel on ``data`` (``loop_compiler.kernel_call``);
        with ``forward``, into its first input's buffer when that array is the program's alone
        (``_sole``; see ``_forwards``)."""
        item = self.items[i]
        args = ", ".join((["ctx"] if item.wants_ctx else []) + data)
        calls = kernel_call(i, item, self._target(i), args, self.names)  # names k<i>, f<i>
        if not forward:
            return calls
        self.names[f"w{i}"] = item.forward
        first, target = data[0], self._target(i)
        other = f"k{i}" if item.fast is None else f"f{i}"  # no ctx here: kernel_call's choice
        return [
            f"try: {target}w{i}({args}) if {first}.size >= _FORWARD_MIN and _sole({first}) "
            f"else {other}({args})",
            f"except Exception: {target}k{i}({args})",  # not an array, or the kernel's error
        ]

    def _forwards(self, i: int, data: list[str]) -> bool:
        """Whether node ``i`` may compute into its first input's buffer: it has a ``forward``
        function and reads that value for the last time, once, as a value the program made (not
        a Const, nor a variable's buffer). ``_sole`` decides at run time whether the array is
        the program's alone (a fetched value, a feed, a view's base are held elsewhere too)."""
        item = self.items[i]
        if item.forward is None or item.wants_ctx or not data or 0 in item.derefs:
            return False
        first = data[0]
        return (
            first not in self.names
            and data.count(first) == 1
            and first in self.last_use.get(self.position, ())
        )

    def _inline_when_cheap(self, i: int, data: list[str], forward: bool = False) -> None:
        """Pool kernel ``i``'s cost gate and, under ``if``, its call inline (``forward``: see
        ``_calls``); the caller writes the ``else:`` (the pool)."""
        lines, gate = cost_gate(i, self.items[i], data, self.names, self.names)
        calls = self._calls(i, data, forward)
        for line in [*lines, f"if {gate}:", *(f"    {c}" for c in calls)]:
            self._emit(2, line, i)

    def _inputs(self, i: int) -> list[str]:
        """The names of node ``i``'s inputs, its ref inputs dereferenced first (``t<pos>``)."""
        node = self.items[i].node
        data = [f"v{self.index[src]}_{k}" for src, k in node.inputs]
        for pos in self.items[i].derefs:
            src, k = node.inputs[pos]
            self._emit(2, f"t{pos} = _deref({data[pos]}, {(src if k == 0 else f'{src}:{k}')!r})", i)
            data[pos] = f"t{pos}"
        return data

    def _target(self, i: int) -> str:
        """``"v<i>_0 = "``, ``"v<i>_0, v<i>_1, = "`` or "" (no outputs): what node ``i`` sets."""
        outs = [f"v{i}_{k}" for k in range(self.items[i].num_outputs)]
        return f"{', '.join(outs)}{',' if len(outs) > 1 else ''} = " if outs else ""

    def _check_deadline(self, i: int, costly: bool = False) -> None:
        """After node ``i``: a check of the time slice, once YIELD_EVERY work has run since the
        last; after a costly pool kernel, one that a step in lockstep pauses at as well."""
        if costly:
            self.work = 0
            self._emit(2, "if _clock() > deadline: deadline = yield None", i)
        elif self.work >= YIELD_EVERY:
            self.work = 0
            self._emit(2, f"if {_SLICE_OVER}: deadline = yield None", i)


# What differs between two parts of the same shape (a chain's, a stack of layers'): their values',
# kernels' (``k``, ``f``, ``c``, ``w``: kernel_call, cost_gate, _calls) and own names, the nodes'
# indices and positions, the refs' sources, and the comments. Python's compiler takes ~20 us a
# line of generated code (~100-130 us a node), about half of building a 10,000-node chain's
# executor, so a part is compiled once per shape. One group, so that ``split`` keeps each token
# between the text around it: a split and a loop over the tokens take half the time of ``sub``
# calling back for each match.
_TOKEN = re.compile(
    r"(#[^\n]*|'[^'\n]*'|\"[^\"\n]*\"|\b(?:[vkfcw]\d+(?:_\d+)?|_nodes_\d+|part_\d+|\d+(?:\.\d+)?)\b)"
)


def _canonical(source: str) -> tuple[str, dict[str, str]]:
    """``source`` with every token ``_TOKEN`` matches renamed ``_q0``, ``_q1``, ... in the
    order each first appears (comments emptied), and the new name of each token. Two parts of
    the same shape come out the same; the names stand for locals (the values a part makes or
    takes) or, set in the part's globals, for what the tokens were."""
    renamed: dict[str, str] = {}
    pieces = _TOKEN.split(source)  # text, token, text, ..., text
    for j in range(1, len(pieces), 2):
        token = pieces[j]
        if token[0] == "#":
            pieces[j] = "#"
            continue
        name = renamed.get(token)
        if name is None:
            name = renamed[token] = f"_q{len(renamed)}"
        pieces[j] = name
    return "".join(pieces), renamed


def _sole(x: Any) -> bool:
    """Whether ``x``, a value a compiled program is about to read for the last time, is an
    array that program alone holds: one owning its memory (no view, so no other array shares
    it), writable, and referenced by nothing but the program's own local (a fetched value is in
    the step's retvals too, a feed in its args, a view's base in the view). Call it only as
    ``_sole(local)`` from generated code: the count it expects is that call's."""
    return (
        type(x) is np.ndarray
        and sys.getrefcount(x) == _SOLE_REFS
        and x.base is None
        and x.flags.writeable
    )


def _references(x: Any) -> int:
    return sys.getrefcount(x)


def _sole_refs() -> int:
    """What ``sys.getrefcount`` says inside ``_sole`` of an array one local holds: the count
    differs between Python versions (references the interpreter's stack borrows), so it is
    measured the way generated code calls."""
    local = np.empty(1)
    return _references(local)


_SOLE_REFS = _sole_refs()


def _costly(item: LoopItem) -> bool:
    """Whether a pool kernel's work is worth a lockstep pause: any but an elementwise one."""
    return item.cost is not elementwise_cost


def _is_const(item: LoopItem) -> bool:
    return item.node.op == "Const" and not item.node.inputs and not item.wants_ctx
