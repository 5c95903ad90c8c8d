"""Write ``tf_op_defs.json``, what ``test_op_defs_as_tensorflows.py`` checks aiotf's op
registry against: run with TensorFlow 2.21 and aiotf importable (the venv that has both),
never by the tests.

For every op aiotf registers that TensorFlow has: its flags, its input and output args, and its
attrs (type, default as AttrValue text, allowed values, minimum), from TensorFlow's OpDef.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.simplefilter("ignore")
from google.protobuf import text_format  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

from aiotf.framework import op_def_registry as ours  # noqa: E402

HERE = Path(__file__).parent


def _arg(arg: Any) -> list[Any]:
    return [arg.name, arg.type, arg.type_attr, arg.number_attr, arg.type_list_attr, arg.is_ref]


def _attr(attr: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": attr.type}
    if attr.HasField("default_value"):
        record["default"] = text_format.MessageToString(attr.default_value, as_one_line=True)
    if attr.HasField("allowed_values"):
        values = attr.allowed_values.list
        record["allowed"] = list(values.type) or [s.decode() for s in values.s]
    if attr.has_minimum:
        record["minimum"] = attr.minimum
    return record


def main() -> None:
    defs: dict[str, Any] = {}
    for name in sorted(ours._REGISTRY):
        op = op_def_registry.get(name)
        if op is None:
            continue  # aiotf's own (_FusedMaxPool...) or gone from TensorFlow
        defs[name] = {
            "is_stateful": op.is_stateful,
            "is_commutative": op.is_commutative,
            "allows_uninitialized_input": op.allows_uninitialized_input,
            "inputs": [_arg(a) for a in op.input_arg],
            "outputs": [_arg(a) for a in op.output_arg],
            "attrs": {a.name: _attr(a) for a in op.attr},
        }
    (HERE / "tf_op_defs.json").write_text(json.dumps(defs, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
