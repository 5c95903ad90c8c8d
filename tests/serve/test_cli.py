"""``aiotf serve``: a real process that serves, and on SIGINT or SIGTERM finishes the requests in
flight and exits 0; one-line errors; usage errors."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import socket
import subprocess
import sys
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import aiotf
from aiotf.cli import main as aiotf_main
from aiotf.serve.cli import main, parser


@pytest.fixture
def model_pb(tmp_path: Path) -> Path:
    """A binary GraphDef: x float32 [?] -> y = 3x."""
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        aiotf.multiply(x, 3.0, name="y")
    path = tmp_path / "triple.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


@contextlib.asynccontextmanager
async def serve_process(graph: Path, *args: str) -> AsyncIterator[tuple[Process, str]]:
    """``python -m aiotf serve GRAPH ARGS --port 0``, its URL once it says it is serving;
    killed on the way out if it has not exited by then."""
    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "aiotf", "serve", str(graph), *args, "--port", "0"],
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        async with asyncio.timeout(30):
            line = (await proc.stderr.readline()).decode()
        match = re.search(rf"at (http://127\.0\.0\.1:\d+)/v1/models/{graph.stem} ", line)
        assert match, line
        yield proc, match.group(1)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_python_m_aiotf_serve_answers_then_exits_0_on_sigterm(model_pb: Path) -> None:
    async with serve_process(model_pb, "--input", "x=x:0", "--output", "y=y:0") as (proc, url):
        async with (
            aiohttp.ClientSession(base_url=url) as client,
            client.post("/v1/models/triple:predict", json={"instances": [1.0, 2.5]}) as resp,
        ):
            assert (resp.status, await resp.json()) == (200, {"predictions": [3.0, 7.5]})
        proc.send_signal(signal.SIGTERM)
        assert proc.stderr is not None
        async with asyncio.timeout(20):
            rest = (await proc.stderr.read()).decode()
            assert await proc.wait() == 0, rest
    assert "stopping: finishing 0 requests in flight" in rest
    assert rest.rstrip().endswith("aiotf serve: stopped")


@pytest.fixture
def gate_pb(tmp_path: Path) -> Path:
    """x float32 [?], release float32 [?] -> y = x + (one value dequeued from queue q).

    A run first enqueues every value of ``release``, then dequeues one: a request whose
    ``release`` is empty waits until a later request enqueues a value for it.
    """
    graph = aiotf.Graph()
    with graph.as_default():
        queue = aiotf.FIFOQueue(64, aiotf.float32, shapes=[[]], name="q")
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        release = aiotf.placeholder(aiotf.float32, [None], name="release")
        with aiotf.control_dependencies([queue.enqueue_many([release])]):
            aiotf.add(x, queue.dequeue(), name="y")
    path = tmp_path / "gate.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
async def test_a_signal_lets_every_request_in_flight_finish_then_exits_0(
    gate_pb: Path, sig: signal.Signals, held_request: Any
) -> None:
    """Three requests wait in their runs for a fourth, whose body is sent only after the signal:
    none can finish before the server is stopping, and every one must be answered."""
    inputs = ("--input", "x=x:0", "--input", "release=release:0", "--output", "y=y:0")
    async with serve_process(gate_pb, *inputs) as (proc, url):
        assert proc.stderr is not None
        port, path = int(url.rpartition(":")[2]), "/v1/models/gate:predict"
        waiting = [
            held_request(port, path, {"inputs": {"x": [i, i + 0.5], "release": []}})
            for i in range(3)
        ]
        releasing = held_request(port, path, {"inputs": {"x": [100.0], "release": [10.0] * 4}})
        try:
            async with asyncio.timeout(30):
                for request in waiting:
                    await request.start()
                    request.send()  # its run now waits on the queue
                await releasing.start()

                proc.send_signal(sig)
                stopping = (await proc.stderr.readline()).decode()
                assert "stopping: finishing 4 requests in flight" in stopping, stopping

                releasing.send()  # enqueues a value for each run, its own included
                answers = [await r.response() for r in [*waiting, releasing]]
                rest = (await proc.stderr.read()).decode()
                assert await proc.wait() == 0, rest
        finally:
            for request in [*waiting, releasing]:
                await request.close()
    assert answers == [
        (200, {"outputs": [10.0, 10.5]}),
        (200, {"outputs": [11.0, 11.5]}),
        (200, {"outputs": [12.0, 12.5]}),
        (200, {"outputs": [110.0]}),
    ]
    assert rest.rstrip().endswith("aiotf serve: stopped")


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("aiotf serve: error: ")
    return lines[0]


def test_missing_graph_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main([str(tmp_path / "nope.pb"), "--output", "y=y:0"]) == 1
    assert "cannot read graph file" in _one_error_line(capsys)


def test_not_a_graph(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "junk.pb").write_bytes(b"\xff\xfe not a graph")
    assert main([str(tmp_path / "junk.pb"), "--output", "y=y:0"]) == 1
    _one_error_line(capsys)


def test_input_naming_a_tensor_not_in_the_graph(
    capsys: pytest.CaptureFixture[str], model_pb: Path
) -> None:
    assert main([str(model_pb), "--input", "x=nope:0", "--output", "y=y:0"]) == 1
    line = _one_error_line(capsys)
    assert "input 'x'" in line and "'nope'" in line and "placeholders: x" in line


def test_output_naming_a_tensor_not_in_the_graph(
    capsys: pytest.CaptureFixture[str], model_pb: Path
) -> None:
    assert main([str(model_pb), "--output", "y=y:1"]) == 1
    assert "output 'y'" in _one_error_line(capsys)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--input", "=x:0", "--output", "y:0"], "bad --input '=x:0'"),
        (["--output", "y=y:0", "--output", "y=x:0"], "--output 'y' is given twice"),
        (["--output", "y:0", "--model-name", "a/b"], "bad model name 'a/b'"),
    ],
)
def test_bad_options(
    capsys: pytest.CaptureFixture[str], model_pb: Path, args: list[str], words: str
) -> None:
    assert main([str(model_pb), *args]) == 1
    assert words in _one_error_line(capsys)


def test_port_in_use(capsys: pytest.CaptureFixture[str], model_pb: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([str(model_pb), "--output", "y:0", "--port", str(port)]) == 1
    line = _one_error_line(capsys)
    assert f"cannot listen on 127.0.0.1:{port}: " in line and "in use" in line


def test_without_aiohttp_it_says_what_to_install(
    capsys: pytest.CaptureFixture[str], model_pb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp now fails
    assert main([str(model_pb), "--output", "y:0"]) == 1
    assert "pip install 'aiotf[serve]'" in _one_error_line(capsys)


def test_help_via_aiotf(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        aiotf_main(["serve", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: aiotf serve")
    for option in ("--input", "--output", "--port", "--host", "--model-name"):
        assert option in out


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str], model_pb: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([str(model_pb)])  # no --output
    assert exit_info.value.code == 2
    assert "--output" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--port", "99999"],
            "--port: must be a port from 0 to 65535 (0: any free port), not 99999",
        ),
        (["--port", "-1"], "--port: must be a port from 0 to 65535"),
        (["--port", "65536"], "not 65536"),
        (["--port", "http"], "--port: expected a whole number, not 'http'"),
        (["--shutdown-timeout", "-1"], "--shutdown-timeout: must be a finite number of seconds"),
        (["--shutdown-timeout", "nan"], "seconds >= 0, not nan"),
        (["--shutdown-timeout", "inf"], "seconds >= 0, not inf"),
        (["--shutdown-timeout", "soon"], "expected a number of seconds, not 'soon'"),
    ],
)
def test_numbers_out_of_range_are_usage_errors(
    capsys: pytest.CaptureFixture[str], model_pb: Path, args: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:  # main would serve: parse only
        parser().parse_args([str(model_pb), "--output", "y:0", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: aiotf serve")
    assert "\naiotf serve: error: argument --" in err and says in err


def test_the_edges_of_the_ranges_are_accepted() -> None:
    args = parser().parse_args(["g.pb", "--output", "y", "--port", "65535"])
    assert (args.port, args.shutdown_timeout) == (65535, 30.0)
    args = parser().parse_args(["g.pb", "--output", "y", "--port", "0", "--shutdown-timeout", "0"])
    assert (args.port, args.shutdown_timeout) == (0, 0.0)


def test_importing_aiotf_and_its_serve_package_never_imports_aiohttp() -> None:
    code = (
        "import sys, aiotf, aiotf.cli, aiotf.serve, aiotf.serve.cli\n"
        "assert 'aiohttp' not in sys.modules, 'aiohttp was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
