"""Write ``tf_shapes.json``, TensorFlow 2.21's static shapes (or construction error) for each
case of ``shape_cases.py``, built as ``tf.raw_ops`` builds them, in graph mode: run with TensorFlow, never
by the tests (``test_shapes_as_tensorflows.py`` checks aiotf's against it)."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.simplefilter("ignore")
import tensorflow as tf  # noqa: E402
from shape_cases import CASES  # noqa: E402
from tensorflow.python.framework import op_def_library, op_def_registry  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()
HERE = Path(__file__).parent


def _tensor(spec: Any) -> Any:
    if isinstance(spec[0], list) or (
        spec and isinstance(spec[0], list | tuple) and spec[0][0] in "pc"
    ):
        return [_tensor(s) for s in spec]
    kind, value, dtype = spec
    if kind == "p":
        return tf1.placeholder(tf.as_dtype(dtype), value)
    return tf.constant(np.array(value, dtype=dtype))


def _attr(op_def: Any, key: str, value: Any) -> Any:
    kind = next(a.type for a in op_def.attr if a.name == key)
    return tf.as_dtype(value) if kind == "type" else value


def _default(value: Any) -> Any:
    """An attr's default from its AttrValue (the gen_* wrappers pass them; the helper does not)."""
    kind = value.WhichOneof("value")
    if kind == "list":
        items = value.list
        for field in ("s", "i", "f", "b", "type"):
            if getattr(items, field):
                return [_scalar(field, v) for v in getattr(items, field)]
        return []
    return _scalar(kind, getattr(value, kind))


def _scalar(kind: str, v: Any) -> Any:
    if kind == "s":
        return v.decode()
    return tf.as_dtype(v) if kind == "type" else v


def _shape(t: Any) -> list[int | None] | None:
    return None if t.shape.rank is None else t.shape.as_list()


def main() -> None:
    answers: dict[str, Any] = {}
    for name, (op, inputs, attrs) in CASES.items():
        op_def = op_def_registry.get(op)
        g = tf.Graph()
        with g.as_default():
            args = {a.name: _tensor(spec) for a, spec in zip(op_def.input_arg, inputs, strict=True)}
            kwargs = {k: _attr(op_def, k, v) for k, v in attrs.items()}
            inferred = {x for a in op_def.input_arg for x in (a.type_attr, a.number_attr)}
            for a in op_def.attr:
                if a.name not in (kwargs.keys() | inferred) and a.HasField("default_value"):
                    kwargs[a.name] = _default(a.default_value)
            try:  # by the op def's own arg names, as tf.raw_ops and the gen_* wrappers do
                _, _, node, _ = op_def_library._apply_op_helper(op, **args, **kwargs)
            except (ValueError, TypeError) as e:
                answers[name] = {"error": type(e).__name__, "words": str(e).split("\n")[0]}
                continue
        answers[name] = {"shapes": [_shape(t) for t in node.outputs]}
    (HERE / "tf_shapes.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
