"""Session semantics a TensorFlow 1.x user relies on, each checked against TensorFlow 2.21's
answer (recorded with ``tf.compat.v1`` in graph mode): fetch and feed corner cases, ``run([])``,
empty and finalized graphs, closed sessions, default sessions (``as_default``, ``with``,
``InteractiveSession``, ``eval``/``run``), the thread options of ``ConfigProto``, and that no task
or thread outlives ``close()``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import re
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.framework.op_def_registry import register_op
from aiotf.kernels.registry import register_kernel

STALL_S = 30.0  # generous: only a hang reaches it


class Model(NamedTuple):
    graph: aiotf.Graph
    x: aiotf.Tensor
    y: aiotf.Tensor
    init: aiotf.Operation
    v: aiotf.Variable
    bump: aiotf.Tensor


def build() -> Model:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[2], name="x")
        y = aiotf.add(x, 1.0, name="y")
        v = aiotf.Variable(1.0, name="v")
        bump = aiotf.assign_add(v, 1.0, name="bump")
        init = aiotf.global_variables_initializer()
    return Model(g, x, y, init, v, bump)


@pytest.fixture
def m() -> Model:
    return build()


@pytest.fixture
async def sess(m: Model) -> AsyncIterator[aiotf.Session]:
    s = aiotf.Session(graph=m.graph)
    yield s
    await s.close()


@pytest.fixture(autouse=True)
def no_interactive_session_left() -> Iterator[None]:
    """Every test closes the InteractiveSessions it opens (they are per thread, not per test)."""
    yield
    assert aiotf.get_default_session() is None


# -- fetches ------------------------------------------------------------------------------------


async def test_op_name_strings_are_run_as_targets(sess: aiotf.Session, m: Model) -> None:
    assert await sess.run(m.init.name) is None
    out = await sess.run([m.init.name, "y:0"], {m.x: [1, 2]})
    assert out[0] is None
    np.testing.assert_array_equal(out[1], [2, 3])


async def test_bad_fetches_are_tensorflows_errors(sess: aiotf.Session) -> None:
    with pytest.raises(
        TypeError,
        match=r'`fetch` = 3 has invalid type "int" must be a string or Tensor',  # no comma, as TF
    ):
        await sess.run(3)
    with pytest.raises(TypeError, match=r'`fetch` = 3.5 has invalid type "float"'):
        await sess.run([3.5])
    with pytest.raises(TypeError, match=r'`fetch` = None has invalid type "NoneType"'):
        await sess.run({"a": None})
    with pytest.raises(ValueError, match=r"The operation, 'nope', does not exist in the graph"):
        await sess.run("nope:0")
    with pytest.raises(
        ValueError, match=r"The name 'nope' refers to an Operation not in the graph"
    ):
        await sess.run("nope")
    with pytest.raises(ValueError, match=r"The operation, 'y', exists but only has 1 outputs"):
        await sess.run("y:5")


async def test_a_defaultdict_comes_back_with_its_default_factory(
    sess: aiotf.Session, m: Model
) -> None:
    fetched = await sess.run(collections.defaultdict(list, {"a": m.y}), {m.x: [1, 2]})
    assert type(fetched) is collections.defaultdict and fetched.default_factory is list
    np.testing.assert_array_equal(fetched["a"], [2, 3])
    assert fetched["missing"] == []


async def test_attrs_classes_come_back_as_the_same_class(sess: aiotf.Session, m: Model) -> None:
    attrs = pytest.importorskip("attrs")

    @attrs.define
    class Pair:
        value: Any
        op: Any

    make: Any = Pair
    fetched = await sess.run(make(value=[m.y, m.y], op=m.init), {m.x: [1, 2]})
    assert type(fetched) is Pair and fetched.op is None
    np.testing.assert_array_equal(fetched.value[0], [2, 3])
    np.testing.assert_array_equal(fetched.value[1], [2, 3])


async def test_attrs_fields_are_rebuilt_positionally(sess: aiotf.Session, m: Model) -> None:
    """As TensorFlow: a private field's ``__init__`` argument has no underscore."""
    attrs = pytest.importorskip("attrs")

    @attrs.define
    class Private:
        _value: Any

    make: Any = Private
    fetched = await sess.run(make(m.y), {m.x: [1, 2]})
    assert type(fetched) is Private
    np.testing.assert_array_equal(fetched._value, [2, 3])


async def test_a_list_subclass_comes_back_a_plain_list(sess: aiotf.Session, m: Model) -> None:
    class Fetches(list[Any]):
        pass

    fetched = await sess.run(Fetches([m.y]), {m.x: [1, 2]})
    assert type(fetched) is list  # TF's _ListFetchMapper: any list subclass -> list
    np.testing.assert_array_equal(fetched[0], [2, 3])


async def test_a_fed_fetch_is_the_converted_feed_itself(sess: aiotf.Session, m: Model) -> None:
    fed = np.array([5.0, 6.0], np.float32)
    assert await sess.run(m.x, {m.x: fed}) is fed  # TF returns the fed array as converted
    scalar = await sess.run(m.v.initial_value, {m.v.initial_value: 3.0})
    assert type(scalar) is np.ndarray and scalar.shape == ()  # a 0-d array, not np.float32


async def test_feed_values_that_do_not_convert(sess: aiotf.Session, m: Model) -> None:
    with pytest.raises(ValueError, match="could not convert string to float"):
        await sess.run(m.y, {m.x: "ab"})
    with pytest.raises(TypeError, match="float\\(\\) argument must be a string or a real number"):
        await sess.run(m.y, {m.x: object()})
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        await sess.run(m.y, {m.x: [[1], [1, 2]]})
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor: Can not "):
        await sess.run(m.y, {m.init: 1.0})


async def test_python_ints_that_do_not_fit_the_dtype_are_type_errors() -> None:
    """TF 2.21: an int that wraps round or changes in the feed's dtype is a TypeError before
    anything runs (``bool`` included: 2 is not True); one that fits is fed."""
    g = aiotf.Graph()
    with g.as_default():
        i = aiotf.placeholder(aiotf.int32, [], name="i")
        b = aiotf.placeholder(aiotf.bool, [], name="b")
    async with aiotf.Session(graph=g) as s:
        with pytest.raises(
            TypeError,
            match=re.escape(
                "Type of feed value 1099511627776 with type <class 'int'> is not compatible "
                "with Tensor type <class 'numpy.int32'>. Try explicitly setting the type of the "
                "feed tensor to a larger type (e.g. int64)."
            ),
        ):
            await s.run(i, {i: 2**40})
        with pytest.raises(TypeError, match="Type of feed value 2 with type <class 'int'>"):
            await s.run(b, {b: 2})
        assert await s.run([i, b], {i: -(2**31), b: 1}) == [-(2**31), True]


async def test_names_may_be_bytes(sess: aiotf.Session, m: Model) -> None:
    out = await sess.run([b"y:0", b"y"], {b"x:0": [1.0, 2.0]})
    np.testing.assert_array_equal(out[0], [2.0, 3.0])
    assert out[1] is None  # the op named by bytes runs as a target


# -- run([]), empty and finalized graphs, closed sessions ---------------------------------------


async def test_run_of_nothing_runs_nothing(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_step(*args: Any) -> Any:
        raise AssertionError("a step ran")

    monkeypatch.setattr(sess._impl, "run", no_step)
    assert await sess.run([]) == []
    assert await sess.run(()) == ()
    assert await sess.run({}) == {}
    assert await sess.run([[], {}]) == [[], {}]
    assert await sess.run([], {m.x: np.zeros(2)}) == []
    # a fetch that is fed comes from the feed: nothing to run either
    fed = np.array([7, 8], np.float32)
    np.testing.assert_array_equal(await sess.run(m.y, {m.y: fed}), fed)
    # the feeds are still checked, as TensorFlow does before deciding there is nothing to run
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor x:0"):
        await sess.run([], {m.x: np.zeros(3)})
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
        await sess.run([], {"nope:0": 1.0})


async def test_a_session_over_an_empty_graph_refuses_to_run() -> None:
    empty = aiotf.Graph()
    async with aiotf.Session(graph=empty) as sess:
        words = "The Session graph is empty. Add operations to the graph before calling run()."
        with pytest.raises(RuntimeError, match=r"^The Session graph is empty\."):
            await sess.run([])
        with pytest.raises(RuntimeError, match=words.replace("(", r"\(").replace(")", r"\)")):
            await sess.partial_run_setup([])
        with empty.as_default():
            c = aiotf.constant(1.0)
        assert await sess.run(c) == np.float32(1.0)


async def test_a_finalized_graph_runs_and_grows_no_more(sess: aiotf.Session, m: Model) -> None:
    await sess.run(m.init)
    m.graph.finalize()
    assert m.graph.finalized
    np.testing.assert_array_equal(await sess.run(m.y, {m.x: [1, 2]}), [2, 3])
    assert await sess.run(m.bump) == np.float32(2.0)
    with (
        pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified."),
        m.graph.as_default(),
    ):
        aiotf.constant(1.0)
    with pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified."):
        m.graph.add_to_collection("k", 1)
    assert len(m.graph.get_operations()) == sess._extended_version  # nothing half-added


async def test_a_closed_session_raises_runtime_error_for_every_call(m: Model) -> None:
    sess = aiotf.Session(graph=m.graph)
    handle = await sess.partial_run_setup([m.y], [m.x])
    await sess.close()
    calls: list[Any] = [
        lambda: sess.run([]),
        lambda: sess.run(m.y, {m.x: [1, 2]}),
        lambda: sess.partial_run_setup([m.y], [m.x]),
        lambda: sess.partial_run(handle, m.y, {m.x: [1, 2]}),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
            await call()
    with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
        sess.run_sync(m.y, {m.x: [1, 2]})
    await sess.close()  # closing again does nothing


# -- default sessions ---------------------------------------------------------------------------


async def test_as_default_sets_the_session_not_the_graph(sess: aiotf.Session, m: Model) -> None:
    outer_graph = aiotf.get_default_graph()
    with sess.as_default() as entered:
        assert entered is sess and aiotf.get_default_session() is sess
        assert aiotf.get_default_graph() is outer_graph  # as TensorFlow's
        await m.init.run()
        assert await m.bump.eval() == np.float32(2.0)
    assert aiotf.get_default_session() is None


async def test_async_with_makes_the_session_and_its_graph_the_defaults(m: Model) -> None:
    outer_graph = aiotf.get_default_graph()
    async with aiotf.Session(graph=m.graph) as sess:
        assert aiotf.get_default_session() is sess
        assert aiotf.get_default_graph() is m.graph
        doubled = aiotf.multiply(m.y, 2.0, name="doubled")  # goes into the session's graph
        np.testing.assert_array_equal(await doubled.eval({m.x: [1, 2]}), [4, 6])
        with pytest.raises(RuntimeError, match="Session context managers are not re-entrant"):
            async with sess:
                pass
        assert aiotf.get_default_session() is sess  # the refused entry changed nothing
    assert aiotf.get_default_session() is None
    assert aiotf.get_default_graph() is outer_graph
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(m.y, {m.x: [1, 2]})


async def test_async_with_left_in_another_task_still_closes(m: Model) -> None:
    stack = contextlib.AsyncExitStack()
    sess = await asyncio.create_task(stack.enter_async_context(aiotf.Session(graph=m.graph)))
    assert aiotf.get_default_session() is None  # the entering task's context, not this one
    await asyncio.create_task(stack.aclose())
    assert aiotf.get_default_session() is None
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(m.y, {m.x: [1, 2]})


def test_with_in_a_plain_script(m: Model) -> None:
    before = set(threading.enumerate())
    with aiotf.Session(graph=m.graph) as sess:
        assert aiotf.get_default_session() is sess and aiotf.get_default_graph() is m.graph
        np.testing.assert_array_equal(sess.run_sync(m.y, {m.x: [1, 2]}), [2, 3])
    assert aiotf.get_default_session() is None
    assert set(threading.enumerate()) == before  # leaving the block closed it, threads and all
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run_sync(m.y, {m.x: [1, 2]})


async def test_eval_and_run_await_the_default_or_given_session(
    sess: aiotf.Session, m: Model
) -> None:
    assert await m.init.run(session=sess) is None
    assert await m.bump.eval(session=sess) == np.float32(2.0)
    np.testing.assert_array_equal(await m.y.eval({m.x: [1, 2]}, session=sess), [2, 3])
    with sess.as_default():
        assert await m.bump.op.run() is None  # an op's run returns None, and really runs
        assert await m.v.value().eval() == np.float32(3.0)


async def test_eval_and_run_errors_are_tensorflows(sess: aiotf.Session, m: Model) -> None:
    with pytest.raises(
        ValueError, match=r"^Cannot evaluate tensor using `eval\(\)`: No default session"
    ):
        m.y.eval()
    with pytest.raises(
        ValueError, match=r"^Cannot execute operation using `run\(\)`: No default session"
    ):
        m.init.run()
    other = aiotf.Graph()
    with other.as_default():
        stranger = aiotf.constant(1.0)
    with pytest.raises(ValueError, match="to evaluate tensor: the tensor's graph is different"):
        stranger.eval(session=sess)
    with pytest.raises(
        ValueError, match="to execute operation: the operation's graph is different"
    ):
        stranger.op.run(session=sess)
    await sess.close()
    with sess.as_default():  # a closed session stays the default; using it is the closed error
        assert aiotf.get_default_session() is sess
        with pytest.raises(RuntimeError, match="closed Session"):
            await m.y.eval({m.x: [1, 2]})


async def test_as_default_follows_tasks_and_never_leaks_to_tasks_beside_it(m: Model) -> None:
    s1, s2 = aiotf.Session(graph=m.graph), aiotf.Session(graph=m.graph)
    both_inside = asyncio.Barrier(3)  # the two users and the outsider
    seen: dict[str, Any] = {}

    async def use(name: str, session: aiotf.Session) -> None:
        with session.as_default():
            await both_inside.wait()  # both defaults are set at once, in their own tasks
            seen[name] = aiotf.get_default_session()
            child = asyncio.create_task(_default_in_a_task())  # started inside: inherits
            seen[f"{name} child"] = await child
            await m.init.run()
            seen[f"{name} value"] = await m.bump.eval()

    async def outsider() -> None:
        await both_inside.wait()
        seen["outsider"] = aiotf.get_default_session()

    async with asyncio.TaskGroup() as tg:
        tg.create_task(use("s1", s1))
        tg.create_task(use("s2", s2))
        tg.create_task(outsider())
    assert seen["s1"] is s1 and seen["s1 child"] is s1
    assert seen["s2"] is s2 and seen["s2 child"] is s2
    assert seen["outsider"] is None
    assert seen["s1 value"] == seen["s2 value"] == np.float32(2.0)  # each its own variable
    assert aiotf.get_default_session() is None
    await s1.close()
    await s2.close()


async def _default_in_a_task() -> Any:
    await asyncio.sleep(0)
    return aiotf.get_default_session()


# -- InteractiveSession: the default of its whole thread, as TensorFlow's -----------------------


async def test_an_interactive_session_is_the_default_for_its_whole_thread(m: Model) -> None:
    started_before = asyncio.create_task(_default_in_a_task())
    sess = aiotf.InteractiveSession(graph=m.graph)
    try:
        assert aiotf.get_default_session() is sess and aiotf.get_default_graph() is m.graph
        assert await started_before is sess  # a task started before it sees it too
        # A notebook cell run in a fresh context (as kernels that do not carry context
        # variables from cell to cell run them) still finds it.
        cell = contextvars.Context().run(asyncio.create_task, m.y.eval({m.x: [1, 2]}))
        np.testing.assert_array_equal(await cell, [2, 3])
        # Another thread does not (TensorFlow's default stacks are per thread).
        seen: list[Any] = []
        thread = threading.Thread(
            target=lambda: seen.extend([aiotf.get_default_session(), aiotf.get_default_graph()])
        )
        thread.start()
        thread.join()
        assert seen[0] is None and seen[1] is not m.graph
        # An as_default block still wins inside it.
        with aiotf.Session(graph=m.graph) as other:
            assert aiotf.get_default_session() is other
        assert aiotf.get_default_session() is sess
        with pytest.raises(AssertionError, match="Do not use reset_default_graph"):
            aiotf.reset_default_graph()
    finally:
        await sess.close()
    assert aiotf.get_default_session() is None and aiotf.get_default_graph() is not m.graph


async def test_interactive_sessions_stack_and_close_in_any_order(m: Model) -> None:
    g2 = aiotf.Graph()
    first = aiotf.InteractiveSession(graph=m.graph)
    second = aiotf.InteractiveSession(graph=g2)
    assert aiotf.get_default_session() is second and aiotf.get_default_graph() is g2
    await second.close()  # the newest closed: the one before it is the default again
    assert aiotf.get_default_session() is first and aiotf.get_default_graph() is m.graph
    third = aiotf.InteractiveSession(graph=g2)
    await first.close()  # an older one closed: the newest stays
    assert aiotf.get_default_session() is third and aiotf.get_default_graph() is g2
    closer = threading.Thread(target=third.close)  # closing from another thread uninstalls too
    closer.start()
    closer.join()
    await third._wait_closed()
    assert aiotf.get_default_session() is None and aiotf.get_default_graph() is not g2


async def test_an_interactive_session_places_pruned_graphs_and_leaves_its_config(
    m: Model,
) -> None:
    config = aiotf.ConfigProto(log_device_placement=False)
    sess = aiotf.InteractiveSession(graph=m.graph, config=config)
    try:
        assert sess._impl.config.graph_options.place_pruned_graph  # as TensorFlow's
        assert not config.graph_options.place_pruned_graph  # the caller's config is not changed
        with m.graph.as_default(), aiotf.device("/device:GPU:0"):
            aiotf.constant(1.0, name="on_a_gpu")  # placed only if a run needs it
        np.testing.assert_array_equal(await m.y.eval({m.x: [1, 2]}), [2, 3])
    finally:
        await sess.close()
    with pytest.raises(TypeError, match="config must be an aiotf.ConfigProto"):
        aiotf.InteractiveSession(graph=m.graph, config={})


async def test_an_interactive_session_without_a_graph_leaves_the_default_graph(
    m: Model,
) -> None:
    with m.graph.as_default():
        sess = aiotf.InteractiveSession()  # on the default graph, which it does not install
    try:
        assert sess.graph is m.graph and aiotf.get_default_session() is sess
        assert aiotf.get_default_graph() is not m.graph
    finally:
        await sess.close()


# -- ConfigProto's thread options ---------------------------------------------------------------


class PoolRecord:
    """What the pool kernels below saw: their threads, and a barrier two of them may meet at."""

    def __init__(self, meet: int) -> None:
        self.threads: list[str] = []
        self.barrier = threading.Barrier(meet, timeout=STALL_S) if meet else None


POOL = PoolRecord(0)
register_op("_AuditPoolWork", inputs=["x: float"], outputs=["y: float"], is_stateful=True)


@register_kernel("_AuditPoolWork", cost=lambda *inputs: float(1 << 40))
def _pool_work(x: Any) -> Any:
    POOL.threads.append(threading.current_thread().name)
    if POOL.barrier is not None:
        POOL.barrier.wait()  # returns only once another kernel is in the pool at the same time
    return x


def _independent_pool_kernels(n: int) -> tuple[aiotf.Graph, list[aiotf.Tensor]]:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(1.0)
        outs = [g.create_op("_AuditPoolWork", [c], name=f"w{i}").outputs[0] for i in range(n)]
    return g, outs


@pytest.mark.parametrize(("inter_op", "threads"), [(1, 1), (-1, 1), (2, 2)])
async def test_inter_op_parallelism_threads_bounds_kernels_running_at_once(
    inter_op: int, threads: int
) -> None:
    global POOL
    POOL = PoolRecord(meet=threads if threads > 1 else 0)
    g, outs = _independent_pool_kernels(4)
    config = aiotf.ConfigProto(inter_op_parallelism_threads=inter_op)
    async with aiotf.Session(graph=g, config=config) as sess, asyncio.timeout(STALL_S):
        assert await sess.run(outs) == [np.float32(1.0)] * 4
    assert len(POOL.threads) == 4
    assert len(set(POOL.threads)) == threads  # 2: the barrier proves two really ran at once


# -- nothing outlives close() -------------------------------------------------------------------


register_op("_AuditForever", inputs=["x: float"], outputs=["y: float"], is_stateful=True)


@register_kernel("_AuditForever")
async def _audit_forever(x: Any) -> Any:
    await asyncio.get_running_loop().create_future()
    return x


async def test_no_task_or_thread_outlives_close(m: Model) -> None:
    """Pool threads, the private loop thread of run_sync, a partial run and a run in flight:
    after ``await close()`` none of their tasks or threads is left."""
    tasks_before, threads_before = asyncio.all_tasks(), set(threading.enumerate())
    g, outs = _independent_pool_kernels(2)
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        waiting = g.create_op("_AuditForever", [x], name="waiting").outputs[0]
        neg = aiotf.negative(x, name="neg")
    global POOL
    POOL = PoolRecord(meet=0)
    sess = aiotf.Session(graph=g, config=aiotf.ConfigProto(inter_op_parallelism_threads=2))
    assert await sess.run(outs) == [np.float32(1.0)] * 2  # pool threads started
    assert sess.run_sync(neg, {x: 1.0}) == np.float32(-1.0)  # the private loop thread started
    handle = await sess.partial_run_setup([neg, waiting], [x])  # a partial run left open
    assert await sess.partial_run(handle, neg, {x: 2.0}) == np.float32(-2.0)
    in_flight = asyncio.create_task(sess.run(waiting, {x: 3.0}))
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(set(threading.enumerate()) - threads_before) >= 2
    async with asyncio.timeout(STALL_S):
        await sess.close()
    with pytest.raises(errors.CancelledError, match="Run call was cancelled"):
        await in_flight
    assert asyncio.all_tasks() == tasks_before
    assert set(threading.enumerate()) == threads_before


async def test_a_placement_error_names_where_the_op_was_built() -> None:
    """Placing happens when the session extends its graph; the error still names the node,
    its device request and the line that built it, as a kernel error does."""
    g = aiotf.Graph()
    with g.as_default(), aiotf.device("/device:CPU:5"):
        c = aiotf.constant(1.0, name="c")
    async with aiotf.Session(graph=g) as s:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await s.run(c)
    assert "was explicitly assigned to /device:CPU:5" in info.value.message
    assert info.value.op is c.op
    assert f"Operation 'c' (Const) on /device:CPU:5, defined at {__file__}:" in info.value.message
