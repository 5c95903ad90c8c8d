"""GraphDef export (``Graph.as_graph_def``) and ``import_graph_def``, as TensorFlow 1.x does them."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format

import aiotf as tf
from aiotf.framework import op_def_registry, ops

_counter = itertools.count()


@pytest.fixture
def split_op() -> Iterator[str]:
    """A registered two-output op type (``x -> a, b``), removed after the test."""
    name = f"FrameworkTestSplit{next(_counter)}"
    op_def_registry.register_op(name, inputs=["x: T"], outputs=["a: T", "b: T"], attrs=["T: type"])
    yield name
    op_def_registry._REGISTRY.pop(name, None)
    op_def_registry._REGISTERED_AT.pop(name, None)


def parse(text: str) -> Any:
    return text_format.Parse(text, tf.GraphDef())


def node(graph_def: Any, name: str) -> Any:
    return next(n for n in graph_def.node if n.name == name)


# ------------------------------------------------------------------------------------------------
# as_graph_def
# ------------------------------------------------------------------------------------------------


def test_as_graph_def_contents(graph: tf.Graph, split_op: str) -> None:
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device("/cpu:0"):
        parts = graph.create_op(split_op, [x], name="split")
    gate = tf.no_op(name="gate")
    with tf.control_dependencies([gate]):
        y = tf.add(parts.outputs[1], parts.outputs[0], name="y")
    gd = graph.as_graph_def()
    assert [n.name for n in gd.node] == ["x", "split", "gate", "y"]
    assert [n.op for n in gd.node] == ["Placeholder", split_op, "NoOp", "AddV2"]
    assert list(node(gd, "y").input) == ["split:1", "split", "^gate"]
    assert list(node(gd, "split").input) == ["x"]
    assert node(gd, "split").device == "/device:CPU:0"
    assert node(gd, "y").device == ""
    assert node(gd, "y").attr["T"].type == tf.float32.as_datatype_enum
    assert gd.versions.producer == ops.GRAPH_DEF_VERSION
    assert y.op.node_def == node(gd, "y")


def test_as_graph_def_fills_attr_defaults(graph: tf.Graph) -> None:
    graph.create_op("Placeholder", [], {"dtype": tf.float32}, name="p")
    a = tf.placeholder(tf.float32, [2, 2])
    tf.matmul(a, a)
    tf.nn.bias_add(a, [1.0, 2.0])
    gd = graph.as_graph_def()
    assert node(gd, "p").attr["shape"].shape.unknown_rank
    matmul = node(gd, "MatMul")
    assert matmul.attr["transpose_a"].b is False
    assert matmul.attr["transpose_b"].b is False
    assert set(matmul.attr) >= {"T", "transpose_a", "transpose_b"}
    assert node(gd, "BiasAdd").attr["data_format"].s == b"NHWC"


def test_control_inputs_are_serialized_sorted_by_name(graph: tf.Graph) -> None:
    # Graph::ToGraphDef sorts control inputs by source name "for more predictable serialization".
    b, a, c = tf.no_op(name="b"), tf.no_op(name="a"), tf.no_op(name="c")
    with tf.control_dependencies([c, b, a]):
        x = tf.constant(1.0, name="x")
    assert list(node(graph.as_graph_def(), "x").input) == ["^a", "^b", "^c"]
    assert set(x.op.control_inputs) == {a, b, c}


def test_as_graph_def_from_version_and_shapes(graph: tf.Graph) -> None:
    tf.placeholder(tf.float32, [3], name="x")
    version = graph.version
    tf.identity(graph.get_tensor_by_name("x:0"), name="y")
    assert [n.name for n in graph.as_graph_def(from_version=version).node] == ["y"]
    shaped = graph.as_graph_def(add_shapes=True)
    dims = [d.size for d in node(shaped, "y").attr["_output_shapes"].list.shape[0].dim]
    assert dims == [3]
    assert "_output_shapes" not in node(graph.as_graph_def(), "y").attr


# ------------------------------------------------------------------------------------------------
# import_graph_def
# ------------------------------------------------------------------------------------------------

SIMPLE = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 2 } } } } }
node { name: "gate" op: "NoOp" }
node { name: "y" op: "Identity" input: "x" input: "^gate" device: "/device:CPU:0"
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "z" op: "Neg" input: "y" attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_import_with_empty_name_keeps_names(graph: tf.Graph) -> None:
    assert tf.import_graph_def(parse(SIMPLE), name="") is None
    assert [op.name for op in graph.get_operations()] == ["x", "gate", "y", "z"]
    y = graph.get_operation_by_name("y")
    assert y.inputs == [graph.get_tensor_by_name("x:0")]
    assert y.control_inputs == [graph.get_operation_by_name("gate")]
    assert y.device == "/device:CPU:0"
    assert graph.get_tensor_by_name("z:0").shape.as_list() == [None, 2]
    assert graph.get_tensor_by_name("z:0").dtype is tf.float32


def test_import_default_prefix_is_import(graph: tf.Graph) -> None:
    tf.import_graph_def(parse(SIMPLE))
    tf.import_graph_def(parse(SIMPLE))
    names = [op.name for op in graph.get_operations()]
    assert names[:4] == ["import/x", "import/gate", "import/y", "import/z"]
    assert names[4:] == ["import_1/x", "import_1/gate", "import_1/y", "import_1/z"]
    y = node(graph.as_graph_def(), "import/y")
    assert list(y.input) == ["import/x", "^import/gate"]


def test_import_with_name_and_inside_a_scope(graph: tf.Graph) -> None:
    tf.import_graph_def(parse(SIMPLE), name="model")
    with tf.name_scope("outer"):
        tf.import_graph_def(parse(SIMPLE))
    assert graph.get_operation_by_name("model/z").type == "Neg"
    assert graph.get_operation_by_name("outer/import/z").type == "Neg"


def test_import_with_empty_name_uniquifies_clashing_names(graph: tf.Graph) -> None:
    existing = tf.placeholder(tf.int32, name="x")
    tf.import_graph_def(parse(SIMPLE), name="")
    imported_x = graph.get_operation_by_name("x_1")
    assert imported_x.type == "Placeholder"
    assert graph.get_operation_by_name("y").inputs == [imported_x.outputs[0]]
    assert graph.get_operation_by_name("x") is existing.op


def test_input_map_replaces_tensors(graph: tf.Graph) -> None:
    feed = tf.constant(np.ones((3, 2), np.float32), name="feed")
    tf.import_graph_def(parse(SIMPLE), input_map={"x:0": feed}, name="a")
    tf.import_graph_def(parse(SIMPLE), input_map={"x": feed}, name="b")
    for scope in ("a", "b"):
        assert graph.get_operation_by_name(f"{scope}/y").inputs == [feed]
        assert graph.get_tensor_by_name(f"{scope}/z:0").shape.as_list() == [3, 2]


def test_input_map_values_must_be_tensors(graph: tf.Graph) -> None:
    with pytest.raises(TypeError, match="input_map"):
        tf.import_graph_def(parse(SIMPLE), input_map={"x:0": 1.0})


def test_return_elements(graph: tf.Graph) -> None:
    z, y_op = tf.import_graph_def(parse(SIMPLE), return_elements=["z:0", "y"])  # type: ignore[misc]
    assert isinstance(z, tf.Tensor) and z.name == "import/z:0"
    assert isinstance(y_op, tf.Operation) and y_op.name == "import/y"
    with pytest.raises(ValueError, match="nope"):
        tf.import_graph_def(parse(SIMPLE), return_elements=["nope:0"])
    with pytest.raises(ValueError, match="nope"):
        tf.import_graph_def(parse(SIMPLE), return_elements=["nope"])


def test_import_rejects_non_graph_defs(graph: tf.Graph) -> None:
    with pytest.raises(TypeError):
        tf.import_graph_def("node {}")


def test_unknown_op_type_is_not_found_naming_op_and_node(graph: tf.Graph) -> None:
    gd = parse(SIMPLE + 'node { name: "mystery" op: "FancyOpNobodyHas" input: "z" }')
    with pytest.raises(tf.errors.NotFoundError) as info:
        tf.import_graph_def(gd, name="")
    assert "FancyOpNobodyHas" in info.value.message
    assert "mystery" in info.value.message
    assert graph.get_operations() == []


def test_missing_required_attr_is_value_error(graph: tf.Graph) -> None:
    gd = parse('node { name: "p" op: "Placeholder" }')
    with pytest.raises(ValueError, match="dtype") as info:
        tf.import_graph_def(gd, name="")
    assert "p" in str(info.value)
    assert graph.get_operations() == []


def test_bad_inputs_are_value_errors(graph: tf.Graph) -> None:
    unknown = parse(
        'node { name: "n" op: "Identity" input: "ghost" attr { key: "T" value { type: DT_FLOAT } } }'
    )
    with pytest.raises(ValueError, match="ghost"):
        tf.import_graph_def(unknown)
    bad_index = parse(SIMPLE.replace('input: "y"', 'input: "y:3"'))
    with pytest.raises(ValueError, match="output 3"):
        tf.import_graph_def(bad_index)
    duplicate = parse(SIMPLE + 'node { name: "z" op: "NoOp" }')
    with pytest.raises(ValueError, match="^Node 'z' is not unique$"):  # TensorFlow's words
        tf.import_graph_def(duplicate)
    assert graph.get_operations() == []


def _doubled() -> tf.GraphDef:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.identity(x * 2.0, name="y")
    return g.as_graph_def()


def test_input_map_errors_are_tensorflows(graph: tf.Graph) -> None:
    # TensorFlow 2.21's words, side by side with the same graph
    with pytest.raises(ValueError) as info:
        tf.import_graph_def(_doubled(), input_map={"nope:0": tf.constant([1.0, 2.0])}, name="")
    assert str(info.value) == "Attempted to map inputs that were not found in graph_def: [nope:0]"
    with pytest.raises(ValueError) as info:
        tf.import_graph_def(_doubled(), input_map={"x:0": tf.constant([1, 2])}, name="")
    assert str(info.value) == (
        "Input 0 of node mul was passed int32 from Const_1:0 incompatible with expected float."
    )
    assert [op.type for op in graph.get_operations()] == ["Const", "Const"]  # nothing imported
    (y,) = tf.import_graph_def(
        _doubled(), input_map={"x": tf.constant([1.0, 2.0])}, return_elements=["y:0"], name="m"
    )
    assert y.op.inputs[0].op.inputs[0].name == "Const_2:0"


def test_failed_shape_inference_imports_nothing(graph: tf.Graph) -> None:
    gd = parse(
        """
        node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
        node { name: "m" op: "MatMul" input: "a" input: "a"
               attr { key: "T" value { type: DT_FLOAT } } }
        """
    )
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.import_graph_def(gd, name="")
    assert graph.get_operations() == []


def test_imported_op_keeps_its_node_def(graph: tf.Graph) -> None:
    gd = parse(
        SIMPLE
        + 'node { name: "w" op: "Identity" input: "z" attr { key: "T" value { type: DT_FLOAT } }'
        ' attr { key: "_class" value { list { s: "loc:@z" } } } }'
    )
    tf.import_graph_def(gd, name="")
    w = graph.get_operation_by_name("w")
    assert w.get_attr("_class") == [b"loc:@z"]
    assert w.node_def == node(gd, "w")


def test_node_order_does_not_matter(graph: tf.Graph) -> None:
    gd = parse(SIMPLE)
    reordered = tf.GraphDef()
    reordered.node.extend(reversed(gd.node))
    tf.import_graph_def(reordered, name="")
    assert graph.get_tensor_by_name("z:0").shape.as_list() == [None, 2]


def test_round_trip_build_export_import_export() -> None:
    built = tf.Graph()
    with built.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        with tf.name_scope("layer"), tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
            h = tf.nn.relu(tf.nn.bias_add(x @ w, [1.0, -1.0]))
        gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            out = tf.nn.softmax(h / 2.0, name="out")
        tf.argmax(out, 1, name="pred")
        tf.cast(tf.constant([1, 2]), tf.float32) + tf.placeholder_with_default(1.0, [])
        tf.group(out, gate)
    first = built.as_graph_def()
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(first, name="")
    second = copy.as_graph_def()
    assert second == first
    assert [op.name for op in copy.get_operations()] == [op.name for op in built.get_operations()]
    for op in built.get_operations():
        twin = copy.get_operation_by_name(op.name)
        assert [t.shape for t in twin.outputs] == [t.shape for t in op.outputs]
        assert [t.dtype for t in twin.outputs] == [t.dtype for t in op.outputs]


@pytest.mark.parametrize("case", ["model_mlp", "feeds_scalars", "feeds_fetch_twice"])
def test_tensorflow_graph_defs_round_trip(
    graph: tf.Graph, tf_graph_def: Callable[[str], Any], case: str
) -> None:
    original = tf_graph_def(case)
    tf.import_graph_def(original, name="")
    exported = graph.as_graph_def()
    assert len(exported.node) == len(original.node)
    for before, after in zip(original.node, exported.node, strict=True):
        assert after == before, before.name


def test_tensorflow_mlp_imports_with_shapes(
    graph: tf.Graph, tf_graph_def: Callable[[str], Any]
) -> None:
    tf.import_graph_def(tf_graph_def("model_mlp"), name="")
    assert graph.get_tensor_by_name("input:0").shape.as_list() == [None, 8]
    assert graph.get_tensor_by_name("dense0/MatMul:0").shape.as_list() == [None, 16]
    assert graph.get_tensor_by_name("probs:0").shape.as_list() == [None, 3]
    assert graph.get_tensor_by_name("pred:0").dtype is tf.int64
    assert graph.get_tensor_by_name("pred:0").shape.as_list() == [None]
    kernel = graph.get_operation_by_name("dense0/kernel").get_attr("value")
    assert kernel.shape == (8, 16)
    assert kernel.dtype == np.float32


def test_an_enclosing_device_scope_fills_what_the_node_def_leaves_open() -> None:
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="a")
        with tf.device("/cpu:0"):
            tf.identity(a, name="b")
        with tf.device("/job:localhost"):
            tf.identity(a, name="c")
    g2 = tf.Graph()
    with g2.as_default(), tf.device("/device:CPU:1"):
        tf.import_graph_def(g.as_graph_def(), name="imp")
    # Recorded from TF 2.21 (tf.compat.v1.import_graph_def inside tf.device).
    assert [(op.name, op.device) for op in g2.get_operations()] == [
        ("imp/a", "/device:CPU:1"),
        ("imp/b", "/device:CPU:0"),
        ("imp/c", "/job:localhost/device:CPU:1"),
    ]
