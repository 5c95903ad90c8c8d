"""Static shapes inferred while building, against TensorFlow 2.21's (``data/tf_shapes.json``,
written by ``data/record_tf_shapes.py`` from the cases of ``data/shape_cases.py``): each
output's shape, or the construction error's class and words (up to TensorFlow's `` for
'{{node ...}}`` suffix, which names its own graph's nodes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import dtypes
from aiotf.framework.op_def_registry import lookup
from aiotf.ops.op_helper import apply_op

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from shape_cases import CASES  # noqa: E402

sys.path.remove(str(DATA))
RECORDED: dict[str, Any] = json.loads((DATA / "tf_shapes.json").read_text())


def _tensor(spec: Any) -> Any:
    if spec and isinstance(spec[0], list):
        return [_tensor(s) for s in spec]
    kind, value, dtype = spec
    if kind == "p":
        return aiotf.placeholder(dtypes.as_dtype(dtype), value)
    return aiotf.constant(np.array(value, dtype=dtype))


def _shape(t: Any) -> list[int | None] | None:
    return None if t.shape.rank is None else t.shape.as_list()


def _words(message: str) -> str:
    return message.split("\n")[0].split(" for '{{node ")[0]


def test_every_case_was_recorded() -> None:
    assert set(RECORDED) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_static_shapes_are_tensorflows(name: str) -> None:
    op, inputs, attrs = CASES[name]
    op_def = lookup(op)
    typed = {
        k: dtypes.as_dtype(v) if op_def.attrs[k].type == "type" else v for k, v in attrs.items()
    }
    want = RECORDED[name]
    g = aiotf.Graph()
    with g.as_default():
        tensors = [_tensor(spec) for spec in inputs]
        if "error" in want:
            with pytest.raises(Exception) as info:
                apply_op(op, tensors, typed)
            assert type(info.value).__name__ == want["error"]
            assert _words(str(info.value)) == _words(want["words"])
            return
        node = apply_op(op, tensors, typed)
    assert [_shape(t) for t in node.outputs] == want["shapes"]
