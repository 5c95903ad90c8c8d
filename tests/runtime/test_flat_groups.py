"""The compiled flat schedule's pool groups (``flat_compiler._pool_groups``), on random graphs:
the groups are the greedy ones, each group's kernels independent and each depending on every
kernel of the group before; the gathered order is still topological, each group's members next
to each other; None exactly when some kernel could have started before the group before it
was done."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from aiotf.runtime import flat_compiler


@dataclass
class Item:  # what _pool_groups reads of an executor item
    pooled: bool
    successors: tuple[int, ...]


def random_graph(rng: np.random.Generator, n: int, density: float) -> list[Item]:
    successors: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < density:
                successors[i].append(j)
    return [Item(bool(rng.random() < 0.5), tuple(s)) for s in successors]


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
    pool = [i for i in order if items[i].pooled]
    want: list[list[int]] = []  # greedy: a new group once a kernel depends on the current one
    for i in pool:
        if not want or any(m in depends[i] for m in want[-1]):
            want.append([])
        want[-1].append(i)
    exact = all(
        all(m in depends[i] for m in before)
        for before, group in zip(want[:-1], want[1:], strict=True)
        for i in group
    )
    got = flat_compiler._pool_groups(items, order)  # type: ignore[arg-type]
    if not exact:
        assert got is None
        return
    assert got is not None
    gathered, groups = got
    assert groups == want
    assert sorted(gathered) == sorted(order)
    place = {i: p for p, i in enumerate(gathered)}
    for i, item in enumerate(items):
        assert all(place[i] < place[j] for j in item.successors)  # still topological
    for group in groups:
        assert [place[i] for i in group] == list(
            range(place[group[0]], place[group[0]] + len(group))
        )
