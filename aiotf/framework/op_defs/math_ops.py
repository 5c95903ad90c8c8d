"""Math ops: elementwise arithmetic, matrix multiply, reductions to an index."""

from aiotf.framework import common_shapes
from aiotf.framework.op_def_registry import register_op

_BINARY_TYPES = (
    "T: {bfloat16, half, float, double, uint8, uint16, uint32, uint64, int8, int16, int32, "
    "int64, complex64, complex128}"
)

_SUB_TYPES = (
    "T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64, "
    "complex128, uint32, uint64}"
)
_BINARY_MORE = (
    "T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, uint32, uint64, "
    "int64, complex64, complex128}"
)
for _name, _types, _commutative in (  # each in TensorFlow's order (its messages list them so)
    ("AddV2", _BINARY_TYPES, True),
    ("Sub", _SUB_TYPES, False),
    ("Mul", _BINARY_MORE, True),
    ("RealDiv", _BINARY_MORE, False),
):
    register_op(
        _name,
        inputs=["x: T", "y: T"],
        outputs=["z: T"],
        attrs=[_types],
        shape_fn=common_shapes.broadcast_binary,
        is_commutative=_commutative,
    )
register_op(
    "Add",
    inputs=["x: T", "y: T"],
    outputs=["z: T"],
    attrs=[
        "T: {bfloat16, half, float, double, uint8, int8, int16, int32, int64, complex64, "
        "complex128, string}"
    ],
    shape_fn=common_shapes.broadcast_binary,
)
register_op(
    "Neg",
    inputs=["x: T"],
    outputs=["y: T"],
    attrs=["T: {bfloat16, half, float, double, int8, int16, int32, int64, complex64, complex128}"],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "LogicalNot",
    inputs=["x: bool"],
    outputs=["y: bool"],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "MatMul",
    inputs=["a: T", "b: T"],
    outputs=["product: T"],
    attrs=[
        "transpose_a: bool = false",
        "transpose_b: bool = false",
        "T: {bfloat16, half, float, double, int32, int64, uint8, uint16, uint32, uint64, "
        "complex64, complex128}",
        "grad_a: bool = false",
        "grad_b: bool = false",
    ],
    shape_fn=common_shapes.matmul,
)
for _name, _index_types, _output_types in (
    ("ArgMax", "{int16, int32, int64}", "{int16, uint16, int32, int64}"),
    ("ArgMin", "{int32, int64}", "{int32, int64}"),  # TensorFlow's are narrower than ArgMax's
):
    register_op(
        _name,
        inputs=["input: T", "dimension: Tidx"],
        outputs=["output: output_type"],
        attrs=[
            "T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
            "uint32, uint64, qint8, quint8, qint32, qint16, quint16, bool}",
            f"Tidx: {_index_types} = int32",
            f"output_type: {_output_types} = int64",
        ],
        shape_fn=common_shapes.reduce_one_axis,
    )
register_op(
    "Cast",
    inputs=["x: SrcT"],
    outputs=["y: DstT"],
    attrs=["SrcT: type", "DstT: type", "Truncate: bool = false"],
    shape_fn=common_shapes.unchanged,
)

# ----------------------------------------------------------------------------------------------
# Elementwise unary and binary ops, comparisons, reductions, scans and Range
# (TensorFlow's core/ops/math_ops.cc).
# ----------------------------------------------------------------------------------------------

_FLOAT_COMPLEX = "T: {bfloat16, half, float, double, complex64, complex128}"
_SIGNED = "T: {bfloat16, half, float, double, int8, int16, int32, int64, complex64, complex128}"
_REAL_ORDERED = (
    "T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, int64, uint64}"
)
_UNARY_TYPES = {
    "Abs": "T: {bfloat16, half, float, double, int8, int16, int32, int64}",
    "Exp": _FLOAT_COMPLEX,
    "Log": _FLOAT_COMPLEX,
    "Sqrt": _FLOAT_COMPLEX,
    "Rsqrt": _FLOAT_COMPLEX,
    "Tanh": _FLOAT_COMPLEX,
    "Sigmoid": _FLOAT_COMPLEX,
    "Reciprocal": _SIGNED,
    "Square": (
        "T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16, uint32, "
        "uint64, complex64, complex128}"
    ),
    "Sign": _SIGNED,
    "Floor": "T: {bfloat16, half, float, double}",
    "Ceil": "T: {bfloat16, half, float, double}",
    "Round": _SIGNED,
    "Log1p": _FLOAT_COMPLEX,
    "Expm1": _FLOAT_COMPLEX,
    "Sin": _FLOAT_COMPLEX,
    "Cos": _FLOAT_COMPLEX,
}
for _name, _types in _UNARY_TYPES.items():
    register_op(
        _name,
        inputs=["x: T"],
        outputs=["y: T"],
        attrs=[_types],
        shape_fn=common_shapes.unchanged,
    )
register_op(
    "IsNan",
    inputs=["x: T"],
    outputs=["y: bool"],
    attrs=["T: {bfloat16, half, float, double}"],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "IsFinite",
    inputs=["x: T"],
    outputs=["y: bool"],
    attrs=["T: {bfloat16, half, float, double}"],
    shape_fn=common_shapes.unchanged,
)

# (types, is_commutative) as TensorFlow's op defs have them: Maximum and Minimum are not marked
# commutative (grappler then leaves their inputs in order, and a broadcast error names the
# shapes as built).
_BINARY_TYPES_BY_OP = {
    "Maximum": (_REAL_ORDERED, False),
    "Minimum": (_REAL_ORDERED, False),
    "Pow": (
        "T: {bfloat16, float, half, double, int8, int16, int32, int64, complex64, complex128}",
        False,
    ),
    "FloorDiv": (_BINARY_MORE, False),
    "FloorMod": (
        "T: {int8, int16, int32, int64, uint8, uint16, uint32, uint64, bfloat16, half, float, "
        "double}",
        False,
    ),
    "TruncateDiv": (_BINARY_MORE, False),
    "TruncateMod": ("T: {int32, int64, bfloat16, half, float, double}", False),
    "Div": (_BINARY_MORE, False),
    "DivNoNan": ("T: {half, float, bfloat16, double, complex64, complex128}", False),
    "SquaredDifference": (
        "T: {bfloat16, half, float, double, int32, int64, complex64, complex128}",
        True,
    ),
}
for _name, (_types, _commutative) in _BINARY_TYPES_BY_OP.items():
    register_op(
        _name,
        inputs=["x: T", "y: T"],
        outputs=["z: T"],
        attrs=[_types],
        shape_fn=common_shapes.broadcast_binary,
        is_commutative=_commutative,
    )

for _name in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    register_op(
        _name,
        inputs=["x: T", "y: T"],
        outputs=["z: bool"],
        attrs=["T: realnumbertype"],
        shape_fn=common_shapes.broadcast_binary,
    )
for _name in ("Equal", "NotEqual"):
    register_op(
        _name,
        inputs=["x: T", "y: T"],
        outputs=["z: bool"],
        attrs=["T: type", "incompatible_shape_error: bool = true"],
        shape_fn=common_shapes.broadcast_binary,
        is_commutative=True,
    )
for _name in ("LogicalAnd", "LogicalOr"):
    register_op(
        _name,
        inputs=["x: bool", "y: bool"],
        outputs=["z: bool"],
        shape_fn=common_shapes.broadcast_binary,
        is_commutative=True,
    )
register_op(
    "AddN",
    inputs=["inputs: N * T"],
    outputs=["sum: T"],
    attrs=[
        "N: int >= 1",
        "T: {float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, qint32, "
        "bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64, variant}",
    ],
    shape_fn=common_shapes.add_n,
    is_commutative=True,
)
register_op(
    "Select",
    inputs=["condition: bool", "t: T", "e: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape_fn=common_shapes.select,
)
register_op(
    "SelectV2",
    inputs=["condition: bool", "t: T", "e: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape_fn=common_shapes.select_v2,
)

_REDUCE_IDX = "Tidx: {int32, int64} = int32"
_REAL_AND_QUANTIZED = (
    "T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, "
    "uint64, qint8, quint8, qint32, qint16, quint16}"
)
for _name, _types in (
    ("Sum", "T: numbertype"),
    ("Mean", "T: numbertype"),
    ("Prod", "T: numbertype"),
    ("Max", _REAL_AND_QUANTIZED),
    ("Min", _REAL_AND_QUANTIZED),
):
    register_op(
        _name,
        inputs=["input: T", "reduction_indices: Tidx"],
        outputs=["output: T"],
        attrs=["keep_dims: bool = false", _types, _REDUCE_IDX],
        shape_fn=common_shapes.reduction,
    )
for _name in ("All", "Any"):
    register_op(
        _name,
        inputs=["input: bool", "reduction_indices: Tidx"],
        outputs=["output: bool"],
        attrs=["keep_dims: bool = false", _REDUCE_IDX],
        shape_fn=common_shapes.reduction,
    )
for _name in ("Cumsum", "Cumprod"):
    register_op(
        _name,
        inputs=["x: T", "axis: Tidx"],
        outputs=["out: T"],
        attrs=[
            "exclusive: bool = false",
            "reverse: bool = false",
            "T: numbertype",
            _REDUCE_IDX,
        ],
        shape_fn=common_shapes.unchanged,
    )
register_op(
    "Range",
    inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"],
    outputs=["output: Tidx"],
    attrs=[
        "Tidx: {bfloat16, half, float, double, int8, int16, int32, int64, uint16, uint32, "
        "uint64} = int32"
    ],
    shape_fn=common_shapes.range_shape,
)
register_op(
    "BatchMatMulV2",
    inputs=["x: T", "y: T"],
    outputs=["output: T"],
    attrs=[
        "T: {bfloat16, half, float, double, int16, int32, int64, uint8, uint16, uint32, uint64, "
        "complex64, complex128}",
        "adj_x: bool = false",
        "adj_y: bool = false",
        "grad_x: bool = false",
        "grad_y: bool = false",
    ],
    shape_fn=common_shapes.batch_matmul,
)
