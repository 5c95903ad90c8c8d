"""Variable kernels: ref variables (a :class:`Ref` slot) and resource variables (a :class:`Var`).

Both kinds live in the device's ResourceMgr, so they outlive a step and are shared by every step
of the session. The ref kernels follow the executor's contract: a ``Ref(T)`` input receives the
:class:`Ref` itself (the executor dereferences a ref only where a plain input consumes it), and
a ``Ref(T)`` output is that same object.

A ref variable's updates write into its buffer, as TensorFlow's do (``AssignRefVariable``: an
Assign copies into the existing buffer when the sizes agree; AssignAdd and AssignSub update in
place). A read of the ref (``v/read``, any plain input it feeds) hands out a read-only view of
that buffer, so, as in TensorFlow 1.x, a value read before an update and consumed after it sees
the update: ``with control_dependencies([v.assign_add(1)]): tf.identity(v)`` reads the new value,
and a ``while_loop`` that assigns a variable sees each iteration's value. The client copies a
fetched view, so what a run returns never changes afterwards.

A resource variable keeps TensorFlow's copy-on-write semantics instead: each update replaces the
value with a new, read-only array, so a value a reader already holds never changes under it.

Every read-modify-write happens under one lock (``_UPDATE_LOCK``): the kernels run on the event
loop or in pool threads (a big update is a pool kernel; a compiled step may finish in a pool
thread), and the lock keeps concurrent updates exact. Readers take no lock, as in TensorFlow:
a read that overlaps an update in another thread may see part of it. Uncontended, the lock
costs well under a microsecond.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.framework.tensor_shape import TensorShape, as_shape
from aiotf.kernels import derived
from aiotf.kernels.context import Ref, ResourceHandle, StepContext
from aiotf.kernels.registry import NS_PER_ELEMENT, KernelNode, register_kernel, size_of

Array = np.ndarray[Any, Any]
VAR_KIND = "Var"
_UPDATE_LOCK = threading.Lock()
_ADDABLE = (
    dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
    dtypes.complex64, dtypes.complex128,
    dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
    dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64,
)  # fmt: skip


def _update_cost(target: Any, value: Any) -> float:
    """An assignment's estimate: the copy of ``value`` (``target`` is a Ref or a handle)."""
    return NS_PER_ELEMENT * size_of(value)


def tf_type_name(dtype: dtypes.DType) -> str:
    """TensorFlow's ``DataTypeString``: ``float``, ``double``, ``half``, ``int32``..."""
    name = dtype.base_dtype.name
    return {"float32": "float", "float64": "double", "float16": "half"}.get(name, name)


def shape_text(shape: Any) -> str:
    """TensorFlow's ``TensorShape::DebugString``: ``[2,3]``, ``[]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def _frozen(value: Any, dtype: Any = None) -> Array:
    """A variable's new value: a private, read-only copy of ``value``.

    Private, so a fed or constant array never aliases the variable; read-only, so neither a
    kernel nor a caller holding a fetched value can change the variable behind its back.
    """
    out = np.array(value, dtype=dtype, copy=True)
    derived.freeze(out)
    return out


# ----------------------------------------------------------------------------------------------
# Ref variables
# ----------------------------------------------------------------------------------------------


@register_kernel("VariableV2")
def variable_v2(
    ctx: StepContext,
    *,
    shape: Any,
    dtype: dtypes.DType,
    container: bytes,
    shared_name: bytes,
    node: KernelNode,
) -> Ref:
    name = shared_name.decode() or node.name
    create = functools.partial(Ref, node.name, dtype, as_shape(shape))
    ref: Ref = ctx.device.resource_manager.lookup_or_create(container.decode(), name, create)
    return ref


def _lhs_shape(ref: Ref) -> tuple[int, ...]:
    """The shape Assign compares against: the value's, else the declared shape when complete."""
    if ref.value is not None:
        return tuple(ref.value.shape)
    shape = ref.shape
    if isinstance(shape, TensorShape) and shape.is_fully_defined():
        return tuple(d for d in shape.as_list() if d is not None)  # all known here
    return ()


@register_kernel("Assign", cost=_update_cost)
def assign(ref: Ref, value: Array, *, validate_shape: bool) -> Ref:
    if validate_shape and _lhs_shape(ref) != value.shape:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Assign requires shapes of both tensors to match. lhs shape= "
            f"{shape_text(_lhs_shape(ref))} rhs shape= {shape_text(value.shape)}",
        )
    with _UPDATE_LOCK:
        buffer = ref.buffer
        if buffer is not None and buffer.size == value.size and buffer.dtype == value.dtype:
            if buffer.shape != value.shape:  # validate_shape=False: the same memory, reshaped
                ref.set_buffer(buffer.reshape(value.shape))
            np.copyto(ref.buffer, value)  # into the buffer: readers holding it see the update
        else:
            ref.set_buffer(np.array(value, copy=True))
    return ref


def _update_ref(ref: Ref, value: Array, fn: Callable[..., Array]) -> Ref:
    with _UPDATE_LOCK:
        buffer = ref.buffer
        if buffer is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {ref.name}"
            )
        if buffer.shape != value.shape:
            raise errors.InvalidArgumentError(
                None, None, "Parameters and update must be the same size"
            )
        fn(buffer, value, out=buffer, casting="unsafe")  # in place, as TensorFlow's DenseUpdate
    return ref


@register_kernel("AssignAdd", types={"T": _ADDABLE}, cost=_update_cost)
def assign_add(ref: Ref, value: Array) -> Ref:
    return _update_ref(ref, value, np.add)


@register_kernel("AssignSub", types={"T": _ADDABLE}, cost=_update_cost)
def assign_sub(ref: Ref, value: Array) -> Ref:
    return _update_ref(ref, value, np.subtract)


@register_kernel("IsVariableInitialized")
def is_variable_initialized(ref: Ref) -> Array:
    return np.array(ref.value is not None)


# ----------------------------------------------------------------------------------------------
# Resource variables
# ----------------------------------------------------------------------------------------------


class Var:
    """A resource variable's ResourceMgr entry: its dtype and value, both None while it does not
    exist (never assigned, or destroyed). An entry is a cell, so destroying one needs no removal.
    """

    __slots__ = ("dtype", "value")

    def __init__(self) -> None:
        self.dtype: dtypes.DType | None = None
        self.value: Array | None = None

    def __repr__(self) -> str:
        return f"Var(dtype={self.dtype}, value={self.value!r})"


def _handle(resource: Array) -> ResourceHandle:
    handle = resource.item() if isinstance(resource, np.ndarray) else resource
    if not isinstance(handle, ResourceHandle):
        raise errors.InvalidArgumentError(
            None, None, f"Expected a resource handle, got {type(handle).__name__}"
        )
    return handle


def _lookup(ctx: StepContext, handle: ResourceHandle) -> Var | None:
    var = ctx.device.resource_manager.lookup(handle.container, handle.name)
    return var if isinstance(var, Var) and var.value is not None else None


def _cell(ctx: StepContext, handle: ResourceHandle) -> Var:
    var = ctx.device.resource_manager.lookup_or_create(handle.container, handle.name, Var)
    if not isinstance(var, Var):
        raise errors.InvalidArgumentError(
            None, None, f"Resource {handle.container}/{handle.name} is a {type(var).__name__}"
        )
    return var


def _missing(ctx: StepContext, handle: ResourceHandle) -> str:
    """TensorFlow's ResourceMgr words for a variable it cannot find: its container first."""
    if not ctx.device.resource_manager.has_container(handle.container):
        return (
            f"Container {handle.container} does not exist. (Could not find resource: "
            f"{handle.container}/{handle.name})"
        )
    return f"Resource {handle.container}/{handle.name}/N10tensorflow3VarE does not exist."


@register_kernel("VarHandleOp")
def var_handle_op(
    ctx: StepContext, *, container: bytes, shared_name: bytes, node: KernelNode
) -> Array:
    manager = ctx.device.resource_manager
    return ResourceHandle(
        device=node.device or getattr(ctx.device, "name", ""),
        container=container.decode() or manager.default_container,
        name=shared_name.decode() or node.name,
        kind=VAR_KIND,
    ).as_tensor()


@register_kernel("ReadVariableOp")
def read_variable_op(ctx: StepContext, resource: Array, *, dtype: dtypes.DType) -> Array:
    handle = _handle(resource)
    var = _lookup(ctx, handle)
    if var is None or var.dtype is None or var.value is None:
        raise errors.FailedPreconditionError(
            None,
            None,
            f"Could not find variable {handle.name}. This could mean that the variable has been "
            "deleted. In TF1, it can also mean the variable is uninitialized. Debug info: "
            f"container={handle.container}, status error message={_missing(ctx, handle)}",
        )
    if var.dtype.base_dtype is not dtype.base_dtype:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Trying to read variable with wrong dtype. Expected {tf_type_name(dtype)} got "
            f"{tf_type_name(var.dtype)}",
        )
    return var.value


@register_kernel("AssignVariableOp", cost=_update_cost)
def assign_variable_op(
    ctx: StepContext, resource: Array, value: Array, *, dtype: dtypes.DType, validate_shape: bool
) -> None:
    var = _cell(ctx, _handle(resource))
    new = _frozen(value)
    with _UPDATE_LOCK:
        if var.dtype is not None and var.dtype.base_dtype is not dtype.base_dtype:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Trying to assign variable with wrong dtype. Expected {tf_type_name(var.dtype)} "
                f"got {tf_type_name(dtype)}",
            )
        if validate_shape and var.value is not None and var.value.shape != new.shape:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Trying to assign to variable with tensor with wrong shape. Expected "
                f"{shape_text(var.value.shape)} got {shape_text(new.shape)}",
            )
        var.dtype = dtype.base_dtype
        var.value = new


def _update_var(
    ctx: StepContext, resource: Array, value: Array, dtype: dtypes.DType, fn: Callable[..., Array]
) -> None:
    handle = _handle(resource)
    with _UPDATE_LOCK:
        var = _lookup(ctx, handle)
        if var is None or var.value is None or var.dtype is None:
            raise errors.NotFoundError(None, None, _missing(ctx, handle))
        if var.dtype.base_dtype is not dtype.base_dtype:
            raise errors.InvalidArgumentError(
                None, None, "DType of variable handle and value does not match."
            )
        if var.value.shape != value.shape:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Cannot update variable with shape {shape_text(var.value.shape)} using a Tensor "
                f"with shape {shape_text(value.shape)}, shapes must be equal.",
            )
        var.value = _frozen(fn(var.value, value), var.value.dtype)


@register_kernel("AssignAddVariableOp", types={"dtype": _ADDABLE}, cost=_update_cost)
def assign_add_variable_op(
    ctx: StepContext, resource: Array, value: Array, *, dtype: dtypes.DType
) -> None:
    _update_var(ctx, resource, value, dtype, np.add)


@register_kernel("AssignSubVariableOp", types={"dtype": _ADDABLE}, cost=_update_cost)
def assign_sub_variable_op(
    ctx: StepContext, resource: Array, value: Array, *, dtype: dtypes.DType
) -> None:
    _update_var(ctx, resource, value, dtype, np.subtract)


@register_kernel("VarIsInitializedOp")
def var_is_initialized_op(ctx: StepContext, resource: Array) -> Array:
    return np.array(_lookup(ctx, _handle(resource)) is not None)


@register_kernel("DestroyResourceOp")
def destroy_resource_op(ctx: StepContext, resource: Array, *, ignore_lookup_error: bool) -> None:
    handle = _handle(resource)
    with _UPDATE_LOCK:
        var = _lookup(ctx, handle)
        if var is None:
            if ignore_lookup_error:
                return
            raise errors.NotFoundError(
                None, None, f"Resource {handle.container}/{handle.name}/<unknown> does not exist."
            )
        ctx.device.resource_manager.delete(handle.container, handle.name)
