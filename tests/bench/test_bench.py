"""The benchmark suite, smoke-tested: quick runs, the JSON it writes, and a check that can fail.

No timing is asserted here; the targets are checked by running the suite itself.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aiotf.bench import WORKLOADS, Options, Workload, main, run_suite
from aiotf.bench.report import format_report
from aiotf.bench.timing import Contender, time_interleaved
from aiotf.bench.workloads import Array, Built, Params, Reference
from aiotf.devices import blas, onednn

TIMED = ("median_s", "p10_s", "p90_s", "runs")


def test_quick_run_writes_the_json_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    argv = ["--quick", "--no-tf", "--workloads", "tiny,mlp_b1", "--extras", "memory"]
    assert main([*argv, "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert {"machine", "options", "workloads", "ok", "peak_memory"} <= set(report)
    assert report["ok"] is True
    assert report["machine"]["tensorflow"] is None
    assert report["machine"]["onednn"] == onednn.version()  # which GEMM the products ran on
    assert report["machine"]["blas"] == blas.describe()
    assert [w["name"] for w in report["workloads"]] == ["tiny", "mlp_b1"]
    for w in report["workloads"]:
        assert w["status"] == "ok"
        aiotf_variant, numpy_variant = w["variants"]["aiotf"], w["variants"]["numpy"]
        assert aiotf_variant["check"]["ok"] is True
        for variant in (aiotf_variant, numpy_variant):
            assert set(TIMED) <= set(variant)
            assert variant["p10_s"] <= variant["median_s"] <= variant["p90_s"]
        assert w["ratios"]["aiotf/numpy"] > 0
    assert set(report["peak_memory"]["mlp"]) == {
        "aiotf_tracemalloc_peak_bytes",
        "aiotf_allocator_peak_bytes",
        "numpy_tracemalloc_peak_bytes",
    }
    printed = capsys.readouterr().out
    assert "mlp_b1" in printed and "Peak memory" in printed


def _wrong_reference(params: Params) -> Reference:
    one = params["one"]
    return lambda feeds: feeds[0] + one + 1


async def test_a_wrong_result_is_a_mismatch_and_fails_the_suite() -> None:
    tiny = dataclasses.replace(WORKLOADS["tiny"], reference=_wrong_reference)
    report = await run_suite(Options([tiny], quick=True, graphs_dir=None, extras=frozenset()))
    (w,) = report["workloads"]
    assert report["ok"] is False
    assert w["status"] == "mismatch"
    variant = w["variants"]["aiotf"]
    assert variant["status"].startswith("mismatch: max abs error 1")
    assert variant["check"]["ok"] is False
    assert "median_s" not in variant  # a wrong answer is not timed
    assert "mismatch" in format_report(report)


def _broken_build(params: Params) -> Built:
    raise NotImplementedError("no such building function")


async def test_a_workload_that_cannot_be_built_is_reported_and_the_suite_goes_on() -> None:
    broken: Workload = dataclasses.replace(WORKLOADS["tiny"], build=_broken_build)
    workloads = [broken, WORKLOADS["chain200"]]
    report = await run_suite(Options(workloads, quick=True, graphs_dir=None, extras=frozenset()))
    first, second = report["workloads"]
    assert first["status"] == "unsupported"
    assert first["variants"]["aiotf"] == {
        "status": "unsupported: NotImplementedError: no such building function"
    }
    assert set(TIMED) <= set(first["variants"]["numpy"])
    assert second["status"] == "ok"
    assert report["ok"] is True


async def test_batches_are_sized_on_quiet_cores() -> None:
    """A contender runs slowly for a while after another (as after numpy's matmuls, whose
    OpenBLAS threads spin on): its probe waits as its batches do, so its batches are sized by
    its quiet speed, not by the other's leftovers."""
    last = [0.0]

    def spinner() -> None:
        last[0] = time.perf_counter()

    def victim() -> None:
        time.sleep(0.02 if time.perf_counter() - last[0] < 0.05 else 0.002)

    contenders = [Contender("spinner", call=spinner), Contender("victim", call=victim)]
    samples = await time_interleaved(contenders, rounds=1, budget=0.02, settle=0.1)
    assert 5 <= len(samples["victim"]) <= 10  # 0.02 s of ~2 ms runs; one run if probed slow
    assert max(samples["victim"]) < 0.015


async def test_batches_follow_each_contenders_median() -> None:
    """A contender whose probe runs both came out slow (its first calls) gets full batches
    from the next round on, sized by its batch before, not short ones for the whole timing."""
    calls = [0]

    def warming() -> None:
        calls[0] += 1
        time.sleep(0.02 if calls[0] <= 2 else 0.002)

    samples = await time_interleaved(
        [Contender("warming", call=warming)], rounds=3, budget=0.06, settle=0.0
    )
    runs = samples["warming"]
    assert runs[0] < 0.015  # the probe's runs are not samples
    assert len(runs) >= 8  # 1 run (sized by the probe), then ~10 a round; 3 if never resized


def test_references_agree_with_each_other() -> None:
    """The concurrent workload's reference is mlp_b1's, request by request."""
    params = WORKLOADS["mlp_b1"].make_params(np.random.default_rng(0))
    feeds: Sequence[Array] = WORKLOADS["concurrent"].feeds()[:3]
    single = WORKLOADS["mlp_b1"].reference(params)
    many: Any = WORKLOADS["concurrent"].reference(params)(feeds)
    for f, got in zip(feeds, many, strict=True):
        assert (single([f]) == got).all()


def test_unknown_workload_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--workloads", "tiny,nope"]) == 2
    assert "'nope'" in capsys.readouterr().err
