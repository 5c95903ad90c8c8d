"""The Placer: explicit, partial and impossible device specs, soft placement, colocation."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices
from aiotf.framework import errors
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.placer import place

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
CPU1 = f"{TASK}/device:CPU:1"


@pytest.fixture
def device_mgr() -> Iterator[DeviceMgr]:
    mgr = DeviceMgr(add_devices(aiotf.ConfigProto(device_count={"CPU": 2}), TASK))
    yield mgr
    mgr.close()


def const(name: str, device: str = "", **attrs: object) -> Node:
    return Node(
        name,
        lookup("Const"),
        {"value": np.zeros((), np.float32), "dtype": aiotf.float32, **attrs},
        requested_device=device,
    )


def test_default_device_is_cpu0(device_mgr: DeviceMgr) -> None:
    assert device_mgr.client_device.name == CPU0


def test_unspecified_goes_to_default_device(device_mgr: DeviceMgr) -> None:
    g = Graph([const("a")])
    place(g, device_mgr)
    assert g["a"].assigned_device == CPU0


@pytest.mark.parametrize(
    "spec",
    ["/device:CPU:1", "/cpu:1", "/job:localhost/device:CPU:1", f"{TASK}/device:CPU:1", "CPU:1"],
)
def test_explicit_and_partial_specs(device_mgr: DeviceMgr, spec: str) -> None:
    g = Graph([const("a", spec), const("b")])
    place(g, device_mgr)
    assert g["a"].assigned_device == CPU1
    assert g["b"].assigned_device == CPU0


def test_spec_without_index_takes_first_match(device_mgr: DeviceMgr) -> None:
    g = Graph([const("a", "/device:CPU:*"), const("b", "/job:localhost")])
    place(g, device_mgr)
    assert g["a"].assigned_device == CPU0
    assert g["b"].assigned_device == CPU0


@pytest.mark.parametrize("spec", ["/device:CPU:7", "/device:GPU:0", "/job:worker/device:CPU:0"])
def test_impossible_spec(device_mgr: DeviceMgr, spec: str) -> None:
    g = Graph([const("lonely", spec)])
    with pytest.raises(errors.InvalidArgumentError) as info:
        place(g, device_mgr)
    message = str(info.value)
    assert "lonely" in message
    assert spec in message
    assert CPU0 in message and CPU1 in message
    assert g["lonely"].assigned_device == ""


@pytest.mark.parametrize("spec", ["/device:CPU:7", "/device:GPU:0"])
def test_soft_placement_falls_back(device_mgr: DeviceMgr, spec: str) -> None:
    g = Graph([const("a", spec)])
    place(g, device_mgr, allow_soft_placement=True)
    assert g["a"].assigned_device == CPU0


def test_malformed_spec(device_mgr: DeviceMgr) -> None:
    g = Graph([const("a", "/bogus:thing")])
    with pytest.raises(errors.InvalidArgumentError, match=r"Malformed device.*'a'"):
        place(g, device_mgr)


def test_colocation_follows_the_named_node(device_mgr: DeviceMgr) -> None:
    g = Graph([const("x", "/device:CPU:1"), const("y", _class=[b"loc:@x"])])
    place(g, device_mgr)
    assert g["x"].assigned_device == CPU1
    assert g["y"].assigned_device == CPU1


def test_colocation_is_transitive_and_merges_specs(device_mgr: DeviceMgr) -> None:
    g = Graph(
        [
            const("x"),
            const("y", _class=[b"loc:@x"]),
            const("z", "/device:CPU:1", _class=[b"loc:@y"]),
        ]
    )
    place(g, device_mgr)
    assert {n.assigned_device for n in g} == {CPU1}


def test_colocation_with_already_placed_node(device_mgr: DeviceMgr) -> None:
    # A placed node's group requests its full device: a conflicting request is TF's merge error,
    # and with soft placement only the conflicting index is dropped, refilled from the placement.
    def graph() -> Graph:
        x = const("x")
        x.assigned_device = CPU1
        return Graph([x, const("y", "/device:CPU:0", _class=[b"loc:@x"])])

    with pytest.raises(errors.InvalidArgumentError) as info:
        place(graph(), device_mgr)
    assert str(info.value) == (
        "Cannot colocate nodes {{colocation_node y}} and {{colocation_node x}}: Cannot merge "
        f"devices with incompatible ids: '{CPU0}' and '{CPU1}'\n\t [[{{{{node y}}}}]]"
    )
    g = graph()
    place(g, device_mgr, allow_soft_placement=True)
    assert g["y"].assigned_device == CPU1


def test_already_placed_nodes_keep_their_device(device_mgr: DeviceMgr) -> None:
    a = const("a", "/device:CPU:0")
    a.assigned_device = CPU1
    g = Graph([a, const("b")])
    place(g, device_mgr)
    assert g["a"].assigned_device == CPU1
    assert g["b"].assigned_device == CPU0


def test_op_without_kernel(device_mgr: DeviceMgr) -> None:
    # MatMul has kernels for numeric types only.
    attrs = {**lookup("MatMul").default_attrs(), "T": aiotf.string}
    node = Node("n", lookup("MatMul"), attrs, inputs=[("a", 0), ("a", 0)])
    g = Graph([const("a"), node])
    with pytest.raises(errors.InvalidArgumentError) as info:
        place(g, device_mgr)
    message = str(info.value)
    assert "'MatMul'" in message
    assert "{{node n}}" in message
    assert "T=DT_STRING" in message


def test_graph_built_with_device_scope(device_mgr: DeviceMgr) -> None:
    from aiotf.runtime.graph import node_from_def

    g = aiotf.Graph()
    with g.as_default():
        a = aiotf.constant(1.0, name="a")
        with aiotf.device("/cpu:1"):
            aiotf.identity(a, name="b")
    rg = Graph(node_from_def(op.node_def) for op in g.get_operations())
    place(rg, device_mgr)
    assert rg["a"].assigned_device == CPU1  # heuristic A: a generator joins its only consumer
    assert rg["b"].assigned_device == CPU1


SCALAR_VAR = {"shape": aiotf.TensorShape([]), "dtype": aiotf.float32}


def _node(
    name: str, op: str, attrs: dict[str, object], inputs: list[str], device: str = ""
) -> Node:
    full = {**lookup(op).default_attrs(), **attrs}
    return Node(name, lookup(op), full, [(i, 0) for i in inputs], requested_device=device)


def test_ref_edge_colocates_the_update_with_its_variable(device_mgr: DeviceMgr) -> None:
    # An imported graph may lack ``_class``: the ref edge alone keeps Assign by its variable.
    g = Graph(
        [
            const("one"),
            _node("v", "VariableV2", SCALAR_VAR, [], "/device:CPU:1"),
            _node("v/Assign", "Assign", {"T": aiotf.float32}, ["v", "one"]),
            _node("v/read", "Identity", {"T": aiotf.float32}, ["v"]),
            _node("one/copy", "Identity", {"T": aiotf.float32}, ["one"]),
        ]
    )
    place(g, device_mgr)
    assert g["v"].assigned_device == CPU1
    assert g["v/Assign"].assigned_device == CPU1
    assert g["one"].assigned_device == CPU0  # a plain input is not pulled along
    assert g["v/read"].assigned_device == CPU0  # reads a value, not the ref: free to go


def test_ref_consumer_device_moves_the_variable(device_mgr: DeviceMgr) -> None:
    g = Graph(
        [
            const("one"),
            _node("v", "VariableV2", SCALAR_VAR, []),
            _node("inc", "AssignAdd", {"T": aiotf.float32}, ["v", "one"], "/device:CPU:1"),
            _node("ok", "IsVariableInitialized", {"dtype": aiotf.float32}, ["v"]),
        ]
    )
    place(g, device_mgr)
    assert {g[n].assigned_device for n in ("v", "inc", "ok")} == {CPU1}


def test_resource_edge_colocates_with_the_handle(device_mgr: DeviceMgr) -> None:
    handle_attrs = {"dtype": aiotf.float32, "shape": aiotf.TensorShape([2])}
    g = Graph(
        [
            _node("h", "VarHandleOp", handle_attrs, [], "/device:CPU:1"),
            _node("read", "ReadVariableOp", {"dtype": aiotf.float32}, ["h"]),
            _node("double", "AddV2", {"T": aiotf.float32}, ["read", "read"]),
        ]
    )
    place(g, device_mgr)
    assert g["read"].assigned_device == CPU1
    assert g["double"].assigned_device == CPU0


def test_built_variable_and_its_ops_stay_together(device_mgr: DeviceMgr) -> None:
    from aiotf.runtime.graph import node_from_def

    g = aiotf.Graph()
    with g.as_default():
        with aiotf.device("/cpu:1"):
            v = aiotf.Variable(1.0, name="v")
        inc = aiotf.assign_add(v, 2.0)
        total = v + 1.0
    rg = Graph(node_from_def(op.node_def) for op in g.get_operations())
    place(rg, device_mgr)
    for name in ("v", "v/Assign", "v/read", inc.op.name):
        assert rg[name].assigned_device == CPU1, name
    assert rg[total.op.name].assigned_device == CPU0


def _placed(device_mgr: DeviceMgr, build: Callable[[], object]) -> dict[str, str]:
    from aiotf.runtime.graph import node_from_def

    g = aiotf.Graph()
    with g.as_default():
        build()
    rg = Graph(node_from_def(op.node_def) for op in g.get_operations())
    place(rg, device_mgr)
    return {n.name: n.assigned_device.rpartition("/device:")[2] for n in rg}


def test_generator_and_metadata_heuristics_place_as_tensorflow(device_mgr: DeviceMgr) -> None:
    def build() -> None:
        x = aiotf.placeholder(aiotf.float32, [None, 3], name="x")
        c = aiotf.constant(1.0, name="c")
        c2 = aiotf.constant(2.0, name="c2")
        with aiotf.device("/cpu:1"):
            y = aiotf.add(x, c, name="y")
            z = aiotf.multiply(y, c2, name="z")
        aiotf.add(z, c2, name="w")  # c2 has consumers on two devices: it stays on the default
        aiotf.shape(y, name="s")
        aiotf.size(y, name="r")
        with aiotf.device("/cpu:1"):
            q = aiotf.placeholder(aiotf.float32, name="q")
        aiotf.shape(q, name="s2")  # q is a generator, placed after s2: no input device to join
        c3 = aiotf.constant(3.0, name="c3")
        aiotf.add(c3, c3, name="v")

    # Recorded from TensorFlow 2.21 (log_device_placement, ConfigProto(device_count={"CPU": 2})).
    assert _placed(device_mgr, build) == {
        "x": "CPU:1",
        "c": "CPU:1",
        "c2": "CPU:0",
        "y": "CPU:1",
        "z": "CPU:1",
        "w": "CPU:0",
        "s": "CPU:1",
        "r": "CPU:1",
        "q": "CPU:1",
        "s2": "CPU:0",
        "c3": "CPU:0",
        "v": "CPU:0",
    }


def test_generator_keeps_an_explicit_device_its_consumer_cannot_share(
    device_mgr: DeviceMgr,
) -> None:
    def build() -> None:
        with aiotf.device("/cpu:1"):
            c = aiotf.constant(1.0, name="c")
        aiotf.identity(c, name="i")

    assert _placed(device_mgr, build) == {"c": "CPU:1", "i": "CPU:0"}


def test_generator_joins_a_colocation_group_placed_before_it(device_mgr: DeviceMgr) -> None:
    def build() -> None:
        with aiotf.device("/cpu:1"):
            v = aiotf.Variable(1.0, name="v")
        aiotf.identity(v, name="i")

    placed = _placed(device_mgr, build)
    assert placed["v"] == placed["v/Assign"] == placed["v/initial_value"] == "CPU:1"


# -- colocation conflicts, ref edges, identity heuristic: recorded from TensorFlow 2.21 -----------
# (the graphs imported as GraphDefs, ConfigProto(device_count={"CPU": 2}), log_device_placement)

FLOAT = {"T": aiotf.float32}


def _placed_in_order(g: Graph, device_mgr: DeviceMgr, soft: bool = False) -> list[str]:
    return [f"{n.name}:{n.assigned_device[-5:]}" for n in place(g, device_mgr, soft)]


def _placement_error(g: Graph, device_mgr: DeviceMgr, soft: bool = False) -> str:
    with pytest.raises(errors.InvalidArgumentError) as info:
        place(g, device_mgr, soft)
    return info.value.message


def _class_conflict(x_device: str, y_device: str) -> Graph:
    y = _node("y", "Identity", FLOAT, ["x"], y_device)
    y.attrs = {**y.attrs, "_class": [b"loc:@x"]}
    return Graph([const("x", x_device), y])


def test_colocation_conflict_is_an_error(device_mgr: DeviceMgr) -> None:
    message = _placement_error(_class_conflict("/device:CPU:1", "/device:CPU:0"), device_mgr)
    assert message == (
        "Cannot colocate nodes {{colocation_node y}} and {{colocation_node x}}: Cannot merge "
        "devices with incompatible ids: '/device:CPU:0' and '/device:CPU:1'\n\t [[{{node y}}]]"
    )


def test_colocation_conflict_names_the_group_by_union_rank(device_mgr: DeviceMgr) -> None:
    # x and y already form a group (rank 1), so z's request is merged into theirs.
    y = _node("y", "Identity", FLOAT, ["x"], "/device:CPU:1")
    z = _node("z", "Identity", FLOAT, ["y"], "/device:CPU:0")
    for n in (y, z):
        n.attrs = {**n.attrs, "_class": [b"loc:@x"]}
    g = Graph([const("x"), y, z])
    assert _placement_error(g, device_mgr) == (
        "Cannot colocate nodes {{colocation_node z}} and {{colocation_node x}}: Cannot merge "
        "devices with incompatible ids: '/device:CPU:1' and '/device:CPU:0'\n\t [[{{node z}}]]"
    )
    g = Graph([const("x"), y.copy(), z.copy()])
    assert _placed_in_order(g, device_mgr, soft=True) == ["y:CPU:0", "z:CPU:0", "x:CPU:0"]


def test_soft_placement_drops_the_conflicting_index(device_mgr: DeviceMgr) -> None:
    g = _class_conflict("/device:CPU:1", "/device:CPU:0")
    assert _placed_in_order(g, device_mgr, soft=True) == ["y:CPU:0", "x:CPU:0"]


def test_colocation_type_conflict(device_mgr: DeviceMgr) -> None:
    message = _placement_error(_class_conflict("/device:GPU:0", "/device:CPU:1"), device_mgr)
    assert message.startswith(
        "Cannot colocate nodes {{colocation_node y}} and {{colocation_node x}}: Cannot merge "
        "devices with incompatible types: '/device:CPU:1' and '/device:GPU:0'"
    )
    g = _class_conflict("/device:GPU:0", "/device:CPU:1")
    assert _placed_in_order(g, device_mgr, soft=True) == ["y:CPU:0", "x:CPU:0"]


def test_colocation_job_conflict_is_not_softened(device_mgr: DeviceMgr) -> None:
    g = _class_conflict("/job:localhost/device:CPU:1", "/job:worker")
    assert _placement_error(g, device_mgr).startswith(
        "Cannot colocate nodes {{colocation_node y}} and {{colocation_node x}}: Cannot merge "
        "devices with incompatible jobs: '/job:worker' and '/job:localhost/device:CPU:1'"
    )
    # Soft placement leaves y out of the group; its own request then matches no device.
    assert _placement_error(g, device_mgr, soft=True) == (
        "Cannot assign a device for operation y: {{node y}} was explicitly assigned to "
        f"/job:worker but available devices are [ {CPU0}, {CPU1} ]. Make sure the device "
        "specification refers to a valid device.\n\t [[{{node y}}]]"
    )


def test_group_request_no_device_matches(device_mgr: DeviceMgr) -> None:
    y = _node("y", "Identity", FLOAT, ["x"], "/job:localhost")
    y.attrs = {**y.attrs, "_class": [b"loc:@x"]}
    message = _placement_error(Graph([const("x", "/device:CPU:7"), y]), device_mgr)
    assert message.startswith(
        "Cannot assign a device for operation y: Could not satisfy explicit device specification "
        "'/job:localhost' because the node {{colocation_node y}} was colocated with a group of "
        "nodes that required incompatible device '/job:localhost/device:CPU:7'. All available "
        f"devices [{CPU0}, {CPU1}]. \nColocation Debug Info:\n"
    )
    assert message.endswith(
        "Colocation members, user-requested devices, and framework assigned devices, if any:\n"
        "  x (Const) /device:CPU:7\n  y (Identity) /job:localhost\n\n\t [[{{node y}}]]"
    )


def _variable_and_assign(variable_device: str, assign_device: str) -> Graph:
    attrs = {"T": aiotf.float32, "validate_shape": True, "use_locking": True}
    return Graph(
        [
            const("two"),
            _node("v", "VariableV2", SCALAR_VAR, [], variable_device),
            _node("asg", "Assign", attrs, ["v", "two"], assign_device),
        ]
    )


@pytest.mark.parametrize("soft", [False, True])
def test_ref_consumer_gives_way_to_its_variable(device_mgr: DeviceMgr, soft: bool) -> None:
    g = _variable_and_assign("/device:CPU:1", "/device:CPU:0")
    assert _placed_in_order(g, device_mgr, soft) == ["v:CPU:1", "asg:CPU:1", "two:CPU:1"]
    g = _variable_and_assign("/device:CPU:0", "/device:CPU:1")
    assert _placed_in_order(g, device_mgr, soft) == ["v:CPU:0", "asg:CPU:0", "two:CPU:0"]


def test_resource_consumer_gives_way_to_its_handle(device_mgr: DeviceMgr) -> None:
    handle_attrs = {"dtype": aiotf.float32, "shape": aiotf.TensorShape([])}
    g = Graph(
        [
            _node("h", "VarHandleOp", handle_attrs, [], "/device:CPU:1"),
            _node("r", "ReadVariableOp", {"dtype": aiotf.float32}, ["h"], "/device:CPU:0"),
            _node("i", "Identity", {"T": aiotf.resource}, ["h"], "/device:CPU:0"),
        ]
    )
    assert _placed_in_order(g, device_mgr) == ["r:CPU:1", "i:CPU:1", "h:CPU:1"]


def _identity_case(*extra: Node, identity_inputs: tuple[str, ...] = ("a",)) -> Graph:
    ident = _node("i", "Identity", FLOAT, list(identity_inputs[:1]))
    ident.control_inputs = list(identity_inputs[1:])
    return Graph([const("c0"), _node("a", "Neg", FLOAT, ["c0"], "/device:CPU:1"), ident, *extra])


def test_identity_goes_with_its_input_between_two_nodes_on_one_device(
    device_mgr: DeviceMgr,
) -> None:
    def build() -> None:
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        with aiotf.device("/cpu:1"):
            a = aiotf.negative(x, name="a")
        i = aiotf.identity(a, name="i")
        with aiotf.device("/cpu:1"):
            aiotf.negative(i, name="b")
        aiotf.shape_n([a], name="sn")  # ShapeN is not TF's metadata class: the default device
        aiotf.shape(a, name="s")  # Shape is

    placed = _placed(device_mgr, build)
    expected = {"x": "CPU:1", "a": "CPU:1", "i": "CPU:1", "b": "CPU:1", "sn": "CPU:0", "s": "CPU:1"}
    assert placed == expected


@pytest.mark.parametrize(
    ("extra", "inputs", "expected"),
    [
        # two consumers: more than one edge out
        (("b", "b2"), ("a",), "CPU:0"),
        # a control input: two edges in
        (("b",), ("a", "k"), "CPU:0"),
        # the consumer requests "/cpu:1", the input "/device:CPU:1": not the same string
        (("b_short",), ("a",), "CPU:0"),
        # no consumer: the sink requests nothing, the input does
        ((), ("a",), "CPU:0"),
    ],
)
def test_identity_heuristic_needs_one_edge_each_way_and_equal_requests(
    device_mgr: DeviceMgr, extra: tuple[str, ...], inputs: tuple[str, ...], expected: str
) -> None:
    consumers = {
        "b": _node("b", "Neg", FLOAT, ["i"], "/device:CPU:1"),
        "b2": _node("b2", "Neg", FLOAT, ["i"], "/device:CPU:1"),
        "b_short": _node("b", "Neg", FLOAT, ["i"], "/cpu:1"),
    }
    nodes = [consumers[name] for name in extra] + ([const("k")] if "k" in inputs else [])
    g = _identity_case(*nodes, identity_inputs=inputs)
    place(g, device_mgr)
    assert g["i"].assigned_device[-5:] == expected


def test_identity_without_consumers_follows_an_input_placed_by_colocation(
    device_mgr: DeviceMgr,
) -> None:
    a = _node("a", "Neg", FLOAT, ["c0"])
    a.attrs = {**a.attrs, "_class": [b"loc:@c0"]}
    g = Graph([const("c0", "/device:CPU:1"), a, _node("i", "Identity", FLOAT, ["a"])])
    assert _placed_in_order(g, device_mgr) == ["a:CPU:1", "i:CPU:1", "c0:CPU:1"]


def test_no_kernel_for_the_dtype_lists_the_registered_kernels(device_mgr: DeviceMgr) -> None:
    from aiotf.kernels import registry

    attrs = {"T": aiotf.int32}
    ints = {"dtype": aiotf.int32, "value": np.zeros((2,), np.int32)}
    g = Graph(
        [
            Node("a", lookup("Const"), ints),
            Node("b", lookup("Const"), ints),
            _node("r", "RealDiv", attrs, ["a", "b"], "/device:CPU:1"),
        ]
    )
    for soft in (False, True):
        message = _placement_error(g, device_mgr, soft)
        listing = "".join(
            f"  {k.describe()}\n" for k in registry.registered_kernels_for_op("RealDiv")
        )
        assert message == (
            "No OpKernel was registered to support Op 'RealDiv' used by {{node r}} with these "
            "attrs: [T=DT_INT32]\nRegistered devices: [CPU]\nRegistered kernels:\n"
            f"{listing}\n\t [[{{{{node r}}}}]]"
        )
        assert "device='CPU'; T in [" in listing and "INT32" not in listing
