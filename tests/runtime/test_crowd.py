"""Steps of one compiled program crowded in a turn run it once, stacked (``runtime/crowd.py``):
each gets the very bytes it gets alone, its own arrays, its own error; what cannot stack runs
alone as before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.ops.op_helper import apply_op
from aiotf.runtime import crowd, loop_turns
from tests.runtime import test_lockstep
from tests.runtime.test_lockstep import crowd as crowded
from tests.runtime.test_lockstep import ticking

Array = np.ndarray[Any, Any]
F32 = np.float32


def ticks() -> int:
    """The loop's iterations so far, counted by ``ticking``'s ticker."""
    return test_lockstep.ticks


@pytest.fixture(autouse=True)
def one_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each crowd of these tests runs as one stacked slice (but in the test of slices)."""
    monkeypatch.setattr(crowd, "SLICE_SECONDS", 10.0)
    monkeypatch.setattr(crowd, "FIRST_SLICE", 1000)


def stacked_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every crowd slice that ran stacked (its rows handed out), in order."""
    sizes: list[int] = []
    real = crowd._rows

    def rows(retvals: Any, n: int) -> Any:
        handed_out = real(retvals, n)
        sizes.append(n)
        return handed_out

    monkeypatch.setattr(crowd, "_rows", rows)
    return sizes


async def alone_then_crowded(
    monkeypatch: pytest.MonkeyPatch,
    sess: aiotf.Session,
    fetch: Any,
    feeds: list[dict[Any, Any]],
) -> tuple[list[Any], list[Any]]:
    """Each feed's result run alone, then all of them as one gather whose runs after the first
    are let go together (a crowd)."""
    alone = [await sess.run(fetch, feed) for feed in feeds]
    run = crowded(monkeypatch, len(feeds))
    together = await asyncio.gather(
        *(run(i, sess.run(fetch, feed)) for i, feed in enumerate(feeds)), return_exceptions=True
    )
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.002)
    return alone, list(together)


async def crowded_as_alone(
    monkeypatch: pytest.MonkeyPatch,
    sess: aiotf.Session,
    fetch: Any,
    feeds: list[dict[Any, Any]],
) -> None:
    """``alone_then_crowded``, each crowded result the very bytes of the same run alone."""
    alone, together = await alone_then_crowded(monkeypatch, sess, fetch, feeds)
    for got, want in zip(together, alone, strict=True):
        assert_same_bytes(got, want)


def assert_same_bytes(got: Any, want: Any) -> None:
    assert isinstance(got, np.ndarray) and isinstance(want, np.ndarray)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert got.tobytes() == want.tobytes()


def mlp(rng: np.random.Generator) -> tuple[aiotf.Graph, aiotf.Tensor, aiotf.Tensor]:
    """mlp_b1's shape, smaller: MatMul, BiasAdd, Relu twice, then a MatMul, BiasAdd, Softmax."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[1, 96], name="x")
        h = x
        for fan_in, width in ((96, 64), (64, 48)):
            w = aiotf.constant(rng.standard_normal((fan_in, width)).astype(F32))
            b = aiotf.constant(rng.standard_normal(width).astype(F32))
            h = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(h, w), b))
        w = aiotf.constant(rng.standard_normal((48, 10)).astype(F32))
        b = aiotf.constant(rng.standard_normal(10).astype(F32))
        y = aiotf.nn.softmax(aiotf.nn.bias_add(aiotf.matmul(h, w), b), name="y")
    return g, x, y


async def test_a_crowd_of_one_row_requests_runs_stacked_with_the_bytes_of_each_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(12)]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        await crowded_as_alone(monkeypatch, sess, y, feeds)
        # The first run had its turn alone; the eleven let go together ran as one.
        assert sizes == [11]
        await crowded_as_alone(monkeypatch, sess, y, feeds)
        assert sizes == [11, 11]


# Each op a crowd stacks, on a fed operand of awkward lengths (numpy's SIMD loops have tails)
# beside constants, broadcasting either way: (fed shape, builder of the fetch from x).
Build = Callable[[aiotf.Tensor, np.random.Generator], aiotf.Tensor]


def _const(rng: np.random.Generator, *shape: int) -> aiotf.Tensor:
    return aiotf.constant(rng.standard_normal(shape).astype(F32))


def _unary(op: str) -> Build:
    return lambda x, rng: apply_op(op, [x], name="y").outputs[0]


def _binary(op: str, shape: tuple[int, ...], const_first: bool = False) -> Build:
    def build(x: aiotf.Tensor, rng: np.random.Generator) -> aiotf.Tensor:
        c = _const(rng, *shape)
        return apply_op(op, [c, x] if const_first else [x, c], name="y").outputs[0]

    return build


BINARY = ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference")
UNARY = [op for op in crowd._ELEMENTWISE_OPS if op not in BINARY and op != "Cast"]
CASES: list[tuple[str, tuple[int, ...], Build]] = [
    *((op, (1, 37), _unary(op)) for op in UNARY),
    *((op, (7,), _binary(op, (2, 7))) for op in BINARY[:5]),
    *((op, (3, 1), _binary(op, (5,), const_first=True)) for op in BINARY[5:]),
    ("Cast", (1, 19), lambda x, rng: aiotf.cast(x, aiotf.float64, name="y")),
    ("BiasAdd", (2, 3, 17), lambda x, rng: aiotf.nn.bias_add(x, _const(rng, 17), name="y")),
    ("Softmax", (1, 10), lambda x, rng: aiotf.nn.softmax(x, name="y")),
    ("LogSoftmax", (2, 33), lambda x, rng: aiotf.nn.log_softmax(x, name="y")),
    ("Reshape", (1, 4, 6), lambda x, rng: aiotf.reshape(x, [-1, 24], name="y")),
    ("ExpandDims", (1, 7), lambda x, rng: aiotf.expand_dims(x, 1, name="y")),
    ("Squeeze", (1, 7), lambda x, rng: aiotf.squeeze(x, [0], name="y")),
    ("ArgMax", (2, 9), lambda x, rng: aiotf.argmax(x, axis=1, name="y")),
    ("ArgMin", (2, 9), lambda x, rng: aiotf.argmin(x, axis=-2, name="y")),
    ("MatMul", (1, 40), lambda x, rng: aiotf.matmul(x, _const(rng, 40, 24), name="y")),
    ("MatMul", (1, 40), lambda x, rng: aiotf.matmul(
        x, _const(rng, 24, 40), transpose_b=True, name="y")),
    # the remapper's pair of MatMuls (its fused node is the second one's: ``y``)
    ("_FusedMatMulPair", (1, 40), lambda x, rng: aiotf.matmul(aiotf.nn.relu(aiotf.nn.bias_add(
        aiotf.matmul(x, _const(rng, 40, 24)), _const(rng, 24))), _const(rng, 24, 9), name="y")),
    ("_FusedMatMulPair", (1, 40), lambda x, rng: aiotf.matmul(aiotf.nn.relu(
        aiotf.matmul(x, _const(rng, 40, 24))), _const(rng, 24, 9), name="y")),
]  # fmt: skip
# The op of the graph's node that becomes the one a case stacks (the rest are their own).
GRAPH_OP = {"_FusedMatMulPair": "MatMul"}


def test_every_rule_has_a_case() -> None:
    assert {op for op, _, _ in CASES} == set(crowd._RULES)


@pytest.mark.parametrize(("op", "shape", "build"), CASES, ids=[c[0] for c in CASES])
async def test_each_op_stacks_as_each_step_computes_it_alone(
    op: str, shape: tuple[int, ...], build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=shape, name="x")
        y = build(x, rng)
    assert y.op.type == GRAPH_OP.get(op, op)
    feeds = [{x: (rng.standard_normal(shape) * 3).astype(F32)} for _ in range(6)]
    sizes = stacked_runs(monkeypatch)
    stacked_ops: set[str] = set()
    real = crowd._stacked_call

    def noted(node: Any, data: Any, flags: Any) -> Any:
        stacked_ops.add(node.node.op)
        return real(node, data, flags)

    monkeypatch.setattr(crowd, "_stacked_call", noted)
    async with aiotf.Session(graph=g) as sess:
        for _ in range(2):  # checked against each alone, then trusted: stacked again
            await crowded_as_alone(monkeypatch, sess, y, feeds)
    assert sizes == [5, 5]
    assert op in stacked_ops


async def test_what_cannot_stack_runs_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rows at a MatMul (alone, BLAS multiplies them as a matrix), a fed right operand,
    and a stateful op (each step adds to a variable): each step runs its own program."""
    rng = np.random.default_rng(5)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, 8], name="x")
        w = aiotf.placeholder(aiotf.float32, shape=[8, 4], name="w")
        rows = aiotf.matmul(x, _const(rng, 8, 4))
        fed_right = aiotf.matmul(x, w)
        counter = aiotf.Variable(np.zeros(8, F32))
        counted = x + aiotf.assign_add(counter, np.ones(8, F32))
    sizes = stacked_runs(monkeypatch)
    two_rows = [{x: rng.standard_normal((2, 8)).astype(F32)} for _ in range(5)]
    one_row = [{x: rng.standard_normal((1, 8)).astype(F32), w: _w} for _w in
               [rng.standard_normal((8, 4)).astype(F32) for _ in range(5)]]  # fmt: skip
    async with aiotf.Session(graph=g) as sess:
        await crowded_as_alone(monkeypatch, sess, rows, two_rows)
        await crowded_as_alone(monkeypatch, sess, fed_right, one_row)
        await sess.run(aiotf.global_variables_initializer())
        same = [{x: np.ones((1, 8), F32)} for _ in range(5)]
        await alone_then_crowded(monkeypatch, sess, counted, same)
        # each step added its own ones: five alone, five crowded
        np.testing.assert_array_equal(await sess.run(counter), np.full(8, 10.0, F32))
    assert sizes == []


async def test_a_bad_feed_fails_alone_and_the_rest_of_its_crowd_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(9)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[1, None], name="x")
        y = aiotf.nn.relu(aiotf.matmul(x, _const(rng, 6, 3)), name="y")
    good = [{x: rng.standard_normal((1, 6)).astype(F32)} for _ in range(4)]
    bad = [{x: np.ones((1, 5), F32)} for _ in range(3)]  # 5 columns against 6 rows
    feeds = [good[0], bad[0], good[1], bad[1], good[2], bad[2], good[3]]
    async with aiotf.Session(graph=g) as sess:
        want = [await sess.run(y, feed) for feed in good]
        run = crowded(monkeypatch, len(feeds))
        outs = await asyncio.gather(
            *(run(i, sess.run(y, feed)) for i, feed in enumerate(feeds)), return_exceptions=True
        )
        for i in (1, 3, 5):
            assert isinstance(outs[i], errors.InvalidArgumentError)
            assert "Matrix size-incompatible" in str(outs[i]) and "MatMul" in str(outs[i])
        for got, expected in zip(outs[::2], want, strict=True):
            assert_same_bytes(got, expected)
        monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.002)
        assert_same_bytes(await sess.run(y, good[1]), want[1])  # the next run works


async def test_each_step_gets_its_own_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its rows of a stacked value are copies of its own, as alone: no view that keeps the
    crowd's stacked array alive, nothing another step's writes can change."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[3], name="x")
        c = aiotf.exp(aiotf.constant(np.arange(3, dtype=F32)))
        y = aiotf.identity(x) * 2.0
    feeds = [{x: np.full(3, i, F32)} for i in range(6)]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        _, together = await alone_then_crowded(monkeypatch, sess, [y, c], feeds)
    assert sizes == [5]
    arrays = [out for pair in together for out in pair]
    assert all(out.flags.owndata and out.flags.writeable for out in arrays)
    assert len({id(out) for out in arrays}) == len(arrays)
    together[1][0][:] = -1.0
    together[1][1][:] = -1.0
    for i, (out_y, out_c) in enumerate(together):
        if i != 1:
            np.testing.assert_array_equal(out_y, np.full(3, 2.0 * i, F32))
            np.testing.assert_array_equal(out_c, np.exp(np.arange(3, dtype=F32)))


async def test_a_check_that_finds_other_bytes_turns_the_crowd_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A numpy whose stacked results differ in the last bit: the first crowd's check sees it,
    every step gets what it computed alone, and later crowds run alone. (Each op's, as a
    product's last bit alone can vanish in the ops after it.)"""
    rng = np.random.default_rng(2)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(6)]
    real = crowd._stacked_call

    def off_by_a_bit(node: Any, data: Any, flags: Any) -> Any:
        return np.nextafter(real(node, data, flags), np.inf)

    monkeypatch.setattr(crowd, "_stacked_call", off_by_a_bit)
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        await crowded_as_alone(monkeypatch, sess, y, feeds)
        assert sizes == [5]  # stacked once, checked, then no more
        await crowded_as_alone(monkeypatch, sess, y, feeds)
    assert sizes == [5]


async def test_a_step_cancelled_in_its_crowd_leaves_the_others_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(4)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(6)]
    tasks: list[asyncio.Task[Any]] = []
    real = crowd.Crowd._run

    def run_crowd(self: crowd.Crowd, key: Any) -> None:
        tasks[2].cancel()  # waiting in the crowd
        real(self, key)

    async with aiotf.Session(graph=g) as sess:
        alone = [await sess.run(y, feed) for feed in feeds]
        monkeypatch.setattr(crowd.Crowd, "_run", run_crowd)
        run = crowded(monkeypatch, len(feeds))
        tasks.extend(asyncio.create_task(run(i, sess.run(y, f))) for i, f in enumerate(feeds))
        outs = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(outs[2], asyncio.CancelledError)
        for i in (0, 1, 3, 4, 5):
            assert_same_bytes(outs[i], alone[i])
        monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.002)
        assert_same_bytes(await sess.run(y, feeds[2]), alone[2])


async def test_a_big_crowd_runs_in_slices_an_iteration_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each slice holds the loop about SLICE_SECONDS (here: the fewest steps, two, then three
    rather than leave one alone), with an iteration of the loop between two."""
    monkeypatch.setattr(crowd, "SLICE_SECONDS", 0.0)
    monkeypatch.setattr(crowd, "FIRST_SLICE", 2)
    rng = np.random.default_rng(6)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(8)]
    slices: list[tuple[int, int]] = []
    real = crowd._rows

    def rows(retvals: Any, n: int) -> Any:
        slices.append((n, ticks()))
        return real(retvals, n)

    monkeypatch.setattr(crowd, "_rows", rows)
    async with aiotf.Session(graph=g) as sess:
        alone = [await sess.run(y, feed) for feed in feeds]
        run = crowded(monkeypatch, len(feeds))
        together = await ticking(
            asyncio.gather(*(run(i, sess.run(y, feed)) for i, feed in enumerate(feeds)))
        )
    for got, want in zip(together, alone, strict=True):
        assert_same_bytes(got, want)
    assert [n for n, _ in slices] == [2, 2, 3]
    ticked = [t for _, t in slices]
    assert ticked == sorted(set(ticked))  # each slice in an iteration of its own


async def test_a_burst_within_one_turn_is_a_crowd_after_its_first_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs of several tasks started in one iteration of the loop, all within the turn's time:
    the first runs alone (no other has started yet), the rest as one crowd."""
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 10.0)
    rng = np.random.default_rng(8)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(6)]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        alone = [await sess.run(y, feed) for feed in feeds]
        together = await asyncio.gather(*(sess.run(y, feed) for feed in feeds))
    for got, want in zip(together, alone, strict=True):
        assert_same_bytes(got, want)
    assert sizes == [5]


async def test_runs_one_after_another_never_join_a_crowd(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs awaited one after another in a task, all within one turn of the loop: none waits
    for a crowd (which would cost it an iteration of the loop for nothing)."""
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 10.0)
    rng = np.random.default_rng(8)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(6)]
    joined = 0
    real = crowd.Crowd.ran

    async def ran(self: crowd.Crowd, ctx: Any) -> bool:
        nonlocal joined
        joined += 1
        return await real(self, ctx)

    monkeypatch.setattr(crowd.Crowd, "ran", ran)
    async with aiotf.Session(graph=g) as sess:
        for feed in feeds:
            await sess.run(y, feed)
    assert joined == 0


async def test_a_product_a_step_alone_sends_to_the_pool_is_not_stacked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One row by a 2048x2048 weight costs a step more than POOL_MIN_COST: alone, it runs in
    the pool; stacked, the crowd's products would hold the loop's thread. So such steps run
    alone."""
    rng = np.random.default_rng(12)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[1, 2048], name="x")
        y = aiotf.nn.relu(aiotf.matmul(x, _const(rng, 2048, 2048)), name="y")
    feeds = [{x: rng.standard_normal((1, 2048)).astype(F32)} for _ in range(4)]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        for _ in range(2):
            await crowded_as_alone(monkeypatch, sess, y, feeds)
    assert sizes == []


SHARED = Path(__file__).resolve().parents[3] / "shared"


async def test_the_tensorflow_written_mlp_b1_stacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's mlp_b1 as TensorFlow wrote it (its Placeholder, attrs and names as
    imported): a crowd of its requests runs stacked, each with the bytes it gets alone."""
    path = SHARED / "bench" / "graphs" / "mlp_b1.pb"
    if not path.is_file():
        pytest.skip("the shared benchmark graphs are not beside this checkout")
    graph_def = aiotf.GraphDef()
    graph_def.ParseFromString(path.read_bytes())
    g = aiotf.Graph()
    with g.as_default():
        aiotf.import_graph_def(graph_def, name="")
    x, y = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("out:0")
    rng = np.random.default_rng(5)
    feeds = [{x: rng.standard_normal((1, 784)).astype(F32)} for _ in range(24)]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        await crowded_as_alone(monkeypatch, sess, y, feeds)
    assert sizes == [23]


async def test_two_feeds_of_different_ranks_stack_and_broadcast_as_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two stacked operands, a row (4,) and a column (3, 1): each step's sum is its (3, 4)."""
    rng = np.random.default_rng(13)
    g = aiotf.Graph()
    with g.as_default():
        row = aiotf.placeholder(aiotf.float32, shape=[4], name="row")
        column = aiotf.placeholder(aiotf.float32, shape=[3, 1], name="column")
        y = aiotf.nn.relu(row + column, name="y")
    feeds = [
        {row: rng.standard_normal(4).astype(F32), column: rng.standard_normal((3, 1)).astype(F32)}
        for _ in range(5)
    ]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        alone, together = await alone_then_crowded(monkeypatch, sess, y, feeds)
    for got, want in zip(together, alone, strict=True):
        assert got.shape == (3, 4)
        assert_same_bytes(got, want)
    assert sizes == [4]


async def test_a_step_joining_a_crowd_spends_its_share_of_the_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each step that joins counts a step's share of the stacked run (once one was timed: the
    first crowd's check is not) against its turn (``loop_turns.spend``)."""
    spent: list[float] = []
    real = loop_turns.spend

    def spend(seconds: float) -> None:
        spent.append(seconds)
        real(seconds)

    monkeypatch.setattr(loop_turns, "spend", spend)
    rng = np.random.default_rng(14)
    g, x, y = mlp(rng)
    feeds = [{x: rng.standard_normal((1, 96)).astype(F32)} for _ in range(6)]
    async with aiotf.Session(graph=g) as sess:
        for _ in range(3):
            await alone_then_crowded(monkeypatch, sess, y, feeds)
    assert len(spent) == 15
    assert spent[:10] == [0.0] * 10  # the first two crowds: no slice timed yet
    assert all(0.0 < seconds < 0.01 for seconds in spent[10:])


async def test_a_callables_concurrent_runs_crowd_as_runs_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``make_callable`` (what ``aiotf serve`` runs a request with) takes its turn in the
    session's step, and its concurrent runs stack as ``run``'s do."""
    rng = np.random.default_rng(15)
    g, x, y = mlp(rng)
    rows = [rng.standard_normal((1, 96)).astype(F32) for _ in range(6)]
    sizes = stacked_runs(monkeypatch)
    async with aiotf.Session(graph=g) as sess:
        predict = sess.make_callable(y, [x])
        alone = [await predict(row) for row in rows]
        run = crowded(monkeypatch, len(rows))
        together = await asyncio.gather(*(run(i, predict(row)) for i, row in enumerate(rows)))
    for got, want in zip(together, alone, strict=True):
        assert_same_bytes(got, want)
    assert sizes == [5]
