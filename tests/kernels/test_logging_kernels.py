"""Assert: a false condition is TensorFlow's InvalidArgumentError, its data summarized in
TensorFlow's words (recorded from TensorFlow 2.21 in graph mode with ``gen_logging_ops._assert``)."""

from __future__ import annotations

import re
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import aiotf as tf

Err = tf.errors.InvalidArgumentError
I32 = np.int32


async def run_assert(condition: Any, data: list[Any], summarize: int | None = None) -> None:
    g = tf.Graph()
    feeds = {}
    with g.as_default():
        c = tf.placeholder(tf.bool, name="c")
        feeds[c] = np.asarray(condition)
        tensors = [c, *(tf.constant(np.asarray(d)) for d in data)]
        attrs = {} if summarize is None else {"summarize": summarize}
        op = g.create_op("Assert", tensors, attrs, name="Assert")
    async with tf.Session(graph=g) as sess:
        await sess.run(op, feeds)


STRINGS = np.array([b'a"b', b"it's", b"t\tn\nr\r", b"back\\", b"\x00\x01\x7f", "é".encode()])
CASES = [  # (data, summarize, TensorFlow's message after "assertion failed: ")
    ([np.array([1, 2, 3, 4, 5], I32)], None, "[1 2 3...]"),
    ([np.array(7, I32)], None, "[7]"),
    ([np.array([[1, 2, 3], [4, 5, 6]], I32)], None, "[[1 2 3]...]"),
    ([np.arange(24, dtype=I32).reshape(2, 3, 4)], None, "[[[0 1 2...]]...]"),
    ([np.zeros((0,), I32)], None, "[]"),
    ([np.zeros((2, 0), I32)], None, "[]"),
    ([np.array([0.1, 1.5, -2.0, 1e-10], np.float32)], None, "[0.1 1.5 -2...]"),
    ([np.array([0.1, 1 / 3, 2.5e-5])], None, "[0.1 0.33333333333333331 2.5e-05]"),
    ([np.array([0.1, 1 / 3], np.float16)], None, "[0.0999755859 0.333251953]"),
    ([np.array([0.1, 0.1], ml_dtypes.bfloat16)], None, "[0.100097656 0.100097656]"),
    ([np.array([True, False])], None, "[1 0]"),
    ([np.array(b"hello"), np.array([b"a", b"b c", b"d", b"e"])], None, "[hello] [a b c d...]"),
    ([np.array([1, 2], np.int64), np.array([1, 2], np.uint8), np.array([-1, 2], np.int8)], None, "[1 2] [1 2] [-1 2]"),
    ([np.array(b"x:"), np.array([1, 2], I32), np.array(b"y:")], None, "[x:] [1 2] [y:]"),
    ([np.arange(10, dtype=I32)], 5, "[0 1 2 3 4...]"),
    ([np.arange(10, dtype=I32)], -1, "[0 1 2 3 4 5 6 7 8 9]"),
    ([np.arange(10, dtype=I32)], 0, "[...]"),
    ([np.arange(10, dtype=I32).reshape(2, 5)], 4, "[[0 1 2 3...]...]"),
    ([np.arange(10, dtype=I32).reshape(2, 5)], 7, "[[0 1 2 3 4][5 6...]...]"),
    ([np.array([[1.5, 2], [3, 4]], np.float32)], 10, "[[1.5 2][3 4]]"),
    ([np.array([np.nan, np.inf, -np.inf, -0.0, 1e-10, 1e10, 123456789.0, 16777217.0, 0.3], np.float32)], -1, "[nan inf -inf -0 1e-10 1e+10 123456792 16777216 0.3]"),
    ([np.array([np.nan, np.inf, -np.inf, -0.0, 1e-10, 1e100, 123456789.0, 0.3])], -1, "[nan inf -inf -0 1e-10 1e+100 123456789 0.3]"),
    ([STRINGS], -1, "[a\\\"b it\\'s t\\tn\\nr\\r back\\\\ \\000\\001\\177 é]"),
    ([np.array([1 + 2j], np.complex64)], None, "[?]"),
    ([np.ones((1, 1, 1), I32)], -1, "[[[1]]]"),
    ([np.ones((2, 2, 2), I32)], -1, "[[[1 1][1 1]][[1 1][1 1]]]"),
    ([np.ones((2, 2, 2), I32)], 5, "[[[1 1][1 1]][[1...]]...]"),
    ([np.ones((3, 1), I32)], 2, "[[1][1]...]"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "summarize", "words"), CASES)
async def test_a_false_assert_summarizes_its_data_as_tensorflow(data, summarize, words) -> None:
    with pytest.raises(Err) as info:
        await run_assert(False, data, summarize)
    assert info.value.message.startswith(f"assertion failed: {words}\n")
    assert "{{node Assert}}" in info.value.message


async def test_a_true_assert_passes() -> None:
    await run_assert(True, [np.arange(10, dtype=I32)])


@pytest.mark.parametrize("condition", [[False], [False, True], [[True]], [[False]]])
async def test_the_condition_must_be_a_scalar(condition) -> None:
    shape = "[" + ",".join(map(str, np.shape(condition))) + "]"  # recorded from TF 2.21
    with pytest.raises(Err, match=rf"^In\[0\] should be a scalar: {re.escape(shape)}\n"):
        await run_assert(condition, [np.arange(3, dtype=I32)])
