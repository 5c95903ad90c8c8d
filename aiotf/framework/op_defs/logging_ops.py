"""Logging ops (TensorFlow's ``core/ops/logging_ops.cc``): ``Assert``."""

from aiotf.framework import common_shapes
from aiotf.framework.op_def_registry import register_op

register_op(
    "Assert",
    inputs=["condition: bool", "data: T"],
    attrs=["T: list(type) >= 1", "summarize: int = 3"],
    shape_fn=common_shapes.no_outputs,
    is_stateful=True,
)
