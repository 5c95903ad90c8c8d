"""The model server over real HTTP on a loopback port: answers, status, metadata, every error.

Response shapes are TensorFlow Serving's (``tensorflow_serving/util/json_tensor.cc``): row
format answers ``predictions`` (values for one output, objects for several), columnar format
answers ``outputs`` (the value for one output, an object for several).
"""

from __future__ import annotations

import base64
from pathlib import Path

import aiohttp
import numpy as np
import pytest

import aiotf
from aiotf.cli import load_graph_def
from aiotf.serve.app import ModelServer, create_app
from aiotf.serve.signature import Signature

STATUS = {
    "model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
    ]
}


# -- answers -----------------------------------------------------------------------------------
async def test_row_format_one_output_is_a_list_of_values(serving, affine) -> None:
    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s:
        status, body = await s.post(
            "/v1/models/m:predict", {"instances": [[1, 2, 3], [0.5, 0, -1]]}
        )
    assert status == 200
    assert body == {"predictions": [[3.0, 5.0, 7.0], [2.0, 1.0, -1.0]]}


async def test_row_format_several_outputs_is_a_list_of_objects(serving, affine) -> None:
    async with serving(affine, {"x": "x"}, {"y": "y", "total": "total:0"}) as s:
        status, body = await s.post("/v1/models/m:predict", {"instances": [{"x": [1, 2, 3]}]})
    assert status == 200
    assert body == {"predictions": [{"y": [3.0, 5.0, 7.0], "total": 6.0}]}


async def test_columnar_format_one_output_is_the_value_itself(serving, affine) -> None:
    async with serving(affine, {"x": "x:0"}, {"total": "total:0"}) as s:
        plain = await s.post("/v1/models/m:predict", {"inputs": [[1, 2, 3], [4, 5, 6]]})
        named = await s.post("/v1/models/m:predict", {"inputs": {"x": [[1, 1, 1]]}})
    assert plain == (200, {"outputs": [6.0, 15.0]})
    assert named == (200, {"outputs": [3.0]})


async def test_columnar_format_several_outputs_is_an_object(serving, two_inputs) -> None:
    async with serving(
        two_inputs, {"a": "a:0", "b": "b:0"}, {"sum": "sum", "scaled": "scaled"}
    ) as s:
        status, body = await s.post(
            "/v1/models/m:predict", {"inputs": {"a": [0.5, 1.5], "b": [1, 2]}}
        )
    assert status == 200
    assert body == {"outputs": {"sum": [1.5, 3.5], "scaled": [5.0, 15.0]}}


async def test_row_format_with_several_inputs(serving, two_inputs) -> None:
    async with serving(two_inputs, {"a": "a:0", "b": "b:0"}, {"sum": "sum"}) as s:
        status, body = await s.post(
            "/v1/models/m:predict",
            {"instances": [{"a": 0.25, "b": 1}, {"a": -1.0, "b": 3}], "signature_name": ""},
        )
    assert (status, body) == (200, {"predictions": [1.25, 2.0]})


async def test_versions_path_and_signature_name(serving, affine) -> None:
    async with serving(affine, {"x": "x:0"}, {"total": "total:0"}) as s:
        answer = await s.post(
            "/v1/models/m/versions/1:predict",
            {"signature_name": "serving_default", "instances": [[1, 2, 3]]},
        )
    assert answer == (200, {"predictions": [6.0]})


async def test_float32_outputs_are_written_shortest(serving, affine) -> None:
    async with serving(affine, {"x": "x:0"}, {"x": "x:0"}) as s:
        text = await s.post_text("/v1/models/m:predict", b'{"instances": [[0.1, 0.2, 1e20]]}')
    assert text == '{"predictions": [[0.1, 0.2, 1e+20]]}'


async def test_nan_and_infinity_in_and_out(serving, affine) -> None:
    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s:
        text = await s.post_text(
            "/v1/models/m:predict", b'{"instances": [[NaN, Infinity, -Infinity]]}'
        )
    assert text == '{"predictions": [[NaN, Infinity, -Infinity]]}'


async def test_strings_as_text_and_base64(serving, strings) -> None:
    blob = bytes([0, 255, 7])
    b64 = base64.b64encode(blob).decode()
    async with serving(strings, {"s": "s:0"}, {"text": "echo:0", "text_bytes": "echo:0"}) as s:
        status, body = await s.post("/v1/models/m:predict", {"instances": ["héllo", {"b64": b64}]})
    assert status == 200
    assert body == {
        "predictions": [
            {"text": "héllo", "text_bytes": {"b64": base64.b64encode("héllo".encode()).decode()}},
            {"text": {"b64": b64}, "text_bytes": {"b64": b64}},  # not UTF-8: base64 either way
        ]
    }


async def test_a_graph_tensorflow_wrote(serving, mlp_case: Path) -> None:
    """The conformance MLP (TensorFlow 2.21): TensorFlow's answers, to its tolerances."""
    graph = aiotf.Graph()
    with graph.as_default():
        aiotf.import_graph_def(load_graph_def(mlp_case / "graph.pb"), name="")
    with np.load(mlp_case / "data.npz", allow_pickle=False) as data:
        x, probs, pred = data["s0_feed0"], data["s0_out0"], data["s0_out1"]
    async with serving(graph, {"x": "input:0"}, {"probs": "probs:0", "pred": "pred:0"}) as s:
        rows = await s.post("/v1/models/m:predict", {"instances": x.tolist()})
        cols = await s.post("/v1/models/m:predict", {"inputs": {"x": x.tolist()}})
    assert rows[0] == cols[0] == 200
    np.testing.assert_allclose([r["probs"] for r in rows[1]["predictions"]], probs, 1e-4, 1e-5)
    assert [r["pred"] for r in rows[1]["predictions"]] == pred.tolist()
    np.testing.assert_allclose(cols[1]["outputs"]["probs"], probs, 1e-4, 1e-5)
    assert cols[1]["outputs"]["pred"] == pred.tolist()


# -- status and metadata -----------------------------------------------------------------------
async def test_status(serving, affine) -> None:
    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}, name="affine") as s:
        assert await s.get("/v1/models/affine") == (200, STATUS)
        assert await s.get("/v1/models/affine/versions/1") == (200, STATUS)
        assert await s.get("/v1/models/affine/versions/2") == (
            404,
            {"error": "Could not find version 2 of model affine"},
        )
        assert await s.get("/v1/models/other") == (
            404,
            {"error": "Could not find any versions of model other"},
        )
        assert await s.get("/v1/models") == (400, {"error": "Missing model name in request."})


async def test_metadata(serving, two_inputs) -> None:
    def info(dtype: str, name: str) -> dict[str, object]:
        shape = {"dim": [{"size": "-1", "name": ""}], "unknown_rank": False}
        return {"dtype": dtype, "tensor_shape": shape, "name": name}

    async with serving(two_inputs, {"a": "a:0", "b": "b:0"}, {"sum": "sum:0"}, name="t") as s:
        latest = await s.get("/v1/models/t/metadata")
        pinned = await s.get("/v1/models/t/versions/1/metadata")
        missing = await s.get("/v1/models/t/versions/3/metadata")
    assert latest == pinned
    assert latest == (
        200,
        {
            "model_spec": {"name": "t", "signature_name": "", "version": "1"},
            "metadata": {
                "signature_def": {
                    "signature_def": {
                        "serving_default": {
                            "inputs": {"a": info("DT_FLOAT", "a:0"), "b": info("DT_INT32", "b:0")},
                            "outputs": {"sum": info("DT_FLOAT", "sum:0")},
                            "method_name": "tensorflow/serving/predict",
                        }
                    }
                }
            },
        },
    )
    assert missing == (404, {"error": "Servable not found for request: Specific(t, 3)"})


# -- errors ------------------------------------------------------------------------------------
BAD_REQUESTS = [
    (b"", "JSON Parse error: The document is empty"),
    (b"{", "JSON Parse error: Expecting property name enclosed in double quotes at offset: 1"),
    (b"[1, 2]", "JSON Value: [1, 2] Is not object"),
    ({}, "Missing 'inputs' or 'instances' key"),
    (
        {"inputs": [[1, 2, 3]], "instances": [[1, 2, 3]]},
        "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist",
    ),
    ({"instances": {"x": 1}}, "Expecting 'instances' to be an list/array"),
    ({"instances": []}, "No values in 'instances' array"),
    (
        {"signature_name": 7, "instances": [[1, 2, 3]]},
        "not formatted correctly. 'signature_name' key must be a string value.",
    ),
    (
        {"signature_name": "train", "instances": [[1, 2, 3]]},
        'Serving signature name: "train" not found in signature def',
    ),
    # unknown and missing inputs
    (
        {"instances": [{"x": [1, 2, 3], "z": 1}]},
        "Failed to process element: 0 key: z of 'instances' list. Error: INVALID_ARGUMENT: "
        "JSON object: does not have named input: z",
    ),
    (
        {"inputs": {"x": [[1, 2, 3]], "z": 1}},
        "input tensor alias not found in signature: z. Inputs expected to be in the set {x}.",
    ),
    ({"inputs": {"z": [[1, 2, 3]]}}, "Missing named input: x in 'inputs' object."),
    (
        {"instances": [{"x": [1, 2, 3]}, [1, 2, 3]]},
        "Expecting object but got list at item 1 of input list",
    ),
    # wrong shapes
    (
        {"instances": [[1, 2]]},
        "Cannot feed value of shape (1, 2) for Tensor x:0, which has shape (None, 3)",
    ),
    (
        {"instances": [[1, 2, 3], [1, 2]]},
        "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: "
        "Expecting tensor size: 3 but got: 2",
    ),
    (
        {"inputs": [[1, 2, 3], [1, 2]]},
        "Encountered list at unexpected size: 2 at level: 1 expected size: 3",
    ),
    (
        {"inputs": [[1, 2, [3]]]},
        "Encountered list at unexpected level: 2 expected < 2",
    ),
    (
        {"inputs": [[1, 2, 3], 4]},
        "JSON Value: 4 found at incorrect level: 2 in the JSON DOM. Expected at level: 2",
    ),
    # wrong dtypes
    (
        {"instances": [[1, 2, "3"]]},
        "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: JSON Value: \"3\" "
        "Type: String is not of expected type: float",
    ),
    (
        {"inputs": [[1, 2, True]]},
        "JSON Value: true Type: True is not of expected type: float",
    ),
    (
        {"inputs": [[1, 2, None]]},
        "JSON Value: null Type: Null is not of expected type: float",
    ),
    (
        {"inputs": [[1, 2, 16777217]]},
        "Cannot convert JSON value: 16777217 to float without loss of precision.",
    ),
    (
        {"inputs": [[1, 2, 1e39]]},
        "Cannot convert JSON value: 1e+39 to float without loss of precision.",
    ),
]


@pytest.mark.parametrize(("body", "message"), BAD_REQUESTS)
async def test_bad_requests_are_400_with_tf_serving_words(
    serving, affine, body: object, message: str
) -> None:
    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s:
        status, answer = await s.post("/v1/models/m:predict", body)
        after = await s.post("/v1/models/m:predict", {"instances": [[1, 2, 3]]})
    assert status == 400
    assert set(answer) == {"error"}
    assert message in answer["error"]
    assert after == (200, {"predictions": [[3.0, 5.0, 7.0]]})  # the session is unharmed


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"instances": [[1, 2]]}, "instances is a plain list, but expecting list of objects"),
        ({"inputs": [1, 2]}, "inputs is a plain value/list, but expecting an object"),
        (
            {"instances": [{"a": 1.0}]},
            "Failed to process element: 0 of 'instances' list. JSON object: {\"a\": 1.0} keys "
            "must be equal to: a,b",
        ),
        (
            {"inputs": {"a": [1.0], "b": [1.5]}},
            "JSON Value: 1.5 Type: Number is not of expected type: int32",
        ),
        (
            {"inputs": {"a": [1.0], "b": [2**31]}},
            "JSON Value: 2147483648 Type: Number is not of expected type: int32",
        ),
        (
            {"instances": [{"a": 1.0, "b": 1}, {"a": [1.0], "b": 1}]},
            "Failed to process element: 1 key: a of 'instances' list. Error: INVALID_ARGUMENT: "
            "Expecting shape [] but got: [1]",
        ),
    ],
)
async def test_bad_requests_for_several_inputs(
    serving, two_inputs, body: object, message: str
) -> None:
    async with serving(two_inputs, {"a": "a:0", "b": "b:0"}, {"sum": "sum:0"}) as s:
        status, answer = await s.post("/v1/models/m:predict", body)
    assert status == 400
    assert message in answer["error"], answer


async def test_bad_base64_is_400(serving, strings) -> None:
    async with serving(strings, {"s": "s:0"}, {"echo": "echo:0"}) as s:
        bad = await s.post("/v1/models/m:predict", {"instances": [{"b64": "!!!"}]})
        shaped = await s.post("/v1/models/m:predict", {"inputs": [{"b64": "AA==", "x": 1}]})
    assert bad == (
        400,
        {
            "error": "Failed to process element: 0 of 'instances' list. Error: INVALID_ARGUMENT: "
            "Unable to base64 decode"
        },
    )
    assert shaped[0] == 400
    assert "not formatted correctly for base64 data" in shaped[1]["error"]


async def test_scalar_output_cannot_be_row_format(serving, affine) -> None:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        aiotf.reduce_sum(x, name="total")
    async with serving(graph, {"x": "x:0"}, {"total": "total:0"}) as s:
        rows = await s.post("/v1/models/m:predict", {"instances": [1.0, 2.0]})
        cols = await s.post("/v1/models/m:predict", {"inputs": [1.0, 2.0]})
    assert rows == (400, {"error": "Tensor name: total has no shape information"})
    assert cols == (200, {"outputs": 3.0})


async def test_a_failing_run_is_its_error_code_and_message(serving) -> None:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        aiotf.reshape(x, [-1, 4], name="y")
    async with serving(graph, {"x": "x:0"}, {"y": "y:0"}) as s:
        status, body = await s.post("/v1/models/m:predict", {"inputs": [1.0, 2.0, 3.0]})
        ok = await s.post("/v1/models/m:predict", {"inputs": [1.0, 2.0, 3.0, 4.0]})
    assert status == 400
    assert "3 values" in body["error"]
    assert ok == (200, {"outputs": [[1.0, 2.0, 3.0, 4.0]]})


@pytest.mark.parametrize(
    ("method", "path", "status", "error"),
    [
        ("POST", "/v1/models/nope:predict", 404, "Servable not found for request: Latest(nope)"),
        (
            "POST",
            "/v1/models/m/versions/2:predict",
            404,
            "Servable not found for request: Specific(m, 2)",
        ),
        ("GET", "/v1/models/nope/metadata", 404, "Servable not found for request: Latest(nope)"),
        ("GET", "/v1/models/m:predict", 400, "Malformed request: GET /v1/models/m:predict"),
        ("POST", "/v1/models/m", 400, "Malformed request: POST /v1/models/m"),
        ("PUT", "/v1/models/m:predict", 400, "Malformed request: PUT /v1/models/m:predict"),
        ("POST", "/v1/models/m:regress", 501, "aiotf serve implements :predict, not :regress"),
    ],
)
async def test_unknown_models_and_malformed_paths(
    serving, affine, method: str, path: str, status: int, error: str
) -> None:
    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s:
        answer = await s.request(method, path, b'{"inputs": [[1, 2, 3]]}')
    assert answer == (status, {"error": error})


async def test_large_requests_and_responses(serving, affine) -> None:
    """Past the thresholds the body is parsed, and the answer written, off the event loop."""
    x = np.arange(3 * 25_000, dtype=np.float32).reshape(-1, 3) / 8
    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s:
        status, body = await s.post("/v1/models/m:predict", {"inputs": x.tolist()})
    assert status == 200
    np.testing.assert_array_equal(np.asarray(body["outputs"], np.float32), 2 * x + 1)


async def test_a_body_past_the_limit_is_413(affine) -> None:
    signature = Signature.build(affine, {"x": "x:0"}, {"y": "y:0"})
    server = ModelServer(create_app(affine, signature, "m", max_body_bytes=1000), port=0)
    await server.start()
    try:
        async with (
            aiohttp.ClientSession(base_url=server.url) as client,
            client.post("/v1/models/m:predict", json={"inputs": [[0.5, 1, 2]] * 200}) as resp,
        ):
            assert resp.status == 413
            assert "Maximum request body size 1000 exceeded" in (await resp.json())["error"]
    finally:
        await server.stop()
