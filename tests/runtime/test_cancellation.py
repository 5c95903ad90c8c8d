"""Cancellation at each kind of await a step can wait in, and a step's first error.

The table: a step waits in one kind of await (a queue dequeue, a ``_Recv`` from another device,
an ``async_py_func``, a pool kernel in a thread, an async kernel in a while-loop iteration, a v2
function call, a partial run's fetch), and is ended one of three ways (its task cancelled, a
deadline, the session closed). Each time: the error class is the right one, no task of the step
is left, nothing is lost (queue elements, rendezvous entries), a thread still reading its inputs
finishes before the run ends, and the session's next run works.

Tests sequence with events; the only waits are stall detection (``STALL_S``) and, for deadline
cases, the deadline itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import attr_value, dtypes, errors
from aiotf.framework.op_def_registry import register_op
from aiotf.kernels.data_flow_kernels import FIFOQueue
from aiotf.kernels.registry import register_kernel
from aiotf.proto import FunctionDef, NameAttrList, NodeDef
from aiotf.runtime import direct_session
from aiotf.runtime.rendezvous import Rendezvous

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
CPU1 = f"{TASK}/device:CPU:1"
F32 = dtypes.float32
STALL_S = 30.0  # generous: only a hang reaches it
DEADLINE_MS = 250  # long enough for a step to reach its await first, on a busy machine


# -- probes: what the test kernels report, from the loop or a pool thread -----------------------


class Probe:
    """One test's view of its kernels: arrivals (any thread), cancellations, a thread's fate."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.entered: asyncio.Event | None = None
        self.fail_now: asyncio.Event | None = None
        self.release_thread = threading.Event()
        self.thread_done = threading.Event()
        self.log: list[str] = []

    def bind(self) -> None:
        """Attach to the running loop (the test's)."""
        self.loop = asyncio.get_running_loop()
        self.entered = asyncio.Event()
        self.fail_now = asyncio.Event()

    def arrive(self, what: str) -> None:
        """A kernel reached its wait (callable from a pool thread)."""
        assert self.loop is not None and self.entered is not None
        self.log.append(what)
        self.loop.call_soon_threadsafe(self.entered.set)

    async def reached(self) -> None:
        assert self.entered is not None
        async with asyncio.timeout(STALL_S):
            await self.entered.wait()


PROBE = Probe()


@pytest.fixture(autouse=True)
def probe() -> Iterator[Probe]:
    global PROBE
    PROBE = Probe()
    yield PROBE
    PROBE.release_thread.set()  # never leave a pool thread parked behind a failed test


register_op("_CancelAuditWait", inputs=["x: float"], outputs=["y: float"], is_stateful=True)
register_op("_CancelAuditWaitAt", inputs=["i: int32"], outputs=["y: int32"], is_stateful=True)
register_op("_CancelAuditThread", inputs=["x: float"], outputs=["y: float"], is_stateful=True)
register_op("_CancelAuditFail", inputs=["x: float"], outputs=["y: float"], is_stateful=True)


async def _forever(what: str) -> None:
    PROBE.arrive(what)
    try:
        await asyncio.get_running_loop().create_future()  # only cancellation ends this
    except asyncio.CancelledError:
        PROBE.log.append(f"{what} cancelled")
        raise


@register_kernel("_CancelAuditWait")
async def _wait(x: Any) -> Any:
    await _forever("wait")
    return x


@register_kernel("_CancelAuditWaitAt")
async def _wait_at(i: Any) -> Any:
    """Waits forever in iteration 3 of a loop; returns its input in the others."""
    if int(i) == 3:
        await _forever("iteration 3")
    return i


@register_kernel("_CancelAuditThread", cost=lambda *inputs: float(1 << 40))
def _thread(x: Any) -> Any:
    PROBE.arrive("thread")
    PROBE.release_thread.wait(STALL_S)
    PROBE.thread_done.set()
    return x


@register_kernel("_CancelAuditFail")
async def _fail(x: Any) -> Any:
    assert PROBE.fail_now is not None
    await PROBE.fail_now.wait()
    PROBE.log.append("failing")
    raise ValueError("told to fail")


def _op(op_type: str, x: aiotf.Tensor, name: str) -> aiotf.Tensor:
    return aiotf.get_default_graph().create_op(op_type, [x], name=name).outputs[0]


class RecordingRendezvous(Rendezvous):
    """A Rendezvous the tests can see: every step's, in order."""

    made: list[RecordingRendezvous] = []

    def __init__(self) -> None:
        super().__init__()
        self.status_seen: BaseException | None = None
        RecordingRendezvous.made.append(self)

    def abort(self, status: BaseException) -> None:
        if self.status_seen is None:
            self.status_seen = status
        super().abort(status)


@pytest.fixture(autouse=True)
def rendezvous(monkeypatch: pytest.MonkeyPatch) -> list[RecordingRendezvous]:
    made: list[RecordingRendezvous] = []
    monkeypatch.setattr(RecordingRendezvous, "made", made)
    monkeypatch.setattr(direct_session, "Rendezvous", RecordingRendezvous)
    return made


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait (polling, never asserting on time) until ``condition()``; fail only on a stall.

    For states no event announces: a deadline having fired, a queue's or rendezvous' waiters.
    """
    async with asyncio.timeout(STALL_S):
        while not condition():  # noqa: ASYNC110 - nothing to wait on but the state itself
            await asyncio.sleep(0.001)
    assert condition(), what


async def settle() -> None:
    """Let every ready callback and task run until it blocks."""
    for _ in range(50):
        await asyncio.sleep(0)


# -- the cases: graphs whose step waits in one kind of await -----------------------------------


@dataclasses.dataclass
class Case:
    """A graph whose run of ``fetch`` blocks; ``ready`` says it waits; ``check_after(sess,
    fresh)`` proves nothing was lost and the graph runs again (``fresh``: in a new session, the
    first having been closed)."""

    graph: aiotf.Graph
    fetch: Any
    ready: Callable[[aiotf.Session], Awaitable[None]]
    check_after: Callable[[aiotf.Session, bool], Awaitable[None]]
    partial_feed: aiotf.Tensor | None = None  # set: run it as a partial run fed this
    pool_thread: bool = False


async def _reached(sess: aiotf.Session) -> None:
    await PROBE.reached()


def _queue_of(sess: aiotf.Session) -> FIFOQueue:
    manager = sess._impl.device_mgr.lookup(CPU0).resource_manager
    (queue,) = [r for r in manager._containers["localhost"].values() if isinstance(r, FIFOQueue)]
    return queue


def queue_case() -> Case:
    """A DequeueMany of 3 holding the 2 queued elements while it waits for a third."""
    g = aiotf.Graph()
    with g.as_default():
        q = aiotf.FIFOQueue(10, aiotf.int32, shapes=[[]], name="q")
        values = aiotf.placeholder(aiotf.int32, [None], name="values")
        fill = q.enqueue_many([values], name="fill")
        take3 = q.dequeue_many(3, name="take3")
        size = q.size(name="size")

    async def ready(sess: aiotf.Session) -> None:
        await sess.run(fill, {values: [1, 2]})
        await until(lambda: bool(_queue_of(sess).dequeuers), "a dequeuer waits")
        assert _queue_of(sess).size() == 0  # both queued elements are held by the waiter

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        if fresh:  # the queue went with the closed session
            await sess.run(fill, {values: [1, 2]})
        assert await sess.run(size) == 2  # the held elements went back, in order
        await sess.run(fill, {values: [3]})
        np.testing.assert_array_equal(await sess.run(take3), [1, 2, 3])

    return Case(g, take3, ready, check_after)


def recv_case() -> Case:
    """A ``_Recv`` on CPU:0 of a tensor CPU:1 never sends."""
    g = aiotf.Graph()
    with g.as_default():
        recv = g.create_op(
            "_Recv",
            [],
            {
                "tensor_type": aiotf.float32,
                "tensor_name": b"never_sent",
                "send_device": CPU1.encode(),
                "send_device_incarnation": 1,
                "recv_device": CPU0.encode(),
            },
            name="recv",
        ).outputs[0]
        with aiotf.device("/device:CPU:1"):
            quick = aiotf.negative(aiotf.constant(2.0), name="quick")

    async def ready(sess: aiotf.Session) -> None:
        await until(
            lambda: any(r.pending_keys for r in RecordingRendezvous.made), "the _Recv waits"
        )

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        assert all(not r.pending_keys for r in RecordingRendezvous.made)  # the waiter withdrew
        assert await sess.run(quick) == np.float32(-2.0)

    return Case(g, recv, ready, check_after)


def async_py_func_case() -> Case:
    g = aiotf.Graph()
    with g.as_default():
        block = aiotf.placeholder(aiotf.bool, [], name="block")

        async def maybe_wait(b: Any) -> Any:
            if b:
                await _forever("coroutine")
            return np.float32(1.0)

        out = aiotf.async_py_func(maybe_wait, [block], aiotf.float32, name="coro")

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        assert "coroutine cancelled" in PROBE.log
        assert await sess.run(out, {block: False}) == np.float32(1.0)

    return Case(g, (out, {block: True}), _reached, check_after)


def pool_thread_case() -> Case:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(np.ones((4, 4), np.float32), name="c")
        out = _op("_CancelAuditThread", c, "in_thread")
        other = aiotf.negative(c, name="other")

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        np.testing.assert_array_equal(await sess.run(other), -np.ones((4, 4), np.float32))

    return Case(g, out, _reached, check_after, pool_thread=True)


def while_case() -> Case:
    """A v1 while loop whose body awaits an async kernel, blocking in iteration 3."""
    g = aiotf.Graph()
    with g.as_default():
        limit = aiotf.placeholder(aiotf.int32, [], name="limit")
        _, total = aiotf.while_loop(
            lambda i, acc: i < limit,
            lambda i, acc: (i + 1, acc + g.create_op("_CancelAuditWaitAt", [i]).outputs[0]),
            [aiotf.constant(0), aiotf.constant(0)],
        )

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        assert PROBE.log[-1] == "iteration 3 cancelled"
        assert await sess.run(total, {limit: 3}) == 0 + 1 + 2

    return Case(g, (total, {limit: 10}), _reached, check_after)


# v2 functions (as TensorFlow writes them): ``blocky(x) = _CancelAuditWait(x)``.


def _node(name: str, op: str, inputs: list[str], **attrs: Any) -> Any:
    out = NodeDef(name=name, op=op, input=inputs)
    for key, value in attrs.items():
        out.attr[key].CopyFrom(attr_value.encode(value))
    return out


def _fdef(
    name: str,
    args: list[tuple[str, Any]],
    rets: list[tuple[str, Any]],
    nodes: list[Any],
    ret: dict[str, str],
) -> Any:
    out = FunctionDef()
    out.signature.name = name
    for arg, dt in args:
        out.signature.input_arg.add(name=arg, type=dt.as_datatype_enum)
    for arg, dt in rets:
        out.signature.output_arg.add(name=arg, type=dt.as_datatype_enum)
    out.node_def.extend(nodes)
    out.ret.update(ret)
    return out


BLOCKY = _fdef(
    "blocky",
    [("x", F32)],
    [("y", F32)],
    [_node("block", "_CancelAuditWait", ["x"])],
    {"y": "block:y:0"},
)
ALWAYS = _fdef(
    "always",
    [("x", F32)],
    [("t", dtypes.bool)],
    [_node("t", "Const", [], value=np.array(True), dtype=dtypes.bool)],
    {"t": "t:output:0"},
)
DOUBLE = _fdef(
    "double",
    [("x", F32)],
    [("y", F32)],
    [
        _node("two", "Const", [], value=np.asarray(2, np.float32), dtype=F32),
        _node("mul", "Mul", ["x", "two:output:0"], T=F32),
    ],
    {"y": "mul:z:0"},
)


def v2_case(op: str) -> Case:
    call: dict[str, Any] = {
        "PartitionedCall": {"Tin": [F32], "Tout": [F32], "f": NameAttrList(name="blocky")},
        "StatelessIf": {
            "Tcond": dtypes.bool,
            "Tin": [F32],
            "Tout": [F32],
            "then_branch": NameAttrList(name="blocky"),
            "else_branch": NameAttrList(name="double"),
        },
        "While": {
            "T": [F32],
            "cond": NameAttrList(name="always"),
            "body": NameAttrList(name="blocky"),
        },
    }[op]
    gd = aiotf.GraphDef()
    gd.node.extend(
        [
            _node("p", "Placeholder", [], dtype=dtypes.bool),
            _node("x", "Placeholder", [], dtype=F32),
            _node("call", op, ["p", "x"] if op == "StatelessIf" else ["x"], **call),
            _node("out", "Identity", ["call"], T=F32),
            _node(
                "plain",
                "PartitionedCall",
                ["x"],
                Tin=[F32],
                Tout=[F32],
                f=NameAttrList(name="double"),
            ),
        ]
    )
    gd.library.function.extend([BLOCKY, ALWAYS, DOUBLE])
    g = aiotf.Graph()
    with g.as_default():
        aiotf.import_graph_def(gd, name="")
    feeds = {"x:0": np.float32(3), "p:0": True}

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        assert "wait cancelled" in PROBE.log
        assert await sess.run("plain:0", {"x:0": np.float32(3)}) == np.float32(6)
        if op == "StatelessIf":  # the same call, through the other branch
            assert await sess.run("out:0", {"x:0": np.float32(3), "p:0": False}) == 6

    return Case(g, ("out:0", feeds), _reached, check_after)


def partial_run_case() -> Case:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        waited = _op("_CancelAuditWait", x, "waited")
        y = aiotf.negative(x, name="y")

    async def check_after(sess: aiotf.Session, fresh: bool) -> None:
        h = await sess.partial_run_setup([y], [x])
        assert await sess.partial_run(h, y, {x: 2.0}) == np.float32(-2.0)

    return Case(g, waited, _reached, check_after, partial_feed=x)


CASES: dict[str, Callable[[], Case]] = {
    "queue_dequeue_many": queue_case,
    "recv_from_another_device": recv_case,
    "async_py_func": async_py_func_case,
    "pool_kernel_in_a_thread": pool_thread_case,
    "async_kernel_in_a_while_iteration": while_case,
    "v2_partitioned_call": lambda: v2_case("PartitionedCall"),
    "v2_if": lambda: v2_case("StatelessIf"),
    "v2_while": lambda: v2_case("While"),
    "partial_run_fetch": partial_run_case,
}

HOW = ["task_cancel", "deadline", "session_close"]
EXPECTED: dict[str, type[BaseException]] = {
    "task_cancel": asyncio.CancelledError,
    "deadline": errors.DeadlineExceededError,
    "session_close": errors.CancelledError,
}


def _session(case: Case, how: str) -> aiotf.Session:
    config = aiotf.ConfigProto(device_count={"CPU": 2})
    if how == "deadline" and case.partial_feed is not None:  # partial runs take no RunOptions
        config.operation_timeout_in_ms = DEADLINE_MS
    return aiotf.Session(graph=case.graph, config=config)


async def _start(sess: aiotf.Session, case: Case, how: str) -> asyncio.Task[Any]:
    if case.partial_feed is not None:
        handle = await sess.partial_run_setup([case.fetch], [case.partial_feed])
        return asyncio.create_task(sess.partial_run(handle, case.fetch, {case.partial_feed: 1.0}))
    fetch, feeds = case.fetch if isinstance(case.fetch, tuple) else (case.fetch, None)
    options = aiotf.RunOptions(timeout_in_ms=DEADLINE_MS) if how == "deadline" else None
    return asyncio.create_task(sess.run(fetch, feeds, options=options))


async def _end(sess: aiotf.Session, run: asyncio.Task[Any], how: str) -> Awaitable[None] | None:
    """End the waiting step ``how``; what to await for a close to finish, if anything."""
    if how == "task_cancel":
        run.cancel()
    elif how == "deadline":
        await until(lambda: run.cancelling() > 0 or run.done(), "the deadline fires")
    else:
        return sess.close()
    return None


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", list(CASES))
async def test_cancellation_at_each_kind_of_await(kind: str, how: str, probe: Probe) -> None:
    probe.bind()
    case = CASES[kind]()
    tasks_before = asyncio.all_tasks()
    threads_before = set(threading.enumerate())
    sess = _session(case, how)
    run = await _start(sess, case, how)
    await case.ready(sess)
    assert not run.done()
    closing = await _end(sess, run, how)
    ran_before_thread_done: list[bool] = []
    run.add_done_callback(lambda _: ran_before_thread_done.append(not probe.thread_done.is_set()))
    if case.pool_thread:
        await settle()
        assert not run.done(), "the step ended while its kernel still ran in a thread"
        probe.release_thread.set()
    with pytest.raises(EXPECTED[how]):
        async with asyncio.timeout(STALL_S):
            await asyncio.shield(run)
    if case.pool_thread:
        assert probe.thread_done.is_set() and ran_before_thread_done == [False]
    if closing is not None:
        await closing
        with pytest.raises(RuntimeError, match="closed Session"):
            await sess.run(case.graph.get_operations()[0])
        assert set(threading.enumerate()) == threads_before  # no thread outlives the session
        sess = _session(case, "")  # the graph still runs, in a new session
    if case.pool_thread:  # the thread kernel finished with the step; run it once more, released
        assert await sess.run(case.fetch) is not None
    await case.check_after(sess, closing is not None)
    await sess.close()
    assert asyncio.all_tasks() == tasks_before  # no task of any step is left
    assert set(threading.enumerate()) == threads_before


# -- the first failing node ---------------------------------------------------------------------


def two_device_graph() -> tuple[aiotf.Graph, aiotf.Tensor, aiotf.Tensor, aiotf.Tensor, int]:
    """CPU:0 holds ``held`` (waits forever) and ``bad`` (fails when told); CPU:1 waits in a
    ``_Recv`` for ``held``. Also: the line where ``bad`` is built."""
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(1.0, name="c")
        held = _op("_CancelAuditWait", c, "held")
        line = _line() + 1
        bad = g.create_op("_CancelAuditFail", [c], name="bad").outputs[0]
        with aiotf.device("/device:CPU:1"):
            remote = aiotf.negative(held, name="remote")
            quick = aiotf.negative(c, name="quick")
    return g, remote, bad, quick, line


def _line() -> int:
    import inspect

    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


async def test_first_failing_node_aborts_the_rendezvous_and_cancels_every_device(
    probe: Probe, rendezvous: list[RecordingRendezvous]
) -> None:
    probe.bind()
    g, remote, bad, quick, line = two_device_graph()
    tasks_before = asyncio.all_tasks()
    async with aiotf.Session(graph=g, config=aiotf.ConfigProto(device_count={"CPU": 2})) as sess:
        run = asyncio.create_task(sess.run([remote, bad]))
        await probe.reached()
        (step_rendezvous,) = rendezvous
        await until(lambda: bool(step_rendezvous.pending_keys), "CPU:1's _Recv waits")
        assert probe.fail_now is not None
        probe.fail_now.set()
        with pytest.raises(errors.InvalidArgumentError) as info:
            async with asyncio.timeout(STALL_S):
                await run
        err = info.value
        # One exception, naming the node, its op, its device and where it was built.
        assert err.node_def.name == "bad" and err.op is bad.op
        assert "told to fail" in err.message and "{{node bad}}" in err.message
        assert f"Operation 'bad' (_CancelAuditFail) on {CPU0}" in err.message
        assert f"defined at {__file__}:{line}" in err.message
        # The rendezvous was aborted with that error, the waiting _Recv withdrew, and the other
        # device's kernel was cancelled.
        status = step_rendezvous.status_seen
        assert isinstance(status, errors.InvalidArgumentError)
        assert status.node_def.name == "bad"
        assert step_rendezvous.pending_keys == []
        assert probe.log == ["wait", "failing", "wait cancelled"]
        assert asyncio.all_tasks() == tasks_before
        assert await sess.run(quick) == np.float32(-1.0)  # the next run works, across devices
    assert asyncio.all_tasks() == tasks_before


async def test_a_thread_still_running_holds_the_step_through_a_failure_and_a_cancel(
    probe: Probe,
) -> None:
    """A pool kernel is mid-flight when another node fails (the step cancels it) and then the
    awaiting task is cancelled too: the step still waits for the thread before it ends."""
    probe.bind()
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(np.ones((4, 4), np.float32), name="c")
        in_thread = _op("_CancelAuditThread", c, "in_thread")
        bad = _op("_CancelAuditFail", aiotf.constant(1.0), "bad")
    async with aiotf.Session(graph=g) as sess:
        run = asyncio.create_task(sess.run([in_thread, bad]))
        await probe.reached()
        assert probe.fail_now is not None
        probe.fail_now.set()
        await until(lambda: "failing" in probe.log, "the node failed")
        await settle()
        assert not run.done()  # the failure alone does not end the step: the thread runs on
        run.cancel()
        await settle()
        assert not run.done(), "the step ended while its kernel still ran in a thread"
        ended: list[bool] = []
        run.add_done_callback(lambda _: ended.append(probe.thread_done.is_set()))
        probe.release_thread.set()
        with pytest.raises((asyncio.CancelledError, errors.InvalidArgumentError)):
            async with asyncio.timeout(STALL_S):
                await asyncio.shield(run)
        assert ended == [True]
        np.testing.assert_array_equal(await sess.run(c), np.ones((4, 4), np.float32))
