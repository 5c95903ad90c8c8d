"""The ``aiotf`` command line: ``--help`` everywhere, ``inspect``, ``run`` with names as
TensorFlow users write them, and every mistake reported as one line with a non-zero status."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format

import aiotf
from aiotf.cli import describe_error, main
from aiotf.demo import run_demo
from aiotf.framework.graph_summary import summarize_graph_def

SHARED = Path(__file__).resolve().parents[2] / "shared"
CASES = SHARED / "conformance" / "cases"
MLP = CASES / "model_mlp" / "graph.pb"  # input [?,8] float32 -> probs (Softmax), pred (ArgMax)
DIV = CASES / "arith_int_div_by_zero" / "graph.pb"  # x, y int32 [3] -> floordiv, floormod
QUEUE = CASES / "queue_fifo_basic" / "graph.pb"  # x -> enqueue (no outputs), dequeue, size
STRINGS = CASES / "strings_const_ops" / "graph.pb"  # q string [4] -> ident, ...
BENCH_MLP = SHARED / "bench" / "graphs" / "mlp_b1.pb"
needs_graphs = pytest.mark.skipif(
    not MLP.exists(), reason="the shared TensorFlow graphs are missing"
)

ROWS = str([[1.0] * 8] * 2)


def run_ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def run_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line of a failing command (status 1, nothing on stdout)."""
    assert main(list(argv)) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("aiotf: error: ") and err.count("\n") == 1, err
    return err.strip()


# --- help and usage ---------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [[], ["demo"], ["run"], ["inspect"], ["bench"]], ids=str)
def test_help_exits_zero(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: ")


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("demo", "run", "inspect", "bench", "serve"):
        assert f"    {command} " in out


@pytest.mark.parametrize("argv", [[], ["nope"], ["inspect"], ["run"]], ids=str)
def test_usage_errors_exit_two(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: aiotf" in capsys.readouterr().err


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The stderr of a command argparse refuses (status 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize(
    ("runs", "says"),
    [
        ("0", "must be at least 1, not 0"),
        ("-3", "must be at least 1, not -3"),
        ("many", "expected a whole number, not 'many'"),
    ],
)
def test_demo_runs_below_one_are_refused_before_anything_runs(
    runs: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = usage_error(capsys, "demo", "--runs", runs)
    assert err.startswith("usage: aiotf demo")
    assert f"aiotf demo: error: argument --runs: {says}" in err


def test_demo_with_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_ok(capsys, "demo", "--runs", "1")
    assert "Matches numpy: True" in out
    assert "median over 1 run (" in out
    with pytest.raises(ValueError, match="runs must be at least 1, not 0"):
        asyncio.run(run_demo(0))


def test_bench_names_itself_by_how_it_was_invoked(capsys: pytest.CaptureFixture[str]) -> None:
    from aiotf.bench import main as bench_main

    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert capsys.readouterr().out.startswith("usage: aiotf bench ")
    with pytest.raises(SystemExit):
        bench_main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m aiotf.bench ")
    assert main(["bench", "--workloads", "nope"]) == 2
    assert capsys.readouterr().err == "aiotf bench: error: unknown name 'nope'\n"


@pytest.mark.parametrize("given", ["option", "environment"])
def test_bench_graphs_that_do_not_exist_are_an_error(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope")
    argv = ["bench", "--quick", "--no-tf", "--workloads", "tiny", "--extras", ""]
    if given == "option":
        argv += ["--graphs", missing]
    else:
        monkeypatch.setenv("AIOTF_BENCH_GRAPHS", missing)
    assert main(argv) == 1
    out, err = capsys.readouterr()
    where = "--graphs" if given == "option" else "$AIOTF_BENCH_GRAPHS"
    assert (out, err) == ("", f"aiotf bench: error: {where} {missing!r} is not a directory\n")


def test_bench_without_a_graphs_directory_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import aiotf.bench.graphs

    monkeypatch.delenv("AIOTF_BENCH_GRAPHS", raising=False)
    monkeypatch.setattr(aiotf.bench.graphs, "default_graphs_dir", lambda: None)
    assert main(["bench", "--quick", "--no-tf", "--workloads", "tiny", "--extras", ""]) == 0
    err = capsys.readouterr().err
    assert "aiotf bench: no TensorFlow-written graphs found" in err


# --- inspect ----------------------------------------------------------------------------------


@needs_graphs
def test_inspect_prints_the_summary_and_how_to_run_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_ok(capsys, "inspect", str(MLP))
    graph_def = aiotf.GraphDef()
    graph_def.ParseFromString(MLP.read_bytes())
    assert out.startswith(summarize_graph_def(graph_def).describe(str(MLP)) + "\n")
    assert f"{len(graph_def.node)} nodes" in out.splitlines()[0]
    assert "  input  float32  [?,8]" in out
    assert f"To run it: aiotf run {MLP} --feed input=VALUE --fetch pred" in out  # pred eats probs


@needs_graphs
def test_inspect_json_is_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run_ok(capsys, "inspect", "--json", str(BENCH_MLP)))
    graph_def = aiotf.GraphDef()
    graph_def.ParseFromString(BENCH_MLP.read_bytes())
    assert data == {"graph": str(BENCH_MLP), **summarize_graph_def(graph_def).to_json()}
    assert data["num_nodes"] == len(graph_def.node)
    assert data["placeholders"] == [
        {"name": "x", "op": "Placeholder", "dtype": "float32", "shape": [-1, 784]}
    ]
    assert [o["name"] for o in data["likely_outputs"]] == ["out"]


@needs_graphs
@pytest.mark.parametrize("name", ["g.pbtxt", "g.pb"])
def test_inspect_reads_text_graphdefs(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph_def = aiotf.GraphDef()
    graph_def.ParseFromString(MLP.read_bytes())
    path = tmp_path / name
    path.write_text(text_format.MessageToString(graph_def), encoding="utf-8")
    text = json.loads(run_ok(capsys, "inspect", "--json", str(path)))
    binary = json.loads(run_ok(capsys, "inspect", "--json", str(MLP)))
    assert {**text, "graph": ""} == {**binary, "graph": ""}


# --- run --------------------------------------------------------------------------------------


@needs_graphs
@pytest.mark.parametrize(
    "argv",
    [
        ["--feed", f"input:0={ROWS}", "--fetch", "probs:0"],
        ["--feed", f"input={ROWS}", "--fetch", "probs"],  # names as summarize_graph prints them
    ],
    ids=["tensor-names", "op-names"],
)
def test_run_fetches_tensors_by_either_name(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_ok(capsys, "run", str(MLP), *argv)
    assert out.splitlines()[0] == "probs:0: dtype=float32 shape=[2, 3]"


@needs_graphs
def test_run_without_fetch_fetches_the_likely_outputs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_ok(capsys, "run", str(MLP), "--feed", f"input={ROWS}")
    headers = [line for line in out.splitlines() if ": dtype=" in line]
    assert headers == ["pred:0: dtype=int64 shape=[2]"]  # pred = argmax(probs)


@needs_graphs
def test_run_feeds_npy_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.array([7, 8, 9], np.int32))
    np.save(tmp_path / "y.npy", np.array([2, 3, 4], np.int32))
    argv = ["--feed", f"x={tmp_path / 'x.npy'}", "--feed", f"y:0={tmp_path / 'y.npy'}"]
    out = run_ok(capsys, "run", str(DIV), *argv, "--fetch", "floordiv")
    assert out.splitlines() == ["floordiv:0: dtype=int32 shape=[3]", "[3 2 2]"]


@needs_graphs
def test_fetching_an_op_without_outputs_runs_it(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_ok(capsys, "run", str(QUEUE), "--feed", "x=[5, 6]", "--fetch", "enqueue")
    assert out.splitlines() == ["enqueue: ran (the op has no outputs)"]
    # a target named like a tensor runs its op, and prints nothing
    assert run_ok(capsys, "run", str(QUEUE), "--feed", "x=[5, 6]", "--target", "size:0") == ""


@needs_graphs
def test_a_string_feed_may_be_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_ok(
        capsys, "run", str(STRINGS), "--feed", "q=['a', 'b', 'c', 'd']", "--fetch", "transpose"
    )
    assert out.splitlines()[1:] == ["[[b'a' b'c']", " [b'b' b'd']]"]
    # a bare word is a string scalar here (q wants four), and no value at all for a float tensor
    line = run_error(capsys, "run", str(STRINGS), "--feed", "q=hello", "--fetch", "ident")
    assert "Cannot feed value of shape ()" in line
    line = run_error(capsys, "run", str(MLP), "--feed", "input=hello", "--fetch", "probs")
    assert "'hello' is neither a .npy file nor a Python literal" in line


# --- one line per mistake ---------------------------------------------------------------------


@pytest.mark.parametrize("command", ["inspect", "run"])
def test_missing_graph_file(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = run_error(capsys, command, str(tmp_path / "nope.pb"))
    assert line.endswith("nope.pb': No such file or directory")
    assert "cannot read graph file" in line


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("bad.pb", bytes(range(256)), "not valid UTF-8 text, and not a binary GraphDef"),
        ("bad.pbtxt", b"node { name: 'a' bogus: 1 }", 'has no field named "bogus"'),
        ("notes.pb", b"hello world\n", "is not a GraphDef: as text"),
    ],
)
def test_bad_graphdef(
    name: str, data: bytes, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    line = run_error(capsys, "inspect", str(path))
    assert says in line and str(path) in line


def test_unknown_op_on_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "custom.pbtxt"
    path.write_text('node { name: "a" op: "NoSuchOpAnywhere" }', encoding="utf-8")
    line = run_error(capsys, "run", str(path), "--fetch", "a")
    assert "NotFoundError" in line and "NoSuchOpAnywhere" in line
    assert "1 nodes" in run_ok(capsys, "inspect", str(path))  # inspect needs no op definitions


@needs_graphs
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--feed", "input"], "bad --feed 'input': expected NAME=VALUE"),
        (["--feed", "=[1]"], "bad --feed '=[1]'"),
        (["--feed", "input=[[1.0,"], "is neither a .npy file nor a Python literal"),
        (["--feed", "input=missing.npy"], "cannot load 'missing.npy' for feed 'input'"),
        (["--feed", "nope:0=[1]"], "--feed 'nope:0': the graph has no op named 'nope'"),
        (["--feed", "input:1=[1]"], "op 'input' (Placeholder) has outputs: input:0"),
        (
            ["--feed", f"input={ROWS}", "--feed", f"input:0={ROWS}"],
            "--feed 'input:0': tensor input:0 is fed twice",
        ),
        (["--feed", "input=[1.0]"], "ValueError: Cannot feed value of shape (1,)"),
        (["--fetch", "probs:0"], "InvalidArgumentError: You must feed a value for placeholder"),
    ],
)
def test_bad_feed(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    if "--fetch" not in argv:
        argv = [*argv, "--fetch", "probs"]
    assert says in run_error(capsys, "run", str(MLP), *argv)


@needs_graphs
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--fetch", "nope:0"], "--fetch 'nope:0': the graph has no op named 'nope'"),
        (["--fetch", "probs:2"], "--fetch 'probs:2': op 'probs' (Softmax) has outputs: probs:0"),
        (["--target", "ghost"], "--target 'ghost': the graph has no op named 'ghost'"),
        (["--target", "ghost:0"], "--target 'ghost:0': the graph has no op named 'ghost'"),
    ],
)
def test_fetch_of_a_nonexistent_tensor(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert says in run_error(capsys, "run", str(MLP), "--feed", f"input={ROWS}", *argv)


@needs_graphs
def test_op_error_during_run_names_the_node(capsys: pytest.CaptureFixture[str]) -> None:
    feeds = ["--feed", "x=[1, 2, 3]", "--feed", "y=[1, 0, 1]"]
    line = run_error(capsys, "run", str(DIV), *feeds, "--fetch", "floormod")
    assert line == (
        "aiotf: error: InvalidArgumentError: Integer division by zero (node 'floormod', op FloorMod)"
    )


def test_nothing_to_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "consts.pbtxt"  # a lone Const is never a likely output
    path.write_text(
        'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }',
        encoding="utf-8",
    )
    assert "nothing to do" in run_error(capsys, "run", str(path))
    assert run_ok(capsys, "run", str(path), "--fetch", "c").splitlines() == [
        "c:0: dtype=float32 shape=[]",
        "1.0",
    ]


def test_describe_error_unwraps_a_lone_group_and_flags_bugs() -> None:
    error = aiotf.errors.InvalidArgumentError(None, None, "bad\n\tmore detail")
    assert describe_error(ExceptionGroup("g", [error])) == "InvalidArgumentError: bad"
    assert describe_error(ValueError("")) == "ValueError"
    assert describe_error(RuntimeError("boom")).startswith("RuntimeError: boom (an aiotf bug?")


@needs_graphs
def test_aiotf_traceback_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AIOTF_TRACEBACK", "1")
    with pytest.raises(aiotf.errors.InvalidArgumentError):
        main(["run", str(MLP), "--fetch", "probs"])


# --- the installed command, for real ----------------------------------------------------------


def test_console_script_help() -> None:
    script = Path(sys.executable).with_name("aiotf")
    if not script.exists():
        pytest.skip("the aiotf console script is not installed beside this interpreter")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "inspect" in done.stdout


@needs_graphs
def test_python_m_aiotf_for_real() -> None:
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    cmd = [sys.executable, "-m", "aiotf"]
    done = subprocess.run(
        [*cmd, "inspect", str(BENCH_MLP)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Placeholders (1):\n  x  float32  [?,784]" in done.stdout
    bad = subprocess.run(
        [*cmd, "run", str(BENCH_MLP), "--fetch", "nope"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("python -m aiotf: error: ")


def test_python_m_names_itself_in_usage() -> None:
    for cmd, usage in [
        (["-m", "aiotf", "demo", "--runs", "0"], "usage: python -m aiotf demo"),
        (["-m", "aiotf", "bench", "--workloads"], "usage: python -m aiotf bench"),
        (["-m", "aiotf.bench", "--workloads"], "usage: python -m aiotf.bench"),
    ]:
        done = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.startswith(usage), done.stderr
