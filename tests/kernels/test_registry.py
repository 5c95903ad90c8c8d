"""The kernel registry's words: TensorFlow's DataType enum names in every listing."""

from __future__ import annotations

from aiotf.framework import dtypes
from aiotf.kernels import registry


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
