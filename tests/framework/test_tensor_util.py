"""numpy <-> TensorProto, with both of TensorFlow's encodings, and TF's value-conversion rules."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from google.protobuf import text_format

from aiotf.framework import dtypes
from aiotf.framework.tensor_util import convert_to_ndarray, make_ndarray, make_tensor_proto
from aiotf.proto import TensorProto

NUMERIC = [
    np.float32,
    np.float64,
    np.float16,
    ml_dtypes.bfloat16,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.complex64,
    np.complex128,
    np.bool_,
]


def sample(np_type: Any, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    n = int(np.prod(shape))
    if np_type is np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    values = np.arange(n).astype(np.float64) - 2
    if np.dtype(np_type).kind == "c":
        return (values + 1j * (values + 0.5)).astype(np_type).reshape(shape)
    if np.dtype(np_type).kind == "u":
        values = values + 2
    if np.dtype(np_type).kind == "f" or np_type is ml_dtypes.bfloat16:
        values = values * 0.5
    return values.astype(np_type).reshape(shape)


@pytest.mark.parametrize("np_type", NUMERIC, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (0, 3), (1,)], ids=str)
def test_round_trip(np_type: Any, shape: tuple[int, ...]) -> None:
    value = sample(np_type, shape)
    proto = make_tensor_proto(value)
    assert proto.dtype == dtypes.as_dtype(np_type).as_datatype_enum
    assert [d.size for d in proto.tensor_shape.dim] == list(shape)
    back = make_ndarray(proto)
    assert back.dtype == np.dtype(np_type)
    assert back.shape == shape
    np.testing.assert_array_equal(back, value)
    back[...] = value  # a fresh, writable array
    assert back.flags.writeable


def test_round_trip_keeps_special_floats() -> None:
    value = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32)
    back = make_ndarray(make_tensor_proto(value))
    np.testing.assert_array_equal(back, value)
    assert np.signbit(back[3])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([b"a", b"bc"], [b"a", b"bc"]),
        (["x", "\u00e9"], [b"x", "\u00e9".encode()]),
        ("scalar", b"scalar"),
        (np.array([b"ab", b"c"]), [b"ab", b"c"]),
        (np.array(["ab", "c"]), [b"ab", b"c"]),
        ([[b"a", b"b"], [b"c", b"d"]], [[b"a", b"b"], [b"c", b"d"]]),
        ([b"with\x00nul"], [b"with\x00nul"]),
    ],
)
def test_strings_round_trip_as_bytes(value: Any, expected: Any) -> None:
    proto = make_tensor_proto(value)
    assert proto.dtype == dtypes.string.as_datatype_enum
    back = make_ndarray(proto)
    assert back.dtype == np.dtype(object)
    assert back.tolist() == expected


def test_empty_string_tensor() -> None:
    back = make_ndarray(make_tensor_proto(np.empty((0, 2), dtype=object), dtypes.string))
    assert back.shape == (0, 2)
    assert back.dtype == np.dtype(object)


def test_scalars() -> None:
    for value, dtype in ((3.5, np.float32), (7, np.int32), (True, np.bool_), (2**40, np.int64)):
        back = make_ndarray(make_tensor_proto(value))
        assert back.shape == ()
        assert back.dtype == dtype
        assert back.item() == value


def test_make_tensor_proto_with_dtype_and_shape() -> None:
    proto = make_tensor_proto([1, 2, 3], dtype=dtypes.float64)
    assert proto.dtype == dtypes.float64.as_datatype_enum
    np.testing.assert_array_equal(make_ndarray(proto), np.array([1.0, 2.0, 3.0]))
    filled = make_ndarray(make_tensor_proto(1.5, shape=[2, 2]))
    np.testing.assert_array_equal(filled, np.full((2, 2), 1.5, np.float32))
    reshaped = make_ndarray(make_tensor_proto([1, 2, 3, 4], shape=[2, 2]))
    assert reshaped.tolist() == [[1, 2], [3, 4]]
    assert make_ndarray(make_tensor_proto([], shape=[0, 4])).shape == (0, 4)


def test_make_tensor_proto_shape_errors() -> None:
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        make_tensor_proto([1, 2, 3], shape=[2], verify_shape=True)
    with pytest.raises(ValueError, match="Too many elements provided"):
        make_tensor_proto([1, 2, 3], shape=[2])
    padded = make_tensor_proto([1, 2], shape=[3])  # the proto's last value fills the rest
    assert list(padded.int_val) == [1, 2] and make_ndarray(padded).tolist() == [1, 2, 2]
    with pytest.raises(ValueError, match="fully defined"):
        make_tensor_proto(1.0, shape=[None, 2])


# ------------------------------------------------------------------------------------------------
# Decoding TensorFlow's typed-field encoding (what TF writes for scalars and splats)
# ------------------------------------------------------------------------------------------------


def proto(text: str) -> Any:
    return text_format.Parse(text, TensorProto())


def test_single_value_is_repeated_to_fill_the_shape() -> None:
    got = make_ndarray(proto("dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 7"))
    assert got.dtype == np.float32
    assert got.tolist() == [7.0, 7.0, 7.0]


@pytest.mark.parametrize(
    ("text", "dtype", "expected"),
    [
        (
            "dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 2 } } int_val: 5",
            np.int32,
            [[5, 5], [5, 5]],
        ),
        (
            "dtype: DT_DOUBLE tensor_shape { dim { size: 2 } } double_val: 0.25",
            np.float64,
            [0.25, 0.25],
        ),
        (
            "dtype: DT_INT64 tensor_shape { dim { size: 2 } } int64_val: 8589934592",
            np.int64,
            [2**33, 2**33],
        ),
        ("dtype: DT_BOOL tensor_shape { dim { size: 3 } } bool_val: true", np.bool_, [True] * 3),
        ("dtype: DT_UINT8 tensor_shape { dim { size: 2 } } int_val: 255", np.uint8, [255, 255]),
        (
            "dtype: DT_UINT32 tensor_shape { dim { size: 2 } } uint32_val: 4000000000",
            np.uint32,
            [4000000000] * 2,
        ),
        (
            "dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: 'ab'",
            object,
            [b"ab", b"ab"],
        ),
        # half_val holds the IEEE half bits: 0x3C00 is 1.0; bfloat16 uses the same field.
        ("dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: 15360", np.float16, [1.0, 1.0]),
        (
            "dtype: DT_BFLOAT16 tensor_shape { dim { size: 2 } } half_val: 16256",
            ml_dtypes.bfloat16,
            [1.0, 1.0],
        ),
        # scomplex_val holds (real, imaginary) pairs.
        (
            "dtype: DT_COMPLEX64 tensor_shape { dim { size: 2 } } scomplex_val: 1 scomplex_val: 2",
            np.complex64,
            [1 + 2j, 1 + 2j],
        ),
        ("dtype: DT_FLOAT tensor_shape { } float_val: 3.25", np.float32, 3.25),
    ],
)
def test_typed_field_encodings(text: str, dtype: Any, expected: Any) -> None:
    got = make_ndarray(proto(text))
    assert got.dtype == np.dtype(dtype)
    assert got.tolist() == expected


def test_fewer_values_than_elements_repeat_the_last() -> None:
    got = make_ndarray(
        proto("dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1 int_val: 2")
    )
    assert got.tolist() == [1, 2, 2, 2]


def test_no_values_means_zeros() -> None:
    got = make_ndarray(proto("dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 1 } }"))
    assert got.tolist() == [[0.0], [0.0]]


def test_tensor_content_wins() -> None:
    content = np.array([1, 2], np.int32).tobytes()
    msg = TensorProto(dtype=dtypes.int32.as_datatype_enum, tensor_content=content)
    msg.tensor_shape.dim.add(size=2)
    assert make_ndarray(msg).tolist() == [1, 2]


@pytest.mark.parametrize(
    ("value", "shape", "expected"),
    [
        (3.25, None, "dtype: DT_FLOAT tensor_shape { } float_val: 3.25"),
        (1, None, "dtype: DT_INT32 tensor_shape { } int_val: 1"),
        (
            0.0,
            [2, 3],
            "dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 3 } } float_val: 0",
        ),
    ],
)
def test_make_tensor_proto_uses_tensorflows_compact_encoding(
    value: Any, shape: Any, expected: str
) -> None:
    assert make_tensor_proto(value, shape=shape) == proto(expected)


def test_multi_element_tensors_use_tensor_content_like_tensorflow() -> None:
    got = make_tensor_proto(np.array([1.0, 2.0], np.float32))
    assert got.tensor_content == np.array([1.0, 2.0], np.float32).tobytes()
    assert len(got.float_val) == 0


# ------------------------------------------------------------------------------------------------
# convert_to_ndarray: the dtype TensorFlow infers, and what it refuses
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (1.5, np.float32),
        ([1.0, 2.5], np.float32),
        (1, np.int32),
        (2**31 - 1, np.int32),
        (-(2**31), np.int32),
        (2**31, np.int64),
        ([1, 2**40], np.int64),
        (True, np.bool_),
        (1 + 1j, np.complex128),
        (np.float64(2.0), np.float64),
        (np.array([1, 2]), np.array([1, 2]).dtype),
        (np.int8(3), np.int8),
        ([], np.float32),
    ],
)
def test_inferred_dtypes(value: Any, dtype: Any) -> None:
    assert convert_to_ndarray(value, None).dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (1.5, dtypes.int32),
        (1.0, dtypes.int64),
        ([1, 2.5], dtypes.int32),
        (1j, dtypes.float32),
        ("text", dtypes.float32),
        (1.0, dtypes.bool),
    ],
)
def test_float_into_int_and_other_kind_changes_are_type_errors(value: Any, dtype: Any) -> None:
    with pytest.raises(TypeError, match=f"Expected {dtype.name}"):
        convert_to_ndarray(value, dtype)


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (1, dtypes.float32, np.float32(1)),
        (3, dtypes.int64, np.int64(3)),
        (True, dtypes.int32, np.int32(1)),
        (2, dtypes.complex64, np.complex64(2)),
        (0.5, dtypes.float16, np.float16(0.5)),
        ("s", dtypes.string, b"s"),
    ],
)
def test_explicit_dtype_conversions(value: Any, dtype: Any, expected: Any) -> None:
    got = convert_to_ndarray(value, dtype)
    assert got.dtype == dtype.np_dtype
    assert got.item() == expected


def test_none_is_value_error() -> None:
    with pytest.raises(ValueError, match="None values not supported"):
        convert_to_ndarray(None, None)
