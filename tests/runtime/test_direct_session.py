"""DirectSession end to end on two CPU devices, driven with NodeDefs as the client drives it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.runtime.direct_session import DirectSession

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
CPU1 = f"{TASK}/device:CPU:1"
X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)


def two_cpus(**kwargs: Any) -> Any:
    return aiotf.ConfigProto(device_count={"CPU": 2}, **kwargs)


def node_defs(g: aiotf.Graph) -> list[Any]:
    return [op.node_def for op in g.get_operations()]


def neg_def(name: str, src: str, device: str = "") -> Any:
    node_def = aiotf.NodeDef(name=name, op="Neg", input=[src], device=device)
    node_def.attr["T"].type = aiotf.float32.as_datatype_enum
    return node_def


def build_graph() -> aiotf.Graph:
    """x (fed) -> m = x @ w on CPU:1 -> out = m - x on CPU:0; side = -w on CPU:1; init: NoOp."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[2, 2], name="x")
        with aiotf.device("/device:CPU:1"):
            w = aiotf.constant(np.array([[0.0, 1.0], [1.0, 0.0]], np.float32), name="w")
            m = aiotf.matmul(x, w, name="m")
            aiotf.negative(w, name="side")
        aiotf.subtract(m, x, name="out")
        aiotf.no_op(name="init")
    return g


@pytest.fixture
def session() -> Iterator[DirectSession]:
    sess = DirectSession(two_cpus())
    sess.extend(node_defs(build_graph()))
    yield sess
    sess.close()


def expected_out(x: np.ndarray) -> np.ndarray:
    return x @ np.array([[0.0, 1.0], [1.0, 0.0]], np.float32) - x


def test_devices_and_placement(session: DirectSession) -> None:
    assert [d.name for d in session.list_devices()] == [CPU0, CPU1]
    placed = {n.name: n.assigned_device for n in session.graph}
    assert placed == {
        "x": CPU0,
        "w": CPU1,
        "m": CPU1,
        "side": CPU1,
        "out": CPU0,
        "init": CPU0,
    }


async def test_run_across_two_devices(session: DirectSession) -> None:
    out, m = await session.run({"x:0": X}, ["out:0", "m:0"])
    np.testing.assert_allclose(out, expected_out(X))
    np.testing.assert_allclose(m, X[:, ::-1])


async def test_fetch_order_is_the_callers(session: DirectSession) -> None:
    m, out = await session.run({"x:0": X}, ["m:0", "out:0"])
    np.testing.assert_allclose(m, X[:, ::-1])
    np.testing.assert_allclose(out, expected_out(X))
    out2, m2 = await session.run({"x:0": X}, ["out:0", "m:0"])
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_array_equal(m2, m)


async def test_targets_only(session: DirectSession) -> None:
    assert await session.run({}, [], ["init"]) == []


async def test_partition_graphs(session: DirectSession) -> None:
    options = aiotf.RunOptions(output_partition_graphs=True)
    metadata = aiotf.RunMetadata()
    await session.run({"x:0": X}, ["out:0"], run_options=options, run_metadata=metadata)
    assert len(metadata.partition_graphs) == 2
    by_device = {}
    for graph_def in metadata.partition_graphs:
        (device,) = {n.device for n in graph_def.node}
        by_device[device] = {n.name: n.op for n in graph_def.node}
    assert set(by_device) == {CPU0, CPU1}
    for ops in by_device.values():
        assert {"_Send", "_Recv"} <= set(ops.values())
    assert by_device[CPU1]["m"] == "MatMul"
    assert "side" not in by_device[CPU1]  # pruned: nothing needs it
    assert "_Retval" in by_device[CPU0].values() and "_Arg" in by_device[CPU0].values()


async def test_executor_cache(session: DirectSession, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = []
    real_build = session._build

    def counting_build(*key: Any) -> Any:
        builds.append(key)
        return real_build(*key)

    monkeypatch.setattr(session, "_build", counting_build)
    await session.run({"x:0": X}, ["out:0", "m:0"])
    assert builds == [(("x:0",), ("m:0", "out:0"), ())]  # built under the sorted key
    assert set(session._executors) == {
        (("x:0",), ("out:0", "m:0"), ()),
        (("x:0",), ("m:0", "out:0"), ()),
    }
    await session.run({"x:0": X * 2}, ["out:0", "m:0"])
    await session.run({"x:0": X}, ["m:0", "out:0"])
    assert len(builds) == 1
    bundle = session.executors_for(("x:0",), ("out:0", "m:0"), ())
    assert bundle is session.executors_for(("x:0",), ("m:0", "out:0"), ())
    assert len(bundle.executors) == 2
    await session.run({}, ["side:0"])
    assert len(builds) == 2


async def test_unfed_placeholder_then_recovers(session: DirectSession) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="placeholder tensor 'x'") as info:
        await session.run({}, ["out:0"])
    assert info.value.node_def.name == "x"
    (out,) = await session.run({"x:0": X}, ["out:0"])
    np.testing.assert_allclose(out, expected_out(X))


async def test_kernel_error_on_other_device_cancels_the_step(session: DirectSession) -> None:
    bad = np.ones((2, 3), np.float32)  # m = x @ w fails on CPU:1; CPU:0 waits on its Recv
    with pytest.raises(errors.InvalidArgumentError, match="Matrix size-incompatible") as info:
        await session.run({"x:0": bad}, ["out:0"])
    assert info.value.node_def.name == "m"
    assert "{{node m}}" in info.value.message
    (out,) = await session.run({"x:0": X}, ["out:0"])
    np.testing.assert_allclose(out, expected_out(X))


async def test_extend_adds_nodes_after_a_run(session: DirectSession) -> None:
    await session.run({"x:0": X}, ["out:0"])
    session.extend([neg_def("later", "out", "/device:CPU:1")])
    assert session.graph["later"].assigned_device == CPU1
    (value,) = await session.run({"x:0": X}, ["later:0"])
    np.testing.assert_allclose(value, -expected_out(X))


def test_extend_is_all_or_nothing(session: DirectSession) -> None:
    good = neg_def("good", "out")
    bad = neg_def("bad", "missing")
    with pytest.raises(errors.InvalidArgumentError, match=r"'bad'.*'missing'"):
        session.extend([good, bad])
    assert "good" not in session.graph and "bad" not in session.graph
    with pytest.raises(errors.InvalidArgumentError, match="'out' is not unique"):
        session.extend([neg_def("out", "x")])
    unknown = aiotf.NodeDef(name="strange", op="NoSuchOp")
    with pytest.raises(errors.NotFoundError, match="NoSuchOp"):
        session.extend([unknown])
    assert len(session.graph) == 6


def test_impossible_device_and_soft_placement() -> None:
    g = aiotf.Graph()
    with g.as_default(), aiotf.device("/device:CPU:5"):
        aiotf.constant(1.0, name="far")
    strict = DirectSession(two_cpus())
    with pytest.raises(errors.InvalidArgumentError, match=r"far.*CPU:5"):
        strict.extend(node_defs(g))
    strict.close()
    soft = DirectSession(two_cpus(allow_soft_placement=True))
    soft.extend(node_defs(g))
    assert soft.graph["far"].assigned_device == CPU0
    soft.close()


def blocked_recv_graph() -> aiotf.Graph:
    """A step that never finishes: a _Recv whose _Send does not exist."""
    g = aiotf.Graph()
    with g.as_default():
        g.create_op(
            "_Recv",
            [],
            {
                "tensor_type": aiotf.float32,
                "tensor_name": b"from_nobody",
                "send_device": CPU1.encode(),
                "send_device_incarnation": 1,
                "recv_device": CPU0.encode(),
            },
            name="waits_forever",
        )
        aiotf.constant(1.0, name="quick")
    return g


@pytest.mark.parametrize("where", ["run_options", "config"])
async def test_timeout_on_a_step_that_never_finishes(where: str) -> None:
    config = two_cpus(operation_timeout_in_ms=50) if where == "config" else two_cpus()
    options = aiotf.RunOptions(timeout_in_ms=50) if where == "run_options" else None
    session = DirectSession(config)
    session.extend(node_defs(blocked_recv_graph()))
    with pytest.raises(errors.DeadlineExceededError, match="^Timed out waiting for notification$"):
        await session.run({}, ["waits_forever:0"], run_options=options)
    assert await session.run({}, ["quick:0"], run_options=options) == [np.float32(1.0)]
    session.close()


async def test_send_kernels_are_not_shared_between_signatures() -> None:
    """Two builds both name a _Send of ``a`` ``a/_0``, to different devices; each must use its own."""
    g = aiotf.Graph()
    with g.as_default():
        a = aiotf.constant(np.float32(2.0), name="a")
        with aiotf.device("/device:CPU:1"):
            aiotf.negative(a, name="p")
        with aiotf.device("/device:CPU:2"):
            aiotf.negative(a, name="q")
    session = DirectSession(aiotf.ConfigProto(device_count={"CPU": 3}))
    session.extend(node_defs(g))
    options = aiotf.RunOptions(timeout_in_ms=5000)  # turns a hang into a failure
    assert await session.run({}, ["p:0"], run_options=options) == [np.float32(-2.0)]
    assert await session.run({}, ["q:0"], run_options=options) == [np.float32(-2.0)]
    session.close()


async def test_closed_session(session: DirectSession) -> None:
    session.close()
    assert session.closed
    with pytest.raises(RuntimeError, match="closed Session"):
        await session.run({"x:0": X}, ["out:0"])
    with pytest.raises(RuntimeError, match="closed Session"):
        session.extend([])
    session.close()


async def test_place_pruned_graph_places_only_what_a_call_runs() -> None:
    g = build_graph()
    unplaceable = neg_def("on_gpu", "w", device="/device:GPU:0")
    with pytest.raises(errors.InvalidArgumentError, match="on_gpu"):
        DirectSession(two_cpus()).extend([*node_defs(g), unplaceable])

    options = aiotf.GraphOptions(place_pruned_graph=True)
    sess = DirectSession(two_cpus(graph_options=options))
    try:
        sess.extend([*node_defs(g), unplaceable])
        assert all(not n.assigned_device for n in sess.graph)  # nothing placed up front
        (out,) = await sess.run({"x:0": X}, ["out:0"], [])
        np.testing.assert_allclose(out, expected_out(X))
        with pytest.raises(errors.InvalidArgumentError, match="on_gpu"):
            await sess.run({}, ["on_gpu:0"], [])
        (out,) = await sess.run({"x:0": X}, ["out:0"], [])  # the session still works
        np.testing.assert_allclose(out, expected_out(X))
    finally:
        sess.close()


async def test_place_pruned_graph_keeps_stateful_nodes_where_they_were_placed() -> None:
    g = aiotf.Graph()
    with g.as_default():
        with aiotf.device("/device:CPU:1"):
            v = aiotf.Variable(np.float32(1.0), name="v")
        doubled = v * 2.0
    options = aiotf.GraphOptions(place_pruned_graph=True)
    sess = DirectSession(two_cpus(graph_options=options))
    try:
        sess.extend(node_defs(g))
        await sess.run({}, [], [v.initializer.name])
        assert sess.graph["v"].assigned_device == CPU1  # stateful: recorded in the full graph
        assert not sess.graph[doubled.op.name].assigned_device  # stateless: placed per call
        (value,) = await sess.run({}, [doubled.name], [])
        assert value == 2.0
    finally:
        sess.close()


# -- extension re-places the graph; log_device_placement: recorded from TensorFlow 2.21 -------------


def _unoptimized_two_cpus(**kwargs: Any) -> Any:
    options = aiotf.GraphOptions(optimizer_options=aiotf.OptimizerOptions(opt_level=-1))
    return two_cpus(graph_options=options, **kwargs)


async def _placed_partitions(session: DirectSession, fetch: str) -> list[tuple[str, str, str]]:
    metadata = aiotf.RunMetadata()
    options = aiotf.RunOptions(output_partition_graphs=True)
    await session.run({}, [fetch], run_options=options, run_metadata=metadata)
    return sorted((n.name, n.op, n.device[-5:]) for g in metadata.partition_graphs for n in g.node)


async def test_extend_places_stateless_nodes_again() -> None:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(1.0, name="c")
    session = DirectSession(_unoptimized_two_cpus())
    try:
        session.extend(node_defs(g))
        assert await _placed_partitions(session, "c:0") == [
            ("_retval_c_0_0", "_Retval", "CPU:0"),
            ("c", "Const", "CPU:0"),
        ]
        with g.as_default(), aiotf.device("/cpu:1"):
            aiotf.add(c, 1.0, name="y")
        session.extend([op.node_def for op in g.get_operations() if op.name != "c"])
        assert session.graph["c"].assigned_device == CPU1  # the generator joins its consumer
        assert await _placed_partitions(session, "y:0") == [
            ("_retval_y_0_0", "_Retval", "CPU:0"),
            ("c", "Const", "CPU:1"),
            ("y", "AddV2", "CPU:1"),
            ("y/_0", "_Send", "CPU:1"),
            ("y/_1", "_Recv", "CPU:0"),
            ("y/y", "Const", "CPU:1"),
        ]
        # Executors built before the extension stay as they were built.
        assert await _placed_partitions(session, "c:0") == [
            ("_retval_c_0_0", "_Retval", "CPU:0"),
            ("c", "Const", "CPU:0"),
        ]
    finally:
        session.close()


async def test_extend_keeps_stateful_nodes_where_they_are() -> None:
    g = aiotf.Graph()
    with g.as_default():
        v = aiotf.Variable(np.float32(1.0), name="v")
    session = DirectSession(_unoptimized_two_cpus())
    try:
        session.extend(node_defs(g))
        await session.run({}, [], [v.initializer.name])
        with g.as_default(), aiotf.device("/cpu:1"):
            aiotf.assign_add(v, 1.0, name="inc")
        seen = {op.name for op in g.get_operations()} - {"inc", "inc/value"}
        session.extend([op.node_def for op in g.get_operations() if op.name not in seen])
        # The variable stays on CPU:0; its update gives way to it, its generator does not.
        assert await _placed_partitions(session, "inc:0") == [
            ("_retval_inc_0_0", "_Retval", "CPU:0"),
            ("inc", "AssignAdd", "CPU:0"),
            ("inc/value", "Const", "CPU:1"),
            ("inc/value/_0", "_Send", "CPU:1"),
            ("inc/value/_1", "_Recv", "CPU:0"),
            ("v", "VariableV2", "CPU:0"),
        ]
    finally:
        session.close()


@pytest.mark.parametrize(
    ("pruned", "expected"),
    [
        (
            True,
            [
                "y: (Neg): CPU:0",
                "_retval_y_0_0: (_Retval): CPU:0",
                "c: (Const): CPU:0",
                "-- run y",
                "_retval_c_0_0: (_Retval): CPU:0",
                "c: (Const): CPU:0",
                "-- run c",
                "y: (Neg): CPU:0",
                "z: (Neg): CPU:1",
                "_retval_z_0_0: (_Retval): CPU:0",
                "c: (Const): CPU:0",
                "-- run z",
            ],
        ),
        (
            False,
            [
                "y: (Neg): CPU:0",
                "c: (Const): CPU:0",
                "-- run y",
                "-- run c",
                "y: (Neg): CPU:0",
                "z: (Neg): CPU:1",
                "c: (Const): CPU:0",
                "-- run z",
            ],
        ),
    ],
)
async def test_log_device_placement_logs_each_placement_made(
    capsys: pytest.CaptureFixture[str], pruned: bool, expected: list[str]
) -> None:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(1.0, name="c")
        aiotf.negative(c, name="y")
    options = aiotf.GraphOptions(place_pruned_graph=pruned)
    session = DirectSession(two_cpus(log_device_placement=True, graph_options=options))
    try:
        session.extend(node_defs(g))
        await session.run({}, ["y:0"])
        print("-- run y")
        await session.run({}, ["c:0"])
        print("-- run c")
        session.extend([neg_def("z", "y", "/cpu:1")])
        await session.run({}, ["z:0"])
        print("-- run z")
    finally:
        session.close()
    lines = capsys.readouterr().out.splitlines()
    assert [line.replace(f"{TASK}/device:", "") for line in lines] == expected
