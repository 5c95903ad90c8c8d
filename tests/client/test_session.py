"""The client Session end to end, on two CPU devices."""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors

CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


class Model(NamedTuple):
    graph: aiotf.Graph
    x: aiotf.Tensor
    w: aiotf.Tensor
    y: aiotf.Tensor
    z: aiotf.Tensor
    init: aiotf.Operation


def build_model() -> Model:
    """x (placeholder, CPU:0) @ w (CPU:1) on CPU:1, then + 1 on CPU:0."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, 3], name="x")
        with aiotf.device("/device:CPU:1"):
            w = aiotf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
            y = aiotf.matmul(x, w, name="y")
        z = aiotf.add(y, aiotf.constant(1.0, name="one"), name="z")
        init = aiotf.no_op(name="init")
    return Model(g, x, w, y, z, init)


X = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
W = np.arange(6, dtype=np.float32).reshape(3, 2)


@pytest.fixture
def model() -> Model:
    return build_model()


@pytest.fixture
async def sess(model: Model) -> AsyncIterator[aiotf.Session]:
    session = aiotf.Session(graph=model.graph, config=aiotf.ConfigProto(device_count={"CPU": 2}))
    yield session
    await session.close()


async def test_two_devices(sess: aiotf.Session) -> None:
    names = [d.name for d in sess.list_devices()]
    assert names == [
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/job:localhost/replica:0/task:0/device:CPU:1",
    ]


async def test_numeric_result_matches_numpy(sess: aiotf.Session, model: Model) -> None:
    z = await sess.run(model.z, feed_dict={model.x: X})
    assert isinstance(z, np.ndarray)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z, X @ W + 1)


async def test_partition_graphs_in_run_metadata(sess: aiotf.Session, model: Model) -> None:
    options = aiotf.RunOptions(output_partition_graphs=True)
    metadata = aiotf.RunMetadata()
    await sess.run(model.z, feed_dict={model.x: X}, options=options, run_metadata=metadata)
    assert len(metadata.partition_graphs) == 2
    devices = set()
    for graph_def in metadata.partition_graphs:
        ops = {n.op for n in graph_def.node}
        assert {"_Send", "_Recv"} <= ops
        (device,) = {n.device for n in graph_def.node}
        devices.add(device)
    assert CPU1 in devices
    without = aiotf.RunMetadata()
    await sess.run(model.z, feed_dict={model.x: X}, run_metadata=without)
    assert len(without.partition_graphs) == 0


async def test_executor_cache(
    sess: aiotf.Session, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    impl = sess._impl
    builds: list[tuple[Any, ...]] = []
    real_build = impl._build

    def counting_build(*key: Any) -> Any:
        builds.append(key)
        return real_build(*key)

    monkeypatch.setattr(impl, "_build", counting_build)
    await sess.run(model.z, feed_dict={model.x: X})
    await sess.run(model.z, feed_dict={model.x: X * 2})
    assert len(builds) == 1
    assert len(impl._executors) == 1
    await sess.run([model.y, model.z], feed_dict={model.x: X})
    await sess.run([model.z, model.y], feed_dict={model.x: X})  # same sorted signature
    assert len(builds) == 2
    await sess.run(model.y, feed_dict={model.x: X})
    assert len(builds) == 3


async def test_fetch_structures(sess: aiotf.Session, model: Model) -> None:
    feed = {model.x: X}
    y_np, z_np = X @ W, X @ W + 1

    assert (await sess.run(model.init, feed)) is None
    np.testing.assert_allclose(await sess.run("z:0", feed), z_np)
    np.testing.assert_allclose(await sess.run(model.graph.get_tensor_by_name("y:0"), feed), y_np)

    as_list = await sess.run([model.y, model.z, model.init], feed)
    assert isinstance(as_list, list) and len(as_list) == 3
    np.testing.assert_allclose(as_list[0], y_np)
    np.testing.assert_allclose(as_list[1], z_np)
    assert as_list[2] is None

    as_tuple = await sess.run((model.z, "y:0"), feed)
    assert type(as_tuple) is tuple
    np.testing.assert_allclose(as_tuple[1], y_np)

    as_dict = await sess.run({"zz": model.z, "op": model.init}, feed)
    assert set(as_dict) == {"zz", "op"} and as_dict["op"] is None
    np.testing.assert_allclose(as_dict["zz"], z_np)

    ordered = await sess.run(collections.OrderedDict([("b", model.y), ("a", model.z)]), feed)
    assert type(ordered) is collections.OrderedDict and list(ordered) == ["b", "a"]

    class Pair(NamedTuple):
        first: Any
        second: Any

    pair = await sess.run(Pair(model.z, [model.y, {"k": model.z}]), feed)
    assert type(pair) is Pair
    np.testing.assert_allclose(pair.first, z_np)
    np.testing.assert_allclose(pair.second[0], y_np)
    np.testing.assert_allclose(pair.second[1]["k"], z_np)

    dups = await sess.run([model.z, model.z, "z:0", (model.z,)], feed)
    for value in (dups[0], dups[1], dups[2], dups[3][0]):
        np.testing.assert_allclose(value, z_np)


async def test_duplicate_fetches_are_fetched_once(
    sess: aiotf.Session, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    real_run = sess._impl.run

    async def spy(feeds: Any, fetches: Any, *rest: Any, **kwargs: Any) -> Any:
        seen.append(list(fetches))
        return await real_run(feeds, fetches, *rest, **kwargs)

    monkeypatch.setattr(sess._impl, "run", spy)
    await sess.run([model.z, model.z, "z:0"], {model.x: X})
    assert seen == [["z:0"]]


async def test_feeds_by_tensor_and_by_name(sess: aiotf.Session, model: Model) -> None:
    by_tensor = await sess.run(model.y, feed_dict={model.x: X})
    by_name = await sess.run(model.y, feed_dict={"x:0": X})
    np.testing.assert_array_equal(by_tensor, by_name)


async def test_feeding_an_intermediate_tensor(sess: aiotf.Session, model: Model) -> None:
    fed_y = np.full((2, 2), 10.0, np.float32)
    z = await sess.run(model.z, feed_dict={model.y: fed_y})  # x need not be fed: y is cut off
    np.testing.assert_array_equal(z, fed_y + 1)
    y = await sess.run(model.y, feed_dict={model.y: fed_y})
    np.testing.assert_array_equal(y, fed_y)


async def test_float64_feed_is_cast(sess: aiotf.Session, model: Model) -> None:
    y = await sess.run(model.y, feed_dict={model.x: X.astype(np.float64)})
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, X @ W)
    listed = await sess.run(model.y, feed_dict={model.x: [[1, 0, 0]]})  # python ints, too
    np.testing.assert_array_equal(listed, W[:1])


async def test_shape_mismatch_is_rejected_before_running(
    sess: aiotf.Session, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    real_run = sess._impl.run

    async def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return await real_run(*args, **kwargs)

    monkeypatch.setattr(sess._impl, "run", spy)
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 4\) for Tensor x:0"):
        await sess.run(model.y, feed_dict={model.x: np.zeros((2, 4), np.float32)})
    assert calls == []
    np.testing.assert_allclose(await sess.run(model.y, {model.x: X}), X @ W)  # still works
    assert len(calls) == 1


async def test_unfed_placeholder(sess: aiotf.Session, model: Model) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="placeholder tensor 'x'") as info:
        await sess.run(model.z)
    assert info.value.op is model.x.op
    assert info.value.node_def.name == "x"
    np.testing.assert_allclose(await sess.run(model.z, {model.x: X}), X @ W + 1)


async def test_kernel_error_class_and_op() -> None:
    g = aiotf.Graph()
    with g.as_default():
        a = aiotf.placeholder(aiotf.float32, name="a")
        with aiotf.device("/device:CPU:1"):
            bad = aiotf.matmul(a, a, name="bad")
        good = aiotf.negative(a, name="good")
    async with aiotf.Session(graph=g, config=aiotf.ConfigProto(device_count={"CPU": 2})) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Matrix size-incompatible") as info:
            await sess.run(bad, {a: np.ones((2, 3), np.float32)})
        assert info.value.op is bad.op
        assert info.value.node_def.name == "bad"
        assert "{{node bad}}" in info.value.message
        # The session keeps working after the error, for this and for other signatures.
        np.testing.assert_allclose(await sess.run(bad, {a: np.eye(2, dtype=np.float32)}), np.eye(2))
        assert (await sess.run(good, {a: np.float32(2)})) == np.float32(-2)


async def test_ops_added_after_a_run(sess: aiotf.Session, model: Model) -> None:
    await sess.run(model.z, {model.x: X})
    with model.graph.as_default():
        with aiotf.device("/device:CPU:1"):
            later = aiotf.multiply(model.z, 2.0, name="later")
        later2 = aiotf.negative(later, name="later2")
    out = await sess.run([later, later2], {model.x: X})
    np.testing.assert_allclose(out[0], (X @ W + 1) * 2)
    np.testing.assert_allclose(out[1], -(X @ W + 1) * 2)


async def test_unknown_fetch(sess: aiotf.Session) -> None:
    with pytest.raises((KeyError, ValueError)):
        await sess.run("nope:0")


async def test_unknown_target() -> None:
    with pytest.raises(errors.NotFoundError, match="DIRECT_SESSION"):
        aiotf.Session("grpc://nowhere:1234", graph=aiotf.Graph())


async def test_closed_session(model: Model) -> None:
    sess = aiotf.Session(graph=model.graph)
    await sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(model.init)
    await sess.close()  # closing twice is fine


async def test_async_with_closes(model: Model) -> None:
    config = aiotf.ConfigProto(device_count={"CPU": 2})
    async with aiotf.Session(graph=model.graph, config=config) as sess:
        assert (await sess.run(model.init)) is None
        impl = sess._impl
    assert impl.closed
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(model.init)


async def test_timeout_option_does_not_affect_a_quick_step(
    sess: aiotf.Session, model: Model
) -> None:
    options = aiotf.RunOptions(timeout_in_ms=60_000)
    np.testing.assert_allclose(await sess.run(model.y, {model.x: X}, options=options), X @ W)


async def test_scalar_fetch_is_numpy_scalar() -> None:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(3.0, name="c")
        d = aiotf.constant([1, 2], name="d")
    async with aiotf.Session(graph=g) as sess:
        value = await sess.run(c)
        assert isinstance(value, np.float32) and value == 3.0
        arr = await sess.run(d)
        arr[0] = 7  # a fetched constant is a writable copy
        np.testing.assert_array_equal(await sess.run(d), [1, 2])


async def test_bad_fetches_and_feeds_are_rejected(sess: aiotf.Session, model: Model) -> None:
    other = aiotf.Graph()
    with other.as_default():
        stranger = aiotf.constant(1.0, name="stranger")
    with pytest.raises(ValueError, match="not an element of this graph"):
        await sess.run(stranger)
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
        await sess.run(model.z, {stranger: 1.0})
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
        await sess.run(model.z, {"nope:0": 1.0})
    with pytest.raises(TypeError, match="cannot be a aiotf.Tensor"):
        await sess.run(model.z, {model.x: model.y})
    with pytest.raises(TypeError):
        await sess.run(None)
    assert await sess.run([]) == []
    assert await sess.run({}) == {}
    np.testing.assert_allclose(await sess.run(model.z, {model.x: X}), X @ W + 1)


def bad_target_graph() -> tuple[aiotf.Graph, aiotf.Tensor, aiotf.Operation, aiotf.Operation]:
    g = aiotf.Graph()
    with g.as_default():
        a = aiotf.placeholder(aiotf.float32, name="a")
        bad = aiotf.matmul(a, a, name="bad")
        unfed = aiotf.placeholder(aiotf.float32, name="unfed")
    return g, a, bad.op, unfed.op


async def test_target_ops_run_without_graph_optimizations() -> None:
    g, a, bad, unfed = bad_target_graph()
    config = aiotf.ConfigProto(
        graph_options=aiotf.GraphOptions(
            optimizer_options=aiotf.OptimizerOptions(opt_level=aiotf.OptimizerOptions.L0)
        )
    )
    async with aiotf.Session(graph=g, config=config) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Matrix size-incompatible"):
            await sess.run(bad, {a: np.ones((2, 3), np.float32)})
        with pytest.raises(errors.InvalidArgumentError, match="placeholder tensor 'unfed'"):
            await sess.run(unfed)


async def test_target_ops_run_with_default_optimizations() -> None:
    g, a, bad, unfed = bad_target_graph()
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Matrix size-incompatible"):
            await sess.run(bad, {a: np.ones((2, 3), np.float32)})
        with pytest.raises(errors.InvalidArgumentError, match="placeholder tensor 'unfed'"):
            await sess.run(unfed)
