"""The graph-building functions (``aiotf.ops``) and Tensor operators, against TensorFlow 1.x.

Names, dtypes and static shapes are what ``tf.compat.v1`` graph mode gives for the same calls;
the last tests rebuild graphs real TensorFlow wrote and compare NodeDef by NodeDef.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import aiotf as tf
from aiotf.framework import tensor_util

# ------------------------------------------------------------------------------------------------
# constant
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (1.0, tf.float32),
        (1, tf.int32),
        (2**31, tf.int64),
        (-(2**31), tf.int32),
        ([1, 2**40], tf.int64),
        ([1.0, 2], tf.float32),
        ([[1, 2], [3, 4]], tf.int32),
        (True, tf.bool),
        ("text", tf.string),
        (b"bytes", tf.string),
        (1 + 2j, tf.complex128),
        ([], tf.float32),
        (np.float64(1.5), tf.float64),
        (np.array([1, 2], dtype=np.int64), tf.int64),
        (np.array([1.0], dtype=np.float16), tf.float16),
        (np.array([1.0], dtype=ml_dtypes.bfloat16), tf.bfloat16),
        (np.uint8(7), tf.uint8),
    ],
)
def test_constant_infers_dtype_like_tensorflow(graph: tf.Graph, value: Any, dtype: Any) -> None:
    c = tf.constant(value)
    assert c.dtype is dtype
    assert c.op.type == "Const"
    assert c.op.get_attr("dtype") is dtype
    got = c.op.get_attr("value")
    assert got.dtype == dtype.np_dtype
    expected = value.encode() if isinstance(value, str) else value
    np.testing.assert_array_equal(got, np.asarray(expected, dtype=dtype.np_dtype))
    assert c.shape == tf.TensorShape(np.shape(value))


def test_constant_with_explicit_dtype(graph: tf.Graph) -> None:
    c = tf.constant(1, dtype=tf.float32)
    assert c.dtype is tf.float32
    assert c.op.get_attr("value").item() == 1.0
    assert tf.constant([1, 2], dtype="int64").dtype is tf.int64
    assert tf.constant(True, dtype=tf.int32).op.get_attr("value").item() == 1
    assert tf.constant(3.0, dtype=tf.complex64).dtype is tf.complex64


@pytest.mark.parametrize(("value", "dtype"), [(1.5, tf.int32), (1.0, tf.int64), (1j, tf.float32)])
def test_constant_refuses_lossy_kinds(graph: tf.Graph, value: Any, dtype: Any) -> None:
    # TF: "TypeError: Expected int32, but got 1.5 of type 'float'."
    with pytest.raises(TypeError, match=f"Expected {dtype.name}"):
        tf.constant(value, dtype=dtype)


def test_constant_of_none_is_value_error(graph: tf.Graph) -> None:
    with pytest.raises(ValueError, match="None values not supported"):
        tf.constant(None)


def test_constant_ragged_list_is_value_error(graph: tf.Graph) -> None:
    with pytest.raises(ValueError):
        tf.constant([[1, 2], [3]])


def test_constant_broadcasts_a_scalar_to_shape(graph: tf.Graph) -> None:
    c = tf.constant(0.5, shape=[2, 3])
    assert c.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(c.op.get_attr("value"), np.full((2, 3), 0.5, np.float32))
    assert tf.constant([7], shape=[3]).op.get_attr("value").tolist() == [7, 7, 7]


def test_constant_reshapes_to_shape_of_same_size(graph: tf.Graph) -> None:
    c = tf.constant([1, 2, 3, 4, 5, 6], shape=[2, 3])
    assert c.shape.as_list() == [2, 3]
    assert c.op.get_attr("value").tolist() == [[1, 2, 3], [4, 5, 6]]
    assert tf.constant(4.0, shape=[]).shape.rank == 0


def test_constant_of_too_many_values_is_tensorflow_v1s_value_error(graph: tf.Graph) -> None:
    # tf.compat.v1.constant (allow_broadcast=False), TensorFlow 2.21's words
    with pytest.raises(
        ValueError, match=r"^Too many elements provided\. Takes at most 2, but got 3\.$"
    ):
        tf.constant([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant([1, 2], shape=[2, 1], verify_shape=True)


@pytest.mark.parametrize(
    ("value", "shape", "want"),
    [([1, 2], [3], [1, 2, 2]), ([1, 2], [2, 2], [[1, 2], [2, 2]]), ([[1, 2]], [3], [1, 2, 2])],
)
def test_constant_of_fewer_values_pads_with_the_last_as_tensorflow_v1(
    graph: tf.Graph, value: Any, shape: Any, want: Any
) -> None:
    # tf.compat.v1.constant: "the last element in the list will be used to fill the remaining
    # entries" (TensorFlow 2.21's answers, side by side)
    c = tf.constant(value, shape=shape)
    assert c.shape.as_list() == shape
    assert c.op.get_attr("value").tolist() == want


def test_constant_names(graph: tf.Graph) -> None:
    assert tf.constant(1.0).op.name == "Const"
    assert tf.constant(1.0).op.name == "Const_1"
    assert tf.constant(1.0, name="k").op.name == "k"


# ------------------------------------------------------------------------------------------------
# placeholder, placeholder_with_default, identity
# ------------------------------------------------------------------------------------------------


def test_placeholder_shapes(graph: tf.Graph) -> None:
    any_shape = tf.placeholder(tf.float32)
    partial = tf.placeholder(tf.int32, [None, 3])
    scalar = tf.placeholder("bool", [])
    assert any_shape.shape.rank is None
    assert partial.shape.as_list() == [None, 3]
    assert scalar.shape.as_list() == []
    assert (any_shape.dtype, partial.dtype, scalar.dtype) == (tf.float32, tf.int32, tf.bool)
    assert any_shape.op.node_def.attr["shape"].shape.unknown_rank
    assert [d.size for d in partial.op.node_def.attr["shape"].shape.dim] == [-1, 3]
    assert not scalar.op.node_def.attr["shape"].shape.unknown_rank
    assert len(scalar.op.node_def.attr["shape"].shape.dim) == 0
    assert partial.op.get_attr("dtype") is tf.int32


def test_placeholder_names(graph: tf.Graph) -> None:
    assert tf.placeholder(tf.float32).op.name == "Placeholder"
    assert tf.placeholder(tf.float32, name="input").name == "input:0"
    assert tf.placeholder(tf.float32).op.name == "Placeholder_1"


def test_placeholder_with_default(graph: tf.Graph) -> None:
    default = tf.constant([1.0, 2.0])
    p = tf.placeholder_with_default(default, shape=[None])
    assert p.op.type == "PlaceholderWithDefault"
    assert p.op.name == "PlaceholderWithDefault"
    assert p.dtype is tf.float32
    assert p.shape.as_list() == [None]
    assert p.op.inputs == [default]
    assert p.op.get_attr("shape") == tf.TensorShape([None])
    assert tf.placeholder_with_default(3, []).dtype is tf.int32


def test_placeholder_with_default_names_its_input_const(graph: tf.Graph) -> None:
    p = tf.placeholder_with_default([1.0, 2.0], shape=[2])
    assert p.op.inputs[0].op.name == "PlaceholderWithDefault/input"


def test_identity(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float16, [2, None], name="x")
    y = tf.identity(x)
    assert (y.op.name, y.op.type, y.dtype) == ("Identity", "Identity", tf.float16)
    assert y.shape.as_list() == [2, None]
    assert y.op.get_attr("T") is tf.float16
    named = tf.identity(x, name="out")
    assert named.name == "out:0"


def test_identity_of_a_python_value_names_the_const_after_the_arg(graph: tf.Graph) -> None:
    y = tf.identity(1.0)
    assert y.op.inputs[0].op.name == "Identity/input"
    assert y.dtype is tf.float32


# ------------------------------------------------------------------------------------------------
# Arithmetic
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "name", "op_type"),
    [
        (tf.add, "Add", "AddV2"),
        (tf.subtract, "Sub", "Sub"),
        (tf.multiply, "Mul", "Mul"),
    ],
)
def test_binary_functions(
    graph: tf.Graph, fn: Callable[..., tf.Tensor], name: str, op_type: str
) -> None:
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [3], name="y")
    z = fn(x, y)
    assert (z.op.name, z.op.type, z.dtype) == (name, op_type, tf.float32)
    assert z.op.inputs == [x, y]
    assert z.shape.as_list() == [None, 3]
    assert z.op.get_attr("T") is tf.float32
    assert fn(x, y, name="named").op.name == "named"
    w = fn(x, 2.0)
    assert w.op.name == f"{name}_1"
    assert w.op.inputs[1].op.name == f"{name}_1/y"
    assert w.op.inputs[1].dtype is tf.float32


def test_binary_static_broadcast_failure_is_value_error(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, [2])
    y = tf.placeholder(tf.float32, [3])
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.add(x, y)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (tf.int32, tf.float64),
        (tf.int64, tf.float64),
        (tf.int8, tf.float32),
        (tf.uint8, tf.float32),
        (tf.int16, tf.float32),
        (tf.uint16, tf.float32),
    ],
)
def test_divide_of_integers_is_true_division(graph: tf.Graph, src: Any, dst: Any) -> None:
    # math_ops._truediv_python3 casts both sides (_TRUEDIV_TABLE) and emits RealDiv.
    a = tf.placeholder(src, [4], name="a")
    b = tf.placeholder(src, [4], name="b")
    q = tf.divide(a, b)
    assert (q.op.name, q.op.type, q.dtype) == ("truediv", "RealDiv", dst)
    casts = [t.op for t in q.op.inputs]
    assert [c.name for c in casts] == ["truediv/Cast", "truediv/Cast_1"]
    assert [c.type for c in casts] == ["Cast", "Cast"]
    assert [c.get_attr("DstT") for c in casts] == [dst, dst]
    assert [c.get_attr("SrcT") for c in casts] == [src, src]
    assert [c.inputs[0] for c in casts] == [a, b]
    assert q.shape.as_list() == [4]


def test_divide_of_floats_needs_no_cast(graph: tf.Graph) -> None:
    a = tf.placeholder(tf.float32, name="a")
    q = tf.divide(a, 2)
    assert q.op.type == "RealDiv"
    assert q.dtype is tf.float32
    assert q.op.inputs[0] is a
    assert q.op.inputs[1].op.name == "truediv/y"
    assert q.op.inputs[1].dtype is tf.float32


def test_integer_divided_by_python_int_casts_both(graph: tf.Graph) -> None:
    i = tf.constant([1, 2])
    q = i / 2
    assert q.dtype is tf.float64
    assert [t.op.name for t in q.op.inputs] == ["truediv/Cast", "truediv/Cast_1"]
    assert q.op.inputs[1].op.inputs[0].op.name == "truediv/y"
    assert q.op.inputs[1].op.inputs[0].dtype is tf.int32


def test_negative_and_logical_not(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.int64, [2])
    n = tf.negative(x)
    assert (n.op.name, n.op.type, n.dtype) == ("Neg", "Neg", tf.int64)
    b = tf.logical_not(tf.placeholder(tf.bool, [3]))
    assert (b.op.type, b.dtype, b.shape.as_list()) == ("LogicalNot", tf.bool, [3])
    with pytest.raises(TypeError):
        tf.logical_not(tf.placeholder(tf.float32))


def test_cast(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.int32, [2])
    y = tf.cast(x, tf.float32)
    assert (y.op.type, y.dtype, y.op.name) == ("Cast", tf.float32, "Cast")
    assert y.op.get_attr("Truncate") is False
    assert tf.cast(x, tf.int32) is x  # a no-op cast returns its input, as in TF


def test_argmax(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, [4, 3])
    m = tf.argmax(x, 1)
    assert (m.op.type, m.dtype, m.shape.as_list()) == ("ArgMax", tf.int64, [4])
    assert m.op.inputs[1].op.name == "ArgMax/dimension"
    assert m.op.get_attr("Tidx") is tf.int32
    assert tf.argmax(x, 0, output_type=tf.int32).dtype is tf.int32


# ------------------------------------------------------------------------------------------------
# matmul and nn
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "ta", "tb", "out"),
    [
        ([2, 3], [3, 4], False, False, [2, 4]),
        ([3, 2], [3, 4], True, False, [2, 4]),
        ([2, 3], [4, 3], False, True, [2, 4]),
        ([3, 2], [4, 3], True, True, [2, 4]),
        ([None, 3], [3, None], False, False, [None, None]),
        ([2, None], [5, 4], False, False, [2, 4]),
        # an operand of unknown rank makes a BatchMatMulV2 (tests/ops/test_math_ops.py)
    ],
)
def test_matmul_shape_inference(
    graph: tf.Graph, a: Any, b: Any, ta: bool, tb: bool, out: list[int | None]
) -> None:
    x = tf.placeholder(tf.float32, a)
    y = tf.placeholder(tf.float32, b)
    z = tf.matmul(x, y, transpose_a=ta, transpose_b=tb)
    assert (z.op.name, z.op.type) == ("MatMul", "MatMul")
    assert z.shape.as_list() == out
    assert z.op.get_attr("transpose_a") is ta
    assert z.op.get_attr("transpose_b") is tb


def test_matmul_incompatible_inner_dimensions_fail_at_build_time(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.placeholder(tf.float32, [4, 5])
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4") as info:
        tf.matmul(x, y)
    assert "MatMul" in str(info.value)
    with pytest.raises(ValueError):
        tf.matmul(x, y, transpose_a=True)  # 2 vs 4


def test_matmul_needs_rank_two(graph: tf.Graph) -> None:
    with pytest.raises(ValueError, match="rank 2"):
        tf.matmul(tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [3, 1]))


def test_matmul_dtype_mismatch_is_type_error(graph: tf.Graph) -> None:
    with pytest.raises(TypeError):
        tf.matmul(tf.placeholder(tf.float32, [2, 2]), tf.placeholder(tf.int32, [2, 2]))


def test_bias_add(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.nn.bias_add(x, [0.5, 1.0, 1.5])
    assert (y.op.name, y.op.type, y.dtype) == ("BiasAdd", "BiasAdd", tf.float32)
    assert y.shape.as_list() == [None, 3]
    assert y.op.get_attr("data_format") == b"NHWC"
    assert y.op.inputs[1].op.name == "BiasAdd/bias"
    assert y.op.inputs[1].dtype is tf.float32


def test_bias_add_nchw(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, [2, 3, None, 5])
    y = tf.nn.bias_add(x, tf.placeholder(tf.float32, [3]), data_format="NCHW")
    assert y.op.get_attr("data_format") == b"NCHW"
    assert y.shape.as_list() == [2, 3, None, 5]


def test_bias_add_shape_errors(graph: tf.Graph) -> None:
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.nn.bias_add(tf.placeholder(tf.float32, [2, 3]), tf.placeholder(tf.float32, [4]))
    with pytest.raises(ValueError, match="at least rank 2"):
        tf.nn.bias_add(tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [3]))


def test_bias_add_bad_data_format_is_value_error(graph: tf.Graph) -> None:
    with pytest.raises(ValueError):
        tf.nn.bias_add(tf.placeholder(tf.float32, [2, 3]), [1.0, 2.0, 3.0], data_format="HWCN")


def test_relu_and_softmax(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, [None, 10])
    r = tf.nn.relu(x)
    s = tf.nn.softmax(x)
    assert (r.op.name, r.op.type, r.shape.as_list()) == ("Relu", "Relu", [None, 10])
    assert (s.op.name, s.op.type, s.shape.as_list()) == ("Softmax", "Softmax", [None, 10])
    assert tf.nn.relu(tf.placeholder(tf.int32)).dtype is tf.int32
    with pytest.raises(TypeError):
        tf.nn.softmax(
            tf.placeholder(tf.int32, [2])
        )  # Softmax: T in {half, bfloat16, float, double}


# ------------------------------------------------------------------------------------------------
# Operators
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "name", "op_type", "const_name"),
    [
        (lambda x: x + 1.0, "add", "AddV2", "add/y"),
        (lambda x: 1.0 + x, "add", "AddV2", "add/x"),
        (lambda x: x - 2, "sub", "Sub", "sub/y"),
        (lambda x: 2 - x, "sub", "Sub", "sub/x"),
        (lambda x: x * 3.0, "mul", "Mul", "mul/y"),
        (lambda x: 3.0 * x, "mul", "Mul", "mul/x"),
        (lambda x: x / 4.0, "truediv", "RealDiv", "truediv/y"),
        (lambda x: 4.0 / x, "truediv", "RealDiv", "truediv/x"),
    ],
)
def test_operators_with_python_numbers(
    graph: tf.Graph,
    build: Callable[[tf.Tensor], tf.Tensor],
    name: str,
    op_type: str,
    const_name: str,
) -> None:
    x = tf.placeholder(tf.float32, [2], name="x")
    z = build(x)
    assert (z.op.name, z.op.type, z.dtype) == (name, op_type, tf.float32)
    assert z.shape.as_list() == [2]
    const = next(t for t in z.op.inputs if t is not x)
    assert const.op.name == const_name
    assert const.op.type == "Const"
    assert const.dtype is tf.float32  # the number takes the tensor's dtype
    assert x in z.op.inputs
    reversed_form = const_name.endswith("/x")
    assert z.op.inputs.index(x) == (1 if reversed_form else 0)


def test_reversed_add_makes_a_float32_const(graph: tf.Graph) -> None:
    x = tf.placeholder(tf.float32, name="x")
    z = 1.0 + x
    assert z.op.inputs[0].op.get_attr("value").dtype == np.float32
    assert z.op.inputs[0].op.get_attr("value").item() == 1.0
    assert z.op.inputs[1] is x


def test_int_tensor_with_python_int(graph: tf.Graph) -> None:
    i = tf.placeholder(tf.int32, name="i")
    z = 2 * i
    assert z.dtype is tf.int32
    assert z.op.inputs[0].dtype is tf.int32


def test_tensor_operators_between_tensors(graph: tf.Graph) -> None:
    a = tf.placeholder(tf.float32, [2, 3], name="a")
    b = tf.placeholder(tf.float32, [3, 4], name="b")
    m = a @ b
    assert (m.op.name, m.op.type, m.shape.as_list()) == ("matmul", "MatMul", [2, 4])
    n = -a
    assert (n.op.name, n.op.type) == ("Neg", "Neg")
    s = a + a
    assert s.op.inputs == [a, a]
    assert (a - a).op.name == "sub"
    assert (a * a).op.name == "mul"
    assert (a / a).op.name == "truediv"
    assert (a @ b).op.name == "matmul_1"


def test_rmatmul_with_a_nested_list(graph: tf.Graph) -> None:
    b = tf.placeholder(tf.float32, [2, 3])
    m = [[1.0, 2.0]] @ b
    assert m.shape.as_list() == [1, 3]
    assert m.op.inputs[1] is b
    assert m.op.inputs[0].dtype is tf.float32


@pytest.mark.parametrize(
    "build",
    [
        lambda f, i: f + i,
        lambda f, i: i - f,
        lambda f, i: tf.add(f, i),
        lambda f, i: tf.multiply(i, f),
        pytest.param(
            lambda f, i: f / i,
            marks=pytest.mark.xfail(
                strict=True,
                reason="TF's truediv converts y with dtype_hint and raises TypeError ('x and y must "
                "have the same dtype'); aiotf converts with dtype= and raises ValueError",
            ),
        ),
    ],
)
def test_dtype_mismatch_between_tensors_is_type_error(
    graph: tf.Graph, build: Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
) -> None:
    f = tf.placeholder(tf.float32, name="f")
    i = tf.placeholder(tf.int32, name="i")
    with pytest.raises(TypeError):
        build(f, i)


def test_float_number_into_int_tensor_is_type_error(graph: tf.Graph) -> None:
    i = tf.placeholder(tf.int32)
    with pytest.raises(TypeError):
        i + 1.5
    with pytest.raises(TypeError):
        2.5 * i


def test_tensors_of_different_graphs_do_not_mix(graph: tf.Graph) -> None:
    other = tf.Graph()
    with other.as_default():
        foreign = tf.placeholder(tf.float32)
    local = tf.placeholder(tf.float32)
    with pytest.raises(ValueError):
        local + foreign


def test_string_addition_uses_add(graph: tf.Graph) -> None:
    s = tf.placeholder(tf.string)
    assert (s + s).op.type == "Add"


# ------------------------------------------------------------------------------------------------
# Differential: rebuild graphs TensorFlow wrote, NodeDef by NodeDef
# ------------------------------------------------------------------------------------------------


def _nodes(graph_def: Any) -> dict[str, Any]:
    return {n.name: n for n in graph_def.node}


def test_rebuilt_mlp_matches_tensorflow(
    graph: tf.Graph, tf_graph_def: Callable[[str], Any]
) -> None:
    reference = _nodes(tf_graph_def("model_mlp"))
    x = tf.placeholder(tf.float32, [None, 8], name="input")
    h = x
    for i in range(3):
        with tf.name_scope(f"dense{i}"):
            kernel = tf.constant(
                tensor_util.make_ndarray(reference[f"dense{i}/kernel"].attr["value"].tensor),
                name="kernel",
            )
            bias = tf.constant(
                tensor_util.make_ndarray(reference[f"dense{i}/bias"].attr["value"].tensor),
                name="bias",
            )
            h = tf.nn.bias_add(tf.matmul(h, kernel), bias)
            if i < 2:
                h = tf.nn.relu(h)
    probs = tf.nn.softmax(h, name="probs")
    pred = tf.argmax(probs, 1, name="pred")
    built = _nodes(graph.as_graph_def())
    assert list(built) == list(reference)
    for name, node in reference.items():
        if name == "pred/dimension":  # a scalar: TF encodes it in int_val (see tensor_util tests)
            continue
        assert built[name] == node, name
    assert tensor_util.make_ndarray(built["pred/dimension"].attr["value"].tensor).item() == 1
    assert pred.shape.as_list() == [None]
    assert probs.shape.as_list() == [None, 3]


def test_rebuilt_feeds_fetch_twice_matches_tensorflow(
    graph: tf.Graph, tf_graph_def: Callable[[str], Any]
) -> None:
    reference = _nodes(tf_graph_def("feeds_fetch_twice"))
    x = tf.placeholder(tf.float32, [2], name="x")
    z = tf.add(x, tf.constant(1.0), name="z")
    tf.identity(z, name="w")
    built = _nodes(graph.as_graph_def())
    assert list(built) == list(reference)
    for name in ("x", "z", "w"):
        assert built[name] == reference[name], name


def test_rebuilt_feeds_scalars_matches_tensorflow(
    graph: tf.Graph, tf_graph_def: Callable[[str], Any]
) -> None:
    reference = _nodes(tf_graph_def("feeds_scalars"))
    a = tf.placeholder(tf.float32, [], name="a")
    b = tf.placeholder(tf.int32, [], name="b")
    c = tf.placeholder(tf.bool, [], name="c")
    d = tf.placeholder(tf.int64, [], name="d")
    tf.multiply(a, a, name="a2")
    tf.add(b, tf.constant(1), name="b1")
    tf.logical_not(c, name="notc")
    tf.negative(d, name="negd")
    tf.constant(3.25, name="const_1")
    built = _nodes(graph.as_graph_def())
    assert list(built) == list(reference)
    for name in ("a", "b", "c", "d", "a2", "b1", "notc", "negd"):
        assert built[name] == reference[name], name


def test_rebuilt_scalar_consts_match_tensorflow_encoding(
    graph: tf.Graph, tf_graph_def: Callable[[str], Any]
) -> None:
    reference = _nodes(tf_graph_def("feeds_scalars"))
    one = tf.constant(1)
    quarter = tf.constant(3.25, name="const_1")
    assert one.op.node_def == reference["Const"]
    assert quarter.op.node_def == reference["const_1"]


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [  # TensorFlow 2.21's, side by side with the same graphs
        (
            lambda f, i: tf.matmul(f, i),
            TypeError,
            "Input 'b' of 'MatMul' Op has type int32 that does not match type float32 of "
            "argument 'a'.",
        ),
        (
            lambda f, i: tf.add(f, i),
            TypeError,
            "Input 'y' of 'AddV2' Op has type int32 that does not match type float32 of "
            "argument 'x'.",
        ),
        (
            lambda f, i: i + 1.5,
            TypeError,
            "Input 'y' of 'AddV2' Op has type float32 that does not match type int32 of "
            "argument 'x'.",
        ),
        (
            lambda f, i: tf.subtract(i, 1.5),
            TypeError,
            "Expected int32 passed to parameter 'y' of op 'Sub', got 1.5 of type 'float' "
            "instead. Error: Expected int32, but got 1.5 of type 'float'.",
        ),
        (
            lambda f, i: i * 1.5,
            TypeError,
            "Expected int32 passed to parameter 'y' of op 'Mul', got 1.5 of type 'float' "
            "instead. Error: Expected int32, but got 1.5 of type 'float'.",
        ),
        (
            lambda f, i: tf.concat([f, i], 0),
            TypeError,
            "Tensors in list passed to 'values' of 'ConcatV2' Op have types [float32, int32] "
            "that don't all match.",
        ),
        (
            lambda f, i: tf.identity(None),
            ValueError,
            "Tried to convert 'input' to a tensor and failed. Error: None values not supported.",
        ),
    ],
)
def test_inputs_of_the_wrong_dtype_are_refused_in_tensorflows_words(
    graph: tf.Graph, build: Any, error: type, words: str
) -> None:
    f = tf.placeholder(tf.float32, [2, 2])
    i = tf.placeholder(tf.int32, [2, 2])
    with pytest.raises(error) as info:
        build(f, i)
    assert str(info.value) == words
