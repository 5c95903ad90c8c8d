"""Op definitions, one module per family (TensorFlow's ``core/ops``). Importing this registers them."""

from aiotf.framework.op_defs import (
    array_ops,
    control_flow_ops,
    data_flow_ops,
    functional_ops,
    internal_ops,
    logging_ops,
    math_ops,
    nn_ops,
    script_ops,
    state_ops,
)

__all__ = [
    "array_ops",
    "control_flow_ops",
    "data_flow_ops",
    "functional_ops",
    "internal_ops",
    "logging_ops",
    "math_ops",
    "nn_ops",
    "script_ops",
    "state_ops",
]
