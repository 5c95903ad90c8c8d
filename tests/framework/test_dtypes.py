"""DType: TensorFlow's DataType enum paired with numpy, as ``tf.dtypes`` behaves."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from aiotf.framework import dtypes
from aiotf.framework.dtypes import as_dtype


@pytest.mark.parametrize(
    ("enum", "expected"),
    [
        (1, dtypes.float32),
        (2, dtypes.float64),
        (3, dtypes.int32),
        (4, dtypes.uint8),
        (7, dtypes.string),
        (9, dtypes.int64),
        (10, dtypes.bool),
        (14, dtypes.bfloat16),
        (18, dtypes.complex128),
        (19, dtypes.float16),
        (20, dtypes.resource),
        (23, dtypes.uint64),
    ],
)
def test_as_dtype_from_enum(enum: int, expected: dtypes.DType) -> None:
    dt = as_dtype(enum)
    assert dt is expected
    assert dt.as_datatype_enum == enum


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("float32", dtypes.float32),
        ("float", dtypes.float32),
        ("float64", dtypes.float64),
        ("double", dtypes.float64),
        ("half", dtypes.float16),
        ("float16", dtypes.float16),
        ("bfloat16", dtypes.bfloat16),
        ("int8", dtypes.int8),
        ("int64", dtypes.int64),
        ("uint32", dtypes.uint32),
        ("bool", dtypes.bool),
        ("string", dtypes.string),
        ("complex64", dtypes.complex64),
        ("resource", dtypes.resource),
        ("variant", dtypes.variant),
    ],
)
def test_as_dtype_from_name(name: str, expected: dtypes.DType) -> None:
    assert as_dtype(name) is expected


@pytest.mark.parametrize(
    ("np_type", "expected"),
    [
        (np.float32, dtypes.float32),
        (np.dtype("float64"), dtypes.float64),
        (np.int32, dtypes.int32),
        (np.dtype(np.int64), dtypes.int64),
        (np.uint8, dtypes.uint8),
        (np.uint16, dtypes.uint16),
        (np.int16, dtypes.int16),
        (np.bool_, dtypes.bool),
        (np.float16, dtypes.float16),
        (ml_dtypes.bfloat16, dtypes.bfloat16),
        (np.complex64, dtypes.complex64),
        (np.complex128, dtypes.complex128),
        (np.object_, dtypes.string),
        (np.bytes_, dtypes.string),
        (np.str_, dtypes.string),
        (np.dtype("S5"), dtypes.string),
    ],
)
def test_as_dtype_from_numpy(np_type: Any, expected: dtypes.DType) -> None:
    assert as_dtype(np_type) is expected


@pytest.mark.parametrize(
    ("py_type", "expected"),
    [(float, dtypes.float32), (bool, dtypes.bool), (object, dtypes.string)],
)
def test_as_dtype_from_python_types_follows_tensorflow(
    py_type: type, expected: dtypes.DType
) -> None:
    # tf.dtypes._PYTHON_TO_TF: float -> float32 (not numpy's float64), bool, object -> string.
    assert as_dtype(py_type) is expected


def test_as_dtype_rejects_python_int_like_tensorflow() -> None:
    with pytest.raises(TypeError):
        as_dtype(int)


def test_as_dtype_passes_a_dtype_through() -> None:
    assert as_dtype(dtypes.int16) is dtypes.int16
    assert as_dtype(dtypes.int16._as_ref) is dtypes.int16._as_ref


@pytest.mark.parametrize(
    "bad",
    [
        "floaty",
        "",
        0,  # DT_INVALID
        99,
        1.5,
        None,
        [1],
        dict,
        np.dtype("datetime64[s]"),
    ],
)
def test_as_dtype_bad_input_is_type_error(bad: Any) -> None:
    with pytest.raises(TypeError, match="to a TensorFlow DType"):
        as_dtype(bad)


def test_dtypes_are_interned() -> None:
    assert as_dtype("float32") is as_dtype(np.float32) is as_dtype(1) is dtypes.float32
    assert dtypes.half is dtypes.float16
    assert dtypes.double is dtypes.float64


def test_ref_types() -> None:
    ref = dtypes.float32._as_ref
    assert ref is as_dtype(101)
    assert ref is as_dtype("float32_ref")
    assert ref.name == "float32_ref"
    assert ref.is_ref_dtype
    assert not dtypes.float32.is_ref_dtype
    assert ref.base_dtype is dtypes.float32
    assert ref._as_ref is ref
    assert dtypes.float32.base_dtype is dtypes.float32
    assert ref != dtypes.float32
    assert hash(ref) != hash(dtypes.float32)
    assert ref.is_compatible_with(dtypes.float32)
    assert ref.is_floating
    assert ref.as_numpy_dtype is np.float32
    assert as_dtype("int32_ref").base_dtype is dtypes.int32
    assert repr(ref) == "tf.float32_ref"


def test_equality_accepts_anything_as_dtype_accepts() -> None:
    assert dtypes.float32 == "float32"
    assert dtypes.float32 == np.float32
    assert dtypes.float32 == np.dtype("float32")
    assert dtypes.float32 == 1
    assert dtypes.int64 != dtypes.int32
    assert dtypes.float32 != "float64"
    assert (dtypes.float32 != "float32") is False


def test_equality_with_unconvertible_is_false_not_an_error() -> None:
    assert (dtypes.float32 == "not a type") is False
    assert (dtypes.float32 == None) is False  # noqa: E711 - the comparison is the test
    assert dtypes.float32 != object()


def test_hash_is_the_enum_and_works_in_sets_and_dicts() -> None:
    assert hash(dtypes.float32) == 1
    assert {dtypes.float32, as_dtype("float"), as_dtype(np.float32)} == {dtypes.float32}
    table = {dtypes.int32: "i"}
    assert table[as_dtype("int32")] == "i"


def test_pickle_round_trip_keeps_identity() -> None:
    for dt in (dtypes.float32, dtypes.bfloat16, dtypes.string, dtypes.int64._as_ref):
        assert pickle.loads(pickle.dumps(dt)) is dt


def test_repr_and_name() -> None:
    assert repr(dtypes.float32) == "tf.float32"
    assert dtypes.bfloat16.name == "bfloat16"
    assert dtypes.half.name == "float16"


@pytest.mark.parametrize(
    ("dt", "floating", "integer", "unsigned", "complex_", "numeric"),
    [
        (dtypes.float32, True, False, False, False, True),
        (dtypes.bfloat16, True, False, False, False, True),
        (dtypes.int8, False, True, False, False, True),
        (dtypes.uint64, False, True, True, False, True),
        (dtypes.complex64, False, False, False, True, True),
        (dtypes.bool, False, False, False, False, False),
        (dtypes.string, False, False, False, False, False),
        (dtypes.qint8, False, False, False, False, True),
    ],
)
def test_kind_predicates(
    dt: dtypes.DType, floating: bool, integer: bool, unsigned: bool, complex_: bool, numeric: bool
) -> None:
    assert dt.is_floating is floating
    assert dt.is_integer is integer
    assert dt.is_unsigned is unsigned
    assert dt.is_complex is complex_
    assert dt.is_numeric is numeric
    assert dt.is_bool is (dt is dtypes.bool)


def test_sizes_and_numpy_types() -> None:
    assert dtypes.float64.size == 8
    assert dtypes.bfloat16.size == 2
    assert dtypes.complex128.size == 16
    assert dtypes.bool.size == 1
    assert dtypes.bfloat16.as_numpy_dtype is ml_dtypes.bfloat16
    assert dtypes.string.np_dtype == np.dtype(object)
    assert dtypes.int32.np_dtype == np.dtype(np.int32)


def test_min_and_max() -> None:
    assert (dtypes.int8.min, dtypes.int8.max) == (-128, 127)
    assert (dtypes.uint8.min, dtypes.uint8.max) == (0, 255)
    assert dtypes.int64.max == 2**63 - 1
    assert dtypes.float16.max == 65504.0
    assert dtypes.float32.min == -float(np.finfo(np.float32).max)
    assert (dtypes.bool.min, dtypes.bool.max) == (False, True)
    with pytest.raises(TypeError):
        _ = dtypes.string.min


def test_is_compatible_with() -> None:
    assert dtypes.float32.is_compatible_with("float32")
    assert dtypes.float32.is_compatible_with(dtypes.float32._as_ref)
    assert not dtypes.float32.is_compatible_with(dtypes.float64)


def test_from_numpy() -> None:
    assert dtypes.from_numpy(np.dtype(np.float32)) is dtypes.float32
    assert dtypes.from_numpy(np.dtype("S3")) is dtypes.string
    assert dtypes.from_numpy(np.dtype(ml_dtypes.bfloat16)) is dtypes.bfloat16


def _fresh_python(code: str) -> str:
    """What ``code`` prints run by a new interpreter (where no test has imported ml_dtypes)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_import_aiotf_leaves_ml_dtypes_until_bfloat16_is_needed() -> None:
    """ml_dtypes 0.7.0 takes ~0.55 s to import: ``import aiotf`` must not pay it."""
    code = (
        "import sys, aiotf; loaded = 'ml_dtypes' in sys.modules; "
        "t = aiotf.bfloat16.np_dtype; "
        "print(loaded, 'ml_dtypes' in sys.modules, t, aiotf.bfloat16.size, aiotf.bfloat16.max)"
    )
    assert _fresh_python(code).split() == [
        "False",
        "True",
        "bfloat16",
        "2",
        str(3.3895313892515355e38),
    ]


def test_a_graphs_first_bfloat16_tensor_imports_ml_dtypes_not_its_first_run() -> None:
    """Importing ml_dtypes holds the GIL for ~0.5 s: in a run it would stall the event loop."""
    code = (
        "import sys, aiotf; g = aiotf.Graph(); loaded = []\n"
        "with g.as_default():\n"
        "    aiotf.placeholder(aiotf.float32, [2]); loaded.append('ml_dtypes' in sys.modules)\n"
        "    aiotf.placeholder(aiotf.bfloat16, [2]); loaded.append('ml_dtypes' in sys.modules)\n"
        "print(*loaded)"
    )
    assert _fresh_python(code).split() == ["False", "True"]


def test_the_reference_type_first_loads_bfloat16_for_both() -> None:
    code = (
        "from aiotf.framework import dtypes; ref = dtypes.as_dtype(114); "
        "print(ref.name, ref.np_dtype, ref.size, ref.as_numpy_dtype.__name__, "
        "dtypes.bfloat16.np_dtype, dtypes.as_dtype(ref.np_dtype).name)"
    )
    assert _fresh_python(code).split() == [
        "bfloat16_ref",
        "bfloat16",
        "2",
        "bfloat16",
        "bfloat16",
        "bfloat16",
    ]


@pytest.mark.parametrize(
    "use",
    [
        "dtypes.as_dtype(ml_dtypes.bfloat16)",
        "dtypes.from_numpy(np.zeros(2, ml_dtypes.bfloat16).dtype)",
        "dtypes.as_dtype(np.dtype(ml_dtypes.bfloat16))",
    ],
)
def test_an_array_of_ml_dtypes_bfloat16_made_before_aiotf_loaded_it_is_bfloat16(use: str) -> None:
    code = (
        "import ml_dtypes, numpy as np; from aiotf.framework import dtypes; "
        f"d = {use}; print(d is dtypes.bfloat16, dtypes.as_dtype(114).np_dtype)"
    )
    assert _fresh_python(code).split() == ["True", "bfloat16"]


def test_finfo_is_numpys_and_ml_dtypes_for_bfloat16() -> None:
    assert dtypes.finfo(np.dtype(np.float16)).max == np.finfo(np.float16).max
    assert dtypes.finfo(dtypes.bfloat16.np_dtype).max == ml_dtypes.finfo(ml_dtypes.bfloat16).max
