"""The compiled flat schedule's pool groups (``flat_compiler._pool_groups``), on random graphs:
each pool kernel's group is one more than the latest among its pool ancestors', so a group's
kernels are independent; the gathered order is still topological, the groups one after another,
each group's members next to each other, every other node right after the last group it reads
from or, reading none, just before the first group that reads it; None exactly when a py_func is among kernels that could have started before the group
before theirs was done."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from aiotf.runtime import flat_compiler


@dataclass
class Node:
    op: str


@dataclass
class Item:  # what _pool_groups reads of an executor item
    pooled: bool
    successors: tuple[int, ...]
    node: Node


def random_graph(rng: np.random.Generator, n: int, density: float) -> list[Item]:
    successors: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < density:
                successors[i].append(j)
    items = []
    for s in successors:
        pooled = bool(rng.random() < 0.5)
        op = "PyFunc" if pooled and rng.random() < 0.1 else "MatMul" if pooled else "Neg"
        items.append(Item(pooled, tuple(s), Node(op)))
    return items


def reachable(items: list[Item]) -> list[set[int]]:
    """For each node, the nodes it depends on (a plain closure, not the bit masks)."""
    parents: list[set[int]] = [set() for _ in items]
    for i, item in enumerate(items):
        for j in item.successors:
            parents[j].add(i)
    memo: dict[int, set[int]] = {}

    def ancestors(i: int) -> set[int]:
        if i not in memo:
            found: set[int] = set()
            for p in parents[i]:
                found |= {p} | ancestors(p)
            memo[i] = found
        return memo[i]

    return [ancestors(i) for i in range(len(items))]


@pytest.mark.parametrize("seed", range(300))
def test_groups_on_random_graphs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = random_graph(rng, int(rng.integers(2, 14)), float(rng.choice([0.1, 0.25, 0.5])))
    roots = [i for i in range(len(items)) if not any(i in it.successors for it in items)]
    order = flat_compiler._order(items, roots)  # type: ignore[arg-type]
    assert order is not None
    depends = reachable(items)
    level: dict[int, int] = {}  # each pool kernel's group: after its latest pool ancestor's
    for i in order:
        if items[i].pooled:
            level[i] = 1 + max((level[p] for p in depends[i] if p in level), default=-1)
    want: list[list[int]] = [[] for _ in range(1 + max(level.values(), default=-1))]
    for i in order:
        if i in level:
            want[level[i]].append(i)
    exact = all(
        all(m in depends[i] for m in before)
        for before, group in zip(want[:-1], want[1:], strict=True)
        for i in group
    )
    got = flat_compiler._pool_groups(items, order)  # type: ignore[arg-type]
    if not exact and any(items[i].node.op == "PyFunc" for i in level):
        assert got is None
        return
    assert got is not None
    gathered, groups = got
    assert groups == want
    assert sorted(gathered) == sorted(order)
    place = {i: p for p, i in enumerate(gathered)}
    for i, item in enumerate(items):
        assert all(place[i] < place[j] for j in item.successors)  # still topological
    spans = [(place[group[0]], place[group[0]] + len(group)) for group in groups]
    for group, (start, end) in zip(groups, spans, strict=True):
        assert [place[i] for i in group] == list(range(start, end))  # together, in order
    assert spans == sorted(spans)  # group after group
    # every other node between two groups: ``gap`` g is after group g - 1, before group g
    last = [max((level[a] for a in depends[i] if a in level), default=-1) for i in order]
    gap = {i: last[p] + 1 for p, i in enumerate(order) if i not in level and last[p] >= 0}
    for i in reversed(order):  # reading no pool kernel: in the last gap its readers allow
        if i not in level and i not in gap:
            readers = [j for j in range(len(items)) if i in depends[j]]
            gap[i] = min([level[j] if j in level else gap[j] for j in readers], default=len(groups))
    for i, g in gap.items():
        after = spans[g - 1][1] if g > 0 else 0
        before = spans[g][0] if g < len(groups) else len(items)
        assert after <= place[i] <= before - 1
