"""``Assert`` (``tf.compat.v1.Assert``): fail the step when a condition is false."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiotf.framework import dtypes
from aiotf.framework.ops import Operation, Tensor, convert_to_tensor, get_default_graph
from aiotf.ops import control_flow_ops
from aiotf.ops.array_ops import identity
from aiotf.ops.op_helper import apply_op


def Assert(  # noqa: N802 - TensorFlow's name
    condition: Any, data: Sequence[Any], summarize: int | None = None, name: str | None = None
) -> Operation:
    """An op that, when run, raises ``InvalidArgumentError`` (``assertion failed: [...]``,
    ``summarize`` entries of each ``data`` tensor) if ``condition`` is false.

    As TensorFlow 1.x: when every ``data`` tensor is a string or int32 the ``Assert`` is
    returned itself; otherwise it runs only when the condition is false, in the false branch
    of a ``cond`` named ``AssertGuard`` (so a true condition never copies big data), and the
    returned op is the cond's ``Merge``. Run it, or make ops depend on it with
    ``control_dependencies``: nothing else makes it run.
    """
    graph = get_default_graph()
    with graph.name_scope(name or "Assert") as scope:
        xs = [convert_to_tensor(x) for x in data]
        attrs = {} if summarize is None else {"summarize": int(summarize)}
        if all(x.dtype.base_dtype in (dtypes.string, dtypes.int32) for x in xs):
            return apply_op("Assert", [condition, list(data)], attrs, name="Assert")
        condition = convert_to_tensor(condition, name="Condition")

        def passes() -> Tensor:
            done = control_flow_ops.no_op()
            with graph.control_dependencies([done]):
                return identity(condition, name="control_dependency")

        def fails() -> Tensor:
            check = apply_op("Assert", [condition, list(data)], attrs, name="Assert")
            with graph.control_dependencies([check]):
                return identity(condition, name="control_dependency_1")

        del scope
        guarded = control_flow_ops.cond(condition, passes, fails, name="AssertGuard")
        return guarded.op  # type: ignore[no-any-return]
