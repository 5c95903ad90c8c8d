"""Function instantiation (TensorFlow's InstantiateFunction) and the function library runtime."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from aiotf.devices.device_mgr import DeviceMgr
from aiotf.devices.factory import add_devices
from aiotf.framework import attr_value, dtypes, errors
from aiotf.kernels.context import StepContext
from aiotf.proto import AttrValue, FunctionDef, FunctionDefLibrary, NodeDef
from aiotf.runtime import function
from aiotf.runtime.executor import Executor
from aiotf.runtime.function import (
    FunctionLibraryDefinition,
    FunctionLibraryRuntime,
    instantiate_function,
)
from aiotf.runtime.rendezvous import Rendezvous

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
F32 = dtypes.float32
I32 = dtypes.int32


# -- building FunctionDefs ---------------------------------------------------------------------


def node(name: str, op: str, inputs: Sequence[str] = (), **attrs: Any) -> Any:
    out = NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        out.attr[key].CopyFrom(attr_value.encode(value))
    return out


def placeholder(name: str) -> Any:
    return AttrValue(placeholder=name)


def fdef(
    name: str,
    inputs: Sequence[tuple[str, Any]],
    outputs: Sequence[tuple[str, Any]],
    nodes: Sequence[Any],
    ret: Mapping[str, str],
    attrs: Sequence[tuple[str, str]] = (),
    control_ret: Mapping[str, str] | None = None,
) -> Any:
    """A FunctionDef; an arg's type is a DType or the name of a type attr."""
    out = FunctionDef()
    out.signature.name = name
    for args, specs in ((out.signature.input_arg, inputs), (out.signature.output_arg, outputs)):
        for arg_name, kind in specs:
            arg = args.add(name=arg_name)
            if isinstance(kind, dtypes.DType):
                arg.type = kind.as_datatype_enum  # type: ignore[assignment]
            elif kind.startswith("N*"):
                arg.number_attr, arg.type_attr = "N", kind[2:]
            else:
                arg.type_attr = kind
    for attr_name, attr_type in attrs:
        out.signature.attr.add(name=attr_name, type=attr_type)
    out.node_def.extend(nodes)
    out.ret.update(ret)
    out.control_ret.update(control_ret or {})
    for key in control_ret or {}:
        out.signature.control_output.append(key)
    return out


def library(*fdefs: Any) -> FunctionLibraryDefinition:
    lib = FunctionDefLibrary()
    lib.function.extend(fdefs)
    return FunctionLibraryDefinition(lib)


def double() -> Any:
    """double(x: float) -> y: float = x * 2."""
    return fdef(
        "double",
        [("x", F32)],
        [("y", F32)],
        [
            node("two", "Const", value=np.array(2.0, np.float32), dtype=F32),
            node("mul", "Mul", ["x", "two:output:0"], T=F32),
        ],
        {"y": "mul:z:0"},
    )


def type_attr(**attrs: Any) -> dict[str, Any]:
    return {k: attr_value.encode(v) for k, v in attrs.items()}


# -- instantiation: naming ---------------------------------------------------------------------


def test_instantiation_names_args_body_nodes_and_retvals_as_tensorflow() -> None:
    body = instantiate_function(library(double()), "double", {}, CPU0)
    g = body.graph
    assert [(n.name, n.op) for n in g] == [
        ("x", "_Arg"),
        ("two", "Const"),
        ("mul", "Mul"),
        ("y_RetVal", "_Retval"),
    ]
    assert g["mul"].inputs == [("x", 0), ("two", 0)]
    assert g["y_RetVal"].inputs == [("mul", 0)]
    assert g["x"].attrs == {"T": F32, "index": 0}
    assert g["y_RetVal"].attrs == {"T": F32, "index": 0}
    assert {n.assigned_device for n in g} == {CPU0}
    assert body.arg_types == [F32] and body.ret_types == [F32]


def test_list_args_get_one_arg_node_each_and_outputs_resolve_by_index() -> None:
    """``xs: N*T`` makes ``xs_0``, ``xs_1``; ``idn:output:1`` is output 1 of ``idn``."""
    f = fdef(
        "swap",
        [("xs", "N*T")],
        [("a", "T"), ("b", "T")],
        [node("idn", "IdentityN", ["xs:0", "xs:1"], T=[F32, F32])],
        {"a": "idn:output:1", "b": "idn:output:0"},
        attrs=[("T", "type"), ("N", "int")],
    )
    body = instantiate_function(library(f), "swap", type_attr(T=F32, N=2), CPU0)
    g = body.graph
    assert [n.name for n in g] == ["xs_0", "xs_1", "idn", "a_RetVal", "b_RetVal"]
    assert [g[n].attrs["index"] for n in ("xs_0", "xs_1", "a_RetVal", "b_RetVal")] == [0, 1, 0, 1]
    assert g["idn"].inputs == [("xs_0", 0), ("xs_1", 0)]
    assert g["a_RetVal"].inputs == [("idn", 1)]
    assert g["b_RetVal"].inputs == [("idn", 0)]


def test_a_ret_may_name_an_arg_and_rets_follow_the_signature_order() -> None:
    f = fdef(
        "pass",
        [("x", F32), ("y", I32)],
        [("second", I32), ("first", F32)],
        [],
        {"first": "x", "second": "y"},
    )
    g = instantiate_function(library(f), "pass", {}, CPU0).graph
    assert g["second_RetVal"].inputs == [("y", 0)]
    assert g["second_RetVal"].attrs["index"] == 0
    assert g["first_RetVal"].inputs == [("x", 0)]
    assert g["first_RetVal"].attrs["index"] == 1


def test_control_inputs_resolve_to_nodes_and_control_rets_are_reported() -> None:
    f = fdef(
        "ctl",
        [("x", F32)],
        [("y", F32)],
        [
            node("side", "Neg", ["x"], T=F32),
            node("out", "Identity", ["x", "^side"], T=F32),
        ],
        {"y": "out:output:0"},
        control_ret={"effect": "side"},
    )
    body = instantiate_function(library(f), "ctl", {}, CPU0)
    assert body.graph["out"].control_inputs == ["side"]
    assert body.control_ret_nodes == ["side"]


def test_attr_placeholders_are_bound_from_the_call_attrs() -> None:
    f = fdef(
        "ident",
        [("x", "T")],
        [("y", "T")],
        [node("id", "Identity", ["x"], T=placeholder("T"))],
        {"y": "id:output:0"},
        attrs=[("T", "type")],
    )
    lib = library(f)
    for dt in (F32, I32):
        g = instantiate_function(lib, "ident", type_attr(T=dt), CPU0).graph
        assert g["id"].attrs["T"] is dt
        assert g["x"].attrs["T"] is dt
        assert g["y_RetVal"].attrs["T"] is dt


# -- instantiation: errors ---------------------------------------------------------------------


def test_unknown_function_is_not_found_in_tensorflows_words() -> None:
    with pytest.raises(errors.NotFoundError, match=r"^Function nope is not defined\.$"):
        instantiate_function(library(double()), "nope", {}, CPU0)


def test_missing_signature_attr_is_not_found() -> None:
    f = fdef("ident", [("x", "T")], [("y", "T")], [], {"y": "x"}, attrs=[("T", "type")])
    with pytest.raises(errors.NotFoundError, match=r"Attr T is not found from Op<name=ident"):
        instantiate_function(library(f), "ident", {}, CPU0)


def test_unbound_placeholder_is_invalid_and_names_the_node() -> None:
    f = fdef(
        "bad",
        [("x", F32)],
        [("y", F32)],
        [node("id", "Identity", ["x"], T=placeholder("U"))],
        {"y": "id:output:0"},
    )
    with pytest.raises(errors.InvalidArgumentError, match=r"Failed to bind all placeholders") as e:
        instantiate_function(library(f), "bad", {}, CPU0)
    assert "{{node id}}" in e.value.message


def test_unknown_input_name_is_invalid_and_names_the_node() -> None:
    f = fdef(
        "bad",
        [("x", F32)],
        [("y", F32)],
        [node("neg", "Neg", ["bogus:y:0"], T=F32)],
        {"y": "neg:y:0"},
    )
    with pytest.raises(errors.InvalidArgumentError, match=r"input bogus:y:0 is not found") as e:
        instantiate_function(library(f), "bad", {}, CPU0)
    assert "{{node neg}}" in e.value.message


def test_a_bare_node_name_is_not_an_input_name() -> None:
    """Inside a function, outputs are named ``node:out_arg:index``; ``neg`` alone names none."""
    f = fdef(
        "bad",
        [("x", F32)],
        [("y", F32)],
        [node("neg", "Neg", ["x"], T=F32), node("neg2", "Neg", ["neg"], T=F32)],
        {"y": "neg2:y:0"},
    )
    with pytest.raises(errors.InvalidArgumentError, match=r"input neg is not found"):
        instantiate_function(library(f), "bad", {}, CPU0)


def test_input_of_the_wrong_type_is_invalid() -> None:
    f = fdef(
        "bad",
        [("x", I32)],
        [("y", F32)],
        [node("neg", "Neg", ["x"], T=F32)],
        {"y": "neg:y:0"},
    )
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"input x\[0\] expected type float != int32, the type of x\[0\]",
    ):
        instantiate_function(library(f), "bad", {}, CPU0)


def test_missing_return_is_invalid() -> None:
    f = fdef("bad", [("x", F32)], [("y", F32)], [], {})
    with pytest.raises(errors.InvalidArgumentError, match=r"Return y missing\.\n\tIn function"):
        instantiate_function(library(f), "bad", {}, CPU0)


def test_return_of_the_wrong_type_is_invalid() -> None:
    f = fdef("bad", [("x", F32)], [("y", I32)], [], {"y": "x"})
    with pytest.raises(
        errors.InvalidArgumentError, match=r"Invalid ret types y : int32 vs\. float"
    ):
        instantiate_function(library(f), "bad", {}, CPU0)


def test_unknown_op_in_a_body_is_not_found_and_names_the_node() -> None:
    f = fdef("bad", [("x", F32)], [("y", F32)], [node("w", "Wibble", ["x"])], {"y": "x"})
    with pytest.raises(errors.NotFoundError, match=r"Op type not registered 'Wibble'") as e:
        instantiate_function(library(f), "bad", {}, CPU0)
    assert "{{node w}}" in e.value.message


def test_a_body_node_calling_a_function_becomes_a_call_typed_by_its_signature() -> None:
    f = fdef(
        "quad",
        [("x", F32)],
        [("y", F32)],
        [node("d1", "double", ["x"]), node("d2", "double", ["d1:y:0"])],
        {"y": "d2:y:0"},
    )
    g = instantiate_function(library(double(), f), "quad", {}, CPU0).graph
    assert g["d2"].op == "StatefulPartitionedCall"
    assert g["d2"].attrs["f"].name == "double"
    assert g["d2"].inputs == [("d1", 0)]
    assert g["d2"].output_dtypes == (F32,)


def test_library_refuses_a_different_function_under_an_existing_name() -> None:
    lib = library(double())
    lib.add_library(FunctionDefLibrary(function=[double()]))  # the same definition: fine
    other = double()
    other.ret["y"] = "x"
    with pytest.raises(errors.InvalidArgumentError, match=r"Cannot add function 'double'"):
        lib.add_library(FunctionDefLibrary(function=[other]))
    assert lib.find("double").ret["y"] == "mul:z:0"


# -- the runtime -------------------------------------------------------------------------------


@pytest.fixture
def device_mgr() -> Iterator[DeviceMgr]:
    mgr = DeviceMgr(add_devices(None, TASK))
    yield mgr
    mgr.close()


def ctx_on(device: Any, runtime: FunctionLibraryRuntime) -> StepContext:
    return StepContext(7, Rendezvous(), [], [], device, runtime)


async def test_runtime_runs_a_function_and_caches_its_instantiation(device_mgr: DeviceMgr) -> None:
    runtime = FunctionLibraryRuntime(library(double()))
    device = device_mgr.client_device
    handle = runtime.instantiate("double", {}, device)
    assert runtime.instantiate("double", {}, device) == handle
    out = await runtime.call(handle, ctx_on(device, runtime), [np.array([1.5, -2.0], np.float32)])
    np.testing.assert_array_equal(out[0], np.array([3.0, -4.0], np.float32))
    out = await runtime.call("double", ctx_on(device, runtime), [np.float32(4.0)])
    assert out[0] == np.float32(8.0)
    assert runtime.num_instantiated == 1


async def test_a_pool_of_bias_and_relu_in_a_body_is_fused_and_answers_the_same(
    device_mgr: DeviceMgr,
) -> None:
    window = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": b"VALID"}
    block = fdef(
        "block",
        [("x", F32), ("b", F32)],
        [("y", F32)],
        [
            node("bias", "BiasAdd", ["x", "b"], T=F32),
            node("relu", "Relu", ["bias:output:0"], T=F32),
            node("pool", "MaxPool", ["relu:activations:0"], T=F32, **window),
        ],
        {"y": "pool:output:0"},
    )
    runtime = FunctionLibraryRuntime(library(block))
    device = device_mgr.client_device
    handle = runtime.instantiate("block", {}, device)
    body = runtime.executor(handle).graph
    assert "_FusedMaxPool" in {n.op for n in body} and "relu" not in body
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 6, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    (out,) = await runtime.call(handle, ctx_on(device, runtime), [x, b])
    want = np.maximum(x + b, 0).reshape(2, 2, 2, 3, 2, 3).max(axis=(2, 4))
    np.testing.assert_array_equal(out, want)


async def test_other_attrs_are_another_instantiation(device_mgr: DeviceMgr) -> None:
    f = fdef(
        "ident",
        [("x", "T")],
        [("y", "T")],
        [node("id", "Identity", ["x"], T=placeholder("T"))],
        {"y": "id:output:0"},
        attrs=[("T", "type")],
    )
    runtime = FunctionLibraryRuntime(library(f))
    device = device_mgr.client_device
    h_f32 = runtime.instantiate("ident", type_attr(T=F32), device)
    h_i32 = runtime.instantiate("ident", type_attr(T=I32), device)
    assert h_f32 != h_i32
    assert runtime.instantiate("ident", type_attr(T=F32), device) == h_f32
    assert runtime.num_instantiated == 2


async def test_runtime_checks_the_number_of_args(device_mgr: DeviceMgr) -> None:
    runtime = FunctionLibraryRuntime(library(double()))
    device = device_mgr.client_device
    with pytest.raises(errors.InvalidArgumentError, match=r"double expects 1 arguments"):
        await runtime.call("double", ctx_on(device, runtime), [])


async def test_control_ret_nodes_survive_the_optimizer(device_mgr: DeviceMgr) -> None:
    f = fdef(
        "ctl",
        [("x", F32)],
        [("y", F32)],
        [node("side", "Neg", ["x"], T=F32), node("unused", "Neg", ["x"], T=F32)],
        {"y": "x"},
        control_ret={"effect": "side"},
    )
    runtime = FunctionLibraryRuntime(library(f))
    handle = runtime.instantiate("ctl", {}, device_mgr.client_device)
    names = {n.name for n in runtime.executor(handle).graph}
    assert "side" in names
    assert "unused" not in names


async def test_errors_in_a_body_name_the_body_node(device_mgr: DeviceMgr) -> None:
    f = fdef(
        "div",
        [("x", I32), ("y", I32)],
        [("z", I32)],
        [node("q", "FloorDiv", ["x", "y"], T=I32)],
        {"z": "q:z:0"},
    )
    runtime = FunctionLibraryRuntime(library(f))
    device = device_mgr.client_device
    with pytest.raises(errors.InvalidArgumentError) as e:
        await runtime.call("div", ctx_on(device, runtime), [np.int32(1), np.int32(0)])
    assert "{{node q}}" in e.value.message


def test_executor_is_built_once_per_instantiation(
    device_mgr: DeviceMgr, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    class Counting(Executor):
        def __init__(self, graph: Any, device: Any, create_kernel: Any) -> None:
            built.append(",".join(n.name for n in graph))
            super().__init__(graph, device, create_kernel)

    monkeypatch.setattr(function, "Executor", Counting)
    runtime = FunctionLibraryRuntime(library(double()))
    for _ in range(3):
        runtime.instantiate("double", {}, device_mgr.client_device)
    assert built == ["x,two,mul,y_RetVal"]
