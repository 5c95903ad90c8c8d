"""The kernel registry: TensorFlow's DataType enum names in every listing; registration checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aiotf.framework import dtypes
from aiotf.kernels import registry
from aiotf.kernels.registry import register_kernel


def test_describe_uses_tensorflow_enum_names() -> None:
    # TF 2.21 lists TruncateMod's kernels as "device='CPU'; T in [DT_DOUBLE]", "... [DT_FLOAT]"
    described = [k.describe() for k in registry.registered_kernels_for_op("TruncateMod")]
    assert "device='CPU'; T in [DT_DOUBLE, DT_FLOAT]" in described
    assert "device='CPU'; T in [DT_INT32, DT_INT64]" in described
    softmax = registry.registered_kernels_for_op("Softmax")[0].describe()
    assert softmax == "device='CPU'; T in [DT_BFLOAT16, DT_DOUBLE, DT_FLOAT, DT_HALF]"


def test_no_kernel_message_names_the_requested_type_as_tensorflow() -> None:
    message = registry.no_kernel_message("TruncateMod", "m", "CPU", {"T": dtypes.float16})
    assert "Requested Attributes: T=DT_HALF" in message
    assert "T in [DT_DOUBLE, DT_FLOAT]" in message
    assert "FLOAT16" not in message and "FLOAT32" not in message


def test_a_fast_function_is_only_for_a_kernel_of_its_inputs_alone() -> None:
    """``fast`` stands in for the kernel in compiled schedules, which pass it inputs only."""
    with pytest.raises(TypeError, match="_RegTestFastAttr's fast function .* attrs \\['scale'\\]"):

        @register_kernel("_RegTestFastAttr", fast=np.add)
        def with_attr(x: Any, y: Any, *, scale: float) -> Any:
            return x + y * scale

    with pytest.raises(TypeError, match="_RegTestFastCtx's fast function .* takes ctx"):

        @register_kernel("_RegTestFastCtx", fast=np.add)
        def with_ctx(ctx: Any, x: Any, y: Any) -> Any:
            return x + y


def test_fast_for_is_only_for_a_kernel_with_attrs() -> None:
    """``fast_for`` makes a node's fast function from its attrs; a kernel of its inputs alone
    gives ``fast``, and a kernel that takes ctx can have neither."""
    with pytest.raises(TypeError, match="_RegTestFastForNone's fast_for .* none"):

        @register_kernel("_RegTestFastForNone", fast_for=lambda: np.add)
        def plain(x: Any, y: Any) -> Any:
            return x + y

    with pytest.raises(TypeError, match="_RegTestFastForCtx's fast_for .* takes ctx"):

        @register_kernel("_RegTestFastForCtx", fast_for=lambda *, scale: np.add)
        def with_ctx(ctx: Any, x: Any, *, scale: float) -> Any:
            return x * scale


def test_forward_takes_the_node_s_attrs_and_is_not_for_a_kernel_that_takes_ctx() -> None:
    node = registry.KernelNode(
        "b", "BiasAdd", {"T": dtypes.float32, "data_format": b"NCHW"},
        (dtypes.float32, dtypes.float32), (dtypes.float32,),
    )  # fmt: skip
    kernel = registry.create_kernel(node, "CPU")
    value = np.ones((1, 2, 3), np.float32)
    assert kernel.forward is not None
    assert kernel.forward(value, np.array([1.0, 2.0], np.float32)) is value  # as NCHW
    np.testing.assert_array_equal(value[0, :, 0], [2.0, 3.0])
    with pytest.raises(TypeError, match="_RegTestForwardCtx's forward .* takes ctx"):

        @register_kernel("_RegTestForwardCtx", forward=lambda ctx, x: x)
        def with_ctx(ctx: Any, x: Any) -> Any:
            return x


def test_parts_take_the_node_s_attrs_and_are_for_pool_kernels_of_inputs_alone() -> None:
    def parts(x: Any, *, scale: float) -> Any:
        return [lambda: None], lambda: x * scale

    @register_kernel("_RegTestParts", cost=lambda x, *, scale: 1e9, parts=parts)
    def scaled(x: Any, *, scale: float) -> Any:
        return x * scale

    node = registry.KernelNode("s", "_RegTestParts", {"scale": 3.0}, (dtypes.float32,),
                               (dtypes.float32,))  # fmt: skip
    kernel = registry.create_kernel(node, "CPU")
    assert kernel.parts is not None
    pieces, outputs = kernel.parts(2.0)
    assert len(pieces) == 1 and outputs() == 6.0
    with pytest.raises(TypeError, match="_RegTestPartsInline's parts split a pool kernel"):

        @register_kernel("_RegTestPartsInline", parts=lambda x: None)
        def inline(x: Any) -> Any:
            return x

    with pytest.raises(TypeError, match="_RegTestPartsCtx's parts split a pool kernel"):

        @register_kernel("_RegTestPartsCtx", expensive=True, parts=lambda ctx, x: None)
        def with_ctx(ctx: Any, x: Any) -> Any:
            return x


@pytest.mark.parametrize(
    ("transpose_a", "transpose_b"), [(False, False), (True, False), (True, True)]
)
def test_matmul_s_fast_function_is_made_for_its_node_s_transposes(
    transpose_a: bool, transpose_b: bool
) -> None:
    node = registry.KernelNode(
        "m", "MatMul", {"T": dtypes.float32, "transpose_a": transpose_a, "transpose_b": transpose_b},
        (dtypes.float32, dtypes.float32), (dtypes.float32,),
    )  # fmt: skip
    kernel = registry.create_kernel(node, "CPU")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3) if transpose_a else (3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4) if transpose_b else (4, 5)).astype(np.float32)
    assert kernel.fast is not None
    np.testing.assert_array_equal(kernel.fast(a, b), kernel.compute(a, b))
    with pytest.raises(ValueError):  # a vector: the kernel is called, and says why
        kernel.fast(a[0], b)
