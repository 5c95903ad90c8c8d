"""Feed/fetch rewrite and pruning (``aiotf.runtime.subgraph``)."""

from __future__ import annotations

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node, node_from_def
from aiotf.runtime.subgraph import prune, rewrite

CLIENT = "/job:localhost/replica:0/task:0/device:CPU:0"


def runtime_graph(g: aiotf.Graph) -> Graph:
    return Graph(node_from_def(op.node_def) for op in g.get_operations())


@pytest.fixture
def graph() -> Graph:
    """a, b -> c = a + b -> d = c * c;  e = -a (unused);  t: NoOp after x (control edge)."""
    g = aiotf.Graph()
    with g.as_default():
        a = aiotf.constant(np.float32(1.0), name="a")
        b = aiotf.constant(np.float32(2.0), name="b")
        c = aiotf.add(a, b, name="c")
        aiotf.multiply(c, c, name="d")
        aiotf.negative(a, name="e")
        x = aiotf.constant(np.float32(3.0), name="x")
        with aiotf.control_dependencies([x]):
            aiotf.no_op(name="t")
        y = aiotf.constant(np.float32(4.0), name="y")
        with aiotf.control_dependencies([y]):
            aiotf.identity(a, name="f")
    return runtime_graph(g)


def names(g: Graph) -> set[str]:
    return {n.name for n in g}


def test_fetch_keeps_only_its_inputs(graph: Graph) -> None:
    out = rewrite(graph, [], ["d:0"], [], CLIENT).graph
    assert names(out) == {"a", "b", "c", "d", "_retval_d_0_0"}
    assert len(graph) == 9  # the input graph is not modified


def test_target_keeps_control_inputs(graph: Graph) -> None:
    out = rewrite(graph, [], [], ["t"], CLIENT).graph
    assert names(out) == {"t", "x"}


def test_fetch_follows_control_edges(graph: Graph) -> None:
    out = rewrite(graph, [], ["f:0"], [], CLIENT).graph
    assert names(out) == {"a", "y", "f", "_retval_f_0_0"}
    assert out["f"].control_inputs == ["y"]


def test_fetches_and_targets_together(graph: Graph) -> None:
    out = rewrite(graph, [], ["e:0"], ["t"], CLIENT).graph
    assert names(out) == {"a", "e", "_retval_e_0_0", "t", "x"}


def test_retval_nodes(graph: Graph) -> None:
    out = rewrite(graph, [], ["d:0", "c:0"], [], CLIENT).graph
    first, second = out["_retval_d_0_0"], out["_retval_c_0_1"]
    assert first.op == "_Retval"
    assert first.attrs["index"] == 0
    assert first.attrs["T"] is aiotf.float32
    assert first.inputs == [("d", 0)]
    assert second.attrs["index"] == 1
    assert second.inputs == [("c", 0)]
    assert first.assigned_device == CLIENT
    assert first.requested_device == ""  # assigned, never requested: as TF's rewrite


def test_fed_tensor_cuts_off_its_producers(graph: Graph) -> None:
    out = rewrite(graph, ["c:0"], ["d:0"], [], CLIENT).graph
    assert names(out) == {"_arg_c_0_0", "d", "_retval_d_0_0"}
    arg = out["_arg_c_0_0"]
    assert arg.op == "_Arg"
    assert arg.attrs["index"] == 0
    assert arg.attrs["T"] is aiotf.float32
    assert arg.inputs == []
    assert arg.assigned_device == CLIENT
    assert out["d"].inputs == [("_arg_c_0_0", 0), ("_arg_c_0_0", 0)]


def test_feed_indices_follow_feed_order(graph: Graph) -> None:
    out = rewrite(graph, ["b:0", "a:0"], ["c:0"], [], CLIENT).graph
    assert out["_arg_b_0_0"].attrs["index"] == 0
    assert out["_arg_a_0_1"].attrs["index"] == 1
    assert out["c"].inputs == [("_arg_a_0_1", 0), ("_arg_b_0_0", 0)]
    assert "a" not in out and "b" not in out


def test_feed_not_needed_is_pruned(graph: Graph) -> None:
    out = rewrite(graph, ["x:0"], ["c:0"], [], CLIENT).graph
    assert "_arg_x_0_0" not in out
    assert names(out) == {"a", "b", "c", "_retval_c_0_0"}


def test_fetching_a_fed_tensor_is_an_error(graph: Graph) -> None:
    # TensorFlow's words; the client never asks: it answers a fed fetch from the feed.
    with pytest.raises(errors.InvalidArgumentError, match=r"^c:0 is both fed and fetched\.$"):
        rewrite(graph, ["c:0"], ["c:0"], [], CLIENT)


def _exactly(text: str) -> str:
    import re

    return f"^{re.escape(text)}$"


# The texts are TensorFlow's subgraph.cc (RewriteGraphForExecution): its C API and Python client
# check endpoints before the session sees them, so these are what its DirectSession::Run says.


def test_fetch_of_missing_node(graph: Graph) -> None:
    with pytest.raises(errors.NotFoundError, match=_exactly("FetchOutputs node nope:0: not found")):
        rewrite(graph, [], ["nope:0"], [], CLIENT)


def test_fetch_output_index_out_of_range(graph: Graph) -> None:
    message = "FetchOutputs c:3: output index too large, must be < 1"
    with pytest.raises(errors.InvalidArgumentError, match=_exactly(message)):
        rewrite(graph, [], ["c:3"], [], CLIENT)


def test_fetch_of_an_op_without_outputs(graph: Graph) -> None:
    message = (
        "Tried to fetch data for 't:0', which produces no output.  To run to a node but not fetch "
        "any data, pass 't:0' as an argument to the 'target_node_names' argument of the "
        "Session::Run API."
    )
    with pytest.raises(errors.InvalidArgumentError, match=_exactly(message)):
        rewrite(graph, [], ["t:0"], [], CLIENT)


def test_feed_of_missing_node(graph: Graph) -> None:
    message = "FeedInputs: unable to find feed output nope:0"
    with pytest.raises(errors.NotFoundError, match=_exactly(message)):
        rewrite(graph, ["nope:0"], ["c:0"], [], CLIENT)


def test_feed_output_index_out_of_range(graph: Graph) -> None:
    message = "FeedInputs: a:1 should have output index < 1"
    with pytest.raises(errors.InvalidArgumentError, match=_exactly(message)):
        rewrite(graph, ["a:1"], ["c:0"], [], CLIENT)


def test_feeds_are_checked_before_fetches(graph: Graph) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="^FeedInputs"):
        rewrite(graph, ["a:1"], ["c:3"], [], CLIENT)


def test_missing_targets_are_all_named(graph: Graph) -> None:
    message = "PruneForTargets: Some target nodes not found: nope gone "
    with pytest.raises(errors.NotFoundError, match=_exactly(message)):
        rewrite(graph, [], [], ["nope", "t", "gone"], CLIENT)


def test_feeding_the_same_endpoint_twice(graph: Graph) -> None:
    with pytest.raises(errors.InvalidArgumentError, match=r'^Endpoint "a:0" fed more than once\.$'):
        rewrite(graph, ["a:0", "a:0"], ["c:0"], [], CLIENT)


def test_generated_names_avoid_existing_nodes() -> None:
    const = lookup("Const")
    value = np.zeros((), np.float32)
    g = Graph(
        [
            Node("a", const, {"value": value, "dtype": aiotf.float32}),
            Node("_retval_a_0_0", const, {"value": value, "dtype": aiotf.float32}),
        ]
    )
    out = rewrite(g, [], ["a:0"], [], CLIENT).graph
    assert names(out) == {"a", "_retval_a_0_0_1"}
    assert out["_retval_a_0_0_1"].inputs == [("a", 0)]


def test_prune_by_hand() -> None:
    const, noop = lookup("Const"), lookup("NoOp")
    value = np.zeros((), np.float32)
    g = Graph(
        [
            Node("k", const, {"value": value, "dtype": aiotf.float32}),
            Node("orphan", const, {"value": value, "dtype": aiotf.float32}),
            Node("n1", noop, {}, control_inputs=["k"]),
            Node("n2", noop, {}, control_inputs=["n1"]),
        ]
    )
    prune(g, ["n2"])
    assert names(g) == {"k", "n1", "n2"}


# -- the rendezvous convention (partial runs) ---------------------------------------------------

INCARNATION = 0x1234


def rendezvous_rewrite(
    graph: Graph, feeds: list[str], fetches: list[str], targets: list[str] | None = None
) -> Graph:
    return rewrite(
        graph,
        feeds,
        fetches,
        targets or [],
        CLIENT,
        use_function_convention=False,
        client_incarnation=INCARNATION,
    ).graph


def test_partial_run_feeds_are_client_terminated_recvs(graph: Graph) -> None:
    out = rendezvous_rewrite(graph, ["c:0"], ["d:0"])
    assert names(out) == {"_recv_c_0", "d", "_send_d_0"}
    recv = out["_recv_c_0"]
    assert recv.op == "_Recv"
    assert recv.inputs == []
    assert recv.attrs == {
        "tensor_type": aiotf.float32,
        "tensor_name": b"c:0",
        "send_device": CLIENT.encode(),
        "send_device_incarnation": INCARNATION,
        "recv_device": CLIENT.encode(),
        "client_terminated": True,
    }
    assert recv.assigned_device == CLIENT
    assert out["d"].inputs == [("_recv_c_0", 0), ("_recv_c_0", 0)]


def test_partial_run_fetches_are_client_terminated_sends(graph: Graph) -> None:
    out = rendezvous_rewrite(graph, [], ["d:0", "c:0"])
    send = out["_send_d_0"]
    assert send.op == "_Send"
    assert send.inputs == [("d", 0)]
    assert send.attrs == {
        "T": aiotf.float32,
        "tensor_name": b"d:0",
        "send_device": CLIENT.encode(),
        "send_device_incarnation": INCARNATION,
        "recv_device": CLIENT.encode(),
        "client_terminated": True,
    }
    assert send.assigned_device == CLIENT
    assert out["_send_c_0"].inputs == [("c", 0)]
    assert not any(n.op in ("_Arg", "_Retval") for n in out)


def test_partial_run_rewrite_prunes_and_keeps_targets(graph: Graph) -> None:
    out = rendezvous_rewrite(graph, ["a:0", "x:0"], ["e:0"], ["t"])
    # t keeps its control edge on x (only a fed Placeholder's move), so x's recv goes unused
    assert names(out) == {"_recv_a_0", "e", "_send_e_0", "t", "x"}
    assert out["e"].inputs == [("_recv_a_0", 0)]


def test_partial_run_rewrite_errors(graph: Graph) -> None:
    with pytest.raises(errors.InvalidArgumentError, match=r"^c:0 is both fed and fetched\.$"):
        rendezvous_rewrite(graph, ["c:0"], ["c:0"])
    with pytest.raises(errors.InvalidArgumentError, match=r'^Endpoint "a:0" fed more than once'):
        rendezvous_rewrite(graph, ["a:0", "a:0"], ["c:0"])
    with pytest.raises(errors.NotFoundError, match="unable to find feed output nope:0"):
        rendezvous_rewrite(graph, ["nope:0"], ["c:0"])


def test_a_fed_placeholder_hands_its_control_edges_to_the_feed() -> None:
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.float32, name="p")
        with aiotf.control_dependencies([p]):
            aiotf.constant(np.float32(1.0), name="k")
    full = runtime_graph(g)
    out = rewrite(full, ["p:0"], ["k:0"], [], CLIENT).graph
    assert "p" not in out  # else its kernel would ask for a feed it already has
    assert out["k"].control_inputs == ["_arg_p_0_0"]
    out = rendezvous_rewrite(full, ["p:0"], ["k:0"])
    assert out["k"].control_inputs == ["_recv_p_0"]


# -- TensorFlow's edge ids (they name the partitions' _Send/_Recv pairs) ---------------------------


def test_constructed_edges_follow_tensorflows_graph_constructor() -> None:
    from aiotf.runtime.subgraph import SINK, SOURCE, constructed_edges

    g = aiotf.Graph()
    with g.as_default():
        z = aiotf.constant(np.float32(1.0), name="z")
        m = aiotf.constant(np.float32(2.0), name="m")
        a = aiotf.constant(np.float32(3.0), name="a")
        with aiotf.control_dependencies([z, m]):
            b = aiotf.negative(a, name="b")
        aiotf.add(b, b, name="c")
    full = runtime_graph(g)
    full["b"].control_inputs = ["z", "m", "z"]  # as an imported GraphDef may list them
    built = constructed_edges(full)  # TF sorts them by name and drops repeats
    assert built.nodes == ["z", "m", "a", "b", "c"]
    assert built.edges == [
        ("a", 0, "b", 0),
        ("m", -1, "b", -1),
        ("z", -1, "b", -1),
        ("b", 0, "c", 0),
        ("b", 0, "c", 1),
        (SOURCE, -1, "z", -1),
        (SOURCE, -1, "m", -1),
        (SOURCE, -1, "a", -1),
        ("c", -1, SINK, -1),
    ]


def test_constructed_edges_add_loop_back_edges_last() -> None:
    from aiotf.runtime.subgraph import constructed_edges

    g = aiotf.Graph()
    with g.as_default():
        aiotf.while_loop(lambda i: i < 3, lambda i: i + 1, [aiotf.constant(0, name="i0")])
    built = constructed_edges(runtime_graph(g))
    back = [e for e in built.edges if e[0].endswith("NextIteration")]
    assert len(back) == 1 and back[0][2].endswith("Merge")
    real = [e for e in built.edges if not e[0].startswith("_") and not e[2].startswith("_")]
    assert real[-1] == back[0]  # made after every node's own edges, before the sink links
    assert built.nodes.index("while/Merge") < built.nodes.index("while/NextIteration")


def test_client_edge_ids_number_the_rewritten_graph_densely_from_three() -> None:
    from aiotf.runtime.subgraph import SINK, SOURCE, client_edge_ids, constructed_edges, rewrite

    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        k = aiotf.constant(np.float32(3.0), name="k")
        y = aiotf.add(x, k, name="y")
        with aiotf.control_dependencies([x]):
            t = aiotf.no_op(name="t")
        aiotf.negative(y, name="unused")
    full = runtime_graph(g)
    client = rewrite(full, ["x:0"], ["y:0"], [t.name], CLIENT)
    ids = client_edge_ids(full, constructed_edges(full), client)
    # The full graph's surviving edges first (x's are replaced by the feed's), then the rewrite's
    # (the fed Placeholder's control edge moves to the feed node, in the order x's edges were
    # made), then the sink link pruning left y without.
    assert sorted(ids, key=ids.__getitem__) == [
        ("k", 0, "y", 1),
        (SOURCE, -1, "k", -1),
        ("t", -1, SINK, -1),
        (SOURCE, -1, "_arg_x_0_0", -1),
        ("_arg_x_0_0", 0, "y", 0),
        ("_arg_x_0_0", -1, "t", -1),
        ("y", 0, "_retval_y_0_0", 0),
        ("_retval_y_0_0", -1, SINK, -1),
    ]
    assert sorted(ids.values()) == list(range(3, 11))
