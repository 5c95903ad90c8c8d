"""Variable kernels: ref variables and resource variables, alone and through a Session.

Error words are TensorFlow 2.21's (recorded with ``tf.compat.v1`` in graph mode).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices.resource_mgr import ResourceMgr
from aiotf.kernels import create_kernel
from aiotf.kernels.context import Ref, ResourceHandle, StepContext
from aiotf.kernels.registry import KernelNode
from aiotf.ops import state_ops

F32, I32 = np.float32, np.int32
errors = aiotf.errors
DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


class _Device:
    name = DEVICE

    def __init__(self) -> None:
        self.resource_manager = ResourceMgr()


def _ctx(device: _Device | None = None) -> StepContext:
    return StepContext(0, None, [], [], device=device or _Device())  # type: ignore[arg-type]


def _kernel(op: str, name: str = "n", **attrs: Any) -> Any:
    from aiotf.framework.op_def_registry import lookup

    full = {**lookup(op).default_attrs(), **attrs}
    node = KernelNode(name, op, full, (), (), DEVICE)
    kernel = create_kernel(node, "CPU")
    return (lambda *a: kernel.compute(*a)) if not kernel.wants_ctx else kernel.compute


def _variable(ctx: StepContext, name: str = "v", shape: Any = (2,), **attrs: Any) -> Ref:
    make = _kernel("VariableV2", name, shape=aiotf.TensorShape(shape), dtype=aiotf.float32, **attrs)
    ref: Ref = make(ctx)
    return ref


# ----------------------------------------------------------------------------------------------
# Ref variables, kernel by kernel
# ----------------------------------------------------------------------------------------------


def test_variable_v2_lives_in_the_resource_manager() -> None:
    ctx = _ctx()
    ref = _variable(ctx)
    assert isinstance(ref, Ref) and ref.value is None and ref.name == "v"
    assert _variable(ctx) is ref  # the next step finds the same slot
    assert ctx.device.resource_manager.lookup("", "v") is ref
    shared = _variable(ctx, "w", shared_name=b"s", container=b"c")
    assert ctx.device.resource_manager.lookup("c", "s") is shared
    assert _variable(ctx, "other", shared_name=b"s", container=b"c") is shared


def test_updates_write_into_the_variable_s_buffer_as_tensorflow_s_do() -> None:
    """TensorFlow's AssignRefVariable copies into the existing buffer and AssignAdd updates it in
    place: a value read before an update sees it (TF 1.x's aliasing of ``v/read``)."""
    ctx = _ctx()
    ref = _variable(ctx)
    fed = np.array([1.0, 2.0], F32)
    out = _kernel("Assign", T=aiotf.float32)(ref, fed)
    assert out is ref
    first = ref.value
    np.testing.assert_array_equal(first, fed)
    fed[0] = 9.0  # the caller's array is not the variable's
    assert first[0] == 1.0
    assert not first.flags.writeable  # nor can a reader write into it
    _kernel("AssignAdd", T=aiotf.float32)(ref, np.array([1.0, 1.0], F32))
    np.testing.assert_array_equal(first, [2.0, 3.0])  # the reader's value is the variable's
    _kernel("Assign", T=aiotf.float32)(ref, np.array([7.0, 8.0], F32))
    np.testing.assert_array_equal(first, [7.0, 8.0])  # same size: copied into the buffer
    _kernel("Assign", T=aiotf.float32, validate_shape=False)(ref, np.array([5.0], F32))
    np.testing.assert_array_equal(first, [7.0, 8.0])  # another size: a new buffer
    np.testing.assert_array_equal(ref.value, [5.0])


def test_assign_shape_checks() -> None:
    ctx = _ctx()
    ref = _variable(ctx)
    assign = _kernel("Assign", T=aiotf.float32)
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"^Assign requires shapes of both tensors to match\. lhs shape= \[2\] rhs shape= \[3\]$",
    ):
        assign(ref, np.zeros(3, F32))
    assert ref.value is None
    _kernel("Assign", T=aiotf.float32, validate_shape=False)(ref, np.zeros((3, 1), F32))
    assert ref.value is not None and ref.value.shape == (3, 1)
    with pytest.raises(errors.InvalidArgumentError, match=r"lhs shape= \[3,1\] rhs shape= \[2\]$"):
        assign(ref, np.zeros(2, F32))


def test_assign_to_uninitialized_variable_of_unknown_shape_compares_with_scalar() -> None:
    ctx = _ctx()
    ref = _variable(ctx, shape=None)
    with pytest.raises(errors.InvalidArgumentError, match=r"lhs shape= \[\] rhs shape= \[4\]$"):
        _kernel("Assign", T=aiotf.float32)(ref, np.zeros(4, F32))


@pytest.mark.parametrize(("op", "fn"), [("AssignAdd", np.add), ("AssignSub", np.subtract)])
def test_assign_add_sub(op: str, fn: Any) -> None:
    ctx = _ctx()
    ref = _variable(ctx)
    update = _kernel(op, T=aiotf.float32)
    with pytest.raises(
        errors.FailedPreconditionError, match="^Attempting to use uninitialized value v$"
    ):
        update(ref, np.ones(2, F32))
    start = np.array([1.5, -2.0], F32)
    ref.set_buffer(start.copy())
    delta = np.array([0.25, 4.0], F32)
    assert update(ref, delta) is ref
    assert ref.value.dtype == F32
    np.testing.assert_array_equal(ref.value, fn(start, delta))
    for bad in (np.ones(3, F32), np.float32(1.0) * np.ones((), F32), np.ones((1, 2), F32)):
        with pytest.raises(
            errors.InvalidArgumentError, match="^Parameters and update must be the same size$"
        ):
            update(ref, bad)


def test_assign_add_scalar_int_wraps_like_tensorflow() -> None:
    ctx = _ctx()
    make = _kernel("VariableV2", "c", shape=aiotf.TensorShape([]), dtype=aiotf.int32)
    ref = make(ctx)
    ref.set_buffer(np.array(np.iinfo(I32).max, I32))
    _kernel("AssignAdd", T=aiotf.int32)(ref, np.array(1, I32))
    assert isinstance(ref.value, np.ndarray) and ref.value.shape == ()
    assert ref.value.dtype == I32 and ref.value == np.iinfo(I32).min


def test_is_variable_initialized() -> None:
    ctx = _ctx()
    ref = _variable(ctx)
    check = _kernel("IsVariableInitialized", dtype=aiotf.float32)
    assert check(ref).dtype == np.bool_ and not check(ref)
    ref.set_buffer(np.zeros(2, F32))
    assert check(ref)


# ----------------------------------------------------------------------------------------------
# Resource variables, kernel by kernel
# ----------------------------------------------------------------------------------------------


def _handle(ctx: StepContext, name: str = "h", **attrs: Any) -> np.ndarray:
    make = _kernel("VarHandleOp", name, dtype=aiotf.float32, shape=aiotf.TensorShape([2]), **attrs)
    out: np.ndarray = make(ctx)
    return out


def test_var_handle_op_names_the_resource() -> None:
    ctx = _ctx()
    h = _handle(ctx)
    assert h.shape == () and h.dtype == object
    assert h.item() == ResourceHandle(DEVICE, "localhost", "h", "Var")
    other = _handle(ctx, "x", container=b"cc", shared_name=b"hh").item()
    assert (other.container, other.name) == ("cc", "hh")
    assert ctx.device.resource_manager.lookup("localhost", "h") is None  # a handle creates nothing


def test_resource_variable_life_cycle() -> None:
    ctx = _ctx()
    h = _handle(ctx)
    read = _kernel("ReadVariableOp", "rd", dtype=aiotf.float32)
    assign = _kernel("AssignVariableOp", dtype=aiotf.float32)
    add = _kernel("AssignAddVariableOp", dtype=aiotf.float32)
    sub = _kernel("AssignSubVariableOp", dtype=aiotf.float32)
    initialized = _kernel("VarIsInitializedOp")
    destroy = _kernel("DestroyResourceOp")
    assert not initialized(ctx, h)
    fed = np.array([1.0, 2.0], F32)
    assert assign(ctx, h, fed) is None
    fed[0] = 7.0
    np.testing.assert_array_equal(read(ctx, h), [1.0, 2.0])
    assert not read(ctx, h).flags.writeable
    add(ctx, h, np.array([10.0, 10.0], F32))
    sub(ctx, h, np.array([1.0, 2.0], F32))
    np.testing.assert_array_equal(read(ctx, h), [10.0, 10.0])
    assert initialized(ctx, h)
    destroy(ctx, h)
    assert not initialized(ctx, h)
    destroy(ctx, h)  # ignore_lookup_error defaults to true
    assign(ctx, h, np.array([1, 2], I32).astype(F32))
    assert initialized(ctx, h)


def test_resource_variable_errors() -> None:
    ctx = _ctx()
    h, hc = _handle(ctx), _handle(ctx, "hc", container=b"cc", shared_name=b"hh")
    read = _kernel("ReadVariableOp", dtype=aiotf.float32)
    with pytest.raises(errors.FailedPreconditionError) as info:
        read(ctx, h)  # the container itself does not exist yet (TensorFlow's words, recorded)
    assert info.value.message == (
        "Could not find variable h. This could mean that the variable has been deleted. In TF1, "
        "it can also mean the variable is uninitialized. Debug info: container=localhost, status "
        "error message=Container localhost does not exist. (Could not find resource: localhost/h)"
    )
    other = _handle(ctx, "other", shared_name=b"other")
    _kernel("AssignVariableOp", dtype=aiotf.float32)(ctx, other, np.ones(2, F32))
    with pytest.raises(errors.FailedPreconditionError) as info:
        read(ctx, h)  # the container exists now
    assert info.value.message == (
        "Could not find variable h. This could mean that the variable has been deleted. In TF1, "
        "it can also mean the variable is uninitialized. Debug info: container=localhost, status "
        "error message=Resource localhost/h/N10tensorflow3VarE does not exist."
    )
    with pytest.raises(errors.FailedPreconditionError, match="variable hh.*container=cc"):
        read(ctx, hc)
    add = _kernel("AssignAddVariableOp", dtype=aiotf.float32)
    with pytest.raises(
        errors.NotFoundError, match=r"^Resource localhost/h/N10tensorflow3VarE does not exist\.$"
    ):
        add(ctx, h, np.ones(2, F32))
    with pytest.raises(
        errors.NotFoundError, match=r"^Resource localhost/h/<unknown> does not exist\.$"
    ):
        _kernel("DestroyResourceOp", ignore_lookup_error=False)(ctx, h)

    _kernel("AssignVariableOp", dtype=aiotf.float32)(ctx, h, np.ones(2, F32))
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"^Trying to assign to variable with tensor with wrong shape\. Expected \[2\] got \[3\]$",
    ):
        _kernel("AssignVariableOp", dtype=aiotf.float32, validate_shape=True)(
            ctx, h, np.ones(3, F32)
        )
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"^Cannot update variable with shape \[2\] using a Tensor with shape \[\], shapes "
        r"must be equal\.$",
    ):
        add(ctx, h, np.ones((), F32))
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"^Trying to read variable with wrong dtype\. Expected int32 got float$",
    ):
        _kernel("ReadVariableOp", dtype=aiotf.int32)(ctx, h)
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"^Trying to assign variable with wrong dtype\. Expected float got int32$",
    ):
        _kernel("AssignVariableOp", dtype=aiotf.int32)(ctx, h, np.ones(2, I32))
    with pytest.raises(
        errors.InvalidArgumentError, match=r"^DType of variable handle and value does not match\.$"
    ):
        _kernel("AssignAddVariableOp", dtype=aiotf.int32)(ctx, h, np.ones(2, I32))
    # Without validate_shape (the default) an assignment may change the shape.
    _kernel("AssignVariableOp", dtype=aiotf.float32)(ctx, h, np.ones(3, F32))
    assert read(ctx, h).shape == (3,)


# ----------------------------------------------------------------------------------------------
# Through a Session: state survives runs, errors name the node, concurrent updates are exact
# ----------------------------------------------------------------------------------------------


async def test_ref_variable_in_a_session() -> None:
    g = aiotf.Graph()
    with g.as_default():
        v = state_ops.variable_op_v2([2], aiotf.float32, name="v")
        p = aiotf.placeholder(aiotf.float32, name="p")
        init = state_ops.assign(v, [1.0, 2.0], name="init")
        inc = state_ops.assign_add(v, p, name="inc")
        dec = state_ops.assign_sub(v, p, name="dec")
        ok = state_ops.is_variable_initialized(v, name="ok")
        read = aiotf.identity(v, name="read")
    async with aiotf.Session(graph=g) as sess:
        assert not await sess.run(ok)
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v") as info:
            await sess.run(inc, {p: [1.0, 1.0]})
        assert info.value.node_def.name == "inc"
        with pytest.raises(errors.FailedPreconditionError) as info:
            await sess.run(read)
        assert info.value.node_def.name == "read"
        np.testing.assert_array_equal(await sess.run(init), np.array([1.0, 2.0], F32))
        assert await sess.run(ok)
        got = await sess.run(inc, {p: [10.0, 20.0]})
        np.testing.assert_array_equal(got, np.array([11.0, 22.0], F32))
        np.testing.assert_array_equal(await sess.run(dec, {p: [1.0, 2.0]}), [10.0, 20.0])
        with pytest.raises(errors.InvalidArgumentError, match="must be the same size") as bad:
            await sess.run(inc, {p: [1.0, 2.0, 3.0]})
        assert bad.value.node_def.name == "inc"
        np.testing.assert_array_equal(await sess.run(read), [10.0, 20.0])  # untouched


async def test_concurrent_assign_add_runs_are_exact() -> None:
    g = aiotf.Graph()
    with g.as_default():
        v = state_ops.variable_op_v2([], aiotf.int32, name="counter")
        init = state_ops.assign(v, 0)
        inc = state_ops.assign_add(v, 1)
        h = state_ops.var_handle_op(aiotf.int64, [], name="h")
        rinit = state_ops.assign_variable_op(h, np.int64(0))
        rinc = state_ops.assign_add_variable_op(h, np.int64(3))
        rread = state_ops.read_variable_op(h, aiotf.int64)
        total = aiotf.identity(v)
    async with aiotf.Session(graph=g) as sess:
        await sess.run([init.op, rinit])
        await asyncio.gather(*(sess.run([inc.op, rinc]) for _ in range(200)))
        assert await sess.run(total) == 200
        assert await sess.run(rread) == 600


async def test_resource_variable_in_a_session() -> None:
    g = aiotf.Graph()
    with g.as_default():
        h = state_ops.var_handle_op(aiotf.float32, [2], shared_name="w", name="h")
        p = aiotf.placeholder(aiotf.float32, name="p")
        assign = state_ops.assign_variable_op(h, p, name="assign")
        add = state_ops.assign_add_variable_op(h, p, name="add")
        read = state_ops.read_variable_op(h, aiotf.float32, name="read")
        alive = state_ops.var_is_initialized_op(h, name="alive")
        destroy = state_ops.destroy_resource_op(h, name="destroy")
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(
            errors.FailedPreconditionError, match="Could not find variable w"
        ) as info:
            await sess.run(read)
        assert info.value.node_def.name == "read"
        await sess.run(assign, {p: [1.0, 2.0]})
        await sess.run(add, {p: [0.5, 0.5]})
        np.testing.assert_array_equal(await sess.run(read), np.array([1.5, 2.5], F32))
        assert await sess.run(alive)
        with pytest.raises(errors.InvalidArgumentError, match="shapes must be equal") as bad:
            await sess.run(add, {p: [1.0]})
        assert bad.value.node_def.name == "add"
        await sess.run(destroy)
        assert not await sess.run(alive)
    async with aiotf.Session(graph=g) as fresh:  # a new session has its own devices and state
        assert not await fresh.run(alive)


def test_shape_functions() -> None:
    g = aiotf.Graph()
    with g.as_default():
        v = state_ops.variable_op_v2([2, None], aiotf.float32, name="v")
        assert v.dtype == aiotf.float32._as_ref and v.shape.as_list() == [2, None]
        assert state_ops.assign(v, np.zeros((2, 3), F32)).shape.as_list() == [2, 3]
        assert state_ops.assign(v, [1.0], validate_shape=False).shape.as_list() == [1]
        with pytest.raises(
            ValueError,
            match=r"Dimension 0 in both shapes must be equal, but are 2 and 3\. Shapes are "
            r"\[2,\?\] and \[3,1\]\.",
        ):
            state_ops.assign_add(v, np.zeros((3, 1), F32))
        with pytest.raises(ValueError, match="Shapes must be equal rank, but are 2 and 0"):
            state_ops.assign_sub(v, 1.0)
        assert state_ops.is_variable_initialized(v).shape.as_list() == []
        h = state_ops.var_handle_op(aiotf.float32, [2])
        assert h.dtype == aiotf.resource and h.shape.as_list() == []
        assert state_ops.read_variable_op(h, aiotf.float32).shape.rank is None


def test_ref_ops_need_a_ref() -> None:
    with aiotf.Graph().as_default():
        c = aiotf.constant(1.0)
        with pytest.raises(
            TypeError,
            match=r"'Assign' Op requires that input 'ref' be a mutable tensor \(e\.g\.: a "
            r"tf\.Variable\)",
        ):
            state_ops.assign(c, 2.0)
        with pytest.raises(TypeError, match="'AssignAdd' Op requires"):
            state_ops.assign_add(c, 2.0)
