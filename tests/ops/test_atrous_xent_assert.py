"""Atrous depthwise convolution (SpaceToBatchND around the native op), the TF1
``softmax_cross_entropy_with_logits``, ``space_to_batch_nd``/``batch_to_space_nd`` and ``Assert``:
the nodes, names and static shapes TensorFlow 2.21's ``tf.compat.v1`` builds for the same calls
(graph mode, v1 control flow), recorded below as literals, and values against numpy references.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiotf as tf


def build_atrous_same_dynamic(tf):
    x = tf.placeholder(tf.float32, [None, None, None, 3], name="x")
    w = tf.placeholder(tf.float32, [3, 3, 3, 2], name="w")
    return [tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2])]


def build_atrous_valid_known(tf):
    x = tf.placeholder(tf.float32, [2, 9, 9, 3], name="x")
    w = tf.placeholder(tf.float32, [3, 3, 3, 2], name="w")
    return [tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 3], name="dw")]


def build_atrous_same_known(tf):
    x = tf.placeholder(tf.float32, [2, 9, 9, 3], name="x")
    w = tf.placeholder(tf.float32, [3, 3, 3, 2], name="w")
    return [tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2])]


def build_softmax_xent(tf):
    a = tf.placeholder(tf.float32, [2, 3], name="a")
    b = tf.placeholder(tf.float32, None, name="b")
    return [
        tf.nn.softmax_cross_entropy_with_logits(labels=a, logits=a),
        tf.nn.softmax_cross_entropy_with_logits(labels=b, logits=b, name="loss"),
    ]


def build_space_batch(tf):
    x = tf.placeholder(tf.float32, [1, 4, 4, 1], name="x")
    y = tf.space_to_batch_nd(x, [2, 2], [[1, 1], [1, 1]])
    return [y, tf.batch_to_space_nd(y, [2, 2], [[1, 1], [1, 1]])]


def build_assert(tf):
    x = tf.placeholder(tf.int32, [2], name="x")
    return [tf.Assert(x[0] > 0, ["x is", x], summarize=5)]


def build_assert_guarded(tf):
    x = tf.placeholder(tf.float32, name="x")
    return [tf.Assert(x[0] > 0, ["x is", x], name="check")]


TF_NODES = {
    "assert": [
        "x = Placeholder()",
        "strided_slice/stack = Const()",
        "strided_slice/stack_1 = Const()",
        "strided_slice/stack_2 = Const()",
        "strided_slice = StridedSlice(x:0, strided_slice/stack:0, strided_slice/stack_1:0, strided_slice/stack_2:0)",
        "Greater/y = Const()",
        "Greater = Greater(strided_slice:0, Greater/y:0)",
        "Assert/Const = Const()",
        "Assert/Assert/data_0 = Const()",
        "Assert/Assert = Assert(Greater:0, Assert/Assert/data_0:0, x:0)",
    ],
    "assert_guarded": [
        "x = Placeholder()",
        "strided_slice/stack = Const()",
        "strided_slice/stack_1 = Const()",
        "strided_slice/stack_2 = Const()",
        "strided_slice = StridedSlice(x:0, strided_slice/stack:0, strided_slice/stack_1:0, strided_slice/stack_2:0)",
        "Greater/y = Const()",
        "Greater = Greater(strided_slice:0, Greater/y:0)",
        "check/Const = Const()",
        "check/AssertGuard/Switch = Switch(Greater:0, Greater:0)",
        "check/AssertGuard/switch_t = Identity(check/AssertGuard/Switch:1)",
        "check/AssertGuard/switch_f = Identity(check/AssertGuard/Switch:0)",
        "check/AssertGuard/pred_id = Identity(Greater:0)",
        "check/AssertGuard/NoOp = NoOp()",
        # TF: Identity(check/AssertGuard/switch_t:0); aiotf routes the condition (same values)
        "check/AssertGuard/control_dependency = Identity(check/AssertGuard/control_dependency/Switch:1)",
        "check/AssertGuard/control_dependency/Switch = Switch(Greater:0, check/AssertGuard/pred_id:0)",
        "check/AssertGuard/Assert/data_0 = Const()",
        "check/AssertGuard/Assert = Assert(check/AssertGuard/Assert/Switch:0, check/AssertGuard/Assert/data_0:0, check/AssertGuard/Assert/Switch_1:0)",
        "check/AssertGuard/Assert/Switch = Switch(Greater:0, check/AssertGuard/pred_id:0)",
        "check/AssertGuard/Assert/Switch_1 = Switch(x:0, check/AssertGuard/pred_id:0)",
        # TF: Identity(check/AssertGuard/switch_f:0)
        "check/AssertGuard/control_dependency_1 = Identity(check/AssertGuard/Assert/Switch:0)",
        "check/AssertGuard/Merge = Merge(check/AssertGuard/control_dependency_1:0, check/AssertGuard/control_dependency:0)",
    ],
    "atrous_same_dynamic": [
        "x = Placeholder()",
        "w = Placeholder()",
        "depthwise/Shape = Const()",
        "depthwise/dilation_rate = Const()",
        "depthwise/stack = Const()",
        "depthwise/Shape_1 = Shape(x:0)",
        "depthwise/strided_slice/stack = Const()",
        "depthwise/strided_slice/stack_1 = Const()",
        "depthwise/strided_slice/stack_2 = Const()",
        "depthwise/strided_slice = StridedSlice(depthwise/Shape_1:0, depthwise/strided_slice/stack:0, depthwise/strided_slice/stack_1:0, depthwise/strided_slice/stack_2:0)",
        "depthwise/strided_slice_1/stack = Const()",
        "depthwise/strided_slice_1/stack_1 = Const()",
        "depthwise/strided_slice_1/stack_2 = Const()",
        "depthwise/strided_slice_1 = StridedSlice(depthwise/Shape_1:0, depthwise/strided_slice_1/stack:0, depthwise/strided_slice_1/stack_1:0, depthwise/strided_slice_1/stack_2:0)",
        "depthwise/stack_1 = Pack(depthwise/strided_slice:0, depthwise/strided_slice_1:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice = StridedSlice(depthwise/stack:0, depthwise/required_space_to_batch_paddings/strided_slice/stack:0, depthwise/required_space_to_batch_paddings/strided_slice/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_1/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_1/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_1/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_1 = StridedSlice(depthwise/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_1/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_1/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_1/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/add = AddV2(depthwise/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice:0)",
        "depthwise/required_space_to_batch_paddings/add_1 = AddV2(depthwise/required_space_to_batch_paddings/add:0, depthwise/required_space_to_batch_paddings/strided_slice_1:0)",
        "depthwise/required_space_to_batch_paddings/mod = FloorMod(depthwise/required_space_to_batch_paddings/add_1:0, depthwise/dilation_rate:0)",
        "depthwise/required_space_to_batch_paddings/sub = Sub(depthwise/dilation_rate:0, depthwise/required_space_to_batch_paddings/mod:0)",
        "depthwise/required_space_to_batch_paddings/mod_1 = FloorMod(depthwise/required_space_to_batch_paddings/sub:0, depthwise/dilation_rate:0)",
        "depthwise/required_space_to_batch_paddings/add_2 = AddV2(depthwise/required_space_to_batch_paddings/strided_slice_1:0, depthwise/required_space_to_batch_paddings/mod_1:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_2/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_2/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_2/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_2 = StridedSlice(depthwise/required_space_to_batch_paddings/strided_slice:0, depthwise/required_space_to_batch_paddings/strided_slice_2/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_2/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_2/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_3/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_3/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_3/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_3 = StridedSlice(depthwise/required_space_to_batch_paddings/add_2:0, depthwise/required_space_to_batch_paddings/strided_slice_3/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_3/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_3/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_4/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_4/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_4/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_4 = StridedSlice(depthwise/required_space_to_batch_paddings/strided_slice:0, depthwise/required_space_to_batch_paddings/strided_slice_4/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_4/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_4/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_5/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_5/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_5/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_5 = StridedSlice(depthwise/required_space_to_batch_paddings/add_2:0, depthwise/required_space_to_batch_paddings/strided_slice_5/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_5/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_5/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/paddings/0 = Pack(depthwise/required_space_to_batch_paddings/strided_slice_2:0, depthwise/required_space_to_batch_paddings/strided_slice_3:0)",
        "depthwise/required_space_to_batch_paddings/paddings/1 = Pack(depthwise/required_space_to_batch_paddings/strided_slice_4:0, depthwise/required_space_to_batch_paddings/strided_slice_5:0)",
        "depthwise/required_space_to_batch_paddings/paddings = Pack(depthwise/required_space_to_batch_paddings/paddings/0:0, depthwise/required_space_to_batch_paddings/paddings/1:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_6/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_6/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_6/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_6 = StridedSlice(depthwise/required_space_to_batch_paddings/mod_1:0, depthwise/required_space_to_batch_paddings/strided_slice_6/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_6/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_6/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/strided_slice_7/stack = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_7/stack_1 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_7/stack_2 = Const()",
        "depthwise/required_space_to_batch_paddings/strided_slice_7 = StridedSlice(depthwise/required_space_to_batch_paddings/mod_1:0, depthwise/required_space_to_batch_paddings/strided_slice_7/stack:0, depthwise/required_space_to_batch_paddings/strided_slice_7/stack_1:0, depthwise/required_space_to_batch_paddings/strided_slice_7/stack_2:0)",
        "depthwise/required_space_to_batch_paddings/crops/0/0 = Const()",
        "depthwise/required_space_to_batch_paddings/crops/0 = Pack(depthwise/required_space_to_batch_paddings/crops/0/0:0, depthwise/required_space_to_batch_paddings/strided_slice_6:0)",
        "depthwise/required_space_to_batch_paddings/crops/1/0 = Const()",
        "depthwise/required_space_to_batch_paddings/crops/1 = Pack(depthwise/required_space_to_batch_paddings/crops/1/0:0, depthwise/required_space_to_batch_paddings/strided_slice_7:0)",
        "depthwise/required_space_to_batch_paddings/crops = Pack(depthwise/required_space_to_batch_paddings/crops/0:0, depthwise/required_space_to_batch_paddings/crops/1:0)",
        "depthwise/strided_slice_2/stack = Const()",
        "depthwise/strided_slice_2/stack_1 = Const()",
        "depthwise/strided_slice_2/stack_2 = Const()",
        "depthwise/strided_slice_2 = StridedSlice(depthwise/required_space_to_batch_paddings/paddings:0, depthwise/strided_slice_2/stack:0, depthwise/strided_slice_2/stack_1:0, depthwise/strided_slice_2/stack_2:0)",
        "depthwise/concat/concat_dim = Const()",
        "depthwise/concat/concat = Identity(depthwise/strided_slice_2:0)",
        "depthwise/strided_slice_3/stack = Const()",
        "depthwise/strided_slice_3/stack_1 = Const()",
        "depthwise/strided_slice_3/stack_2 = Const()",
        "depthwise/strided_slice_3 = StridedSlice(depthwise/required_space_to_batch_paddings/crops:0, depthwise/strided_slice_3/stack:0, depthwise/strided_slice_3/stack_1:0, depthwise/strided_slice_3/stack_2:0)",
        "depthwise/concat_1/concat_dim = Const()",
        "depthwise/concat_1/concat = Identity(depthwise/strided_slice_3:0)",
        "depthwise/SpaceToBatchND/block_shape = Const()",
        "depthwise/SpaceToBatchND = SpaceToBatchND(x:0, depthwise/SpaceToBatchND/block_shape:0, depthwise/concat/concat:0)",
        "depthwise = DepthwiseConv2dNative(depthwise/SpaceToBatchND:0, w:0)",
        "depthwise/BatchToSpaceND/block_shape = Const()",
        "depthwise/BatchToSpaceND = BatchToSpaceND(depthwise:0, depthwise/BatchToSpaceND/block_shape:0, depthwise/concat_1/concat:0)",
    ],
    "atrous_same_known": [
        "x = Placeholder()",
        "w = Placeholder()",
        "depthwise/Shape = Const()",
        "depthwise/dilation_rate = Const()",
        "depthwise/stack = Const()",
        "depthwise/required_space_to_batch_paddings/input_shape = Const()",
        "depthwise/required_space_to_batch_paddings/paddings = Const()",
        "depthwise/required_space_to_batch_paddings/crops = Const()",
        "depthwise/SpaceToBatchND/block_shape = Const()",
        "depthwise/SpaceToBatchND/paddings = Const()",
        "depthwise/SpaceToBatchND = SpaceToBatchND(x:0, depthwise/SpaceToBatchND/block_shape:0, depthwise/SpaceToBatchND/paddings:0)",
        "depthwise = DepthwiseConv2dNative(depthwise/SpaceToBatchND:0, w:0)",
        "depthwise/BatchToSpaceND/block_shape = Const()",
        "depthwise/BatchToSpaceND/crops = Const()",
        "depthwise/BatchToSpaceND = BatchToSpaceND(depthwise:0, depthwise/BatchToSpaceND/block_shape:0, depthwise/BatchToSpaceND/crops:0)",
    ],
    "atrous_valid_known": [
        "x = Placeholder()",
        "w = Placeholder()",
        "dw/Shape = Const()",
        "dw/dilation_rate = Const()",
        "dw/required_space_to_batch_paddings/input_shape = Const()",
        "dw/required_space_to_batch_paddings/base_paddings = Const()",
        "dw/required_space_to_batch_paddings/paddings = Const()",
        "dw/required_space_to_batch_paddings/crops = Const()",
        "dw/SpaceToBatchND/block_shape = Const()",
        "dw/SpaceToBatchND/paddings = Const()",
        "dw/SpaceToBatchND = SpaceToBatchND(x:0, dw/SpaceToBatchND/block_shape:0, dw/SpaceToBatchND/paddings:0)",
        "dw = DepthwiseConv2dNative(dw/SpaceToBatchND:0, w:0)",
        "dw/BatchToSpaceND/block_shape = Const()",
        "dw/BatchToSpaceND/crops = Const()",
        "dw/BatchToSpaceND = BatchToSpaceND(dw:0, dw/BatchToSpaceND/block_shape:0, dw/BatchToSpaceND/crops:0)",
    ],
    "softmax_xent": [
        "a = Placeholder()",
        "b = Placeholder()",
        "softmax_cross_entropy_with_logits_sg/labels_stop_gradient = StopGradient(a:0)",
        "softmax_cross_entropy_with_logits_sg/Rank = Const()",
        "softmax_cross_entropy_with_logits_sg/Shape = Const()",
        "softmax_cross_entropy_with_logits_sg/Rank_1 = Const()",
        "softmax_cross_entropy_with_logits_sg/Shape_1 = Const()",
        "softmax_cross_entropy_with_logits_sg/Sub/y = Const()",
        "softmax_cross_entropy_with_logits_sg/Sub = Sub(softmax_cross_entropy_with_logits_sg/Rank_1:0, softmax_cross_entropy_with_logits_sg/Sub/y:0)",
        "softmax_cross_entropy_with_logits_sg/Slice/begin = Pack(softmax_cross_entropy_with_logits_sg/Sub:0)",
        "softmax_cross_entropy_with_logits_sg/Slice/size = Const()",
        "softmax_cross_entropy_with_logits_sg/Slice = Slice(softmax_cross_entropy_with_logits_sg/Shape_1:0, softmax_cross_entropy_with_logits_sg/Slice/begin:0, softmax_cross_entropy_with_logits_sg/Slice/size:0)",
        "softmax_cross_entropy_with_logits_sg/concat/values_0 = Const()",
        "softmax_cross_entropy_with_logits_sg/concat/axis = Const()",
        "softmax_cross_entropy_with_logits_sg/concat = ConcatV2(softmax_cross_entropy_with_logits_sg/concat/values_0:0, softmax_cross_entropy_with_logits_sg/Slice:0, softmax_cross_entropy_with_logits_sg/concat/axis:0)",
        "softmax_cross_entropy_with_logits_sg/Reshape = Reshape(a:0, softmax_cross_entropy_with_logits_sg/concat:0)",
        "softmax_cross_entropy_with_logits_sg/Rank_2 = Const()",
        "softmax_cross_entropy_with_logits_sg/Shape_2 = Const()",
        "softmax_cross_entropy_with_logits_sg/Sub_1/y = Const()",
        "softmax_cross_entropy_with_logits_sg/Sub_1 = Sub(softmax_cross_entropy_with_logits_sg/Rank_2:0, softmax_cross_entropy_with_logits_sg/Sub_1/y:0)",
        "softmax_cross_entropy_with_logits_sg/Slice_1/begin = Pack(softmax_cross_entropy_with_logits_sg/Sub_1:0)",
        "softmax_cross_entropy_with_logits_sg/Slice_1/size = Const()",
        "softmax_cross_entropy_with_logits_sg/Slice_1 = Slice(softmax_cross_entropy_with_logits_sg/Shape_2:0, softmax_cross_entropy_with_logits_sg/Slice_1/begin:0, softmax_cross_entropy_with_logits_sg/Slice_1/size:0)",
        "softmax_cross_entropy_with_logits_sg/concat_1/values_0 = Const()",
        "softmax_cross_entropy_with_logits_sg/concat_1/axis = Const()",
        "softmax_cross_entropy_with_logits_sg/concat_1 = ConcatV2(softmax_cross_entropy_with_logits_sg/concat_1/values_0:0, softmax_cross_entropy_with_logits_sg/Slice_1:0, softmax_cross_entropy_with_logits_sg/concat_1/axis:0)",
        "softmax_cross_entropy_with_logits_sg/Reshape_1 = Reshape(softmax_cross_entropy_with_logits_sg/labels_stop_gradient:0, softmax_cross_entropy_with_logits_sg/concat_1:0)",
        "softmax_cross_entropy_with_logits_sg = SoftmaxCrossEntropyWithLogits(softmax_cross_entropy_with_logits_sg/Reshape:0, softmax_cross_entropy_with_logits_sg/Reshape_1:0)",
        "softmax_cross_entropy_with_logits_sg/Sub_2/y = Const()",
        "softmax_cross_entropy_with_logits_sg/Sub_2 = Sub(softmax_cross_entropy_with_logits_sg/Rank:0, softmax_cross_entropy_with_logits_sg/Sub_2/y:0)",
        "softmax_cross_entropy_with_logits_sg/Slice_2/begin = Const()",
        "softmax_cross_entropy_with_logits_sg/Slice_2/size = Pack(softmax_cross_entropy_with_logits_sg/Sub_2:0)",
        "softmax_cross_entropy_with_logits_sg/Slice_2 = Slice(softmax_cross_entropy_with_logits_sg/Shape:0, softmax_cross_entropy_with_logits_sg/Slice_2/begin:0, softmax_cross_entropy_with_logits_sg/Slice_2/size:0)",
        "softmax_cross_entropy_with_logits_sg/Reshape_2 = Reshape(softmax_cross_entropy_with_logits_sg:0, softmax_cross_entropy_with_logits_sg/Slice_2:0)",
        "loss/labels_stop_gradient = StopGradient(b:0)",
        "loss/Rank = Rank(b:0)",
        "loss/Shape = Shape(b:0)",
        "loss/Rank_1 = Rank(b:0)",
        "loss/Shape_1 = Shape(b:0)",
        "loss/Sub/y = Const()",
        "loss/Sub = Sub(loss/Rank_1:0, loss/Sub/y:0)",
        "loss/Slice/begin = Pack(loss/Sub:0)",
        "loss/Slice/size = Const()",
        "loss/Slice = Slice(loss/Shape_1:0, loss/Slice/begin:0, loss/Slice/size:0)",
        "loss/concat/values_0 = Const()",
        "loss/concat/axis = Const()",
        "loss/concat = ConcatV2(loss/concat/values_0:0, loss/Slice:0, loss/concat/axis:0)",
        "loss/Reshape = Reshape(b:0, loss/concat:0)",
        "loss/Rank_2 = Rank(loss/labels_stop_gradient:0)",
        "loss/Shape_2 = Shape(loss/labels_stop_gradient:0)",
        "loss/Sub_1/y = Const()",
        "loss/Sub_1 = Sub(loss/Rank_2:0, loss/Sub_1/y:0)",
        "loss/Slice_1/begin = Pack(loss/Sub_1:0)",
        "loss/Slice_1/size = Const()",
        "loss/Slice_1 = Slice(loss/Shape_2:0, loss/Slice_1/begin:0, loss/Slice_1/size:0)",
        "loss/concat_1/values_0 = Const()",
        "loss/concat_1/axis = Const()",
        "loss/concat_1 = ConcatV2(loss/concat_1/values_0:0, loss/Slice_1:0, loss/concat_1/axis:0)",
        "loss/Reshape_1 = Reshape(loss/labels_stop_gradient:0, loss/concat_1:0)",
        "loss = SoftmaxCrossEntropyWithLogits(loss/Reshape:0, loss/Reshape_1:0)",
        "loss/Sub_2/y = Const()",
        "loss/Sub_2 = Sub(loss/Rank:0, loss/Sub_2/y:0)",
        "loss/Slice_2/begin = Const()",
        "loss/Slice_2/size = Pack(loss/Sub_2:0)",
        "loss/Slice_2 = Slice(loss/Shape:0, loss/Slice_2/begin:0, loss/Slice_2/size:0)",
        "loss/Reshape_2 = Reshape(loss:0, loss/Slice_2:0)",
    ],
    "space_batch": [
        "x = Placeholder()",
        "SpaceToBatchND/block_shape = Const()",
        "SpaceToBatchND/paddings = Const()",
        "SpaceToBatchND = SpaceToBatchND(x:0, SpaceToBatchND/block_shape:0, SpaceToBatchND/paddings:0)",
        "BatchToSpaceND/block_shape = Const()",
        "BatchToSpaceND/crops = Const()",
        "BatchToSpaceND = BatchToSpaceND(SpaceToBatchND:0, BatchToSpaceND/block_shape:0, BatchToSpaceND/crops:0)",
    ],
}  # fmt: skip

TF_OUTPUTS = {
    "assert": [],
    "assert_guarded": [],
    "atrous_same_dynamic": [("depthwise/BatchToSpaceND:0", "float32", [None, None, None, 6])],
    "atrous_same_known": [("depthwise/BatchToSpaceND:0", "float32", [2, 9, 9, 6])],
    "atrous_valid_known": [("dw/BatchToSpaceND:0", "float32", [2, 5, 3, 6])],
    "softmax_xent": [
        ("softmax_cross_entropy_with_logits_sg/Reshape_2:0", "float32", [2]),
        ("loss/Reshape_2:0", "float32", None),
    ],
    "space_batch": [
        ("SpaceToBatchND:0", "float32", [4, 3, 3, 1]),
        ("BatchToSpaceND:0", "float32", [1, 4, 4, 1]),
    ],
}

BUILDERS: dict[str, Callable[[Any], Any]] = {
    name[len("build_") :]: fn for name, fn in globals().items() if name.startswith("build_")
}


@pytest.mark.parametrize("case", sorted(TF_NODES))
def test_nodes_names_and_shapes_are_tensorflows(
    case: str, graph: tf.Graph, describe: Any, outputs: Any
) -> None:
    out = [o for o in BUILDERS[case](tf) if isinstance(o, tf.Tensor)]
    assert describe(graph) == TF_NODES[case]
    assert outputs(out) == TF_OUTPUTS[case]


def np_depthwise(x: Any, w: Any, rate: tuple[int, int], padding: str) -> Any:
    """A naive dilated depthwise convolution (NHWC, stride 1) in float64."""
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    eh, ew = (kh - 1) * rate[0] + 1, (kw - 1) * rate[1] + 1
    if padding == "SAME":
        ph, pw = eh - 1, ew - 1
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    oh, ow = x.shape[1] - eh + 1, x.shape[2] - ew + 1
    out = np.zeros((n, oh, ow, c, m))
    for i in range(kh):
        for j in range(kw):
            tap = x[:, i * rate[0] : i * rate[0] + oh, j * rate[1] : j * rate[1] + ow, :]
            out += tap[..., None] * w[i, j]
    return out.reshape(n, oh, ow, c * m)


@pytest.mark.parametrize(
    ("shape", "static", "rate", "padding"),
    [
        ((2, 9, 9, 3), [None, None, None, 3], (2, 2), "SAME"),
        ((2, 9, 9, 3), [2, 9, 9, 3], (2, 3), "VALID"),
        ((1, 8, 7, 3), [1, 8, 7, 3], (3, 2), "SAME"),
        ((1, 8, 7, 3), None, (2, 2), "VALID"),
    ],
)
async def test_atrous_depthwise_values(graph, evaluate, same, shape, static, rate, padding):
    rng = np.random.default_rng(5)
    xv = rng.standard_normal(shape).astype(np.float32)
    wv = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    x = tf.placeholder(tf.float32, static, name="x")
    y = tf.nn.depthwise_conv2d(x, wv, [1, 1, 1, 1], padding, rate=list(rate))
    want = np_depthwise(xv.astype(np.float64), wv.astype(np.float64), rate, padding)
    same(await evaluate(y, {x: xv}), want.astype(np.float32), rtol=1e-4)


def np_xent(labels: Any, logits: Any, axis: int) -> Any:
    shifted = logits - logits.max(axis=axis, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return -(labels * log_p).sum(axis=axis)


async def test_softmax_cross_entropy_values(graph, evaluate, same) -> None:
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((2, 3, 4)).astype(np.float32)
    labels = rng.random((2, 3, 4)).astype(np.float32)
    labels /= labels.sum(-1, keepdims=True)
    a = tf.placeholder(tf.float32, None, name="a")
    b = tf.placeholder(tf.float32, [2, 3, 4], name="b")
    last = tf.nn.softmax_cross_entropy_with_logits(labels=a, logits=b)
    middle = tf.nn.softmax_cross_entropy_with_logits(labels=a, logits=b, dim=1)
    half = tf.nn.softmax_cross_entropy_with_logits(labels=a, logits=tf.cast(b, tf.float16))
    got = await evaluate([last, middle, half], {a: labels, b: logits})
    same(got[0], np_xent(labels, logits, -1), rtol=1e-5)
    same(got[1], np_xent(labels, logits, 1), rtol=1e-5)
    same(got[2], np_xent(labels, logits, -1).astype(np.float16), rtol=1e-2)
    assert middle.shape.as_list() == [2, 4]


def test_softmax_cross_entropy_argument_errors(graph) -> None:
    x = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(ValueError, match="Both `labels` and `logits` must be provided"):
        tf.nn.softmax_cross_entropy_with_logits(logits=x)


async def test_space_to_batch_nd_round_trip(graph, evaluate, same) -> None:
    xv = np.arange(32, dtype=np.float32).reshape(2, 4, 4, 1)
    x = tf.placeholder(tf.float32, [None, 4, 4, 1])
    y = tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]])
    back = tf.batch_to_space_nd(y, [2, 2], [[1, 1], [0, 2]])
    assert y.shape.as_list() == [None, 3, 3, 1]
    got, again = await evaluate([y, back], {x: xv})
    padded = np.pad(xv, [(0, 0), (1, 1), (0, 2), (0, 0)])
    want = padded.reshape(2, 3, 2, 3, 2, 1).transpose(2, 4, 0, 1, 3, 5).reshape(8, 3, 3, 1)
    same(got, want)
    same(again, xv)


@pytest.mark.parametrize("dtype", [tf.int32, tf.float32])
async def test_assert_passes_or_fails_with_tensorflows_words(graph, evaluate, dtype) -> None:
    x = tf.placeholder(dtype, [3], name="x")
    check = tf.Assert(x[0] > 0, ["x is", x], summarize=2)
    with graph.control_dependencies([check]):
        y = tf.identity(x)
    value = np.array([1, 2, 3], dtype.np_dtype)
    np.testing.assert_array_equal(await evaluate(y, {x: value}), value)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        await evaluate(y, {x: -value})
    assert info.value.message.startswith("assertion failed: [x is] [-1 -2...]\n")


def test_assert_needs_data_as_a_list(graph) -> None:
    with pytest.raises(TypeError):
        tf.Assert(tf.constant(True), tf.constant(1))
