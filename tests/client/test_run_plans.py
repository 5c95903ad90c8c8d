"""Run plans (``client/run_plan.py``): each run signature is analysed once, and a cached analysis
never changes what a run returns or raises. Plus turn-taking of many runs started at once
(``runtime/loop_turns.py``)."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import attrs
import numpy as np
import pytest

import aiotf
from aiotf.client import run_plan
from aiotf.framework import errors
from aiotf.runtime import loop_turns


class Model(NamedTuple):
    graph: aiotf.Graph
    x: aiotf.Tensor
    y: aiotf.Tensor  # x * 2
    z: aiotf.Tensor  # y + 1
    init: aiotf.Operation


class Pair(NamedTuple):
    first: Any
    second: Any


@attrs.define
class Fields:
    a: Any
    b: Any


@pytest.fixture
def m() -> Model:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, 2], name="x")
        y = aiotf.multiply(x, 2.0, name="y")
        z = aiotf.add(y, 1.0, name="z")
        init = aiotf.no_op(name="init")
    return Model(g, x, y, z, init)


@pytest.fixture
async def sess(m: Model) -> AsyncIterator[aiotf.Session]:
    async with aiotf.Session(graph=m.graph) as session:
        yield session


X = np.array([[1.0, 2.0]], np.float32)


def count_analyses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record every fetch analysis (``FetchMapper.for_fetch`` at the top of a structure)."""
    calls: list[Any] = []
    real = run_plan.RunPlan.analyse

    def analyse(fetches: Any, feed_dict: Any, graph: Any) -> Any:
        calls.append(fetches)
        return real(fetches, feed_dict, graph)

    monkeypatch.setattr(run_plan.RunPlan, "analyse", staticmethod(analyse))
    return calls


async def test_a_signature_is_analysed_once(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_analyses(monkeypatch)
    for i in range(3):
        np.testing.assert_allclose(await sess.run(m.z, {m.x: X * i}), X * i * 2 + 1)
        y, named = await sess.run([m.y, {"z": m.z}], {m.x: X * i})
        np.testing.assert_allclose(y, X * i * 2)
        np.testing.assert_allclose(named["z"], X * i * 2 + 1)
    assert len(calls) == 2
    await sess.run(m.z, {"x:0": X})  # the same tensor fed by name: another signature
    await sess.run("z:0", {m.x: X})
    assert len(calls) == 4


async def test_keys_rebuilt_from_the_call_see_a_list_mutated_between_runs(
    sess: aiotf.Session, m: Model
) -> None:
    fetches: list[Any] = [m.y]
    feed = {m.x: X}
    assert len(await sess.run(fetches, feed)) == 1
    fetches.append(m.z)
    y, z = await sess.run(fetches, feed)
    np.testing.assert_allclose(z, X * 2 + 1)
    fetches[0] = m.init
    assert (await sess.run(fetches, feed))[0] is None
    named = {"a": m.y}
    await sess.run(named, feed)
    named["b"] = m.z
    assert list(await sess.run(named, feed)) == ["a", "b"]
    del named["a"]
    assert list(await sess.run(named, feed)) == ["b"]


async def test_equal_structures_of_other_types_keep_their_types(
    sess: aiotf.Session, m: Model
) -> None:
    feed = {m.x: X}
    assert type(await sess.run([m.y, m.z], feed)) is list
    assert type(await sess.run((m.y, m.z), feed)) is tuple
    assert type(await sess.run(Pair(m.y, m.z), feed)) is Pair
    assert type(await sess.run(collections.OrderedDict(a=m.y), feed)) is collections.OrderedDict
    assert type(await sess.run({"a": m.y}, feed)) is dict
    ordered = await sess.run({"b": m.z, "a": m.y}, feed)
    assert list(ordered) == ["b", "a"]
    assert list(await sess.run({"a": m.y, "b": m.z}, feed)) == ["a", "b"]
    fields = await sess.run(Fields(m.y, [m.z]), feed)
    assert type(fields) is Fields and type(fields.b) is list
    for _ in range(2):
        default = await sess.run(collections.defaultdict(list, {"a": m.y}), feed)
        assert default.default_factory is list
        default = await sess.run(collections.defaultdict(int, {"a": m.y}), feed)
        assert default.default_factory is int
    assert list(await sess.run({"a": m.y}, feed)) == ["a"]
    assert list(await sess.run({"b": m.y}, feed)) == ["b"]
    # Keys equal in value but not in type are not one signature.
    assert list(await sess.run({1: m.y}, feed)) == [1]
    assert type(next(iter(await sess.run({True: m.y}, feed)))) is bool


async def test_a_variable_fetch_follows_its_conversion(sess: aiotf.Session, m: Model) -> None:
    with m.graph.as_default():
        v = aiotf.Variable(np.float32(3.0), name="v")
    await sess.run(v.initializer)
    for _ in range(2):
        assert await sess.run(v) == np.float32(3.0)
        assert await sess.run([v, v.initializer]) == [np.float32(3.0), None]


async def test_the_graph_growing_after_a_run(sess: aiotf.Session, m: Model) -> None:
    feed = {m.x: X}
    await sess.run(m.z, feed)
    with pytest.raises((KeyError, ValueError)):
        await sess.run("later:0", feed)  # a failed analysis is never stored
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
        await sess.run(m.z, {"fed_later:0": X})
    with m.graph.as_default():
        later = aiotf.negative(m.z, name="later")
        fed_later = aiotf.placeholder(aiotf.float32, name="fed_later")
        aiotf.identity(fed_later, name="echo")
    np.testing.assert_allclose(await sess.run("later:0", feed), -(X * 2 + 1))
    np.testing.assert_allclose((await sess.run([m.z, later], feed))[1], -(X * 2 + 1))
    np.testing.assert_allclose(await sess.run("echo:0", {"fed_later:0": X}), X)
    np.testing.assert_allclose(await sess.run(m.z, feed), X * 2 + 1)  # the cached signature


async def test_feed_values_are_converted_and_checked_on_every_run(
    sess: aiotf.Session, m: Model
) -> None:
    feed_f32 = await sess.run(m.y, {m.x: X})
    cast = await sess.run(m.y, {m.x: X.astype(np.float64)})  # same signature, other dtype
    assert cast.dtype == np.float32
    np.testing.assert_array_equal(cast, feed_f32)
    np.testing.assert_array_equal(await sess.run(m.y, {m.x: [[1, 2], [3, 4]]}), [[2, 4], [6, 8]])
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(1, 3\) for Tensor x:0"):
        await sess.run(m.y, {m.x: np.zeros((1, 3), np.float32)})
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2,\) for Tensor x:0"):
        await sess.run(m.y, {m.x: np.zeros(2, np.float32)})
    with pytest.raises(TypeError, match="cannot be a aiotf.Tensor"):
        await sess.run(m.y, {m.x: m.z})
    np.testing.assert_array_equal(await sess.run(m.y, {m.x: X}), feed_f32)  # still works


async def test_a_shape_refined_after_a_run_is_checked(sess: aiotf.Session) -> None:
    g = sess.graph
    with g.as_default():
        a = aiotf.placeholder(aiotf.float32, name="a")
        b = aiotf.negative(a, name="b")
    np.testing.assert_array_equal(await sess.run(b, {a: np.ones(3, np.float32)}), -np.ones(3))
    a.set_shape([2])
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor a:0"):
        await sess.run(b, {a: np.ones(3, np.float32)})
    np.testing.assert_array_equal(await sess.run(b, {a: np.ones(2, np.float32)}), -np.ones(2))


async def test_a_fetch_that_is_fed_comes_from_the_feed(sess: aiotf.Session, m: Model) -> None:
    fed_y = np.full((1, 2), 10.0, np.float32)
    for _ in range(2):
        y, z = await sess.run([m.y, m.z], {m.x: X})
        np.testing.assert_allclose(y, X * 2)
        y, z = await sess.run([m.y, m.z], {m.y: fed_y})
        np.testing.assert_array_equal(y, fed_y)
        np.testing.assert_array_equal(z, fed_y + 1)
        both = await sess.run([m.y, m.z], {m.x: X, m.y: fed_y})
        np.testing.assert_array_equal(both[0], fed_y)


async def test_a_later_feed_of_the_same_tensor_wins(sess: aiotf.Session, m: Model) -> None:
    for _ in range(2):
        out = await sess.run(m.y, {m.x: X, "x:0": X * 3})
        np.testing.assert_allclose(out, X * 6)


async def test_a_full_plan_cache_starts_afresh(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_plan, "MAX_PLANS", 2)
    feed = {m.x: X}
    for _ in range(2):
        for fetches in (m.y, m.z, [m.y], [m.z], (m.y, m.z)):
            await sess.run(fetches, feed)
            assert len(sess._plans) <= 2
    np.testing.assert_allclose(await sess.run(m.z, feed), X * 2 + 1)


async def test_a_cached_signature_on_a_closed_session(m: Model) -> None:
    sess = aiotf.Session(graph=m.graph)
    await sess.run(m.z, {m.x: X})
    await sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(m.z, {m.x: X})


async def test_unkeyable_calls_are_analysed_every_time(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_analyses(monkeypatch)
    feed = collections.OrderedDict([(m.x, X)])  # not a plain dict
    for _ in range(2):
        await sess.run(m.z, feed)
        await sess.run({m.z: m.z}, {m.x: X})  # a dict keyed by a tensor
        await sess.run(Fields(m.y, m.z), {m.x: X})
    assert len(calls) == 6
    assert len(sess._plans) == 0
    for bad in (None, 1.5, [m.z, None], {"a": object()}):
        with pytest.raises((TypeError, ValueError)):
            await sess.run(bad, {m.x: X})


async def test_runs_of_many_signatures_at_once(sess: aiotf.Session, m: Model) -> None:
    structures: list[Any] = [m.y, m.z, [m.y, m.z], {"z": m.z}, (m.init, m.y), "z:0"]
    feeds = [{m.x: X * i} if i % 2 else {"x:0": X * i} for i in range(8)]
    calls = [(s, f) for s in structures for f in feeds]
    results = await asyncio.gather(*(sess.run(s, f) for s, f in calls * 3))
    for (s, f), out in zip(calls * 3, results, strict=True):
        want = await sess.run(s, f)  # alone
        assert type(out) is type(want)
        np.testing.assert_equal(out, want)


# -- turns -----------------------------------------------------------------------------------


async def test_runs_started_together_take_turns_with_other_tasks(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no time per turn, each run of a gathered batch has an iteration of the loop to
    itself: a task looping on ``sleep(0)`` moves between any two of them."""
    await sess.run(m.z, {m.x: X})
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)
    ticks = 0
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            await asyncio.sleep(0)
            ticks += 1

    seen: list[int] = []

    async def one(i: int) -> Any:
        out = await sess.run(m.z, {m.x: X * i})
        seen.append(ticks)
        return out

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    outs = await asyncio.gather(*(one(i) for i in range(16)))
    stop = True
    await task
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, X * i * 2 + 1)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)  # one run per tick, in order


async def test_a_run_waiting_for_its_turn_does_no_work_before_it(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of a gathered batch, a run that waits for a later turn looks at its fetches and feeds
    only then: the waiting costs the loop nothing but the wait."""
    await sess.run(m.z, {m.x: X})
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)
    finished = 0
    planned_after: list[int] = []  # how many runs had finished when each run was planned
    real_plan = run_plan.RunPlans.plan

    def plan(self: run_plan.RunPlans, *args: Any) -> Any:
        planned_after.append(finished)
        return real_plan(self, *args)

    monkeypatch.setattr(run_plan.RunPlans, "plan", plan)

    async def one(i: int) -> Any:
        nonlocal finished
        out = await sess.run(m.z, {m.x: X * i})
        finished += 1
        return out

    outs = await asyncio.gather(*(one(i) for i in range(8)))
    assert planned_after == list(range(8))
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, X * i * 2 + 1)


async def test_a_run_waiting_for_its_turn_can_be_cancelled(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    await sess.run(m.z, {m.x: X})
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)
    runs = [asyncio.create_task(sess.run(m.z, {m.x: X * i})) for i in range(4)]
    await asyncio.sleep(0)  # the first ran; the others wait for their turns
    assert runs[0].done() and not any(r.done() for r in runs[1:])
    runs[1].cancel()
    with pytest.raises(asyncio.CancelledError):
        await runs[1]
    np.testing.assert_allclose(await runs[2], X * 4 + 1)
    np.testing.assert_allclose(await runs[3], X * 6 + 1)


async def test_closing_cancels_runs_waiting_for_their_turn(
    m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    sess = aiotf.Session(graph=m.graph)
    await sess.run(m.z, {m.x: X})
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)
    runs = [asyncio.create_task(sess.run(m.z, {m.x: X})) for _ in range(3)]
    await asyncio.sleep(0)
    assert runs[0].done() and not runs[1].done()
    await sess.close()
    for run in runs[1:]:
        with pytest.raises(errors.CancelledError, match="Run call was cancelled"):
            await run
