"""Script kernels: ``PyFunc`` and ``PyFuncStateless`` call a Python function in the device's
thread pool; ``AsyncPyFunc`` awaits a coroutine function on the event loop running the step.

As TensorFlow's ``core/kernels/py_func`` and the ``FuncRegistry.__call__`` of its
``script_ops.py``. The node's ``token`` names the function in
:data:`aiotf.framework.op_defs.script_ops.py_funcs`, looked up at each call (a missing one fails
that run, not the build). The function receives numpy values: a 0-d tensor as a numpy scalar
(``bytes`` for a string), anything else as a private copy of its array, so a function that
writes into its argument cannot change a tensor another node reads (TensorFlow lets it).

Results, with TensorFlow's rules and words: a list or tuple is one value per output, None is no
value, anything else one value; each is converted with ``np.asarray`` (``str`` and ``bytes``
become string tensors) and must already have its declared dtype: nothing is cast, so a Python
float for a ``float32`` output is an error (``is double, but expects float``).

An exception raised by the function becomes the error class TensorFlow picks for it
(``ValueError``/``TypeError``: ``InvalidArgumentError``, ``StopIteration``: ``OutOfRangeError``,
``NotImplementedError``: ``UnimplementedError``, ``MemoryError``: ``ResourceExhaustedError``,
anything else ``UnknownError``), whose message is ``<Type>: <text>`` followed by the Python
traceback in TensorFlow's layout; the executor adds the node's name.

Cancellation: a cancelled step cancels the ``AsyncPyFunc`` task, so the awaited coroutine sees
``CancelledError`` at its await; a coroutine that swallows it still cancels the kernel. A
``PyFunc`` in a thread cannot be interrupted: the step waits for it to return
(:meth:`~aiotf.devices.device.Device.run_in_pool`).
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Sequence
from typing import Any

import numpy as np

from aiotf.devices import workers
from aiotf.framework import dtypes, errors
from aiotf.framework.op_defs.script_ops import py_funcs
from aiotf.kernels.registry import POOL_MIN_COST, register_kernel
from aiotf.kernels.state_kernels import tf_type_name

Array = np.ndarray[Any, Any]

# The error class TensorFlow's py_func kernel reports for a Python exception; first match wins.
_ERROR_CLASSES: tuple[tuple[type[BaseException], type[errors.OpError]], ...] = (
    (ValueError, errors.InvalidArgumentError),
    (TypeError, errors.InvalidArgumentError),
    (StopIteration, errors.OutOfRangeError),
    (NotImplementedError, errors.UnimplementedError),
    (MemoryError, errors.ResourceExhaustedError),
)
# numpy's names (``NPY_...``) for the dtypes no tensor can hold, in TensorFlow's message.
_NPY_NAMES = {"M": "DATETIME", "m": "TIMEDELTA", "V": "VOID", "g": "LONGDOUBLE", "G": "CLONGDOUBLE"}


def _always(*inputs: Any) -> float:
    """The cost of a py_func: enough for the thread pool, whatever its inputs."""
    return float(POOL_MIN_COST)


@register_kernel("PyFunc", expensive=True, cost=_always)
@register_kernel("PyFuncStateless", expensive=True, cost=_always)
def py_func(*inputs: Array, token: bytes, Tout: list[dtypes.DType]) -> Any:
    name = token.decode()
    try:
        # The pool thread's floating-point state is restored whatever the function sets, and
        # the threads and processes it starts may run on any CPU (``workers.unbound``).
        with np.errstate(), workers.unbound():
            result = py_funcs.lookup(name).fn(*_arguments(inputs))
        if inspect.iscoroutine(result):
            result.close()
            raise TypeError(f"{name} returned a coroutine: build it with async_py_func")
        values = _values(result)
    except Exception as exc:
        raise _error_for(exc) from exc
    return _outputs(values, name, Tout)


@register_kernel("AsyncPyFunc")
async def async_py_func(*inputs: Array, token: bytes, Tout: list[dtypes.DType]) -> Any:
    name = token.decode()
    try:
        result = py_funcs.lookup(name).fn(*_arguments(inputs))
        if inspect.isawaitable(result):
            result = await result
        values = _values(result)
    except Exception as exc:
        raise _error_for(exc) from exc
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError  # the coroutine swallowed the step's cancellation
    return _outputs(values, name, Tout)


# -- arguments --------------------------------------------------------------------------------
def _arguments(inputs: Sequence[Any]) -> list[Any]:
    """What the function receives: numpy scalars for 0-d tensors, else private array copies."""
    out: list[Any] = []
    for x in inputs:
        array = np.asarray(x)
        out.append(array[()] if array.ndim == 0 else array.copy())
    return out


# -- results ----------------------------------------------------------------------------------
def _values(result: Any) -> list[Array]:
    """``result`` as one array per value (see the module docstring)."""
    if result is None:
        return []
    if isinstance(result, list | tuple):
        return [_as_array(v) for v in result]
    return [_as_array(result)]


def _as_array(value: Any) -> Array:
    """``value`` as a C-ordered array the function no longer holds; text as Python objects."""
    if isinstance(value, np.ndarray):
        array = np.array(value, order="C", copy=True)
    else:
        array = np.asarray(value, order="C")
    if array.dtype.kind == "S" and not isinstance(value, np.ndarray):
        return np.asarray(value, dtype=object)  # numpy's "S" would drop trailing NULs
    if array.dtype.kind in "SU":
        return array.astype(object)
    return array


def _outputs(values: list[Array], name: str, types: Sequence[dtypes.DType]) -> Any:
    """The kernel's result: ``values`` checked against the declared output dtypes."""
    if len(values) != len(types):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"{name} returns {len(values)} values, but expects to see {len(types)} values.",
        )
    for i, want in enumerate(types):
        if values[i].dtype.kind == "O":
            values[i] = _as_bytes(values[i])
        got = _dtype_of(values[i])
        if got is not want.base_dtype:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{i}-th value returned by {name} is {tf_type_name(got)}, "
                f"but expects {tf_type_name(want)}",
            )
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _as_bytes(array: Array) -> Array:
    """An object array of text as a string tensor's value: bytes (``str`` UTF-8 encoded)."""
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        if isinstance(item, str):
            item = item.encode()
        elif not isinstance(item, bytes):
            raise errors.InternalError(None, None, f"Unsupported object type {type(item).__name__}")
        out[index] = item
    return out


def _dtype_of(array: Array) -> dtypes.DType:
    try:
        return dtypes.from_numpy(array.dtype)
    except TypeError:
        npy = _NPY_NAMES.get(array.dtype.kind) or _NPY_NAMES.get(array.dtype.char)
        raise errors.InternalError(
            None, None, f"Unsupported numpy type: NPY_{npy or array.dtype.name.upper()}"
        ) from None


# -- errors -----------------------------------------------------------------------------------
def _error_for(exc: Exception) -> errors.OpError:
    """``exc`` as TensorFlow reports a py_func's exception: class, text, then the traceback."""
    cls = next((c for t, c in _ERROR_CLASSES if isinstance(exc, t)), errors.UnknownError)
    trace = "\n".join(traceback.format_exception(exc))
    return cls(None, None, f"{type(exc).__name__}: {exc}\n{trace}\n")
