"""SpaceToBatchND and BatchToSpaceND: values, dtypes, kernel errors and static shapes, with
TensorFlow 2.21's answers and words (recorded in graph mode with ``tf.raw_ops``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiotf as tf

F32, I32 = np.float32, np.int32
Err = tf.errors.InvalidArgumentError
S2B, B2S = "SpaceToBatchND", "BatchToSpaceND"
X = np.arange(16, dtype=F32).reshape(1, 4, 4, 1)


async def run(op: str, x: Any, block: Any, pairs: Any) -> Any:
    """One ``op`` node over fed placeholders; block and pairs have static shapes, as the shape
    function requires a known block rank and size (pairs of a wrong shape are left unknown)."""
    x, block, pairs = np.asarray(x), np.asarray(block, I32), np.asarray(pairs, I32)
    g = tf.Graph()
    with g.as_default():
        xs = tf.placeholder(tf.as_dtype(x.dtype), name="x")
        bs = tf.placeholder(tf.int32, block.shape, name="block")
        fits = pairs.shape == (block.size, 2)
        ps = tf.placeholder(tf.int32, pairs.shape if fits else None, name="pairs")
        out = g.create_op(op, [xs, bs, ps], name="op").outputs[0]
    async with tf.Session(graph=g) as sess:
        return await sess.run(out, {xs: x, bs: block, ps: pairs})


async def test_space_to_batch_values(same) -> None:  # recorded from TF 2.21
    got = await run(S2B, X, [2, 2], [[0, 0], [0, 0]])
    want = [0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15]
    same(got, np.array(want, F32).reshape(4, 2, 2, 1))
    got = await run(S2B, X, [2, 2], [[1, 1], [1, 1]])
    want = [0, 0, 0, 0, 5, 7, 0, 13, 15, 0, 0, 0, 4, 6, 0, 12, 14, 0]
    want += [0, 1, 3, 0, 9, 11, 0, 0, 0, 0, 2, 0, 8, 10, 0, 0, 0, 0]
    same(got, np.array(want, F32).reshape(4, 3, 3, 1))
    got = await run(S2B, np.arange(24, dtype=F32).reshape(2, 3, 4), [3], [[0, 0]])
    want = [0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23]
    same(got, np.array(want, F32).reshape(6, 1, 4))


async def test_batch_to_space_inverts_and_crops(same) -> None:
    y = await run(S2B, X, [2, 2], [[1, 1], [1, 1]])
    same(await run(B2S, y, [2, 2], [[1, 1], [1, 1]]), X)
    padded = np.pad(X, [(0, 0), (1, 1), (1, 1), (0, 0)])  # recorded from TF 2.21
    same(await run(B2S, y, [2, 2], [[0, 0], [0, 0]]), padded)
    same(await run(B2S, y, [2, 2], [[3, 3], [0, 0]]), np.zeros((1, 0, 6, 1), F32))


@pytest.mark.parametrize(
    ("x", "block", "pairs", "shape"),
    [  # recorded from TF 2.21
        (np.zeros((1, 4, 4, 1), F32), np.zeros(0, I32), np.zeros((0, 2), I32), (1, 4, 4, 1)),
        (np.zeros((0, 4, 4, 1), F32), [2, 2], [[0, 0], [0, 0]], (0, 2, 2, 1)),
        (np.zeros((1, 0, 4, 1), F32), [2, 2], [[0, 0], [0, 0]], (4, 0, 2, 1)),
        (np.zeros((1, 0, 4, 1), F32), [2, 2], [[0, 2], [0, 0]], (4, 1, 2, 1)),
    ],
)
async def test_space_to_batch_of_empty_and_no_blocks(same, x, block, pairs, shape) -> None:
    same(await run(S2B, x, block, pairs), np.zeros(shape, F32))


async def test_batch_to_space_of_an_empty_batch(same) -> None:
    got = await run(B2S, np.zeros((0, 2, 2, 1), F32), [2, 2], [[0, 0], [0, 0]])
    same(got, np.zeros((0, 4, 4, 1), F32))


@pytest.mark.parametrize(
    "dtype", [np.int32, np.int64, np.uint8, np.int8, np.float16, np.float64, np.uint16, np.int16]
)
async def test_real_number_types(same, dtype) -> None:
    x = np.arange(4, dtype=dtype).reshape(1, 2, 2, 1)
    y = await run(S2B, x, [2, 2], [[0, 0], [0, 0]])
    same(y, x.reshape(4, 1, 1, 1))
    same(await run(B2S, y, [2, 2], [[0, 0], [0, 0]]), x)


@pytest.mark.parametrize("op", [S2B, B2S])
async def test_no_bool_or_string_kernel(op) -> None:  # TF 2.21: "No OpKernel was registered"
    with pytest.raises(Err, match=op):
        await run(op, np.ones((4, 1, 1, 1), bool), [2, 2], [[0, 0], [0, 0]])


@pytest.mark.parametrize(
    ("op", "x", "block", "pairs", "words"),
    [  # recorded from TF 2.21
        (S2B, X, [2, 2], [[0, 1], [0, 0]], "padded_shape[0]=5 is not divisible by block_shape[0]=2"),
        (S2B, X, [2, 2], [[-1, 1], [0, 0]], "Paddings must be non-negative"),
        (S2B, X, [0, 2], [[0, 0], [0, 0]], "All values in block_shape must be positive, got value, 0 at index 0."),
        (S2B, X, [-2, 2], [[0, 0], [0, 0]], "All values in block_shape must be positive, got value, -2 at index 0."),
        (S2B, X, [2, 2, 2, 2], [[0, 0]] * 4, "input rank should be >= 5 instead of 4"),
        (S2B, X, [2, 2], [[0, 0]], "paddings should have shape [2, 2] instead of [1,2]"),
        (S2B, X, [2, 2], [0, 0, 0, 0], "paddings should have shape [2, 2] instead of [4]"),
        (S2B, X, [2], [[0, 0], [0, 0]], "paddings should have shape [1, 2] instead of [2,2]"),
        (S2B, np.float32(3), np.zeros(0, I32), np.zeros((0, 2), I32), "input rank should be >= 1 instead of 0"),
        (B2S, np.zeros((4, 3, 3, 1), F32), [3, 3], [[0, 0], [0, 0]], "Input batch dimension (4) is not divisible by product of block sizes (9)"),
        (B2S, np.zeros((4, 3, 3, 1), F32), [2, 2], [[-1, 0], [0, 0]], "Crops must be non-negative"),
        (B2S, np.zeros((4, 3, 3, 1), F32), [2, 2], [[4, 3], [0, 0]], "cropped_shape[0]=-1 must be non-negative"),
        (B2S, np.zeros((4, 3, 3, 1), F32), [0, 2], [[0, 0], [0, 0]], "Product of block sizes must be positive, got 0"),
        (B2S, np.zeros((4, 3, 3, 1), F32), [2, 2], [[0, 0]], "crops should have shape [2, 2] instead of [1,2]"),
        (B2S, np.zeros((4, 3, 3, 1), F32), [2, 2, 2, 2], [[0, 0]] * 4, "input rank should be >= 5 instead of 4"),
        (B2S, np.zeros((3, 2, 2, 1), F32), [2, 2], [[0, 0], [0, 0]], "Input batch dimension (3) is not divisible by product of block sizes (4)"),
    ],
)  # fmt: skip
async def test_kernel_errors_are_tensorflows(op, x, block, pairs, words) -> None:
    with pytest.raises(Err) as info:
        await run(op, x, block, pairs)
    assert info.value.message.startswith(words + "\n")


# -- static shapes (recorded from TF 2.21) -------------------------------------------------------


def shape_of(op: str, x: Any, block: Any, pairs: Any, const: str = "bp") -> Any:
    """The static shape of ``op`` over a placeholder of shape ``x``; block (b) and pairs (p) are
    Consts when named in ``const``, else placeholders of their shape."""
    with tf.Graph().as_default():
        inputs = [tf.placeholder(tf.float32, x)]
        for key, value in (("b", block), ("p", pairs)):
            value = np.asarray(value, I32)
            inputs.append(
                tf.constant(value) if key in const else tf.placeholder(tf.int32, value.shape)
            )
        out = tf.get_default_graph().create_op(op, inputs).outputs[0]
        return out.shape.as_list() if out.shape.rank is not None else None


@pytest.mark.parametrize(
    ("op", "x", "block", "pairs", "const", "want"),
    [
        (S2B, [1, 4, 4, 1], [2, 2], [[1, 1], [1, 1]], "bp", [4, 3, 3, 1]),
        (S2B, [None, 4, 4, 3], [2, 2], [[0, 0], [0, 0]], "bp", [None, 2, 2, 3]),
        (S2B, [2, None, 4, 3], [2, 2], [[0, 0], [0, 0]], "b", [8, None, None, 3]),
        (S2B, [2, None, 4, 3], [2, 2], [[0, 0], [0, 0]], "p", [None, None, None, 3]),
        (S2B, None, [2, 2], [[0, 0], [0, 0]], "bp", None),
        (B2S, [4, 2, 2, 1], [2, 2], [[0, 0], [0, 1]], "bp", [1, 4, 3, 1]),
        (B2S, [None, 2, None, 1], [2, 2], [[0, 0], [0, 1]], "bp", [None, 4, None, 1]),
        (B2S, [4, 2, 2, 1], [2, 2], [[0, 0], [0, 1]], "p", [None, None, None, 1]),
    ],
)  # fmt: skip
def test_static_shapes_are_tensorflows(op, x, block, pairs, const, want) -> None:
    assert shape_of(op, x, block, pairs, const) == want


@pytest.mark.parametrize(
    ("op", "x", "block", "pairs", "words"),
    [
        (S2B, [1, 4, 4, 1], [3, 2], [[0, 0], [0, 0]], "Dimension size must be evenly divisible by 3 but is 4"),
        (S2B, [1, 4, 4, 1], [0, 2], [[0, 0], [0, 0]], "block_shape must be positive"),
        (S2B, [1, 4, 4, 1], [2, 2], [[-1, 1], [0, 0]], "paddings cannot be negative"),
        (S2B, [1, 4], [2, 2], [[0, 0], [0, 0]], "Shape must be at least rank 3 but is rank 2"),
        (S2B, [1, 4, 4, 1], [2, 2], [[0, 0], [0, 0], [0, 0]], "Dimension 0 in both shapes must be equal, but are 3 and 2. Shapes are [3,2] and [2,2]."),
        (S2B, [1, 4, 4, 1], [[2, 2]], [[0, 0], [0, 0]], "block_shape must have rank 1."),
        (B2S, [3, 2, 2, 1], [2, 2], [[0, 0], [0, 0]], "Dimension size must be evenly divisible by 2 but is 3"),
        (B2S, [4, 2, 2, 1], [2, 2], [[3, 2], [0, 0]], "Negative dimension size caused by subtracting 2 from 1"),
        (B2S, [4, 2, 2, 1], [2, 2], [[-1, 0], [0, 0]], "crops cannot be negative"),
    ],
)  # fmt: skip
def test_build_time_errors_are_tensorflows(op, x, block, pairs, words) -> None:
    with pytest.raises(ValueError) as info:
        shape_of(op, x, block, pairs)
    assert str(info.value).startswith(words + " for '{{node ")
