"""aiotf's op registry against TensorFlow 2.21's OpDefs (recorded in ``data/tf_op_defs.json`` by
``data/record_tf_op_defs.py``): for every op both have, the same flags (a commutative op's
inputs are sorted by grappler, a stateful one is never folded), args, and attrs with their
types, defaults, allowed values and minimums (what graph construction and import check)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format

from aiotf.framework import attr_value, dtypes, op_def_registry
from aiotf.framework.op_def_registry import ArgDef, AttrDef
from aiotf.proto import AttrValue

RECORDED: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "tf_op_defs.json").read_text()
)


def _arg(arg: ArgDef) -> list[Any]:
    enum = arg.type.as_datatype_enum if arg.type is not None else 0
    return [arg.name, enum, arg.type_attr, arg.number_attr, arg.type_list_attr, arg.is_ref]


def _default(text: str) -> Any:
    return attr_value.decode(text_format.Parse(text, AttrValue()))


def _same_default(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, float):  # a float attr is a float32 in the proto
        return bool(np.float32(ours) == np.float32(theirs))
    return bool(ours == theirs)


def _allowed(attr: AttrDef) -> list[Any]:
    """In the op def's order: type errors list them so."""
    values = attr.allowed_values or ()
    if attr.type in ("type", "list(type)"):
        return [dtypes.as_dtype(v).as_datatype_enum for v in values]
    return sorted(v.decode() if isinstance(v, bytes) else v for v in values)


def test_the_recording_covers_the_ops_of_both() -> None:
    assert len(RECORDED) > 150
    assert set(RECORDED) <= set(op_def_registry._REGISTRY)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_op_def_is_tensorflows(name: str) -> None:
    theirs, ours = RECORDED[name], op_def_registry.lookup(name)
    for flag in ("is_stateful", "is_commutative", "allows_uninitialized_input"):
        assert getattr(ours, flag) == theirs[flag], flag
    assert [_arg(a) for a in ours.inputs] == theirs["inputs"]
    assert [_arg(a) for a in ours.outputs] == theirs["outputs"]
    assert set(ours.attrs) == set(theirs["attrs"])
    for key, attr in theirs["attrs"].items():
        mine = ours.attrs[key]
        assert mine.type == attr["type"], key
        assert mine.has_default == ("default" in attr), key
        if mine.has_default:
            assert _same_default(mine.default, _default(attr["default"])), key
        allowed = attr.get("allowed", [])
        if mine.type not in ("type", "list(type)"):
            allowed = sorted(allowed)
        assert _allowed(mine) == allowed, key
        assert (mine.minimum if mine.minimum is not None else None) == attr.get("minimum"), key


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "words"),
    [  # TensorFlow 2.21's words, from tf.raw_ops
        (
            "MatMul",
            [np.ones((2, 2), np.int8)] * 2,
            {},
            "Value passed to parameter 'a' has DataType int8 not in list of allowed values: "
            "bfloat16, float16, float32, float64, int32, int64, uint8, uint16, uint32, uint64, "
            "complex64, complex128",
        ),
        (
            "ArgMin",
            [np.ones(2, np.float32), np.int16(0)],
            {},
            "Value passed to parameter 'dimension' has DataType int16 not in list of allowed "
            "values: int32, int64",
        ),
        (
            "ArgMin",
            [np.ones(2, np.float32), np.int32(0)],
            {"output_type": dtypes.int16},
            "Value passed to parameter 'output_type' has DataType int16 not in list of allowed "
            "values: int32, int64",
        ),
        (
            "OnesLike",
            [np.array([b"a"])],
            {},
            "Value passed to parameter 'x' has DataType string not in list of allowed values: "
            "bfloat16, float16, float32, float64, int8, uint8, int16, uint16, int32, uint32, "
            "int64, uint64, complex64, complex128, bool",
        ),
    ],
)
def test_a_type_outside_the_op_def_is_refused_in_tensorflows_words(
    op: str, inputs: list[Any], attrs: dict[str, Any], words: str
) -> None:
    import aiotf

    g = aiotf.Graph()
    with g.as_default():
        tensors = [aiotf.constant(x) for x in inputs]
        with pytest.raises(TypeError) as info:
            g.create_op(op, tensors, attrs, name="op")
    assert str(info.value) == words
