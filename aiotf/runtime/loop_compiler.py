"""Compiled loop frames: a v1 while loop's frame run as straight-line Python, iteration by iteration.

Why. The executor's frame schedule (``runtime/executor.py``) is TensorFlow's executor: every node
execution pops a ready entry, takes its inputs from its iteration's slots, and walks its out-edges
decrementing pending and dead counts. That costs over a microsecond per node, and a loop body is
run thousands of times; TensorFlow's C++ executor pays a fraction of that. But most loops are
made of synchronous kernels, and for those the schedule is known in advance: the frame's nodes
in topological order (the NextIteration -> Merge back edges cut), once per iteration. This
module compiles such a frame into one Python generator function whose locals are the frame's
tensors, so a node costs its kernel call plus a few identity tests.

Which frames compile (:func:`compile_loops`): every node of the frame has a sync kernel that
runs on this device (no async kernel, no ``_Send``/``_Recv``: those need the concurrency of the
frame schedule), every loop nested in it compiles too (it becomes one step of the parent's
iteration, run with ``yield from``), the body without back edges is acyclic, it has at most
``MAX_COMPILED_NODES`` nodes, and no Enter into the frame depends on one of its Exits. Anything
else stays on the frame schedule.

What a compiled frame computes is what the frame schedule computes, run in one valid order:

- A tensor is a live value, ``DEAD`` (an untaken Switch branch) or ``None``: not arrived (a Merge
  input whose NextIteration did not fire, a non-constant Enter after iteration 0). A node runs
  when all its inputs (data and control) arrived and none is dead; with a dead input its outputs
  are dead (a ControlTrigger still runs); with an input missing it does not run and its outputs
  are missing, as a node whose pending count never reaches zero.
- A Merge runs once its control inputs arrived: on its first live data input (by index), or dead
  when every data input is dead or a dead one comes from an Enter; else it is missing. Its
  ``value_index`` output is a read-only int32 scalar made once per input position.
- Iteration 0 gets every Enter's value; later iterations get the constant (loop-invariant)
  Enters' values and, on the Merges, the live NextIteration values of the iteration before. A
  new iteration starts when some NextIteration of the last one was live. Iterations run one
  after another, which ``parallel_iterations`` allows (it bounds concurrency, never orders).
- A live Exit's value goes to the parent in the order the Exits fired; the Exits that are dead in
  the last iteration go to the parent as dead. The executor delivers them when the generator
  returns ``(exits, deadline)``.
- Identity-like ops (``Identity``, ``LoopCond``, ``NextIteration``, ``Exit``, ``Enter``) pass their
  input on without a call; a Switch on a numpy bool routes its data without a call; a Const is
  evaluated once per loop run. Every other node calls its kernel (``ctx`` first when it asks; each
  iteration has its own ``ctx.for_frame``), with ref inputs dereferenced as the executor does.
- A pool kernel (registered ``expensive``) is called inline while its cost estimate stays below
  ``POOL_MIN_COST``, as on the frame schedule (:func:`cost_gate`: an elementwise kernel's test
  is its operands' sizes; another's estimate is made again only when the inputs' shapes or
  small integer values change). From ``POOL_MIN_COST`` up, the generator hands the kernel to
  the executor, which runs it in the device's pool and resumes the loop with its outputs.
- A kernel registered with a ``fast`` function (an elementwise op's ufunc) is called through it,
  and through the kernel itself only when it raises (:func:`kernel_call`).
- An add, subtract, multiply or comparison of two numpy scalars of one real type (a loop's
  counter and its limit) is Python's operator on them: numpy's own scalar arithmetic, the
  ufunc's value (the same IEEE operation in the same type; an integer wraps silently under the
  step's ``errstate``) in ~0.1 us, where the ufunc takes 0.6-0.9 us to wrap and unwrap two
  scalars. A ufunc answers a scalar for 0-d arrays, so the values a loop carries are scalars
  after its first iteration; its constant Enters and Consts are made scalars when it starts if
  such ops are all that read them (no other kernel sees a scalar where it saw an array) and
  they are constants (``derived.frozen``: a ref variable's read aliases its buffer, which an
  Assign in the loop may write, so it stays an array). while1000 ran 2358 -> 574 us a run
  (fresh processes alternated), the same answer.

The generator's protocol with the executor. It yields ``None`` at the end of an iteration once
``deadline`` (a ``time.perf_counter`` value) has passed: the executor yields to the event loop
and sends the next deadline in. It yields ``(node, ctx, inputs)`` for a pool kernel: the executor
sends ``(outputs, deadline)`` back. It returns ``(exits, deadline)``. An exception from a kernel
comes out as :class:`LoopError` naming the node (its index in the executor's items), the
kernel's exception as its ``__cause__``; a pool kernel's failure is the executor's to report.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from aiotf.framework import errors
from aiotf.kernels import derived
from aiotf.kernels.context import DEAD, Ref
from aiotf.kernels.registry import NS_PER_ELEMENT, POOL_MIN_COST, elementwise_cost
from aiotf.runtime.graph import Node

# An elementwise kernel's cost (``elementwise_cost``) is below POOL_MIN_COST exactly when every
# operand has fewer elements than this.
ELEMENTWISE_LIMIT = math.ceil(POOL_MIN_COST / NS_PER_ELEMENT)
SMALL_VALUES = 64  # an integer input of at most this many elements is part of a cost's key
MAX_COMPILED_NODES = 2048  # a bigger frame stays on the frame schedule (~40 µs per node to compile)

_FORWARD_OPS = frozenset(
    {
        "Identity",
        "RefIdentity",
        "LoopCond",
        "Enter",
        "RefEnter",
        "Exit",
        "RefExit",
        "NextIteration",
        "RefNextIteration",
    }
)
_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
# Ops whose kernel, on two numpy scalars of one real type, is Python's operator on them.
_SCALAR_OPERATORS = {
    "Add": "+",
    "AddV2": "+",
    "Sub": "-",
    "Mul": "*",
    "Less": "<",
    "LessEqual": "<=",
    "Greater": ">",
    "GreaterEqual": ">=",
}
_REAL_SCALARS = frozenset(
    np.dtype(t).type for t in np.typecodes["AllInteger"] + np.typecodes["Float"]
)

PoolRequest = tuple[int, Any, list[Any]]  # (node, its ctx, its inputs): run it in the pool
LoopGenerator = Generator[PoolRequest | None, Any, tuple[list[tuple[int, Any]], float]]


class LoopItem(Protocol):
    """What the compiler reads of an executor item (``executor._Item``)."""

    node: Node
    compute: Callable[..., Any]
    fast: Callable[..., Any] | None  # without the kernel's checks; the kernel when it raises
    forward: Callable[..., Any] | None  # the kernel into its first input's buffer
    wants_ctx: bool
    sync: bool  # a sync kernel that runs on this device (no async kernel, no _Send/_Recv)
    pooled: bool  # goes to the device's pool when ``cost(*inputs)`` reaches POOL_MIN_COST
    cost: Callable[..., float]
    frame: int
    target_frame: int
    is_enter: bool
    is_constant_enter: bool
    is_exit: bool
    is_next_iteration: bool
    is_merge: bool
    is_control_trigger: bool
    num_outputs: int
    derefs: tuple[int, ...]
    successors: tuple[int, ...]
    control_edges: tuple[int, ...]


class LoopFrame(Protocol):
    """What the compiler reads of a static frame (``executor._FrameInfo``)."""

    name: str
    parent: int


class LoopError(Exception):
    """A kernel of a compiled loop raised: ``index`` is its node; ``__cause__`` the exception."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class LoopProgram:
    """One compiled frame: ``run(enters, key, ctx, deadline)`` runs one execution of it.

    ``enters`` are the values (or ``DEAD``) of the Enter nodes ``self.enters`` (executor item
    indices) in that order; ``key`` is the frame execution's key (``ctx.for_frame`` names its
    iterations ``key:n``).
    """

    __slots__ = ("enters", "frame", "run", "source")

    def __init__(
        self,
        frame: int,
        enters: tuple[int, ...],
        run: Callable[[list[Any], str, Any, float], LoopGenerator],
        source: str,
    ) -> None:
        self.frame = frame
        self.enters = enters
        self.run = run
        self.source = source


def compile_loops(
    items: Sequence[LoopItem], frames: Sequence[LoopFrame]
) -> list[LoopProgram | None]:
    """A program per static frame that compiles (see the module docstring), else None.

    The root frame (index 0) never compiles. A program nested in another program is run by it;
    the executor starts only those whose parent frame did not compile.
    """
    layout = _Layout(items, frames)
    programs: list[LoopProgram | None] = [None] * len(frames)
    for f in range(len(frames) - 1, 0, -1):  # a child frame is numbered after its parent
        order = layout.order(f, programs)
        if order is not None:
            programs[f] = _Codegen(layout, f, order, programs).program()
    return programs


class _Layout:
    """Frame membership and the edges the compiler needs."""

    def __init__(self, items: Sequence[LoopItem], frames: Sequence[LoopFrame]) -> None:
        self.items = items
        self.frames = frames
        self.index = {item.node.name: i for i, item in enumerate(items)}
        self.members: list[list[int]] = [[] for _ in frames]
        self.enters: list[list[int]] = [[] for _ in frames]
        self.exits: list[list[int]] = [[] for _ in frames]
        self.children: list[list[int]] = [[] for _ in frames]
        for i, item in enumerate(items):
            self.members[item.frame].append(i)
            if item.is_enter:
                self.enters[item.target_frame].append(i)
            if item.is_exit:
                self.exits[item.frame].append(i)
        for f, frame in enumerate(frames):
            if f:
                self.children[frame.parent].append(f)

    def order(self, f: int, programs: list[LoopProgram | None]) -> list[int] | None:
        """Frame ``f``'s evaluation order (items, and ``-g`` for child frame ``g``), or None if
        it does not compile."""
        items = self.items
        members = self.members[f]
        if len(members) > MAX_COMPILED_NODES or not self.enters[f]:
            return None
        if not all(items[i].sync for i in members):
            return None
        if any(programs[g] is None for g in self.children[f]) or self._feeds_itself(f):
            return None
        return self._topological(f)

    def _topological(self, f: int) -> list[int] | None:
        """Kahn's algorithm over the frame's nodes and child frames (``-g``), back edges cut."""
        items = self.items
        edges: dict[int, list[int]] = {}
        for i in self.members[f]:
            item = items[i]
            if item.is_next_iteration or item.is_exit:
                edges[i] = []  # into the next iteration, or out of the frame
            elif item.is_enter:
                edges[i] = [-item.target_frame]
            else:
                edges[i] = list(item.successors)
        for g in self.children[f]:
            edges[-g] = [j for x in self.exits[g] for j in items[x].successors]
        indegree = dict.fromkeys(edges, 0)
        for dsts in edges.values():
            for j in dsts:
                indegree[j] += 1
        ready = deque(u for u in edges if indegree[u] == 0)
        order: list[int] = []
        while ready:
            u = ready.popleft()
            order.append(u)
            for j in edges[u]:
                indegree[j] -= 1
                if indegree[j] == 0:
                    ready.append(j)
        return order if len(order) == len(edges) else None

    def _feeds_itself(self, f: int) -> bool:
        """Whether an Enter into ``f`` depends on one of ``f``'s Exits within one execution of
        the parent frame: waiting for every Enter before running ``f`` would then deadlock."""
        items = self.items
        parent = self.frames[f].parent
        seen: set[int] = set()
        stack = [j for x in self.exits[f] for j in items[x].successors]
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            item = items[j]
            if item.is_enter and item.target_frame == f:
                return True
            if item.frame == parent and (item.is_next_iteration or item.is_exit):
                continue
            stack.extend(item.successors)
        return False


class _Codegen:
    """The source of one frame's generator function, and its compiled form."""

    def __init__(
        self, layout: _Layout, f: int, order: list[int], programs: list[LoopProgram | None]
    ) -> None:
        self.layout = layout
        self.items = layout.items
        self.f = f
        self.order = order
        self.programs = programs
        self.names: dict[str, Any] = {
            "D": DEAD,
            "LoopError": LoopError,
            "_clock": time.perf_counter,
            "_bool": np.bool_,
            "_deref": deref,
            "_absent": _absent,
            "_POOL_MIN_COST": POOL_MIN_COST,
            "_SIZE": ELEMENTWISE_LIMIT,
            "_SCALARS": _REAL_SCALARS,
            "_scalar": _scalar,
        }
        self.lines: list[str] = []
        members = layout.members[f]
        self.statused = {
            i
            for i in members
            if self.items[i].control_edges
            and (self.items[i].num_outputs == 0 or self.items[i].node.op in _SWITCH_OPS)
        }
        self.consts = [
            i
            for i in members
            if self.items[i].node.op == "Const"
            and not self.items[i].node.inputs
            and not self.items[i].wants_ctx
        ]

    def program(self) -> LoopProgram:
        f, members = self.f, self.layout.members[self.f]
        enters = tuple(self.layout.enters[f])
        self._prologue(enters)
        self._emit(2, "while True:")
        if any(self.items[i].wants_ctx for i in members):
            self._emit(3, 'cx = ctx.for_frame(f"{key}:{num}")')
        for unit in self.order:
            if unit < 0:
                self._child(-unit)
            else:
                self._node(unit)
        self._next_iteration(enters)
        self._epilogue()
        source = "\n".join(self.lines) + "\n"
        exec(compile(source, f"<aiotf loop frame {f}>", "exec"), self.names)
        return LoopProgram(f, enters, self.names[f"loop_{f}"], source)

    def _prologue(self, enters: tuple[int, ...]) -> None:
        """The function's head: arguments, carried state, the Consts, the ``try``."""
        items, emit = self.items, self._emit
        members = self.layout.members[self.f]
        emit(0, f"def loop_{self.f}(enters, key, ctx, deadline):")
        emit(1, f"{', '.join(f'e{e}' for e in enters)}, = enters")
        nexts = [i for i in members if items[i].is_next_iteration]
        if nexts:  # the NextIteration values carried into the next iteration
            emit(1, " = ".join(f"n{i}" for i in nexts) + " = None")
        if any(items[i].pooled for i in members):  # cost verdicts by pool kernel (cost_gate)
            emit(1, "q = {}")
        emit(1, "exits = []")
        emit(1, "num = 0")
        emit(1, "at = -1")
        emit(1, "try:")
        for i in self.consts:
            emit(2, f"at = {i}; c{i} = {self._kernel(i)}()")
        for e in enters:
            if items[e].is_constant_enter and self._read_as_scalar(e):
                emit(2, f"e{e} = _scalar(e{e})")
        for i in self.consts:
            if self._read_as_scalar(i):
                emit(2, f"c{i} = _scalar(c{i})")

    def _read_as_scalar(self, i: int) -> bool:
        """Whether every node reading ``i``'s value is one of ``_SCALAR_OPERATORS``."""
        name = self.items[i].node.name
        readers = [
            self.items[j]
            for j in self.items[i].successors
            if any(src == name for src, _ in self.items[j].node.inputs)
        ]
        return bool(readers) and all(self._operator(r) is not None for r in readers)

    @staticmethod
    def _operator(item: LoopItem) -> str | None:
        """The operator standing in for ``item``'s kernel on two scalars, if any (an elementwise
        kernel's: its pool gate, if any, is a test of its operands' sizes, ``cost_gate``)."""
        if len(item.node.inputs) != 2 or item.derefs or item.wants_ctx:
            return None
        if item.pooled and item.cost is not elementwise_cost:
            return None
        return _SCALAR_OPERATORS.get(item.node.op)

    def _next_iteration(self, enters: tuple[int, ...]) -> None:
        """The iteration's end: carry the live NextIterations, or stop; yield past the deadline."""
        items, emit = self.items, self._emit
        nexts = [i for i in self.layout.members[self.f] if items[i].is_next_iteration]
        for i in nexts:
            emit(3, f"n{i} = v{i}_0 if v{i}_0 is not D else None")
        emit(3, f"if {' and '.join(f'n{i} is None' for i in nexts) or 'True'}:")
        emit(4, "break")
        emit(3, "num += 1")
        varying = [e for e in enters if not items[e].is_constant_enter]
        if varying:  # a non-constant Enter feeds iteration 0 only
            emit(3, " = ".join(f"e{e}" for e in varying) + " = None")
        emit(3, "if _clock() > deadline:")
        emit(4, "deadline = yield")

    def _epilogue(self) -> None:
        """Errors name their node; the last iteration's dead Exits follow the live ones."""
        emit = self._emit
        emit(1, "except LoopError:")
        emit(2, "raise")
        emit(1, "except Exception as exc:")
        emit(2, "raise LoopError(at) from exc")
        for x in self.layout.exits[self.f]:
            emit(1, f"if v{x}_0 is D: exits.append(({x}, D))")
        emit(1, "return exits, deadline")

    def _emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def _kernel(self, i: int) -> str:
        self.names[f"k{i}"] = self.items[i].compute
        return f"k{i}"

    # -- the expressions a consumer in this frame reads --------------------------------------
    def _value(self, src: int, k: int) -> str:
        item = self.items[src]
        if item.is_enter and item.target_frame == self.f:
            return f"e{src}"
        if item.is_next_iteration and item.frame == self.f:
            return f"n{src}"
        return f"v{src}_{k}"

    def _status(self, src: int) -> str:
        """``src`` ran (live), was dead, or never ran (None), as a control input sees it."""
        return f"s{src}" if src in self.statused else self._value(src, 0)

    def _inputs(self, i: int) -> tuple[list[str], list[str]]:
        node, index = self.items[i].node, self.layout.index
        data = [self._value(index[src], k) for src, k in node.inputs]
        control = [self._status(index[src]) for src in node.control_inputs]
        return data, control

    # -- units: about two lines of code per node, so big frames compile quickly ---------------
    def _node(self, i: int) -> None:
        item = self.items[i]
        emit = self._emit
        emit(3, f"# {item.node.name!r} ({item.node.op})")
        data, control = self._inputs(i)
        if item.is_merge:
            self._merge(i, data, control)
            return
        outs = [f"v{i}_{k}" for k in range(item.num_outputs)]
        if _is_forward(item) and not control:  # passes a value, DEAD or None on as it is
            emit(3, f"{outs[0]} = {data[0]}")
        else:
            if i in self.statused:
                outs.append(f"s{i}")
            inputs = data + control
            test = "is not None" if item.is_control_trigger else "is not None and {x} is not D"
            live = " and ".join(f"{x} {test.format(x=x)}" for x in inputs) or "True"
            emit(3, f"if {live}:")
            self._call(i, data)
            if inputs and outs:
                # not run: missing if an input is (None), else dead (a ControlTrigger never is)
                absent = "None" if item.is_control_trigger else f"_absent({', '.join(inputs)})"
                emit(3, f"else: {' = '.join(outs)} = {absent}")
        if item.is_exit:
            emit(
                3,
                f"if {outs[0]} is not None and {outs[0]} is not D: exits.append(({i}, {outs[0]}))",
            )

    def _call(self, i: int, data: list[str]) -> None:
        """The body of ``if <all inputs live>:`` for node ``i``."""
        item = self.items[i]
        emit = self._emit
        outs = [f"v{i}_{k}" for k in range(item.num_outputs)]
        status = f"; s{i} = True" if i in self.statused else ""
        if item.derefs:
            data = self._dereferenced(i, data)
        elif _is_forward(item) or i in self.consts:
            emit(4, f"{outs[0]} = {data[0] if _is_forward(item) else f'c{i}'}{status}")
            return
        elif item.node.op in _SWITCH_OPS and len(outs) == 2:
            self._switch(i, data, outs, status)
            return
        args = ", ".join((["cx"] if item.wants_ctx else []) + data)
        outs_ = ", ".join(outs) + ("," if len(outs) > 1 else "")
        calls = [
            line + status
            for line in kernel_call(i, item, f"{outs_} = " if outs else "", args, self.names)
        ]
        emit(4, f"at = {i}")
        operator = self._operator(item) if len(outs) == 1 else None
        if operator is not None:  # two scalars of one real type: see the module docstring
            a, b = data
            emit(4, f"if {a}.__class__ is {b}.__class__ and {a}.__class__ in _SCALARS:")
            emit(5, f"{outs[0]} = {a} {operator} {b}{status}")
        if item.pooled:
            self._pooled(
                i, data, calls, f"{outs_} = r{status}" if outs else "r", operator is not None
            )
        elif operator is not None:
            emit(4, "else:")
            for line in calls:
                emit(5, line)
        else:
            for line in calls:
                emit(4, line)

    def _dereferenced(self, i: int, data: list[str]) -> list[str]:
        """Node ``i``'s inputs with its ref inputs dereferenced into temporaries."""
        item = self.items[i]
        data = list(data)
        for pos in item.derefs:
            src, k = item.node.inputs[pos]
            source = src if k == 0 else f"{src}:{k}"
            self._emit(4, f"at = {i}; t{pos} = _deref({data[pos]}, {source!r})")
            data[pos] = f"t{pos}"
        return data

    def _switch(self, i: int, data: list[str], outs: list[str], status: str) -> None:
        """A Switch on a numpy bool routes its data without a call; anything else (a 0-d array,
        a bad predicate) goes to its kernel."""
        (x, pred), (false, true), emit = data, outs, self._emit
        emit(4, f"at = {i}{status}")
        emit(
            4, f"if {pred}.__class__ is not _bool: {false}, {true} = {self._kernel(i)}({x}, {pred})"
        )
        emit(4, f"elif {pred}: {false} = D; {true} = {x}")
        emit(4, f"else: {false} = {x}; {true} = D")

    def _pooled(
        self, i: int, data: list[str], calls: list[str], take: str, after_if: bool = False
    ) -> None:
        """Call pool kernel ``i`` inline while its cost is below POOL_MIN_COST (``cost_gate``),
        else hand it to the executor (``yield``) for the device's pool; ``after_if``: as the
        ``else`` of an ``if`` just emitted (the scalars' operator)."""
        emit = self._emit
        item = self.items[i]
        inputs = ", ".join(data)
        lines, gate = cost_gate(i, item, data, self.names, {})
        assert not (after_if and lines)  # an elementwise gate is one test (see _operator)
        for line in lines:
            emit(4, line)
        emit(4, f"{'elif' if after_if else 'if'} {gate}:")
        for line in calls:
            emit(5, line)
        ctx = "cx" if item.wants_ctx else "ctx"
        emit(4, f"else: r, deadline = yield ({i}, {ctx}, [{inputs}]); {take}; del r")

    def _merge(self, i: int, data: list[str], control: list[str]) -> None:
        """Fire on the first live input (by index); else dead or missing (module docstring)."""
        item = self.items[i]
        emit = self._emit
        out, value_index = f"v{i}_0", f"v{i}_1"
        arrived = "".join(f"{c} is not None and " for c in control)
        for pos, x in enumerate(data):
            value = x
            if pos in item.derefs:
                src, k = item.node.inputs[pos]
                value = f"_deref({x}, {(src if k == 0 else f'{src}:{k}')!r})"
            keyword = "if" if pos == 0 else "elif"
            at = f"at = {i}; " if pos in item.derefs else ""
            emit(
                3,
                f"{keyword} {arrived}{x} is not None and {x} is not D: "
                f"{at}{out} = {value}; {value_index} = {self._value_index(pos)}",
            )
        # With no live input: dead if all inputs are, or one from an Enter is (iteration 0).
        index = self.layout.index
        from_enters = [
            x
            for (src, _), x in zip(item.node.inputs, data, strict=True)
            if self._is_enter(index[src])
        ]
        dead = " or ".join(f"{x} is D" for x in from_enters) or " and ".join(
            f"{x} is D" for x in data
        )
        emit(3, f"else: {out} = {value_index} = D if {arrived}({dead}) else None")

    def _is_enter(self, src: int) -> bool:
        item = self.items[src]
        return item.is_enter and item.target_frame == self.f

    def _child(self, g: int) -> None:
        """Child frame ``g`` as one step: run it when every Enter into it has arrived."""
        emit = self._emit
        program = self.programs[g]
        assert program is not None
        self.names[f"L{g}"] = program.run
        name = self.layout.frames[g].name
        enters = [f"v{e}_0" for e in program.enters]
        exits = self.layout.exits[g]
        emit(3, f"# loop {name!r}")
        emit(3, "if " + " and ".join(f"{x} is not None" for x in enters) + ":")
        self.names[f"N{g}"] = "/" + name
        emit(4, f"key{g} = key + '/' + str(num) + N{g}")
        emit(4, f"r, deadline = yield from L{g}([{', '.join(enters)}], key{g}, ctx, deadline)")
        emit(4, "r = dict(r)")
        for x in exits:
            emit(4, f"v{x}_0 = r.get({x})")
        if exits:
            emit(3, "else:")
            emit(4, " = ".join(f"v{x}_0" for x in exits) + " = None")

    def _value_index(self, pos: int) -> str:
        """The name of the read-only int32 scalar ``pos`` (a Merge's ``value_index``)."""
        name = f"I{pos}"
        if name not in self.names:
            value = np.asarray(pos, dtype=np.int32)
            value.flags.writeable = False  # shared by every run, as a Const's value
            self.names[name] = value
        return name


def _scalar(x: Any) -> Any:
    """A constant 0-d array of a real type as its numpy scalar (see the module docstring); else
    ``x``: a variable's buffer (a ref variable's read aliases it, and an Assign in the loop
    writes it) or a fed array stays as it is."""
    if (
        type(x) is np.ndarray
        and x.ndim == 0
        and x.dtype.type in _REAL_SCALARS
        and derived.frozen(x)
    ):
        return x[()]
    return x


def kernel_call(i: int, item: LoopItem, target: str, args: str, names: dict[str, Any]) -> list[str]:
    """The statements that call node ``i``'s kernel on ``args`` into ``target`` (``"v, w = "``,
    or "" when it has no outputs): its ``fast`` function, if it has one, and the kernel itself
    if that raises (so an error keeps the kernel's words). They go in ``names``."""
    names[f"k{i}"] = item.compute
    call = f"{target}k{i}({args})"
    if item.fast is None or item.wants_ctx:
        return [call]
    names[f"f{i}"] = item.fast
    return [f"try: {target}f{i}({args})", f"except Exception: {call}"]


def cost_gate(
    i: int, item: LoopItem, data: list[str], names: dict[str, Any], consts: Mapping[str, Any]
) -> tuple[list[str], str]:
    """The statements that decide whether pool kernel ``i`` on ``data`` costs less than
    POOL_MIN_COST, and the test they leave, true when it does (so it runs inline).

    An elementwise kernel's test is its operands' sizes (``_SIZE``: ELEMENTWISE_LIMIT; an operand
    in ``consts`` is known now). Another's cost function is called again only when its key
    (``cost_key``) changed since it was last called; the key and the verdict are kept in the
    dict ``q`` of the generated code.
    """
    if item.cost is elementwise_cost:
        if any(consts[x].size >= ELEMENTWISE_LIMIT for x in data if x in consts):
            return [], "False"
        return [], " and ".join(f"{x}.size < _SIZE" for x in data if x not in consts) or "True"
    names[f"c{i}"] = item.cost
    estimate = f"c{i}({', '.join(data)}) < _POOL_MIN_COST"
    return [
        f"try: sh = {cost_key(item, data)}",
        "except AttributeError: sh = None",
        f"known = q.get({i})",
        f"if known is None or sh is None or known[0] != sh: known = q[{i}] = (sh, {estimate})",
    ], "known[1]"


def cost_key(item: LoopItem, data: list[str]) -> str:
    """The expression of the key a cost verdict is kept under: the inputs' shapes, and the
    values of the small integer inputs (a Tile's multiples, a Fill's dims, a Pad's paddings
    decide how much work there is as much as shapes do)."""
    dtypes = item.node.input_dtypes()
    parts = []
    for pos, x in enumerate(data):
        parts.append(f"{x}.shape")
        if pos < len(dtypes) and dtypes[pos].base_dtype.is_integer:
            parts.append(f"{x}.tobytes() if {x}.size <= {SMALL_VALUES} else None")
    return "(" + "".join(f"{p}, " for p in parts) + ")"


def _is_forward(item: LoopItem) -> bool:
    """Whether ``item`` passes its one input on unchanged (no call needed)."""
    return (
        item.node.op in _FORWARD_OPS
        and len(item.node.inputs) == 1
        and item.num_outputs == 1
        and not item.derefs
    )


def _absent(*inputs: Any) -> Any:
    """A node that did not run: its outputs are missing (None) if an input is, else dead."""
    return None if any(x is None for x in inputs) else DEAD


def deref(value: Any, source: str) -> Any:
    """The executor's dereference of a ref input a non-ref input consumes."""
    if isinstance(value, Ref):
        if value.value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {source}"
            )
        return value.value
    return value
