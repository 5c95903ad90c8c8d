"""Control-flow building functions: ``group``, ``no_op``, and TensorFlow 1.x ``cond`` and
``while_loop`` built from the v1 dataflow primitives (Switch, Merge, Enter, Exit,
NextIteration, LoopCond), named as ``tf.compat.v1`` names them.

While a branch or loop body is built, the graph's control-flow context (:class:`CondContext`,
:class:`WhileContext`) sees every new op (``Graph.create_op`` calls :meth:`add_op`) and routes
its inputs from outside: through a ``Switch`` on the predicate for a cond branch, through a
loop-invariant ``Enter`` for a loop body. An op with no inputs (in a loop body, also one fed only
by loop invariants) gets a control input from the context's pivot, so it runs only in the taken
branch, once per iteration.

Semantics are TensorFlow 1.x's *non-strict* ones: a loop iteration's ops run as soon as their
inputs are ready, so iterations overlap up to ``parallel_iterations``, and ``cond`` returns a
single-element list's element rather than the list (``strict=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aiotf.framework.ops import (
    Graph,
    Operation,
    Tensor,
    convert_to_tensor,
    get_default_graph,
)
from aiotf.ops.op_helper import apply_op


def no_op(name: str | None = None) -> Operation:
    return apply_op("NoOp", name=name)


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that runs after every op (or tensor's op) in ``inputs``; it has no outputs."""
    ops = []
    for item in inputs:
        for element in item if isinstance(item, list | tuple) else [item]:
            if element is None:
                continue
            op = element.op if isinstance(element, Tensor) else element
            if not isinstance(op, Operation):
                raise TypeError(f"Expected an Operation or Tensor in group(), got {element!r}")
            ops.append(op)
    graph = get_default_graph()
    with graph.control_dependencies(ops):
        return no_op(name=name or "group_deps")


# -- the primitives ---------------------------------------------------------------------------
def switch(data: Any, pred: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(output_false, output_true)``: ``data`` on the side ``pred`` selects; the other is dead."""
    op = apply_op("Switch", [data, pred], name=name or "Switch")
    return op.outputs[0], op.outputs[1]


def merge(inputs: Sequence[Any], name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(output, value_index)``: the first of ``inputs`` to be live."""
    op = apply_op("Merge", [list(inputs)], name=name or "Merge")
    return op.outputs[0], op.outputs[1]


# -- contexts ---------------------------------------------------------------------------------
class _Context:
    """A cond branch or loop body under construction; contexts nest through ``outer``."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.outer: _Context | None = graph._control_flow_context
        self.pivot: Operation | None = None
        self._external: dict[str, Tensor] = {}  # outside tensor name -> its routed version

    def __enter__(self) -> _Context:
        self.graph._control_flow_context = self
        return self

    def __exit__(self, *exc: object) -> None:
        self.graph._control_flow_context = self.outer

    def contains(self, op: Operation) -> bool:
        """Whether ``op`` was built in this context or one nested in it."""
        context = op._control_flow_context
        while context is not None:
            if context is self:
                return True
            context = context.outer
        return False

    def add_op(self, op: Operation) -> None:
        for index, tensor in enumerate(op.inputs):
            if not self.contains(tensor.op):
                op._update_input(index, self._route(tensor))
        external = self._remove_external_control_inputs(op)
        if self.pivot is not None and self._needs_pivot(op):
            op._add_control_input(self.pivot)
        if external:
            # As TensorFlow: a control input from outside the loop arrives as the data of an
            # Identity built here (its value enters the frame); one without outputs is dropped.
            with self.graph.control_dependencies(None):
                pulled = [apply_op("Identity", [x.outputs[0]]) for x in external if x.outputs]
            for identity in pulled:
                op._add_control_input(identity)

    def _needs_pivot(self, op: Operation) -> bool:
        """An op without inputs, unless a control input from here orders it; in a loop, also an
        op fed only by loop invariants (TensorFlow's ``_MaybeAddControlDependency``), so that it
        runs once per iteration on whatever device it is placed."""
        if not op.inputs:
            return not any(self.contains(c) for c in op.control_inputs)
        return (
            isinstance(self, WhileContext)
            and not op.control_inputs
            and all(_is_loop_invariant(t.op) for t in op.inputs)
        )

    def _remove_external_control_inputs(self, op: Operation) -> list[Operation]:
        """Inside a loop, take off ``op`` the control inputs built outside that loop.

        A control edge cannot cross into a frame; TensorFlow drops it the same way.
        """
        loop = self.while_context()
        if loop is None:
            return []
        external = [c for c in op.control_inputs if _while_context_of(c) is not loop]
        if external:
            internal = [c for c in op.control_inputs if c not in external]
            op._remove_all_control_inputs()
            for c in internal:
                op._add_control_input(c)
        return external

    def while_context(self) -> WhileContext | None:
        """The innermost loop this context is in (itself, if a loop)."""
        context: _Context | None = self
        while context is not None and not isinstance(context, WhileContext):
            context = context.outer
        return context

    def _route(self, tensor: Tensor) -> Tensor:
        routed = self._external.get(tensor.name)
        if routed is None:
            self.graph._control_flow_context = self.outer  # build the router in the outer context
            try:
                # With no control inputs, as TensorFlow's AddValue: a control dependency of the
                # op that asked (built inside the body) must not reach the router outside it.
                with self.graph.control_dependencies(None):
                    routed = self._build_route(tensor)
            finally:
                self.graph._control_flow_context = self
            self._external[tensor.name] = routed
        return routed

    def _build_route(self, tensor: Tensor) -> Tensor:
        raise NotImplementedError


class CondContext(_Context):
    """One branch of a ``cond``: outside tensors arrive through ``Switch(x, pred)[branch]``."""

    def __init__(self, graph: Graph, pred: Tensor, pivot: Tensor, branch: int) -> None:
        super().__init__(graph)
        self.pred = pred
        self.pivot = pivot.op
        self.branch = branch

    def _build_route(self, tensor: Tensor) -> Tensor:
        # A ref passes through RefSwitch still a ref: only the taken branch reads the variable.
        op_type = "RefSwitch" if tensor.dtype.is_ref_dtype else "Switch"
        op = apply_op(op_type, [tensor, self.pred], name="Switch")
        op._control_flow_context = self.outer
        return op.outputs[self.branch]


class WhileContext(_Context):
    """A loop body or condition: outside tensors arrive through loop-invariant Enters."""

    def __init__(self, graph: Graph, frame_name: str, parallel_iterations: int) -> None:
        super().__init__(graph)
        self.frame_name = frame_name
        self.parallel_iterations = parallel_iterations

    def enter(self, tensor: Tensor, is_constant: bool, name: str | None = None) -> Tensor:
        """``tensor`` entering this loop's frame; a ref (a variable) stays a ref, through a
        RefEnter, so ops in the loop can update the variable (TensorFlow's ``_Enter``)."""
        op_type = "RefEnter" if tensor.dtype.is_ref_dtype else "Enter"
        op = apply_op(
            op_type,
            [tensor],
            {
                "frame_name": self.frame_name,
                "is_constant": is_constant,
                "parallel_iterations": self.parallel_iterations,
            },
            name=name or op_type,
        )
        op._control_flow_context = self
        return op.outputs[0]

    def _build_route(self, tensor: Tensor) -> Tensor:
        return self.enter(tensor, is_constant=True)


def _is_loop_invariant(op: Operation) -> bool:
    return op.type in ("Enter", "RefEnter") and bool(op.get_attr("is_constant"))


def _while_context_of(op: Operation) -> WhileContext | None:
    """The loop whose frame ``op``'s outputs live in (an Exit belongs to the outer context)."""
    context: _Context | None = op._control_flow_context
    return context.while_context() if context is not None else None


# -- cond -------------------------------------------------------------------------------------
def cond(
    pred: Any,
    true_fn: Callable[[], Any],
    false_fn: Callable[[], Any],
    strict: bool = False,
    name: str | None = None,
) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``; only the taken branch's ops run."""
    if isinstance(pred, bool):  # ``t == 1`` is a Python bool in TF 1.x: a branch taken silently
        raise TypeError("'pred' must not be a Python bool.")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    graph = get_default_graph()
    with graph.name_scope(name or "cond"):
        pred = convert_to_tensor(pred)
        p_false, p_true = switch(pred, pred)
        pivot_true = apply_op("Identity", [p_true], name="switch_t").outputs[0]
        pivot_false = apply_op("Identity", [p_false], name="switch_f").outputs[0]
        pred_id = apply_op("Identity", [pred], name="pred_id").outputs[0]
        results = []
        for branch, fn, pivot in ((1, true_fn, pivot_true), (0, false_fn, pivot_false)):
            with CondContext(graph, pred_id, pivot, branch) as context:
                out = fn()
                if out is None:
                    raise ValueError(
                        f"{'true_fn' if branch else 'false_fn'} must have a return value."
                    )
                flat = _flatten(out)
                flat = [context._route(t) if not context.contains(t.op) else t for t in flat]
            results.append((out, flat))
        (true_out, true_flat), (false_out, false_flat) = results
        if len(true_flat) != len(false_flat):
            raise ValueError(
                "true_fn and false_fn must return the same number of results: "
                f"{len(true_flat)} and {len(false_flat)}"
            )
        merged = []
        for t, f in zip(true_flat, false_flat, strict=True):
            if t.dtype.base_dtype != f.dtype.base_dtype:
                raise ValueError(
                    "Outputs of true_fn and false_fn must have the same type: "
                    f"{t.dtype.name}, {f.dtype.name}"
                )
            merged.append(merge([f, t])[0])
    packed = _pack(true_out, merged)
    if not strict and isinstance(packed, list | tuple) and len(packed) == 1:
        return packed[0]
    return packed


# -- while_loop -------------------------------------------------------------------------------
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Any,
    shape_invariants: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
    maximum_iterations: Any = None,
    return_same_structure: bool = False,
) -> Any:
    """Repeat ``body`` while ``cond`` is true, as TensorFlow 1.x's v1 ``while_loop``.

    ``loop_vars`` is a Tensor or a (nested) list/tuple of them; ``cond`` and ``body`` take them
    as positional arguments, ``body`` returns new values of the same structure. The result has
    the structure of ``loop_vars`` (a single element is unwrapped unless
    ``return_same_structure``). ``shape_invariants``, ``back_prop`` and ``swap_memory`` are
    accepted for compatibility; aiotf does not use them.
    """
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    graph = get_default_graph()
    with graph.name_scope(name or "while") as scope:
        flat = [convert_to_tensor(v) for v in _flatten(loop_vars)]
        if not flat:
            raise ValueError("No loop variables provided")
        counted = maximum_iterations is not None
        if counted:
            limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            flat = [convert_to_tensor(0, dtype=limit.dtype), *flat]
        context = WhileContext(graph, f"{scope}while_context", parallel_iterations)
        enters = [context.enter(v, is_constant=False) for v in flat]
        with context:
            merges = [merge([e, e]) for e in enters]
            values = [m[0] for m in merges]
            context.pivot = values[0].op
            user = values[1:] if counted else values
            c = convert_to_tensor(cond(*_pack_args(loop_vars, user)))
            if counted:
                below = apply_op("Less", [values[0], limit]).outputs[0]
                c = apply_op("LogicalAnd", [below, c]).outputs[0]
            loop_cond = apply_op("LoopCond", [c], name="LoopCond").outputs[0]
            switches = [switch(v, loop_cond) for v in values]
            identities = [
                apply_op("Identity", [s[1]], name="Identity").outputs[0] for s in switches
            ]
            context.pivot = identities[0].op
            user = identities[1:] if counted else identities
            out = body(*_pack_args(loop_vars, user))
            new = [convert_to_tensor(t) for t in _flatten(out)]
            if counted:
                new = [apply_op("AddV2", [identities[0], 1]).outputs[0], *new]
            if len(new) != len(values):
                raise ValueError(
                    "The two structures don't have the same number of elements: "
                    f"loop_vars has {len(values) - counted} and body returned {len(new) - counted}"
                )
            for (m, _), t in zip(merges, new, strict=True):
                if m.dtype.base_dtype != t.dtype.base_dtype:
                    raise ValueError(
                        f"Input tensor '{m.op.inputs[0].name}' enters the loop with type "
                        f"{m.dtype.name}, but has type {t.dtype.name} after 1 iteration."
                    )
                next_iteration = apply_op("NextIteration", [t], name="NextIteration")
                m.op._update_input(1, next_iteration.outputs[0])
            exits = []
            for s in switches:
                exit_op = apply_op("Exit", [s[0]], name="Exit")
                exit_op._control_flow_context = context.outer
                exits.append(exit_op.outputs[0])
    results = exits[1:] if counted else exits
    packed = _pack(out, results)  # as TensorFlow: the structure the body returned
    if not return_same_structure and isinstance(packed, list | tuple) and len(packed) == 1:
        return packed[0]
    return packed


# -- structures -------------------------------------------------------------------------------
def _flatten(structure: Any) -> list[Tensor]:
    if isinstance(structure, list | tuple):
        return [t for element in structure for t in _flatten(element)]
    if isinstance(structure, Operation):
        raise TypeError(f"Expected a Tensor, got the Operation {structure.name!r}")
    return [convert_to_tensor(structure)]


def _pack(structure: Any, flat: Sequence[Tensor]) -> Any:
    """``flat`` in the nesting of ``structure``."""
    values = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, list | tuple):
            items = [build(e) for e in s]
            if isinstance(s, tuple) and hasattr(s, "_fields"):  # namedtuple
                return type(s)(*items)
            return type(s)(items)
        return next(values)

    return build(structure)


def _pack_args(loop_vars: Any, flat: Sequence[Tensor]) -> list[Any]:
    """``cond``'s and ``body``'s positional arguments: ``loop_vars``' top-level elements."""
    packed = _pack(loop_vars, flat)
    return list(packed) if isinstance(loop_vars, list | tuple) else [packed]
