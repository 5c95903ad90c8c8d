"""Array ops: constants, placeholders, identity, shapes, indexing, padding, splitting."""

from aiotf.framework import common_shapes
from aiotf.framework.op_def_registry import register_op

register_op(
    "Const",
    outputs=["output: dtype"],
    attrs=["value: tensor", "dtype: type"],
    shape_fn=common_shapes.from_value_attr,
)
register_op(
    "Placeholder",
    outputs=["output: dtype"],
    attrs=["dtype: type", "shape: shape = <unknown>"],
    shape_fn=common_shapes.from_shape_attr,
)
register_op(
    "PlaceholderWithDefault",
    inputs=["input: dtype"],
    outputs=["output: dtype"],
    attrs=["dtype: type", "shape: shape"],
    shape_fn=common_shapes.from_shape_attr,
)
register_op(
    "Identity",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape_fn=common_shapes.unchanged,
)

# ----------------------------------------------------------------------------------------------
# Shape manipulation, indexing and copying ops (TensorFlow's core/ops/array_ops.cc).
# ----------------------------------------------------------------------------------------------

register_op(
    "IdentityN",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: list(type) >= 1"],
    shape_fn=common_shapes.identity_n,
)
register_op(
    "StopGradient",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type"],
    shape_fn=common_shapes.unchanged,
)
for _name, _types in (
    ("ZerosLike", "type"),
    ("OnesLike", "{bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, "
     "int64, uint64, complex64, complex128, bool}"),
):  # fmt: skip
    register_op(
        _name,
        inputs=["x: T"],
        outputs=["y: T"],
        attrs=[f"T: {_types}"],
        shape_fn=common_shapes.unchanged,
    )
register_op(
    "Fill",
    inputs=["dims: index_type", "value: T"],
    outputs=["output: T"],
    attrs=["T: type", "index_type: {int32, int64} = int32"],
    shape_fn=common_shapes.fill,
)
register_op(
    "BroadcastTo",
    inputs=["input: T", "shape: Tidx"],
    outputs=["output: T"],
    attrs=["T: type", "Tidx: {int32, int64} = int32"],
    shape_fn=common_shapes.broadcast_to,
)
register_op(
    "ExpandDims",
    inputs=["input: T", "dim: Tdim"],
    outputs=["output: T"],
    attrs=["T: type", "Tdim: {int32, int64} = int32"],
    shape_fn=common_shapes.expand_dims,
)
register_op(
    "Squeeze",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["T: type", "squeeze_dims: list(int) >= 0 = []"],
    shape_fn=common_shapes.squeeze,
)
register_op(
    "Gather",
    inputs=["params: Tparams", "indices: Tindices"],
    outputs=["output: Tparams"],
    attrs=["validate_indices: bool = true", "Tparams: type", "Tindices: {int32, int64}"],
    shape_fn=common_shapes.gather,
)
register_op(
    "GatherV2",
    inputs=["params: Tparams", "indices: Tindices", "axis: Taxis"],
    outputs=["output: Tparams"],
    attrs=[
        "batch_dims: int = 0",
        "Tparams: type",
        "Tindices: {int16, int32, int64}",
        "Taxis: {int32, int64}",
    ],
    shape_fn=common_shapes.gather_v2,
)
register_op(
    "Pack",
    inputs=["values: N * T"],
    outputs=["output: T"],
    attrs=["N: int >= 1", "T: type", "axis: int = 0"],
    shape_fn=common_shapes.pack,
)
register_op(
    "Unpack",
    inputs=["value: T"],
    outputs=["output: num * T"],
    attrs=["num: int >= 0", "T: type", "axis: int = 0"],
    shape_fn=common_shapes.unpack,
)
_REVERSE_TYPES = (
    "T: {uint8, int8, uint16, int16, uint32, int32, uint64, int64, bool, bfloat16, half, float, "
    "double, complex64, complex128, string}"
)
register_op(
    "Reverse",
    inputs=["tensor: T", "dims: bool"],
    outputs=["output: T"],
    attrs=[_REVERSE_TYPES],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "ReverseV2",
    inputs=["tensor: T", "axis: Tidx"],
    outputs=["output: T"],
    attrs=[
        "Tidx: {int32, int64} = int32",
        "T: {uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, bfloat16, half, "
        "float, double, complex64, complex128, string}",  # TensorFlow's order (not Reverse's)
    ],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "Slice",
    inputs=["input: T", "begin: Index", "size: Index"],
    outputs=["output: T"],
    attrs=["T: type", "Index: {int32, int64}"],
    shape_fn=common_shapes.slice_shape,
)
register_op(
    "StridedSlice",
    inputs=["input: T", "begin: Index", "end: Index", "strides: Index"],
    outputs=["output: T"],
    attrs=[
        "T: type",
        "Index: {int16, int32, int64}",
        "begin_mask: int = 0",
        "end_mask: int = 0",
        "ellipsis_mask: int = 0",
        "new_axis_mask: int = 0",
        "shrink_axis_mask: int = 0",
    ],
    shape_fn=common_shapes.strided_slice,
)
register_op(
    "Tile",
    inputs=["input: T", "multiples: Tmultiples"],
    outputs=["output: T"],
    attrs=["T: type", "Tmultiples: {int32, int64} = int32"],
    shape_fn=common_shapes.tile,
)
register_op(
    "Where",
    inputs=["input: T"],
    outputs=["index: int64"],
    attrs=[
        "T: {float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, qint32, "
        "bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64, bool} = bool"
    ],
    shape_fn=common_shapes.where,
)
register_op(
    "ConcatV2",
    inputs=["values: N * T", "axis: Tidx"],
    outputs=["output: T"],
    attrs=["N: int >= 2", "T: type", "Tidx: {int32, int64} = int32"],
    shape_fn=common_shapes.concat_v2,
)
register_op(
    "Reshape",
    inputs=["tensor: T", "shape: Tshape"],
    outputs=["output: T"],
    attrs=["T: type", "Tshape: {int32, int64} = int32"],
    shape_fn=common_shapes.reshape,
)
register_op(
    "Transpose",
    inputs=["x: T", "perm: Tperm"],
    outputs=["y: T"],
    attrs=["T: type", "Tperm: {int32, int64} = int32"],
    shape_fn=common_shapes.transpose,
)
register_op(
    "Shape",
    inputs=["input: T"],
    outputs=["output: out_type"],
    attrs=["T: type", "out_type: {int32, int64} = int32"],
    shape_fn=common_shapes.shape_of,
)
register_op(
    "Size",
    inputs=["input: T"],
    outputs=["output: out_type"],
    attrs=["T: type", "out_type: {int32, int64} = int32"],
    shape_fn=common_shapes.scalar,
)
register_op(
    "Rank",
    inputs=["input: T"],
    outputs=["output: int32"],
    attrs=["T: type"],
    shape_fn=common_shapes.scalar,
)

# ----------------------------------------------------------------------------------------------
# Padding, one-hot, n-d gathering, splitting.
# ----------------------------------------------------------------------------------------------

register_op(
    "Pad",
    inputs=["input: T", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=["T: type", "Tpaddings: {int32, int64} = int32"],
    shape_fn=common_shapes.pad,
)
register_op(
    "PadV2",
    inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
    outputs=["output: T"],
    attrs=["T: type", "Tpaddings: {int32, int64} = int32"],
    shape_fn=common_shapes.pad,
)
register_op(
    "MirrorPad",
    inputs=["input: T", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=["T: type", "Tpaddings: {int32, int64} = int32", "mode: {'REFLECT', 'SYMMETRIC'}"],
    shape_fn=common_shapes.pad,
)
register_op(
    "OneHot",
    inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
    outputs=["output: T"],
    attrs=["axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = int64"],
    shape_fn=common_shapes.one_hot,
)
register_op(
    "GatherNd",
    inputs=["params: Tparams", "indices: Tindices"],
    outputs=["output: Tparams"],
    attrs=["Tparams: type", "Tindices: {int16, int32, int64}", "bad_indices_policy: string = ''"],
    shape_fn=common_shapes.gather_nd,
)
register_op(
    "Split",
    inputs=["split_dim: int32", "value: T"],
    outputs=["output: num_split * T"],
    attrs=["num_split: int >= 1", "T: type"],
    shape_fn=common_shapes.split,
)
register_op(
    "SplitV",
    inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
    outputs=["output: num_split * T"],
    attrs=["num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = int64"],
    shape_fn=common_shapes.split_v,
)
register_op(
    "ShapeN",
    inputs=["input: N * T"],
    outputs=["output: N * out_type"],
    attrs=["N: int >= 1", "T: type", "out_type: {int32, int64} = int32"],
    shape_fn=common_shapes.shape_n,
)

# SpaceToBatchND / BatchToSpaceND: TensorFlow's atrous (dilated) convolutions wrap them around a
# convolution (``with_space_to_batch``).
register_op(
    "SpaceToBatchND",
    inputs=["input: T", "block_shape: Tblock_shape", "paddings: Tpaddings"],
    outputs=["output: T"],
    attrs=["T: type", "Tblock_shape: {int32, int64} = int32", "Tpaddings: {int32, int64} = int32"],
    shape_fn=common_shapes.space_to_batch_nd,
)
register_op(
    "BatchToSpaceND",
    inputs=["input: T", "block_shape: Tblock_shape", "crops: Tcrops"],
    outputs=["output: T"],
    attrs=["T: type", "Tblock_shape: {int32, int64} = int32", "Tcrops: {int32, int64} = int32"],
    shape_fn=common_shapes.batch_to_space_nd,
)
