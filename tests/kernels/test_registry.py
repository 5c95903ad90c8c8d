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
