"""Static-shape cases, shared by ``record_tf_shapes.py`` (which writes TensorFlow's answers)
and ``test_shapes_as_tensorflows.py`` (which checks aiotf's): one node each, built from
placeholders of partly known shapes and constants, its op's inputs in the op def's order.

An input is ``P(dims, dtype)`` (a placeholder: ``dims`` None for an unknown rank, None in it
for an unknown dimension), ``C(value, dtype)`` (a constant), or a list of them (a list input).
"""

from __future__ import annotations

from typing import Any

Input = Any


def P(dims: list[int | None] | None, dtype: str = "float32") -> Input:  # noqa: N802
    return ["p", dims, dtype]


def C(value: Any, dtype: str = "int32") -> Input:  # noqa: N802
    return ["c", value, dtype]


F = "float32"
CASES: dict[str, tuple[str, list[Input], dict[str, Any]]] = {
    # elementwise, broadcasting
    "add_broadcast": ("AddV2", [P([None, 3]), P([2, 1])], {}),
    "add_unknown_rank": ("AddV2", [P(None), P([2])], {}),
    "add_incompatible": ("AddV2", [P([None, 3]), P([4])], {}),
    "mul_unknown_dims": ("Mul", [P([None, None]), P([5, 1, 1])], {}),
    "squared_difference": ("SquaredDifference", [P([2, 3]), P([3])], {}),
    "pow": ("Pow", [P([2, 1]), P([3])], {}),
    "equal": ("Equal", [P([2, 3]), P([3])], {}),
    "maximum": ("Maximum", [P([2, None]), P([3])], {}),
    "select_v2": ("SelectV2", [P([None, 1], "bool"), P([2, 3]), P([3])], {}),
    "relu": ("Relu", [P([None, 4])], {}),
    "softmax": ("Softmax", [P([2, None])], {}),
    "softmax_scalar": ("Softmax", [P([])], {}),
    "add_n": ("AddN", [[P([None, 3]), P([2, None])]], {}),
    "add_n_incompatible": ("AddN", [[P([2, 3]), P([2, 4])]], {}),
    "add_n_rank": ("AddN", [[P([2]), P([2, 1])]], {}),
    "select_v2_incompatible": ("SelectV2", [P([2, 1], "bool"), P([2, 3]), P([4])], {}),
    "log_softmax_scalar": ("LogSoftmax", [P([])], {}),
    # products
    "matmul": ("MatMul", [P([None, 3]), P([3, 4])], {}),
    "matmul_transposed": (
        "MatMul",
        [P([3, None]), P([4, 3])],
        {"transpose_a": True, "transpose_b": True},
    ),
    "matmul_incompatible": ("MatMul", [P([2, 3]), P([4, 5])], {}),
    "matmul_rank": ("MatMul", [P([3]), P([3, 4])], {}),
    "batch_matmul_broadcast": ("BatchMatMulV2", [P([5, 1, 2, 3]), P([7, 3, 4])], {}),
    "batch_matmul_adjoint": ("BatchMatMulV2", [P([None, 3, 2]), P([3, 4])], {"adj_x": True}),
    "batch_matmul_batches_incompatible": ("BatchMatMulV2", [P([2, 2, 3]), P([3, 3, 4])], {}),
    "bias_add": ("BiasAdd", [P([None, 3]), P([3])], {}),
    "bias_add_nchw": ("BiasAdd", [P([None, 3, 5, 5]), P([3])], {"data_format": "NCHW"}),
    "bias_add_incompatible": ("BiasAdd", [P([2, 3]), P([4])], {}),
    # shapes
    "reshape_inferred": ("Reshape", [P([None, 4]), C([-1, 2])], {}),
    "reshape_known": ("Reshape", [P([2, 4]), C([-1, 2])], {}),
    "reshape_impossible": ("Reshape", [P([2, 3]), C([4, -1])], {}),
    "reshape_wrong_size": ("Reshape", [P([2, 3]), C([4, 2])], {}),
    "reshape_fed_shape": ("Reshape", [P([2, 4]), P([2], "int32")], {}),
    "transpose": ("Transpose", [P([2, None, 4]), C([2, 0, 1])], {}),
    "transpose_fed_perm": ("Transpose", [P([2, 3]), P([2], "int32")], {}),
    "concat": ("ConcatV2", [[P([2, None]), P([None, 3])], C(1)], {}),
    "concat_axis0": ("ConcatV2", [[P([2, 3]), P([4, 3])], C(0)], {}),
    "concat_incompatible": ("ConcatV2", [[P([2, 3]), P([4, 5])], C(0)], {}),
    "concat_axis1_incompatible": ("ConcatV2", [[P([2, 3]), P([4, 5])], C(1)], {}),
    "pack": ("Pack", [[P([2, None]), P([None, 3])]], {"axis": 0}),
    "pack_last": ("Pack", [[P([2, None]), P([None, 3])]], {"axis": -1}),
    "unpack": ("Unpack", [P([3, None])], {"num": 3, "axis": 0}),
    "split": ("Split", [C(1), P([2, 6])], {"num_split": 3}),
    "split_uneven": ("Split", [C(1), P([2, 5])], {"num_split": 3}),
    "split_v": ("SplitV", [P([4, None]), C([1, 3]), C(0)], {"num_split": 2}),
    "squeeze_all": ("Squeeze", [P([1, None, 1, 3])], {}),
    "squeeze_dims": ("Squeeze", [P([1, None, 3])], {"squeeze_dims": [0]}),
    "squeeze_not_one": ("Squeeze", [P([2, 3])], {"squeeze_dims": [0]}),
    "expand_dims": ("ExpandDims", [P([2, 3]), C(-1)], {}),
    "expand_dims_fed_axis": ("ExpandDims", [P([2, 3]), P([], "int32")], {}),
    "tile": ("Tile", [P([2, None]), C([3, 2])], {}),
    "tile_fed": ("Tile", [P([2, 3]), P([2], "int32")], {}),
    "slice": ("Slice", [P([5, None]), C([1, 0]), C([2, -1])], {}),
    "strided_slice": ("StridedSlice", [P([5, 6]), C([1, 0]), C([3, 6]), C([1, 2])], {}),
    "strided_slice_shrink": (
        "StridedSlice",
        [P([5, None]), C([1, 0]), C([2, 0]), C([1, 1])],
        {"shrink_axis_mask": 1, "end_mask": 2},
    ),
    "strided_slice_new_axis": (
        "StridedSlice",
        [P([5, 6]), C([0, 0]), C([0, 6]), C([1, 1])],
        {"new_axis_mask": 1},
    ),
    "strided_slice_ellipsis": (
        "StridedSlice",
        [P([2, None, 4]), C([0, 1]), C([0, 3]), C([1, 1])],
        {"ellipsis_mask": 1},
    ),
    "gather_v2": ("GatherV2", [P([5, 3]), P([None], "int32"), C(0)], {}),
    "gather_v2_axis1": ("GatherV2", [P([5, 3]), P([2, 2], "int32"), C(1)], {}),
    "gather": ("Gather", [P([5, 3]), P([None], "int32")], {}),
    "gather_nd": ("GatherNd", [P([5, 6, 7]), P([None, 2], "int32")], {}),
    "shape": ("Shape", [P([None, 3])], {}),
    "shape_unknown_rank": ("Shape", [P(None)], {}),
    "shape_n": ("ShapeN", [[P([2, 3]), P([None])]], {}),
    "size": ("Size", [P([None])], {}),
    "rank": ("Rank", [P([None, 2])], {}),
    "fill": ("Fill", [C([2, 3]), C(1.0, F)], {}),
    "fill_fed_dims": ("Fill", [P([2], "int32"), C(1.0, F)], {}),
    "range": ("Range", [C(0), C(10), C(3)], {}),
    "range_fed": ("Range", [P([], "int32"), C(10), C(1)], {}),
    "broadcast_to": ("BroadcastTo", [P([3]), C([2, 3])], {}),
    "zeros_like": ("ZerosLike", [P([None, 2])], {}),
    "identity_n": ("IdentityN", [[P([2]), P([None])]], {}),
    "where": ("Where", [P([3, None], "bool")], {}),
    "cast": ("Cast", [P([None, 2])], {"DstT": "int32"}),
    "pad": ("Pad", [P([2, None]), C([[1, 1], [2, 2]])], {}),
    "mirror_pad": ("MirrorPad", [P([None, 4]), C([[1, 1], [2, 2]])], {"mode": "REFLECT"}),
    "one_hot": ("OneHot", [P([None], "int32"), C(5), C(1.0, F), C(0.0, F)], {"axis": -1}),
    "cumsum": ("Cumsum", [P([2, None]), C(1)], {}),
    "reverse_v2": ("ReverseV2", [P([2, None]), C([1])], {}),
    # reductions
    "sum": ("Sum", [P([2, None, 4]), C([1])], {}),
    "sum_keep_dims": ("Sum", [P([2, None, 4]), C([1])], {"keep_dims": True}),
    "sum_fed_axes": ("Sum", [P([2, 3]), P([1], "int32")], {}),
    "sum_fed_axes_kept": ("Sum", [P([2, 3]), P([1], "int32")], {"keep_dims": True}),
    "mean_all": ("Mean", [P([2, 3]), C([0, 1])], {}),
    "max_out_of_range": ("Max", [P([2, 3]), C([2])], {}),
    "arg_max": ("ArgMax", [P([2, None, 4]), C(1)], {}),
    "l2_loss": ("L2Loss", [P([2, 3])], {}),
    # images
    "conv2d_same": (
        "Conv2D",
        [P([None, 28, 28, 1]), P([5, 5, 1, 32])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "conv2d_valid_strided": (
        "Conv2D",
        [P([None, 28, 28, 1]), P([5, 5, 1, 32])],
        {"strides": [1, 2, 2, 1], "padding": "VALID"},
    ),
    "conv2d_channels": (
        "Conv2D",
        [P([None, 28, 28, 3]), P([5, 5, 1, 32])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "conv2d_input_depth": (
        "Conv2D",
        [P([None, 28, 28, 4]), P([5, 5, 3, 6])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "conv2d_grouped": (
        "Conv2D",
        [P([None, 28, 28, 4]), P([5, 5, 2, 6])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "max_pool": (
        "MaxPool",
        [P([None, 28, 28, 32])],
        {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"},
    ),
    "max_pool_same_odd": (
        "MaxPool",
        [P([1, 7, 7, 3])],
        {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"},
    ),
    "avg_pool": (
        "AvgPool",
        [P([None, 9, None, 3])],
        {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "VALID"},
    ),
    "depthwise": (
        "DepthwiseConv2dNative",
        [P([None, 8, 8, 3]), P([3, 3, 3, 2])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "fused_batch_norm": (
        "FusedBatchNormV3",
        [P([None, 4, 4, 3]), P([3]), P([3]), P([0]), P([0])],
        {"is_training": True},
    ),
    "space_to_batch": ("SpaceToBatchND", [P([1, 4, 4, 1]), C([2, 2]), C([[0, 0], [0, 0]])], {}),
    "batch_to_space": ("BatchToSpaceND", [P([4, 2, 2, 1]), C([2, 2]), C([[0, 0], [0, 0]])], {}),
    # more shapes, and errors while building
    "gather_v2_axis_out_of_range": ("GatherV2", [P([5, 3]), P([2], "int32"), C(2)], {}),
    "transpose_perm_length": ("Transpose", [P([2, 3]), C([0, 1, 2])], {}),
    "tile_multiples_length": ("Tile", [P([2, 3]), C([2])], {}),
    "pad_paddings_shape": ("Pad", [P([2, 3]), C([[1, 1]])], {}),
    "pad_v2": ("PadV2", [P([2, None]), C([[1, 1], [0, 2]]), C(0.0, F)], {}),
    "one_hot_axis0": ("OneHot", [P([2, 3], "int32"), C(4), C(1.0, F), C(0.0, F)], {"axis": 0}),
    "slice_static_bounds": ("Slice", [P([5]), C([3]), C([4])], {}),
    "slice_fed_size": ("Slice", [P([5, 6]), C([1, 2]), P([2], "int32")], {}),
    "fill_negative": ("Fill", [C([-1, 2]), C(1.0, F)], {}),
    "range_negative": ("Range", [C(5), C(1), C(1)], {}),
    "split_axis_out_of_range": ("Split", [C(2), P([2, 6])], {"num_split": 2}),
    "strided_slice_shrink_out_of_range": (
        "StridedSlice",
        [P([5, 6]), C([7, 0]), C([8, 0]), C([1, 1])],
        {"shrink_axis_mask": 1, "end_mask": 2},
    ),
    "prod_keep": ("Prod", [P([2, None, 4]), C([0, 2])], {"keep_dims": True}),
    "any": ("Any", [P([2, 3], "bool"), C(-1)], {}),
    "cumprod": ("Cumprod", [P([2, None]), C(0)], {}),
    "reverse_v1": ("Reverse", [P([2, 3]), C([True, False], "bool")], {}),
    "placeholder_with_default": (
        "PlaceholderWithDefault",
        [C([[1.0, 2.0]], F)],
        {"shape": [None, 2]},
    ),
    "div_no_nan": ("DivNoNan", [P([2, 1]), P([3])], {}),
    "elu": ("Elu", [P([None, 2])], {}),
    "is_finite": ("IsFinite", [P([3, None])], {}),
    "leaky_relu": ("LeakyRelu", [P([None])], {}),
    "stop_gradient": ("StopGradient", [P(None)], {}),
    "truncate_div": ("TruncateDiv", [P([2, 1], "int32"), P([3], "int32")], {}),
    "unpack_axis": ("Unpack", [P([2, 3, None])], {"num": 3, "axis": 1}),
    "unpack_num": ("Unpack", [P([2, 3])], {"num": 3, "axis": 0}),
    "broadcast_to_incompatible": ("BroadcastTo", [P([3]), C([2, 4])], {}),
    "gather_nd_too_deep": ("GatherNd", [P([5, 6]), C([[1, 2, 3]])], {}),
    "conv2d_nchw": (
        "Conv2D",
        [P([None, 3, 28, 28]), P([5, 5, 3, 8])],
        {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NCHW"},
    ),
    "avg_pool_nchw": (
        "AvgPool",
        [P([None, 3, 8, 8])],
        {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding": "VALID", "data_format": "NCHW"},
    ),
    "max_pool_window_too_large": (
        "MaxPool",
        [P([1, 2, 2, 1])],
        {"ksize": [1, 3, 3, 1], "strides": [1, 1, 1, 1], "padding": "VALID"},
    ),
    "concat_scalars": ("ConcatV2", [[P([]), P([])], C(0)], {}),
    "pack_incompatible": ("Pack", [[P([2]), P([3])]], {"axis": 0}),
    # strided slices: masks, ellipsis, new axes, negative strides, as x[...] writes them
    "ss_begin_end_masks": (
        "StridedSlice",
        [P([5, 6, 7]), C([1, 2, 3]), C([4, 5, 6]), C([1, 1, 1])],
        {"begin_mask": 5, "end_mask": 2},
    ),
    "ss_negative_stride": (
        "StridedSlice",
        [P([5, 6]), C([-1, 0]), C([0, 6]), C([-1, 2])],
        {"end_mask": 1},
    ),
    "ss_negative_stride_unknown": (
        "StridedSlice",
        [P([None, 6]), C([-1, 5]), C([0, 0]), C([-2, -1])],
        {"end_mask": 3},
    ),
    "ss_ellipsis_middle": (
        "StridedSlice",
        [P([2, 3, 4, 5]), C([1, 0, 2]), C([2, 0, 4]), C([1, 1, 1])],
        {"ellipsis_mask": 2},
    ),
    "ss_new_axis_ellipsis": (
        "StridedSlice",
        [P([2, 3, None]), C([0, 0, 0]), C([0, 0, 1]), C([1, 1, 1])],
        {"new_axis_mask": 1, "ellipsis_mask": 2, "shrink_axis_mask": 4},
    ),
    "ss_shrink_negative": (
        "StridedSlice",
        [P([5, 6]), C([-1]), C([0]), C([1])],
        {"shrink_axis_mask": 1},
    ),
    "ss_out_of_range_clamped": ("StridedSlice", [P([5]), C([2]), C([100]), C([1])], {}),
    "ss_empty": ("StridedSlice", [P([5]), C([4]), C([2]), C([1])], {}),
    "ss_fed_begin": ("StridedSlice", [P([5, 6]), P([2], "int32"), C([3, 6]), C([1, 1])], {}),
    "ss_fed_begin_shrink": (
        "StridedSlice",
        [P([5, 6]), P([2], "int32"), C([3, 6]), C([1, 1])],
        {"shrink_axis_mask": 1},
    ),
    "ss_unknown_rank": (
        "StridedSlice",
        [P(None), C([1, 0]), C([3, 2]), C([1, 1])],
        {"shrink_axis_mask": 2},
    ),
    "ss_two_ellipses": (
        "StridedSlice",
        [P([2, 3]), C([0, 0]), C([1, 1]), C([1, 1])],
        {"ellipsis_mask": 3},
    ),
    "gather_v2_batch_dims": (
        "GatherV2",
        [P([2, 5, 3]), P([2, 4], "int32"), C(1)],
        {"batch_dims": 1},
    ),
    "gather_v2_negative_axis": ("GatherV2", [P([2, 5, 3]), P([4], "int32"), C(-1)], {}),
    # merges of three inputs (TensorFlow merges from the last), Select's condition,
    # BroadcastTo's rules, zero depths
    "concat_three_incompatible": ("ConcatV2", [[P([1, 3]), P([1, 4]), P([1, 5])], C(0)], {}),
    "pack_three_incompatible": ("Pack", [[P([2]), P([3]), P([4])]], {"axis": 0}),
    "add_n_three_incompatible": ("AddN", [[P([2]), P([3]), P([4])]], {}),
    "select_vector_cond_scalars": ("Select", [P([2], "bool"), P([]), P([])], {}),
    "select_vector_cond_rows": ("Select", [P([3], "bool"), P([2, 3]), P([2, 3])], {}),
    "select_matrix_cond": ("Select", [P([2, 4], "bool"), P([2, 3]), P([2, 3])], {}),
    "select_vector_cond_ok": ("Select", [P([2], "bool"), P([2, None]), P([None, 3])], {}),
    "select_scalar_cond": ("Select", [P([], "bool"), P([2, 3]), P([2, 3])], {}),
    "broadcast_to_rank": ("BroadcastTo", [P([2, 3, 4]), C([3, 4])], {}),
    "broadcast_to_two_wrong": ("BroadcastTo", [P([2, 3]), C([4, 5])], {}),
    "broadcast_to_zero": ("BroadcastTo", [P([0]), C([5])], {}),
    "broadcast_to_unknown_out": ("BroadcastTo", [P([5]), C([-1])], {}),
    "broadcast_to_fed": ("BroadcastTo", [P([3]), P([2], "int32")], {}),
    "conv2d_zero_groups": (
        "Conv2D",
        [P([1, 5, 5, 0]), P([3, 3, 3, 6])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "conv2d_zero_filter_depth": (
        "Conv2D",
        [P([1, 5, 5, 3]), P([3, 3, 0, 6])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    "reshape_negative": ("Reshape", [P([2, 3]), C([-2, 3])], {}),
    "one_hot_bad_axis": ("OneHot", [P([2], "int32"), C(3), C(1.0, F), C(0.0, F)], {"axis": -2}),
    "transpose_perm_out_of_range": ("Transpose", [P([2, 3]), C([0, 2])], {}),
    "transpose_perm_duplicate": ("Transpose", [P([2, 3]), C([0, 0])], {}),
    "transpose_perm_negative": ("Transpose", [P([2, 3, 4]), C([-1, 0, 1])], {}),
    "gather_v2_fed_axis_batch_dims": (
        "GatherV2",
        [P([2]), P([2, 2], "int32"), P([], "int32")],
        {"batch_dims": 2},
    ),
    "gather_v2_fed_axis_negative_batch_dims": (
        "GatherV2",
        [P([2, 3, 4]), P([2, 3], "int32"), P([], "int32")],
        {"batch_dims": -1},
    ),
    "gather_v2_axis_before_batch_dims": (
        "GatherV2",
        [P([2]), P([2], "int32"), C(3)],
        {"batch_dims": 1},
    ),
    "gather_v2_batch_dims_too_negative": (
        "GatherV2",
        [P([2, 2, 2]), P([2, 2], "int32"), C(0)],
        {"batch_dims": -3},
    ),
    "gather_v2_axis_rank": ("GatherV2", [P([5, 3]), P([2], "int32"), C([0])], {}),
    "broadcast_to_shape_rank": ("BroadcastTo", [P([3]), C([[2, 3]])], {}),
    "depthwise_unknown_filter_depth": (
        "DepthwiseConv2dNative",
        [P([1, 5, 5, 3]), P([3, 3, None, 4])],
        {"strides": [1, 2, 2, 1], "padding": "SAME"},
    ),
    "fill_dims_rank": ("Fill", [C([[2, 3]]), C(1.0, F)], {}),
    "gather_v2_fed_axis": ("GatherV2", [P([5, 3]), P([2], "int32"), P([], "int32")], {}),
    "gather_v2_batch_dims_too_large": (
        "GatherV2",
        [P([2, 5, 3]), P([2], "int32"), C(1)],
        {"batch_dims": 2},
    ),
    "gather_v2_batch_dims_after_axis": (
        "GatherV2",
        [P([2, 5, 3]), P([2, 4], "int32"), C(0)],
        {"batch_dims": 1},
    ),
    "expand_dims_out_of_range": ("ExpandDims", [P([2]), C(5)], {}),
    "softmax_xent_incompatible": ("SoftmaxCrossEntropyWithLogits", [P([2, 5]), P([2, 4])], {}),
    "depthwise_depth": (
        "DepthwiseConv2dNative",
        [P([None, 8, 8, 3]), P([3, 3, 4, 2])],
        {"strides": [1, 1, 1, 1], "padding": "SAME"},
    ),
    # losses
    "softmax_xent": ("SoftmaxCrossEntropyWithLogits", [P([None, 5]), P([None, 5])], {}),
    "sparse_softmax_xent": (
        "SparseSoftmaxCrossEntropyWithLogits",
        [P([None, 5]), P([None], "int64")],
        {},
    ),
}
