"""The kernel registry: ``(op type, device type, dtype constraints) -> compute function``.

A kernel is a small function registered with :func:`register_kernel`. Its signature says what it
needs, and is read once at registration:

- positional parameters receive the node's input tensors (numpy arrays), in order;
  ``*args`` receives all of them (ops with a variable number of inputs);
- a first parameter named ``ctx`` receives the step context (rendezvous, call frame, device);
- keyword-only parameters receive the node's attrs of the same name, bound once when the kernel
  is created (``transpose_a``, ``T``...); the keyword-only parameter ``node`` receives the
  :class:`KernelNode` itself.

It returns one array for a single-output op, a tuple for several, None for none. An ``async def``
kernel is awaited in its own task; a sync kernel runs inline in the executor, or in the device's
thread pool when it was registered ``expensive`` and its inputs are large.

Three registries are linked only by the op-type string: op definitions
(``aiotf.framework.op_def_registry``), these kernels, and gradients.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from aiotf.framework import attr_value, dtypes, errors
from aiotf.proto import NodeDef, types_pb2

# The cost model. A kernel registered ``expensive`` estimates its work from its inputs, in
# nanoseconds of one core (its ``cost`` function; by default NS_PER_ELEMENT per input element),
# and goes to the device's thread pool when the estimate reaches POOL_MIN_COST; below it, it runs
# inline in the executor loop. Calibrated on the 2-core benchmark machine (numpy 2.4, OpenBLAS):
# a float32 add, multiply or max streams ~0.3-0.5 ns per element once its operands leave the
# cache; a BLAS matmul ~0.005 ns per flop when large, ~0.01-0.03 when small or skinny (the sizes
# near the threshold, hence the rate below); a thread-pool hop costs 30-100 us (an idle pool
# thread must be woken). At ~260 us a kernel is worth the hop, and nothing much longer than that
# blocks the event loop (issue 7: no kernel of ~1 ms on the loop thread). So an elementwise
# kernel moves to the pool from ~512K elements and a matmul from ~8 Mflop; mlp_b1's kernels (a
# few us each) stay inline.
#
# Memory-bound array kernels are charged by the elements they move: NS_PER_ELEMENT for copies
# that stream (concat, tile, pad, fill, gather along axis 0, slices); NS_PER_PERMUTED for those
# that read with strides (transposes, gathers along inner axes, space-to-batch), measured at
# 0.5-0.7 ns near the threshold and 2-3 ns out of cache; NS_PER_SCANNED for cumulative sums
# (3.3-8 ns); NS_PER_FOUND for Where (argwhere of a mask, 6-8 ns). A cost function may read
# small value inputs (a Tile's multiples, a Fill's dims); the compiled schedules estimate again
# when the inputs' shapes or small integer values change (``loop_compiler.cost_gate``). A
# kernel that only returns a view or its input (Identity,
# Reshape, ExpandDims, Shape) needs no estimate: it always runs inline.
NS_PER_ELEMENT = 0.5
NS_PER_PERMUTED = 4 * NS_PER_ELEMENT
NS_PER_SCANNED = 8 * NS_PER_ELEMENT
NS_PER_FOUND = 16 * NS_PER_ELEMENT
NS_PER_FLOP = 0.033
POOL_MIN_COST = 1 << 18

# A pool kernel's work as independent pieces, and what makes its outputs once all have run
# (``register_kernel``'s ``parts``).
Parts = tuple[Sequence[Callable[[], None]], Callable[[], Any]]


def size_of(x: Any) -> int:
    """The number of elements of an input (1 for a non-array, such as a variable's ref)."""
    return int(getattr(x, "size", 1))


def input_elements(*inputs: Any) -> float:
    """The default cost estimate of an expensive kernel: NS_PER_ELEMENT per input element."""
    return NS_PER_ELEMENT * sum(size_of(x) for x in inputs)


def elementwise_cost(*inputs: Any) -> float:
    """An elementwise kernel's estimate: NS_PER_ELEMENT per element of its largest operand
    (the output of a broadcast is about as large)."""
    return NS_PER_ELEMENT * max([size_of(x) for x in inputs], default=0)


def first_input_cost(rate: float) -> Callable[..., float]:
    """An estimate of ``rate`` ns per element of the first input (the data; the others are
    small: an axis, a permutation)."""

    def cost(x: Any, *rest: Any) -> float:
        return rate * size_of(x)

    cost.__name__ = f"first_input_cost_{rate:g}"
    return cost


def guarded(estimate: Callable[..., float]) -> Callable[..., float]:
    """``estimate``, or ``input_elements`` when it cannot read its inputs: malformed inputs are
    for the kernel to report, never for its estimate."""

    @functools.wraps(estimate)
    def cost(*inputs: Any, **attrs: Any) -> float:
        try:
            return estimate(*inputs, **attrs)
        except (TypeError, ValueError, IndexError, ArithmeticError):
            return input_elements(*inputs)

    return cost


@dataclasses.dataclass(frozen=True)
class KernelNode:
    """What a kernel may know about its node: identity, attrs (Python values) and dtypes."""

    name: str
    op: str
    attrs: Mapping[str, Any]
    input_dtypes: tuple[dtypes.DType, ...]
    output_dtypes: tuple[dtypes.DType, ...]
    device: str = ""
    inputs: tuple[str, ...] = ()  # the data inputs, as NodeDef spells them ("x", "x:1")


def graph_node_error(
    e: errors.OpError,
    node: KernelNode,
    name: str,
    op: str,
    inputs: Iterable[str],
    attrs: Mapping[str, Any],
) -> errors.OpError:
    """``e`` as the graph's own node ``name`` (of type ``op``, with data ``inputs`` and
    ``attrs``), fused into ``node`` by the remapper, raises it: naming that node."""
    node_def = NodeDef(name=name, op=op, device=node.device)
    node_def.input.extend(inputs)
    for key, value in attrs.items():
        node_def.attr[key].CopyFrom(attr_value.encode(value))
    message = f"{e.message}\n\t [[{{{{node {name}}}}}]]"
    return type(e)(node_def, None, message)


@dataclasses.dataclass(frozen=True)
class KernelDef:
    """One registration."""

    op_type: str
    device_type: str
    fn: Callable[..., Any]
    type_constraints: Mapping[str, frozenset[dtypes.DType]]
    expensive: bool
    cost: Callable[..., float]
    cost_attr_params: tuple[str, ...]
    is_async: bool
    wants_ctx: bool
    attr_params: tuple[str, ...]
    registered_at: str
    fast: Callable[..., Any] | None = None
    fast_for: Callable[..., Any] | None = None  # attrs -> a fast function (or None)
    forward: Callable[..., Any] | None = None  # the kernel, into its first input's buffer
    parts: Callable[..., Any] | None = None  # the kernel's work as parts (``Parts``), or None

    def matches(self, attrs: Mapping[str, Any]) -> bool:
        for attr, allowed in self.type_constraints.items():
            value = attrs.get(attr)
            if value is None:
                return False
            values = value if isinstance(value, list) else [value]
            if any(dtypes.as_dtype(v).base_dtype not in allowed for v in values):
                return False
        return True

    def describe(self) -> str:
        parts = [f"device='{self.device_type}'"]
        for attr, allowed in sorted(self.type_constraints.items()):
            names = ", ".join(sorted(dtype_enum_name(d) for d in allowed))
            parts.append(f"{attr} in [{names}]")
        return "; ".join(parts)


class OpKernel:
    """A kernel instantiated for one node: attrs bound, ready to compute."""

    __slots__ = (
        "compute",
        "cost",
        "expensive",
        "fast",
        "forward",
        "is_async",
        "kernel_def",
        "node",
        "parts",
        "wants_ctx",
    )

    def __init__(self, kernel_def: KernelDef, node: KernelNode) -> None:
        self.kernel_def = kernel_def
        self.node = node
        self.fast = kernel_def.fast
        self.is_async = kernel_def.is_async
        self.wants_ctx = kernel_def.wants_ctx
        self.expensive = kernel_def.expensive
        self.cost = kernel_def.cost
        bound = {}
        for param in kernel_def.attr_params:
            if param == "node":
                bound["node"] = node
            elif param in node.attrs:
                bound[param] = node.attrs[param]
        self.compute: Callable[..., Any] = (
            functools.partial(kernel_def.fn, **bound) if bound else kernel_def.fn
        )
        forward = kernel_def.forward
        self.forward = functools.partial(forward, **bound) if forward and bound else forward
        parts = kernel_def.parts
        self.parts = functools.partial(parts, **bound) if parts and bound else parts
        if kernel_def.cost_attr_params:  # an estimate that needs attrs gets them bound too
            attrs = {p: bound[p] for p in kernel_def.cost_attr_params if p in bound}
            self.cost = functools.partial(kernel_def.cost, **attrs)
        if kernel_def.fast_for is not None:  # a fast function made for this node's attrs
            self.fast = kernel_def.fast_for(**bound)


_REGISTRY: dict[tuple[str, str], list[KernelDef]] = {}


def register_kernel(
    op_type: str,
    device_type: str = "CPU",
    *,
    types: Mapping[str, Iterable[Any]] | None = None,
    expensive: bool = False,
    cost: Callable[..., float] | None = None,
    fast: Callable[..., Any] | None = None,
    fast_for: Callable[..., Any] | None = None,
    forward: Callable[..., Any] | None = None,
    parts: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the function as the kernel of ``op_type`` on ``device_type``.

    ``types`` constrains type attrs (``{"T": [float32, float64]}``); several registrations of one
    op may split its dtypes between them. ``expensive`` kernels may run in the device's thread
    pool; ``cost(*inputs)`` estimates their work in nanoseconds (see POOL_MIN_COST; default:
    ``input_elements``). The estimate's keyword-only parameters receive attrs (or ``node``),
    as the kernel's do; they must be among the kernel's own.

    ``fast`` (for a kernel without attrs or ``ctx``) computes what the kernel computes for valid
    inputs, without its checks (a numpy ufunc for an elementwise op). The compiled schedules
    call it instead of the kernel, and call the kernel when it raises, so that an error keeps
    the kernel's class and words. ``fast_for`` (for a kernel with attrs) makes one for a node:
    called with the node's attrs as the kernel's keyword arguments, it returns such a function,
    or None when those attrs have none.

    ``forward`` (TensorFlow's ``forward_input_or_allocate_output``) computes what the kernel
    computes into its first input's buffer and returns that array; it takes what the kernel
    takes, attrs included. The compiled flat schedules call it when that input is theirs to
    overwrite: its last reader is this node and nothing else holds the array
    (``flat_compiler``), so an MLP's BiasAdd and Relu write over the product they read instead
    of into fresh memory. It must check what the kernel checks before it writes anything, and
    raise (the kernel then runs) rather than write part of an answer.

    ``parts`` (for a pool kernel whose work splits into a few independent pieces) takes what the
    kernel takes, attrs included, and returns its work as a :data:`Parts`, ``(parts,
    outputs)``: callables that each run one piece, on whichever pool thread claims it, and one
    that makes the kernel's outputs once all have run; or None for inputs it does not split,
    which the kernel then computes, checks and errors included. A compiled step's pool job calls
    it instead of the kernel, so that the thread that ends the last piece carries the step on
    (``intra_op.Relay``). The outputs must be the kernel's, whichever thread ran which piece.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        constraints = {
            attr: frozenset(dtypes.as_dtype(t) for t in allowed)
            for attr, allowed in (types or {}).items()
        }
        params = list(inspect.signature(fn).parameters.values())
        attr_params = tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
        cost_params = inspect.signature(cost).parameters.values() if cost else ()
        cost_attrs = tuple(p.name for p in cost_params if p.kind is inspect.Parameter.KEYWORD_ONLY)
        if not set(cost_attrs) <= set(attr_params):
            raise ValueError(f"{op_type}'s cost estimate asks for attrs its kernel does not take")
        wants_ctx = bool(params) and params[0].name == "ctx"
        if fast is not None and (attr_params or wants_ctx):
            raise TypeError(
                f"{op_type}'s fast function stands in for a kernel of its inputs alone; this "
                "kernel also takes " + ("ctx" if wants_ctx else f"attrs {list(attr_params)}")
            )
        if fast_for is not None and (wants_ctx or not attr_params):
            raise TypeError(
                f"{op_type}'s fast_for makes a fast function from attrs; this kernel takes "
                + ("ctx" if wants_ctx else "none (give fast instead)")
            )
        if forward is not None and wants_ctx:
            raise TypeError(f"{op_type}'s forward computes from its inputs; this kernel takes ctx")
        if parts is not None and (wants_ctx or not (expensive or cost is not None)):
            raise TypeError(f"{op_type}'s parts split a pool kernel of its inputs and attrs")
        kernel_def = KernelDef(
            op_type=op_type,
            device_type=device_type,
            fn=fn,
            type_constraints=constraints,
            expensive=expensive or cost is not None,
            cost=cost or input_elements,
            cost_attr_params=cost_attrs,
            is_async=inspect.iscoroutinefunction(fn),
            wants_ctx=wants_ctx,
            attr_params=attr_params,
            fast=fast,
            fast_for=fast_for,
            forward=forward,
            parts=parts,
            registered_at=_caller(),
        )
        _add(kernel_def)
        return fn

    return decorate


def _add(kernel_def: KernelDef) -> None:
    key = (kernel_def.op_type, kernel_def.device_type)
    for existing in _REGISTRY.get(key, []):
        if existing.type_constraints == kernel_def.type_constraints:
            raise ValueError(
                f"Kernel for op {kernel_def.op_type!r} on {kernel_def.device_type} with "
                f"{kernel_def.describe()} is already registered at {existing.registered_at}"
            )
    _REGISTRY.setdefault(key, []).append(kernel_def)


def _caller() -> str:
    frame = traceback.extract_stack(limit=4)[0]
    return f"{frame.filename}:{frame.lineno}"


def find_kernel_def(op_type: str, device_type: str, attrs: Mapping[str, Any]) -> KernelDef | None:
    for kernel_def in _REGISTRY.get((op_type, device_type), ()):
        if kernel_def.matches(attrs):
            return kernel_def
    return None


def has_kernel(op_type: str, device_type: str, attrs: Mapping[str, Any]) -> bool:
    return find_kernel_def(op_type, device_type, attrs) is not None


def supported_device_types(op_type: str) -> list[str]:
    return sorted({dev for (op, dev) in _REGISTRY if op == op_type})


def registered_kernels_for_op(op_type: str) -> list[KernelDef]:
    return [k for (op, _), defs in _REGISTRY.items() if op == op_type for k in defs]


def create_kernel(node: KernelNode, device_type: str) -> OpKernel:
    """The kernel for ``node`` on ``device_type``; ``NotFoundError`` listing what is registered."""
    kernel_def = find_kernel_def(node.op, device_type, node.attrs)
    if kernel_def is None:
        raise errors.NotFoundError(
            None, node.op, no_kernel_message(node.op, node.name, device_type, node.attrs)
        )
    return OpKernel(kernel_def, node)


def no_kernel_message(
    op_type: str, node_name: str, device_type: str, attrs: Mapping[str, Any]
) -> str:
    type_attrs = ", ".join(
        f"{k}={_type_text(v)}" for k, v in sorted(attrs.items()) if _type_text(v) is not None
    )
    registered = registered_kernels_for_op(op_type)
    listing = "\n".join(f"  {k.describe()}" for k in registered) or "  <no registered kernels>"
    return (
        f"No registered '{op_type}' OpKernel for '{device_type}' devices compatible with node "
        f"{{{{node {node_name}}}}}\n\t (OpKernel was found, but attributes didn't match) "
        f"Requested Attributes: {type_attrs}\n\t. Registered:\n{listing}"
        if registered
        else f"No registered '{op_type}' OpKernel for '{device_type}' devices compatible with node "
        f"{{{{node {node_name}}}}}. Registered:\n{listing}"
    )


def _type_text(value: Any) -> str | None:
    if isinstance(value, dtypes.DType):
        return dtype_enum_name(value)
    return None


def dtype_enum_name(dtype: dtypes.DType) -> str:
    """TensorFlow's name of ``dtype``'s ``DataType`` enum: ``DT_FLOAT``, ``DT_HALF``."""
    return types_pb2.DataType.Name(dtype.as_datatype_enum)
