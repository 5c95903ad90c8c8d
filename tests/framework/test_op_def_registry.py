"""The op registry: TensorFlow's REGISTER_OP spec strings, duplicates, and unknown op types."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aiotf.framework import dtypes, errors, op_def_registry
from aiotf.framework.op_def_registry import ArgDef, OpDef, register_op
from aiotf.framework.tensor_shape import TensorShape

_counter = itertools.count()

Register = Callable[..., OpDef]


@pytest.fixture
def register() -> Iterator[Register]:
    """``register_op`` under a fresh name; every op it registers is removed afterwards."""
    names: list[str] = []

    def _register(*args: str, **kwargs: object) -> OpDef:
        name = args[0] if args else f"FrameworkTestOp{next(_counter)}"
        names.append(name)
        return register_op(name, **kwargs)  # type: ignore[arg-type]

    yield _register
    for name in names:
        op_def_registry._REGISTRY.pop(name, None)
        op_def_registry._REGISTERED_AT.pop(name, None)


def test_type_attr_args(register: Register) -> None:
    op = register(inputs=["x: T", "y: T"], outputs=["z: T"], attrs=["T: type"])
    assert op.inputs == (ArgDef("x", type_attr="T"), ArgDef("y", type_attr="T"))
    assert op.outputs == (ArgDef("z", type_attr="T"),)
    assert op.attrs["T"].type == "type"
    assert not op.attrs["T"].has_default
    assert op_def_registry.output_types(op, {"T": dtypes.int64}) == [dtypes.int64]
    assert op_def_registry.input_types(op, {"T": dtypes.int64}) == [dtypes.int64] * 2


def test_fixed_type_args(register: Register) -> None:
    op = register(inputs=["x: float", "flag: bool"], outputs=["y: int64"])
    assert op.inputs[0].type is dtypes.float32
    assert op.inputs[1].type is dtypes.bool
    assert op_def_registry.output_types(op, {}) == [dtypes.int64]


def test_number_attr_args(register: Register) -> None:
    op = register(
        inputs=["values: N * T", "axis: int32"],
        outputs=["output: T", "parts: N * T"],
        attrs=["N: int >= 2", "T: type"],
    )
    values = op.inputs[0]
    assert (values.number_attr, values.type_attr) == ("N", "T")
    assert op.attrs["N"].type == "int"
    assert op.attrs["N"].minimum == 2
    assert op_def_registry.output_types(op, {"N": 3, "T": dtypes.float16}) == [dtypes.float16] * 4
    assert op_def_registry.input_types(op, {"N": 2, "T": dtypes.int8}) == [
        dtypes.int8,
        dtypes.int8,
        dtypes.int32,
    ]


def test_number_attr_of_fixed_type(register: Register) -> None:
    op = register(inputs=["xs: N * int64"], attrs=["N: int >= 0"])
    assert (op.inputs[0].number_attr, op.inputs[0].type) == ("N", dtypes.int64)
    assert op.attrs["N"].minimum == 0
    assert op_def_registry.input_types(op, {"N": 2}) == [dtypes.int64, dtypes.int64]


def test_list_type_args(register: Register) -> None:
    op = register(
        inputs=["inputs: Tin"],
        outputs=["outputs: Tout"],
        attrs=["Tin: list(type) >= 0", "Tout: list(type) = []"],
    )
    assert op.inputs[0] == ArgDef("inputs", type_list_attr="Tin")
    assert op.outputs[0] == ArgDef("outputs", type_list_attr="Tout")
    assert op.attrs["Tin"].type == "list(type)"
    assert op.attrs["Tout"].default == []
    attrs = {"Tin": [dtypes.int32], "Tout": [dtypes.float32, dtypes.string]}
    assert op_def_registry.output_types(op, attrs) == [dtypes.float32, dtypes.string]


def test_ref_args(register: Register) -> None:
    op = register(inputs=["ref: Ref(T)"], outputs=["out: Ref(T)"], attrs=["T: type"])
    assert op.inputs[0].is_ref
    assert op_def_registry.output_types(op, {"T": dtypes.float32}) == [dtypes.float32._as_ref]


def test_allowed_types(register: Register) -> None:
    op = register(attrs=["T: {half, float, double, int32}"])
    assert op.attrs["T"].type == "type"
    assert op.attrs["T"].allowed_values == (
        dtypes.float16,
        dtypes.float32,
        dtypes.float64,
        dtypes.int32,
    )


def test_named_type_sets(register: Register) -> None:
    op = register(attrs=["A: numbertype", "B: realnumbertype", "C: floattype"])
    assert dtypes.complex64 in op.attrs["A"].allowed_values
    assert dtypes.complex64 not in op.attrs["B"].allowed_values
    assert dtypes.int32 in op.attrs["B"].allowed_values
    assert op.attrs["C"].allowed_values is not None
    assert set(op.attrs["C"].allowed_values) == {
        dtypes.float16,
        dtypes.bfloat16,
        dtypes.float32,
        dtypes.float64,
    }


def test_a_named_set_in_a_type_list(register: Register) -> None:
    # TensorFlow's Relu is ``T: {realnumbertype, qint8}``
    op = register(attrs=["T: {realnumbertype, qint8}", "L: list({floattype, bool})"])
    real = register(attrs=["T: realnumbertype"]).attrs["T"].allowed_values
    assert real is not None
    assert op.attrs["T"].allowed_values == (*real, dtypes.qint8)
    assert op.attrs["L"].type == "list(type)"
    assert dtypes.bool in (op.attrs["L"].allowed_values or ())
    assert dtypes.float16 in (op.attrs["L"].allowed_values or ())


def test_allowed_strings(register: Register) -> None:
    op = register(attrs=["data_format: {'NHWC', 'NCHW'} = 'NHWC'", 'padding: {"SAME", "VALID"}'])
    fmt = op.attrs["data_format"]
    assert fmt.type == "string"
    assert fmt.allowed_values == (b"NHWC", b"NCHW")
    assert fmt.default == b"NHWC"
    assert op.attrs["padding"].allowed_values == (b"SAME", b"VALID")
    assert not op.attrs["padding"].has_default


def test_defaults_in_tensorflow_syntax(register: Register) -> None:
    op = register(
        attrs=[
            "transpose_a: bool = false",
            "keep: bool = true",
            "k: int = 3",
            "offset: int = -1",
            "alpha: float = 0.2",
            "label: string = 'hi'",
            "dtype: type = float",
            "Tidx: {int32, int64} = DT_INT32",
            "out_type: type = DT_HALF",
            "strides: list(int) = [1, 2, 2, 1]",
            "names: list(string) = []",
            "shape: shape = [2, -1]",
            "any_shape: shape = <unknown>",
        ]
    )
    assert op.default_attrs() == {
        "transpose_a": False,
        "keep": True,
        "k": 3,
        "offset": -1,
        "alpha": 0.2,
        "label": b"hi",
        "dtype": dtypes.float32,
        "Tidx": dtypes.int32,
        "out_type": dtypes.float16,
        "strides": [1, 2, 2, 1],
        "names": [],
        "shape": TensorShape([2, None]),
        "any_shape": TensorShape(None),
    }
    assert op.attrs["Tidx"].allowed_values == (dtypes.int32, dtypes.int64)


def test_int_minimum(register: Register) -> None:
    op = register(attrs=["index: int >= 0", "n: int >= -1 = 4", "plain: int"])
    assert op.attrs["index"].minimum == 0
    assert op.attrs["n"].minimum == -1
    assert op.attrs["n"].default == 4
    assert op.attrs["plain"].minimum is None


def test_flags(register: Register) -> None:
    op = register(is_stateful=True, is_commutative=True)
    assert op.is_stateful and op.is_commutative
    assert not op.allows_uninitialized_input
    assert op.shape_fn is None


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"inputs": ["x T"]}, "Bad arg spec"),
        ({"inputs": ["x: T: U"]}, "Bad arg spec"),
        ({"attrs": ["T"]}, "Bad attr spec"),
        ({"attrs": ["T: tensorish"]}, "Bad attr type"),
        ({"attrs": ["T: list(tensorish)"]}, "Bad attr type"),
        ({"inputs": ["x: T"]}, "undeclared attr 'T'"),
        ({"inputs": ["x: N * T"], "attrs": ["T: type"]}, "undeclared attr 'N'"),
        ({"outputs": ["y: Tout"]}, "undeclared attr 'Tout'"),
    ],
)
def test_bad_specs_are_value_errors(
    register: Register, kwargs: dict[str, object], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        register(**kwargs)


def test_duplicate_registration_names_the_first_registration() -> None:
    name = f"FrameworkTestDuplicate{next(_counter)}"
    try:
        first_line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        register_op(name, outputs=["y: float"])
        with pytest.raises(ValueError, match="already registered") as info:
            register_op(name, outputs=["y: int32"])
    finally:
        op_def_registry._REGISTRY.pop(name, None)
        op_def_registry._REGISTERED_AT.pop(name, None)
    message = str(info.value)
    assert repr(name) in message
    assert f"{__file__}:{first_line}" in message


def test_builtin_ops_remember_where_they_were_registered() -> None:
    import aiotf  # noqa: F401 - registers the op definitions

    assert (
        op_def_registry._REGISTERED_AT["MatMul"]
        .rsplit(":", 1)[0]
        .endswith(str(Path("aiotf", "framework", "op_defs", "math_ops.py")))
    )
    with pytest.raises(ValueError, match=r"op_defs[/\\]math_ops\.py:\d+"):
        register_op("MatMul")


def test_unknown_op_lookup_is_not_found_naming_the_op() -> None:
    assert op_def_registry.get("NoSuchOpAnywhere") is None
    with pytest.raises(
        errors.NotFoundError, match="Op type not registered 'NoSuchOpAnywhere'"
    ) as info:
        op_def_registry.lookup("NoSuchOpAnywhere")
    assert info.value.error_code == errors.NOT_FOUND
    with pytest.raises(errors.NotFoundError, match="in node 'layer/x'"):
        op_def_registry.lookup("NoSuchOpAnywhere", "layer/x")


def test_lookup_and_listing(register: Register) -> None:
    op = register(outputs=["y: float"])
    assert op_def_registry.lookup(op.name) is op
    assert op_def_registry.get(op.name) is op
    assert op.name in op_def_registry.registered_ops()
    assert op_def_registry.registered_ops() == sorted(op_def_registry.registered_ops())
