"""Crowds: steps of one compiled program, crowded in a turn of the loop, run it once, stacked.

Why. In lockstep (``runtime/loop_turns.py``) a crowd of one-row requests runs each product for
every step in a row, its weights in cache; but every step still pays its own program, a kernel
call per node and a resumption of its task after each product: ~75-100 µs of Python a request of
mlp_b1, beside ~50 µs of products. With the steps' feeds stacked along a new leading axis, one
call of each kernel serves them all: numpy multiplies a stack of rows by a matrix one row at a
time, by the very BLAS call (a GEMV) a row alone gets, and an elementwise or last-axis kernel
computes each row as it would alone. 256 requests of mlp_b1 in plain numpy: 35-41 ms one after
another, 15 ms stacked; the same bits.

Which programs. A compiled flat program (``runtime/flat_compiler.py``) each of whose nodes is a
Const, an ``_Arg``, a ``_Retval``, or an op with a rule here (``_RULES``): elementwise ops, BiasAdd
over the last axis, Softmax and LogSoftmax, a MatMul of one row by a matrix no feed reaches (and
the remapper's pair of them, ``kernels/fused_products.py``),
Reshape, ExpandDims and Squeeze (a step's elements in their order), ArgMax and ArgMin.
Any other op may run once for the crowd when nothing stacked reaches it (it reads constants
only); a program holding a stateful op (a variable, a queue) never runs stacked, as each step
must run that op itself. Every feed must be a numeric array, of the same shape and dtype in
every step of a crowd (steps with other shapes make another crowd). A pool kernel must cost
less than POOL_MIN_COST for one step, as alone it would run inline: stacked, a kernel the pool
would run costs the loop's thread as much for every step (asked when a signature is checked;
its shapes decide).

How. A step about to run its program in a turn shared with other tasks' steps
(``loop_turns.crowded``: let go together from the turns' waiting line, started while steps wait
there, or started in a turn where another task's step did: a gather's first turn) joins its
executor's crowd (:meth:`Crowd.ran`) and waits; steps one task awaits one after another never
do. Its share of the stacked run (a step's, as last timed) counts against the turn's time
(``loop_turns.spend``), so that a turn starts no more steps than it has time to run: without
that, a gather's first turn started ~110 steps (each ~25 µs of Python to the crowd), all in
flight at once, and their objects tripled the collector's young collections. The first to
join schedules the crowd's run for the loop's next iteration, by which time the steps of its
turn have joined (they start in one iteration). The run takes the steps in slices of about
SLICE_SECONDS each (by a step's share of the slices before), one slice an iteration, so that
timers and I/O are served in between; a slice runs the program once over its steps' stacked
feeds on the loop's thread (where each step would have run its kernels), gives each step its
rows of the fetched values (copies, its own) and lets it go on. A step alone in its crowd runs
its program as before. The turn goes on (``loop_turns.hold``) until the steps have finished, and
the turns' sizing (a step's cost, measured) sets how many the next crowd holds. The benchmark's
256 concurrent mlp_b1 requests, alternated in one process with lockstep alone: 42-58 -> 31-40
ms a gather (``docs/performance.md``, *Crowds*).

What each step gets is what it would alone:

- Checked once per feed signature: the first stacked run is also run step by step, kernel by
  kernel, and compared byte for byte. A difference (a numpy or BLAS that multiplies a stack
  otherwise) turns the crowd off for the executor; the steps get the results computed alone.
- A kernel that raises in the stacked run sends every step back to run alone, where each meets
  its own error or result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from aiotf.kernels.context import StepContext
from aiotf.kernels.registry import POOL_MIN_COST
from aiotf.runtime import loop_turns
from aiotf.runtime.flat_compiler import FlatProgram
from aiotf.runtime.loop_compiler import LoopItem

Array = np.ndarray[Any, Any]

# How an op's kernel computes a stack of steps' values as each alone (none: only when nothing
# stacked reaches it).
_ELEMENTWISE, _BIAS_ADD, _LAST_AXIS, _MATMUL, _MATMUL_PAIR, _RESHAPE, _ARG_EXTREME, _UNSTACKED = (
    range(8)
)
_ELEMENTWISE_OPS = (
    "Identity", "Relu", "Relu6", "Elu", "Tanh", "Sigmoid", "Exp", "Neg", "Abs", "Square", "Sqrt",
    "Rsqrt", "Softplus", "Cast", "Floor", "Ceil",
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference",
)  # fmt: skip
_RULES = {
    **dict.fromkeys(_ELEMENTWISE_OPS, _ELEMENTWISE),
    "BiasAdd": _BIAS_ADD,
    "Softmax": _LAST_AXIS,
    "LogSoftmax": _LAST_AXIS,
    "MatMul": _MATMUL,
    "_FusedMatMulPair": _MATMUL_PAIR,
    **dict.fromkeys(("Reshape", "ExpandDims", "Squeeze"), _RESHAPE),
    **dict.fromkeys(("ArgMax", "ArgMin"), _ARG_EXTREME),
}
_CONST, _ARG, _RETVAL, _OP = range(4)
MAX_SIGNATURES = 64  # feed signatures a crowd keeps its verdict on; a new one beyond runs alone
# The longest a crowd's stacked run holds the loop, about: the steps of a bigger crowd run in
# slices, one an iteration of the loop (its slice of the turn, as ``loop_turns.TURN_SECONDS``).
SLICE_SECONDS = 0.0015
FIRST_SLICE = 8  # steps in a slice before any has been timed
AVERAGE_WEIGHT = 0.25  # of the latest slice in the running average of a step's stacked time


class _Unstackable(Exception):
    """This crowd's feeds cannot run stacked (a step alone would run differently)."""


class _Node:
    __slots__ = ("compute", "cost", "fast", "index", "inputs", "kind", "node", "num_outputs",
                 "pooled", "rule", "values")  # fmt: skip

    def __init__(self, item: LoopItem, kind: int, inputs: tuple[tuple[int, int], ...]) -> None:
        self.node = item.node
        self.compute = item.compute
        self.fast = item.fast  # as the program calls it (``loop_compiler.kernel_call``)
        self.cost = item.cost
        self.pooled = item.pooled
        self.num_outputs = item.num_outputs
        self.kind = kind
        self.rule = _RULES.get(item.node.op, _UNSTACKED)
        self.inputs = inputs  # (position of the producer in the program's order, its output)
        self.index = int(item.node.attrs["index"]) if kind in (_ARG, _RETVAL) else 0
        self.values: tuple[Any, ...] = ()  # a Const's


Retvals = dict[int, tuple[Any, bool]]  # by _Retval index: the value, and whether stacked


class Crowd:
    """One compiled program's crowds: see the module docstring."""

    __slots__ = ("_items", "_nodes", "_pending", "_program", "_step_seconds", "_verdicts", "off")

    def __init__(self, items: Sequence[LoopItem], program: FlatProgram) -> None:
        self._items = items
        self._program = program
        self._nodes: list[_Node] | None = None  # laid out by the first crowd
        self._pending: dict[tuple[Any, ...], list[tuple[StepContext, asyncio.Future[bool]]]] = {}
        self._verdicts: dict[tuple[Any, ...], bool] = {}  # per feed signature: checked, or not
        self._step_seconds = 0.0  # a step's share of a stacked run, averaged (0: none yet)
        self.off = False  # some node cannot run stacked, or a check found other bits

    async def ran(self, ctx: StepContext) -> bool:
        """Run ``ctx``'s step with its crowd: True once its retvals are set; False when it is
        to run its program alone. Call it on the loop's thread, for a step whose turn is
        shared (``loop_turns.crowded``)."""
        if self.off or (self._nodes is None and not self._plan()):
            return False
        signature = _signature(ctx.args)
        if signature is None:
            return False
        verdict = self._verdicts.get(signature)
        if verdict is False or (verdict is None and len(self._verdicts) >= MAX_SIGNATURES):
            return False
        loop = asyncio.get_running_loop()
        key = (loop, signature)
        members = self._pending.get(key)
        if members is None:
            members = self._pending[key] = []
            loop.call_soon(self._run, key)
        future: asyncio.Future[bool] = loop.create_future()
        members.append((ctx, future))
        loop_turns.hold()
        loop_turns.spend(self._step_seconds)  # its share of the stacked run, to come
        return await future

    def _plan(self) -> bool:
        """Lay the program's nodes out for stacked runs; False (and off) if one cannot be."""
        items, program = self._items, self._program
        position = {i: p for p, i in enumerate(program.order)}
        by_name = {items[i].node.name: i for i in program.order}
        nodes = []
        for i in program.order:
            item = items[i]
            op = item.node.op
            inputs = tuple((position[by_name[src]], k) for src, k in item.node.inputs)
            if op in ("_Arg", "_Retval"):
                node = _Node(item, _ARG if op == "_Arg" else _RETVAL, inputs)
            elif item.node.is_stateful or item.wants_ctx or item.derefs:
                self.off = True
                return False
            else:
                names = [f"v{i}_{k}" for k in range(item.num_outputs)]
                const = op == "Const" and all(name in program.consts for name in names)
                node = _Node(item, _CONST if const else _OP, inputs)
                if const:
                    node.values = tuple(program.consts[name] for name in names)
            nodes.append(node)
        self._nodes = nodes
        return True

    def _run(self, key: tuple[Any, ...]) -> None:
        """The loop's callback: run a crowd's steps stacked, a slice of them an iteration."""
        self._run_slice(key[1], self._pending.pop(key))

    def _run_slice(
        self, signature: tuple[Any, ...], members: list[tuple[StepContext, asyncio.Future[bool]]]
    ) -> None:
        """Run as many of ``members`` stacked as take about SLICE_SECONDS (by the time a step
        took in the last slices), or send them back to run alone; the rest in the loop's next
        iteration, so that timers and I/O are served in between."""
        seconds = self._step_seconds
        size = max(2, int(SLICE_SECONDS / seconds)) if seconds else FIRST_SLICE
        members, rest = members[:size], members[size:]
        if len(rest) == 1:  # not left to run alone
            members, rest = members + rest, []
        if rest:
            asyncio.get_running_loop().call_soon(self._run_slice, signature, rest)
        members = [(ctx, f) for ctx, f in members if not f.done()]
        rows: list[dict[int, Any]] | None = None
        if len(members) > 1 and not self.off and self._verdicts.get(signature) is not False:
            args = [ctx.args for ctx, _ in members]
            start = time.perf_counter()
            try:
                with np.errstate(all="ignore"):
                    checked = signature in self._verdicts
                    rows = _rows(self._evaluate(args, gated=not checked), len(members))
                    if not checked:
                        rows = self._checked(args, rows, signature)
                    else:
                        seconds = (time.perf_counter() - start) / len(members)
                        average = self._step_seconds or seconds  # the first: as it is
                        self._step_seconds = average + (seconds - average) * AVERAGE_WEIGHT
            except _Unstackable:
                self._verdicts[signature] = False
            except Exception:  # a kernel's error: each step meets its own, alone
                rows = None
        for j, (ctx, future) in enumerate(members):
            if rows is not None:
                for index, value in rows[j].items():
                    ctx.retvals[index] = value
            future.set_result(rows is not None)
        loop_turns.hold()  # the steps go on in the loop's next iteration, in this turn

    def _evaluate(self, args: list[list[Any]], gated: bool = False) -> Retvals:
        """The retvals of the steps whose feeds are ``args``, stacked; or of the one step alone
        (kernel by kernel, as its program would) when ``args`` holds one. ``gated``: first ask
        each stacked pool kernel's cost for one step (a signature checked once passed: costs
        follow from shapes)."""
        assert self._nodes is not None
        alone = len(args) == 1
        feeds = args[0] if alone else [np.stack(column) for column in zip(*args, strict=True)]
        values: list[tuple[Any, ...]] = []
        stacked: list[bool] = []
        retvals: Retvals = {}
        for node in self._nodes:
            data = [values[p][k] for p, k in node.inputs]
            flags = [stacked[p] for p, _ in node.inputs]
            kind = node.kind
            if kind == _CONST:
                values.append(node.values)
                stacked.append(False)
                continue
            if kind == _ARG:
                values.append((feeds[node.index],))
                stacked.append(not alone)
                continue
            if kind == _RETVAL:
                retvals[node.index] = (data[0], flags[0])
                values.append(())
                stacked.append(False)
                continue
            some = any(flags)
            if (
                gated
                and some
                and node.pooled
                and node.cost(*_one_step(data, flags)) >= POOL_MIN_COST
            ):
                raise _Unstackable  # alone, the step would run it in the pool
            out = _stacked_call(node, data, flags) if some else _call(node, data)
            n = node.num_outputs
            values.append((out,) if n == 1 else tuple(out) if n else ())
            stacked.append(some)
        return retvals

    def _checked(
        self, args: list[list[Any]], rows: list[dict[int, Any]], signature: tuple[Any, ...]
    ) -> list[dict[int, Any]]:
        """``rows`` if each step's, computed alone, has the very same bytes (then the signature
        is trusted from now on); else the ones computed alone, and the crowd turns off."""
        alone = [{i: v for i, (v, _) in self._evaluate([a]).items()} for a in args]
        if all(_same(r, a) for r, a in zip(rows, alone, strict=True)):
            self._verdicts[signature] = True
            return rows
        self.off = True
        return alone


def _signature(args: list[Any]) -> tuple[Any, ...] | None:
    """The shapes and dtypes of a step's feeds; None unless all are numeric arrays."""
    signature = []
    for a in args:
        if type(a) is not np.ndarray or a.dtype.kind not in "biufc":
            return None
        signature.append((a.shape, a.dtype))
    return tuple(signature)


def _one_step(data: list[Any], flags: list[bool]) -> list[Any]:
    return [x[0] if f else x for x, f in zip(data, flags, strict=True)]


def _call(node: _Node, data: list[Any]) -> Any:
    """``node``'s kernel on one step's ``data`` (or on constants), as its program calls it: its
    ``fast`` function, and the kernel itself if that raises."""
    if node.fast is not None:
        try:
            return node.fast(*data)
        except Exception:
            pass
    return node.compute(*data)


def _stacked_call(node: _Node, data: list[Any], flags: list[bool]) -> Any:
    """``node``'s kernel on ``data``, some of it stacked (``flags``): the steps' outputs, stacked,
    each as its step alone would compute it; _Unstackable when they would differ."""
    rule = node.rule
    attrs = node.node.attrs
    if rule == _ELEMENTWISE:
        rank = max(np.ndim(x) - f for x, f in zip(data, flags, strict=True))
        data = [
            x.reshape(x.shape[:1] + (1,) * (rank + 1 - x.ndim) + x.shape[1:]) if f else x
            for x, f in zip(data, flags, strict=True)
        ]  # each step's operand right-aligned, as numpy broadcasts it alone
    elif rule == _BIAS_ADD:
        if flags[1] or data[0].ndim < 3 or attrs.get("data_format", b"NHWC") != b"NHWC":
            raise _Unstackable
    elif rule == _LAST_AXIS:
        if data[0].ndim < 2:
            raise _Unstackable
    elif rule == _MATMUL:
        a, b = data
        if flags[1] or attrs.get("transpose_a") or a.ndim != 3 or a.shape[1] != 1 or b.ndim != 2:
            raise _Unstackable  # only a row by a matrix: as alone, one BLAS call a row
        return np.matmul(a, b.T if attrs.get("transpose_b") else b)
    elif rule == _MATMUL_PAIR:  # the remapper's pair: a row through its ops, as alone
        x, operands = data[0], iter(data[1:])
        if any(flags[1:]) or x.ndim != 3 or x.shape[1] != 1:
            raise _Unstackable
        for op in attrs["fused_ops"]:
            if op == b"Relu":
                np.maximum(x, x.dtype.type(0), out=x)
                continue
            operand = next(operands)
            if op == b"MatMul" and operand.ndim == 2:
                x = np.matmul(x, operand)
            elif op == b"BiasAdd" and operand.shape == x.shape[-1:]:
                np.add(x, operand, out=x)
            else:
                raise _Unstackable  # alone, the step fails
        return x
    elif rule == _RESHAPE:  # a step's elements in their order, in its output's shape
        if any(flags[1:]):
            raise _Unstackable
        x = data[0]
        one = node.compute(x[0], *data[1:])  # the first step's, or its error
        return x.reshape(x.shape[:1] + one.shape)
    elif rule == _ARG_EXTREME:  # along a step's axis: the stack's next one
        x, dimension = data
        rank = x.ndim - 1
        if flags[1] or rank == 0 or np.size(dimension) != 1:
            raise _Unstackable
        axis = int(dimension)
        if not -rank <= axis < rank:
            raise _Unstackable  # alone, the step fails
        return node.compute(x, np.asarray(axis % rank + 1, np.asarray(dimension).dtype))
    else:
        raise _Unstackable
    return node.compute(*data)


def _rows(retvals: Retvals, n: int) -> list[dict[int, Any]]:
    """Each of ``n`` steps' retvals: its own copies of its rows (or of a value not stacked)."""
    rows: list[dict[int, Any]] = [{} for _ in range(n)]
    for index, (value, stacked) in retvals.items():
        for j, row in enumerate(rows):
            v = value[j, ...] if stacked else value
            row[index] = v.copy() if isinstance(v, np.ndarray) else v
    return rows


def _same(a: dict[int, Any], b: dict[int, Any]) -> bool:
    return a.keys() == b.keys() and all(
        isinstance(x, np.ndarray)
        and isinstance(y, np.ndarray)
        and x.dtype == y.dtype
        and x.shape == y.shape
        and x.tobytes() == y.tobytes()
        for x, y in ((a[i], np.asarray(b[i])) for i in a)
    )
