"""``py_func`` and ``async_py_func``: Python functions and coroutines run inside the graph.

Error words are TensorFlow 2.21's, recorded with ``tf.compat.v1.py_func`` in graph mode. Tests
never sleep: coroutines in the graph sequence with events the test sets.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices import device
from aiotf.framework import errors
from aiotf.framework.op_defs.script_ops import py_funcs
from tests.devices.test_workers import two_cpus

from .conftest import Evaluate


def token_of(out: Any) -> str:
    """The token of the node that made ``out`` (a Tensor, a list of them, or an Operation)."""
    t = out[0] if isinstance(out, list) else out
    op = t.op if isinstance(t, aiotf.Tensor) else t
    token = op.get_attr("token")
    return token.decode() if isinstance(token, bytes) else str(token)


# -- building ---------------------------------------------------------------------------------


def test_nodes_tokens_and_unknown_shapes(graph: aiotf.Graph) -> None:
    x = aiotf.constant([1.0, 2.0])
    single = aiotf.py_func(lambda v: v, [x], aiotf.float32)
    listed = aiotf.py_func(lambda v: [v, v], [x], [aiotf.float32, aiotf.float64], name="two")
    pure = aiotf.py_func(lambda v: v, [x], aiotf.float32, stateful=False)
    awaited = aiotf.async_py_func(lambda v: v, [x, "s", 3], aiotf.int64)
    nothing = aiotf.py_func(lambda: None, [], [])
    assert isinstance(single, aiotf.Tensor) and single.shape.rank is None
    assert isinstance(listed, list) and [t.name for t in listed] == ["two:0", "two:1"]
    assert [t.dtype for t in listed] == [aiotf.float32, aiotf.float64]
    assert isinstance(nothing, aiotf.Operation) and nothing.outputs == []
    ops = (single.op, listed[0].op, pure.op, awaited.op, nothing)
    assert [op.name for op in ops] == [
        "PyFunc",
        "two",
        "PyFuncStateless",
        "AsyncPyFunc",
        "PyFunc_1",
    ]
    assert [op.type for op in ops] == [
        "PyFunc",
        "PyFunc",
        "PyFuncStateless",
        "AsyncPyFunc",
        "PyFunc",
    ]
    assert awaited.op.get_attr("Tin") == [aiotf.float32, aiotf.string, aiotf.int32]
    numbers = [int(token_of(op).removeprefix("pyfunc_")) for op in ops]
    assert numbers == sorted(set(numbers))  # a new token per call, process-wide


def test_calling_conventions_are_checked_when_building(graph: aiotf.Graph) -> None:
    async def coroutine_fn() -> None: ...

    with pytest.raises(ValueError, match="Expected func to be callable"):
        aiotf.py_func(3, [], aiotf.float32)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="use async_py_func"):
        aiotf.py_func(coroutine_fn, [], aiotf.float32)
    with pytest.raises(TypeError, match="inp must be a list"):
        aiotf.py_func(lambda v: v, aiotf.constant(1.0), aiotf.float32)


def test_graph_def_holds_a_token_not_code(graph: aiotf.Graph) -> None:
    def secret_function_name(v: Any) -> Any:
        return v

    y = aiotf.py_func(secret_function_name, [1.0], aiotf.float32)
    data = graph.as_graph_def().SerializeToString()
    assert token_of(y).encode() in data
    assert b"secret_function_name" not in data


# -- sync py_func -----------------------------------------------------------------------------


async def test_single_and_list_results(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    x = aiotf.constant([1.0, 2.0])
    single = aiotf.py_func(lambda v: v * 2, [x], aiotf.float32)
    listed = aiotf.py_func(lambda v: (v + 1, np.int32(7)), [x], [aiotf.float32, aiotf.int32])
    one = aiotf.py_func(lambda v: v, [x], [aiotf.float32])
    assert isinstance(one, list) and len(one) == 1
    got = await evaluate([single, listed, one])
    np.testing.assert_array_equal(got[0], np.float32([2, 4]))
    np.testing.assert_array_equal(got[1][0], np.float32([2, 3]))
    assert got[1][1] == np.int32(7) and got[1][1].dtype == np.int32
    np.testing.assert_array_equal(got[2][0], np.float32([1, 2]))


async def test_arguments_of_several_dtypes(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    seen: list[Any] = []

    def look(*args: Any) -> bytes:
        seen.extend(args)
        return b"ok"

    inputs = [1.5, b"x", [b"ab", b"c\x00"], aiotf.constant(3, aiotf.int64), True, [[1, 2]]]
    assert await evaluate(aiotf.py_func(look, inputs, aiotf.string)) == b"ok"
    f, s, strings, i64, flag, ints = seen
    assert type(f) is np.float32 and f == 1.5  # a 0-d tensor arrives as a numpy scalar
    assert type(s) is bytes and s == b"x"
    assert strings.dtype == object and strings.tolist() == [b"ab", b"c\x00"]
    assert type(i64) is np.int64 and type(flag) is np.bool_ and flag
    assert ints.dtype == np.int32 and ints.shape == (1, 2)


async def test_string_results(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    x = aiotf.constant(b"hi")
    outs = [
        aiotf.py_func(lambda v: v + b"!", [x], aiotf.string),
        aiotf.py_func(lambda v: "héllo", [x], aiotf.string),
        aiotf.py_func(lambda v: [np.array([b"a", b"bcd"])], [x], [aiotf.string]),
        aiotf.py_func(lambda v: np.array(["é", "bc"]), [x], aiotf.string),
        aiotf.py_func(lambda v: np.array([b"a\x00", "z"], dtype=object), [x], aiotf.string),
    ]
    got = await evaluate(outs)
    assert got[0] == b"hi!" and got[1] == "héllo".encode()
    assert got[2][0].dtype == object and got[2][0].tolist() == [b"a", b"bcd"]
    assert got[3].tolist() == ["é".encode(), b"bc"]
    assert got[4].tolist() == [b"a\x00", b"z"]


async def test_runs_in_a_pool_thread(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    threads: list[threading.Thread] = []
    y = aiotf.py_func(
        lambda: threads.append(threading.current_thread()) or np.int64(1), [], aiotf.int64
    )
    assert await evaluate(y) == 1
    (thread,) = threads
    assert thread is not threading.current_thread()
    assert thread.name.startswith("aiotf-device:CPU:0")


async def test_numpy_error_state_a_function_sets_stays_in_it(graph: aiotf.Graph) -> None:
    # Pool threads ignore numpy's floating-point errors for good (set once per thread); a
    # function that asks numpy to raise must not leave later kernels in that thread raising.
    seen: list[str] = []

    def strict() -> Any:
        np.seterr(all="raise")
        seen.append(np.geterr()["over"])
        return np.float32(1)

    one = aiotf.py_func(strict, [], aiotf.float32)
    with aiotf.control_dependencies([one]):
        big = aiotf.py_func(lambda: np.float32(3e38), [], aiotf.float32)
    overflow = aiotf.square(big) + aiotf.zeros([600, 600])  # large: a pool kernel
    async with aiotf.Session(graph=graph) as sess:
        for _ in range(2):  # the second run on threads the first one's function ran on
            got = await sess.run(overflow)
            assert np.isposinf(got).all()
    assert seen == ["raise", "raise"]
    assert np.geterr()["over"] == "warn"  # the caller's own state is untouched


async def test_a_function_writing_into_its_argument_changes_no_tensor(
    graph: aiotf.Graph, evaluate: Evaluate
) -> None:
    def scribble(v: Any) -> Any:
        v[0] = 0.0
        return v

    c = aiotf.constant([1.0, 2.0])
    y = aiotf.py_func(scribble, [c], aiotf.float32)
    for _ in range(2):
        got_y, got_c = await evaluate([y, c])
        np.testing.assert_array_equal(got_y, np.float32([0, 2]))
        np.testing.assert_array_equal(got_c, np.float32([1, 2]))


async def test_returned_arrays_are_copied(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    kept = np.float32([1.0, 2.0])
    got = await evaluate(aiotf.py_func(lambda: kept, [], aiotf.float32))
    got[0] = 9.0
    np.testing.assert_array_equal(kept, np.float32([1, 2]))


async def test_no_outputs(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    calls: list[int] = []
    op = aiotf.py_func(lambda: calls.append(1), [], [])
    empty = aiotf.py_func(lambda: [], [], [])
    assert await evaluate([op, empty]) == [None, None]
    assert calls == [1]


# -- results of the wrong kind ------------------------------------------------------------------

WRONG: list[tuple[Callable[[], Any], Any, type[errors.OpError], str]] = [
    (lambda: 3.0, aiotf.float32, errors.InvalidArgumentError, "0-th value returned by {} is double, but expects float"),
    (lambda: np.array([2.0]), aiotf.float32, errors.InvalidArgumentError, "0-th value returned by {} is double, but expects float"),
    (lambda: 3, aiotf.float32, errors.InvalidArgumentError, "0-th value returned by {} is int64, but expects float"),
    (lambda: 3, aiotf.int32, errors.InvalidArgumentError, "0-th value returned by {} is int64, but expects int32"),
    (lambda: b"x", aiotf.float32, errors.InvalidArgumentError, "0-th value returned by {} is string, but expects float"),
    (lambda: np.float32(1), aiotf.string, errors.InvalidArgumentError, "0-th value returned by {} is float, but expects string"),
    (lambda: (np.float32(1), 2), [aiotf.float32, aiotf.float32], errors.InvalidArgumentError, "1-th value returned by {} is int64, but expects float"),
    (lambda: (np.float32(1), np.float32(2)), [aiotf.float32], errors.InvalidArgumentError, "{} returns 2 values, but expects to see 1 values."),
    (lambda: [np.float32(1)], [aiotf.float32, aiotf.float32], errors.InvalidArgumentError, "{} returns 1 values, but expects to see 2 values."),
    (lambda: [[1, 2], [3]], [aiotf.int64], errors.InvalidArgumentError, "{} returns 2 values, but expects to see 1 values."),
    (lambda: None, aiotf.float32, errors.InvalidArgumentError, "{} returns 0 values, but expects to see 1 values."),
    (lambda: np.float32(1), [], errors.InvalidArgumentError, "{} returns 1 values, but expects to see 0 values."),
    (lambda: {"a": 1}, aiotf.float32, errors.InternalError, "Unsupported object type dict"),
    (lambda: np.array([b"a", 1], dtype=object), aiotf.string, errors.InternalError, "Unsupported object type int"),
    (lambda: np.datetime64("2020-01-01"), aiotf.int64, errors.InternalError, "Unsupported numpy type: NPY_DATETIME"),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "tout", "cls", "words"), WRONG)
async def test_results_of_the_wrong_kind(
    graph: aiotf.Graph,
    evaluate: Evaluate,
    fn: Callable[[], Any],
    tout: Any,
    cls: type[errors.OpError],
    words: str,
) -> None:
    y = aiotf.py_func(fn, [], tout, name="f")
    with pytest.raises(cls) as info:
        await evaluate(y)
    assert info.value.message.startswith(f"{words.format(token_of(y))}\n\t [[{{{{node f}}}}]]")
    assert info.value.node_def.name == "f"


async def test_async_results_are_checked_the_same_way(
    graph: aiotf.Graph, evaluate: Evaluate
) -> None:
    async def double() -> float:
        return 3.0

    y = aiotf.async_py_func(double, [], aiotf.float32, name="f")
    words = f"0-th value returned by {token_of(y)} is double, but expects float"
    with pytest.raises(errors.InvalidArgumentError, match=words):
        await evaluate(y)


# -- exceptions ---------------------------------------------------------------------------------


def boom(v: Any) -> Any:
    raise ValueError("boom")


async def test_an_exception_carries_the_python_traceback(
    graph: aiotf.Graph, evaluate: Evaluate
) -> None:
    y = aiotf.py_func(boom, [1.0], aiotf.float32, name="mypf")
    with pytest.raises(errors.InvalidArgumentError) as info:
        await evaluate(y)
    message = info.value.message
    # TensorFlow's layout: "<Type>: <text>", the traceback's parts joined by blank lines.
    assert message.startswith("ValueError: boom\nTraceback (most recent call last):\n\n  File ")
    assert '    raise ValueError("boom")\n\nValueError: boom\n\n\n\t [[{{node mypf}}]]' in message
    assert ", in boom\n" in message
    assert info.value.node_def.name == "mypf" and info.value.op is y.op


class Failure(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "cls"),
    [
        (TypeError("t"), errors.InvalidArgumentError),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), errors.InvalidArgumentError),
        (StopIteration("s"), errors.OutOfRangeError),
        (NotImplementedError("n"), errors.UnimplementedError),
        (MemoryError("m"), errors.ResourceExhaustedError),
        (RuntimeError("r"), errors.UnknownError),
        (KeyError("k"), errors.UnknownError),
        (IndexError("i"), errors.UnknownError),
        (ZeroDivisionError("z"), errors.UnknownError),
        (Failure("f"), errors.UnknownError),
        (errors.NotFoundError(None, None, "nf"), errors.UnknownError),
    ],
    ids=lambda v: type(v).__name__,
)
async def test_exception_classes_map_as_in_tensorflow(
    graph: aiotf.Graph, evaluate: Evaluate, exc: Exception, cls: type[errors.OpError]
) -> None:
    def raiser() -> None:
        raise exc

    y = aiotf.py_func(raiser, [], aiotf.float32, name="n")
    with pytest.raises(errors.OpError) as info:
        await evaluate(y)
    assert type(info.value) is cls
    assert info.value.message.startswith(f"{type(exc).__name__}: {exc}\nTraceback")


async def test_an_async_exception_carries_its_traceback(
    graph: aiotf.Graph, evaluate: Evaluate
) -> None:
    async def fetch_row(v: Any) -> Any:
        await asyncio.sleep(0)
        raise LookupError("no such row")

    y = aiotf.async_py_func(fetch_row, [1.0], aiotf.float32, name="query")
    with pytest.raises(errors.UnknownError) as info:
        await evaluate(y)
    assert info.value.message.startswith("LookupError: no such row\nTraceback")
    assert ", in fetch_row\n" in info.value.message
    assert "\n\t [[{{node query}}]]" in info.value.message


async def test_a_coroutine_from_py_func_is_an_error(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    async def later() -> int:
        return 1

    y = aiotf.py_func(lambda: later(), [], aiotf.int64)
    with pytest.raises(errors.InvalidArgumentError, match="returned a coroutine"):
        await evaluate(y)


# -- async_py_func ------------------------------------------------------------------------------


async def test_the_graph_awaits_the_coroutine(graph: aiotf.Graph) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    loop_threads: list[threading.Thread] = []

    async def wait_then_add(v: Any) -> Any:
        loop_threads.append(threading.current_thread())
        entered.set()
        await release.wait()
        await asyncio.sleep(0)
        return v + np.float32(1)

    y = aiotf.async_py_func(wait_then_add, [aiotf.constant(1.0)], aiotf.float32)
    z = y * 2
    async with aiotf.Session(graph=graph) as sess:
        run = asyncio.create_task(sess.run(z))
        await entered.wait()
        assert not run.done()  # the step awaits the coroutine; the loop is free
        release.set()
        assert await run == np.float32(4.0)
    assert loop_threads == [threading.current_thread()]


@pytest.fixture
async def echo_server() -> AsyncIterator[tuple[str, int]]:
    """A loopback TCP server echoing one line per connection."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    async with server:
        host, port = server.sockets[0].getsockname()[:2]
        yield host, port


async def echo_line(address: tuple[str, int], line: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(*address)
    try:
        writer.write(line + b"\n")
        await writer.drain()
        return (await reader.readline()).rstrip(b"\n")
    finally:
        writer.close()
        await writer.wait_closed()


async def test_a_graph_awaits_loopback_io(graph: aiotf.Graph, echo_server: tuple[str, int]) -> None:
    async def ask(word: bytes) -> bytes:
        return await echo_line(echo_server, word)

    word = aiotf.placeholder(aiotf.string, [])
    answer = aiotf.async_py_func(ask, [word], aiotf.string)
    shout = aiotf.py_func(lambda a: a.upper(), [answer], aiotf.string)
    async with aiotf.Session(graph=graph) as sess:
        assert await sess.run([answer, shout], {word: b"ping"}) == [b"ping", b"PING"]


async def test_concurrent_runs_await_their_io_together(
    graph: aiotf.Graph, echo_server: tuple[str, int]
) -> None:
    n = 50
    active, peak, all_in = 0, 0, asyncio.Event()

    async def visit(i: Any) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == n:
            all_in.set()
        try:
            await all_in.wait()  # only if every run is awaiting here at once
            return np.int64(await echo_line(echo_server, str(i).encode()))
        finally:
            active -= 1

    x = aiotf.placeholder(aiotf.int64, [])
    y = aiotf.async_py_func(visit, [x], aiotf.int64) + 1
    async with aiotf.Session(graph=graph) as sess, asyncio.timeout(30):
        got = await asyncio.gather(*(sess.run(y, {x: i}) for i in range(n)))
    assert got == [i + 1 for i in range(n)]
    assert peak == n and active == 0


async def test_cancelling_the_run_cancels_the_coroutine(graph: aiotf.Graph) -> None:
    entered, outcomes = asyncio.Event(), []

    async def wait_forever(block: Any) -> Any:
        if not block:
            return np.int64(0)
        entered.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            raise
        return np.int64(1)

    block = aiotf.placeholder(aiotf.bool, [])
    y = aiotf.async_py_func(wait_forever, [block], aiotf.int64)
    async with aiotf.Session(graph=graph) as sess:
        run = asyncio.create_task(sess.run(y, {block: True}))
        await entered.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert outcomes == ["cancelled"]
        assert await sess.run(y, {block: False}) == 0  # the next run works


async def test_a_coroutine_swallowing_cancellation_still_ends_the_run(graph: aiotf.Graph) -> None:
    entered = asyncio.Event()

    async def stubborn() -> Any:
        entered.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.get_running_loop().create_future()
        return np.int64(1)

    y = aiotf.async_py_func(stubborn, [], aiotf.int64)
    async with aiotf.Session(graph=graph) as sess:
        run = asyncio.create_task(sess.run(y))
        await entered.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run


async def test_a_failing_node_cancels_the_awaiting_coroutine(graph: aiotf.Graph) -> None:
    entered, outcomes = asyncio.Event(), []

    async def wait_forever() -> Any:
        entered.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            raise

    async def fail_after_entered() -> Any:
        await entered.wait()
        raise ValueError("the other node failed")

    waiting = aiotf.async_py_func(wait_forever, [], aiotf.int64)
    failing = aiotf.async_py_func(fail_after_entered, [], aiotf.int64, name="failing")
    async with aiotf.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="the other node failed") as info:
            await sess.run([waiting, failing])
    assert info.value.node_def.name == "failing"
    assert outcomes == ["cancelled"]


# -- in control flow and the optimizer ----------------------------------------------------------


async def test_in_a_while_loop(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    calls: list[int] = []

    def step(i: Any) -> Any:
        calls.append(int(i))
        return i + np.int32(1)

    async def total(i: Any, acc: Any) -> Any:
        await asyncio.sleep(0)
        return acc + i

    def body(i: aiotf.Tensor, acc: aiotf.Tensor) -> Any:
        return aiotf.py_func(step, [i], aiotf.int32), aiotf.async_py_func(
            total, [i, acc], aiotf.int32
        )

    i, acc = aiotf.while_loop(lambda i, acc: i < 5, body, [aiotf.constant(0), aiotf.constant(0)])
    assert await evaluate([i, acc]) == [5, 10]
    assert calls == [0, 1, 2, 3, 4]


async def test_in_a_cond_only_the_taken_branch_calls(graph: aiotf.Graph) -> None:
    calls: list[str] = []

    def branch(tag: str) -> Callable[[], aiotf.Tensor]:
        def fn() -> Any:
            calls.append(tag)
            return np.float32(1 if tag == "true" else 2)

        return lambda: aiotf.py_func(fn, [], aiotf.float32)

    p = aiotf.placeholder(aiotf.bool, [])
    out = aiotf.cond(p, branch("true"), branch("false"))
    async with aiotf.Session(graph=graph) as sess:
        assert await sess.run(out, {p: True}) == 1
        assert await sess.run(out, {p: False}) == 2
    assert calls == ["true", "false"]


async def test_stateful_is_never_folded_stateless_may_be(graph: aiotf.Graph) -> None:
    calls = {"stateful": 0, "stateless": 0}

    def counted(kind: str) -> Callable[[Any], Any]:
        def fn(v: Any) -> Any:
            calls[kind] += 1
            return v * 2

        return fn

    c = aiotf.constant(1.0)
    stateful = aiotf.py_func(counted("stateful"), [c], aiotf.float32)
    stateless = aiotf.py_func(counted("stateless"), [c], aiotf.float32, stateful=False)
    async with aiotf.Session(graph=graph) as sess:
        for _ in range(3):
            assert await sess.run([stateful, stateless]) == [2.0, 2.0]
    # As TensorFlow: the stateful one runs every time, the stateless one was folded once.
    assert calls == {"stateful": 3, "stateless": 1}


# -- tokens and GraphDefs -----------------------------------------------------------------------


async def test_graph_def_round_trip_in_process(graph: aiotf.Graph) -> None:
    async def add_async(v: Any) -> Any:
        return v + np.float32(1)

    y = aiotf.py_func(lambda v: v * 3, [aiotf.constant(2.0)], aiotf.float32, name="y")
    aiotf.async_py_func(add_async, [y], aiotf.float32, name="z")
    graph_def = aiotf.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    g2 = aiotf.Graph()
    with g2.as_default():
        aiotf.import_graph_def(graph_def, name="copy")
    async with aiotf.Session(graph=g2) as sess:
        assert await sess.run(["copy/y:0", "copy/z:0"]) == [6.0, 7.0]


async def test_a_token_this_process_does_not_know(graph: aiotf.Graph, evaluate: Evaluate) -> None:
    # What a GraphDef written by another process meets.
    lost = graph.create_op(
        "PyFunc",
        [aiotf.constant(1.0)],
        {"token": b"pyfunc_999999", "Tout": [aiotf.float32]},
        name="lost",
    )
    with pytest.raises(errors.InvalidArgumentError) as info:
        await evaluate(lost.outputs[0])
    words = "ValueError: Could not find callback with key=pyfunc_999999 in the registry."
    assert info.value.message.startswith(f"{words}\nTraceback (most recent call last):\n\n")
    assert f"{words}\n\n\n\t [[{{{{node lost}}}}]]" in info.value.message


async def test_a_function_lives_as_long_as_its_graph() -> None:
    g1 = aiotf.Graph()
    with g1.as_default():
        aiotf.py_func(lambda v: v, [aiotf.constant(1.0)], aiotf.float32, name="y")
    graph_def = g1.as_graph_def()
    token = graph_def.node[1].attr["token"].s.decode()
    assert py_funcs.get(token) is not None
    del g1
    gc.collect()
    assert py_funcs.get(token) is None
    g2 = aiotf.Graph()
    with g2.as_default():
        aiotf.import_graph_def(graph_def, name="")
    async with aiotf.Session(graph=g2) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=f"key={token} in the registry"):
            await sess.run("y:0")


async def test_a_plain_function_keeps_its_tokens_after_its_graph(evaluate: Evaluate) -> None:
    g1 = aiotf.Graph()
    with g1.as_default():
        aiotf.py_func(boom, [aiotf.constant(1.0)], aiotf.float32, name="y")
    graph_def = g1.as_graph_def()
    del g1
    gc.collect()
    g2 = aiotf.Graph()
    with g2.as_default():
        aiotf.import_graph_def(graph_def, name="")
    async with aiotf.Session(graph=g2) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="ValueError: boom"):
            await sess.run("y:0")  # the token still finds ``boom``


@two_cpus  # the pool binds its threads only with two CPUs or more
async def test_a_py_funcs_code_and_the_threads_it_starts_may_run_on_any_cpu(
    graph: aiotf.Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's threads are bound one a CPU (``device.pool_cpus``); a py_func's are not, nor
    are the threads it starts, which would inherit the one CPU."""
    monkeypatch.delenv(device.PIN_ENV, raising=False)
    monkeypatch.setattr(device, "_bound_device", None)  # whatever other tests left open

    def cpus(_: Any) -> np.ndarray:
        seen: list[set[int]] = []
        thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        thread.start()
        thread.join()
        return np.array([len(os.sched_getaffinity(0)), len(seen[0])], np.int64)

    out = aiotf.py_func(cpus, [aiotf.constant(0)], aiotf.int64)
    allowed = len(os.sched_getaffinity(0))
    config = aiotf.ConfigProto(inter_op_parallelism_threads=allowed)  # bound: one a CPU
    async with aiotf.Session(graph=graph, config=config) as sess:
        assert (await sess.run(out)).tolist() == [allowed, allowed]
