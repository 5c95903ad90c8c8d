"""oneDNN's matmul primitive on a constant weight laid out once in oneDNN's own blocks.

``dnnl_sgemm`` (``onednn.matmul_into``) packs its right operand into blocks in every call, as
OpenBLAS does. A dense layer's weight is the same constant run after run, and TensorFlow's oneDNN
kernels reorder a constant filter once and keep it. Here :func:`pack_into` lays out a float32 weight
``k`` x ``n`` as oneDNN's matmul primitive reads it (on AVX-512, blocks of 16 rows by 64
columns, the 64-column blocks one after another: ``BA16a64b``), and :func:`into` multiplies by
it, adding a bias in the same pass where asked, on the calling thread. (Not a Relu: oneDNN's
takes a NaN to zero, where TensorFlow's Relu keeps it.)

Measured on one core of the AMD EPYC of ``docs/performance.md`` (Zen 4), against the panels of
OpenBLAS's small kernels (``kernels/products.py``) with the bias and Relu after: 64x784x256 228
against 245 µs, 64x512x256 149 against 166, 32x3136x512 896 against 1000, 32x3136x1024 1853
against 2148.

The layout does not depend on the left operand's rows (checked for 1 to 100,000 on AVX-512),
so one packed weight serves every batch. A primitive is made once per shape and layout of the
operands (~0.4 ms and ~160 KiB, with the thread held to one OpenMP thread so that all are made
alike) and kept, the PRIMITIVES last used (a split's parts come in multiples of 64 rows,
``math_kernels.PACKED_PART_ROWS``, to bound their number). It is used only where it asks for
the packed weight's layout: where the rows of the left operand or of the output do not lie one
after another (the columns of a wider output, the rows of a block of an operand laid out by
columns), oneDNN takes another kernel, which reads a plain weight, and :func:`into` declines
(``products`` then uses the GEMM).

Bits: every row and column of the product comes out the same however the rows and columns are
cut (checked on mlp's and the cnn's shapes), but they may differ from OpenBLAS's and from
``dnnl_sgemm``'s in the last place, so a product is made by one routine in all its parts.

Threads: a primitive may run on several threads at once; a stream, the operands' memory objects
and the scratchpad are each thread's own (:class:`_Bound`). The primitives' cache, the
descriptors, the reorder (:func:`reorder_into`) and the execution (:func:`execute`) serve
``onednn_conv``'s convolutions too, whose keys start with their own name. The calls that only set a pointer
hold the GIL (a ``PyDLL`` handle), as a thread that lets it go for a microsecond waits for it
while the other computes; the product itself lets it go.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from aiotf.devices import onednn

Array = np.ndarray[Any, Any]

_F32 = 3  # dnnl_f32
_CPU = 1  # dnnl_cpu
_IN_ORDER = 1  # dnnl_stream_in_order
_TAG_ANY = 1  # dnnl_format_tag_any
_SCRATCHPAD_USER = 1  # dnnl_scratchpad_mode_user
_QUERY_STRIDES = 14  # dnnl_query_strides
_QUERY_WEIGHTS_MD = 131  # dnnl_query_weights_md
_QUERY_SCRATCHPAD_MD = 136  # dnnl_query_scratchpad_md
_QUERY_PADDED_DIMS = 260  # dnnl_query_padded_dims
_QUERY_INNER_NBLKS = 263  # dnnl_query_inner_nblks_s32
_QUERY_INNER_BLKS = 264  # dnnl_query_inner_blks
_QUERY_INNER_IDXS = 265  # dnnl_query_inner_idxs
_ARG_SRC, _ARG_DST, _ARG_WEIGHTS, _ARG_BIAS, _ARG_SCRATCHPAD = 1, 17, 33, 41, 80
_ALIGN = 64  # bytes: a packed weight starts on a cache line

_Dims = ctypes.c_int64 * 12  # dnnl_dims_t
_Handle = ctypes.c_void_p


class _Arg(ctypes.Structure):  # dnnl_exec_arg_t
    _fields_ = [("arg", ctypes.c_int), ("memory", _Handle)]  # noqa: RUF012 - read by ctypes


class _Api:
    """The library's functions: ``calls`` let go of the GIL (the product, the reorder),
    ``quick`` hold it (setting a pointer)."""

    def __init__(self, handle: ctypes.CDLL) -> None:
        self.calls = handle
        self.quick = ctypes.PyDLL(handle._name)
        for lib in (self.calls, self.quick):
            lib.dnnl_primitive_desc_query_md.restype = _Handle
            lib.dnnl_primitive_desc_query_md.argtypes = [_Handle, ctypes.c_int, ctypes.c_int]
            lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
            lib.dnnl_memory_desc_get_size.argtypes = [_Handle]
            lib.dnnl_memory_desc_query.argtypes = [_Handle, ctypes.c_int, _Handle]
            lib.dnnl_memory_set_data_handle.argtypes = [_Handle, _Handle]
            lib.dnnl_primitive_execute.argtypes = [_Handle, _Handle, ctypes.c_int, _Handle]
        engine = _Handle()
        _check(self.calls.dnnl_engine_create(ctypes.byref(engine), _CPU, ctypes.c_size_t(0)))
        self.engine = engine


def _check(status: int, what: str = "oneDNN call") -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with oneDNN status {status}")


def _dims(values: tuple[int, ...]) -> ctypes.Array[ctypes.c_int64]:
    dims = _Dims()
    for i, value in enumerate(values):
        dims[i] = value
    return dims


def _md(api: _Api, shape: tuple[int, ...], strides: tuple[int, ...] | None) -> _Handle:
    """A float32 memory descriptor of ``shape``, laid out by ``strides`` in elements, or left
    to the primitive (None)."""
    md = _Handle()
    if strides is None:
        status = api.calls.dnnl_memory_desc_create_with_tag(
            ctypes.byref(md), len(shape), _dims(shape), _F32, _TAG_ANY
        )
    else:
        status = api.calls.dnnl_memory_desc_create_with_strides(
            ctypes.byref(md), len(shape), _dims(shape), _F32, _dims(strides)
        )
    _check(status, "a memory descriptor")
    return md


class _Layout(NamedTuple):
    """A blocked layout as oneDNN describes it: strides of the outer dims, padded dims, inner
    blocks and their dims."""

    strides: tuple[int, ...]
    padded: tuple[int, ...]
    blocks: tuple[int, ...]
    block_dims: tuple[int, ...]

    @staticmethod
    def of(api: _Api, md: _Handle, ndims: int = 2) -> _Layout:
        def dims(what: int, count: int) -> tuple[int, ...]:
            p = ctypes.POINTER(ctypes.c_int64)()
            _check(api.calls.dnnl_memory_desc_query(md, what, ctypes.byref(p)))
            return tuple(p[i] for i in range(count))

        count = ctypes.c_int32()
        _check(api.calls.dnnl_memory_desc_query(md, _QUERY_INNER_NBLKS, ctypes.byref(count)))
        n = count.value
        return _Layout(
            dims(_QUERY_STRIDES, ndims),
            dims(_QUERY_PADDED_DIMS, ndims),
            dims(_QUERY_INNER_BLKS, n),
            dims(_QUERY_INNER_IDXS, n),
        )


class _Made:
    """A primitive made once from its descriptor, with the descriptors its memory objects are
    made of (what :class:`_Bound` reads): ``src``, ``dst`` and ``bias`` (its own, None for no
    bias), ``weights`` in the layout the primitive picked (``layout``, ``weights_size``
    elements) and its ``scratchpad`` (``scratch_bytes``). A kind sets the first three, then
    calls :meth:`_make`; ``onednn_conv``'s convolutions are one kind."""

    src: _Handle
    dst: _Handle
    bias: _Handle | None

    def _make(
        self,
        api: _Api,
        weights_dims: tuple[int, ...],
        describe: Callable[[Any, _Handle, _Handle], int],
        what: str,
    ) -> None:
        """The primitive of ``describe(&desc, any_weights, attr)`` (a ``dnnl_*_primitive_desc
        _create`` call), its weights of ``weights_dims`` in a layout of its own, its scratchpad
        the caller's."""
        attr, desc, any_weights = _Handle(), _Handle(), _md(api, weights_dims, None)
        try:
            _check(api.calls.dnnl_primitive_attr_create(ctypes.byref(attr)))
            _check(api.calls.dnnl_primitive_attr_set_scratchpad_mode(attr, _SCRATCHPAD_USER))
            _check(describe(ctypes.byref(desc), any_weights, attr), what)
        finally:
            api.calls.dnnl_primitive_attr_destroy(attr)
            api.calls.dnnl_memory_desc_destroy(any_weights)
        # The primitive descriptor owns the weights' and scratchpad's descriptors queried from
        # it, and lives as long as the primitive (a memory object keeps its own copy of its
        # descriptor: a thread's _Bound outlives the primitive it was made for).
        self.desc = desc
        self.weights = _Handle(api.calls.dnnl_primitive_desc_query_md(desc, _QUERY_WEIGHTS_MD, 0))
        self.layout = _Layout.of(api, self.weights, len(weights_dims))
        self.weights_size = api.calls.dnnl_memory_desc_get_size(self.weights) // 4
        self.scratchpad = _Handle(
            api.calls.dnnl_primitive_desc_query_md(desc, _QUERY_SCRATCHPAD_MD, 0)
        )
        self.scratch_bytes = api.calls.dnnl_memory_desc_get_size(self.scratchpad)
        primitive = _Handle()
        self._api = api
        _check(api.calls.dnnl_primitive_create(ctypes.byref(primitive), desc))
        self.handle = primitive

    def __del__(self) -> None:
        # Once out of _primitives and no thread runs it (each holds it while it does).
        calls = self._api.calls
        calls.dnnl_primitive_destroy(self.handle)
        calls.dnnl_primitive_desc_destroy(self.desc)
        for md in (self.src, self.dst, self.bias):
            if md is not None:
                calls.dnnl_memory_desc_destroy(md)


class _Primitive(_Made):
    """A matmul primitive for one shape and layout of the operands."""

    def __init__(
        self,
        api: _Api,
        m: int,
        k: int,
        n: int,
        a_strides: tuple[int, int],
        out_strides: tuple[int, int],
        bias: bool,
    ) -> None:
        self.src = _md(api, (m, k), a_strides)
        self.dst = _md(api, (m, n), out_strides)
        self.bias = _md(api, (1, n), (n, 1)) if bias else None

        def describe(desc: Any, weights: _Handle, attr: _Handle) -> int:
            return int(
                api.calls.dnnl_matmul_primitive_desc_create(
                    desc, api.engine, self.src, weights, self.bias, self.dst, attr
                )
            )

        self._make(api, (k, n), describe, f"a {m}x{k}x{n} matmul primitive")


class _Bound:
    """One thread's stream and memory objects for a primitive, and the arguments naming them."""

    def __init__(self, api: _Api, primitive: Any, stream: _Handle) -> None:
        def memory(md: _Handle) -> _Handle:
            made = _Handle()
            _check(api.calls.dnnl_memory_create(ctypes.byref(made), md, api.engine, None))
            return made

        self.stream = stream
        self.src, self.weights, self.dst = (
            memory(md) for md in (primitive.src, primitive.weights, primitive.dst)
        )
        self.scratchpad = memory(primitive.scratchpad)
        args = [
            _Arg(_ARG_SRC, self.src),
            _Arg(_ARG_WEIGHTS, self.weights),
            _Arg(_ARG_DST, self.dst),
            _Arg(_ARG_SCRATCHPAD, self.scratchpad),
        ]
        self.bias = None
        if primitive.bias is not None:
            self.bias = memory(primitive.bias)
            args.append(_Arg(_ARG_BIAS, self.bias))
        self.args = (_Arg * len(args))(*args)
        self.count = len(args)
        self._destroy = api.calls.dnnl_memory_destroy

    def __del__(self) -> None:
        # With its thread's ``_local`` (a pool's threads end with the pool).
        for memory in (self.src, self.weights, self.dst, self.scratchpad, self.bias):
            if memory is not None:
                self._destroy(memory)


class Packed(NamedTuple):
    """A float32 weight of ``rows`` x ``cols`` laid out by :func:`pack_into` (``data``, a 1-D
    float32 array starting on a cache line) in ``layout``."""

    data: Array
    rows: int
    cols: int
    layout: _Layout

    @staticmethod
    def of(data: Array, rows: int, cols: int) -> Packed:
        """The packed weight :func:`pack_into` laid out in ``data``, of a ``rows`` x ``cols``
        weight."""
        api = _the_api()
        assert api is not None  # the data was packed
        return Packed(data, rows, cols, _primitive(api, _packing_key(rows, cols)).layout)


_api: _Api | None = None
_api_lock = threading.Lock()
# The primitives made, most recently used last; past PRIMITIVES the least recently used is let
# go. Each takes ~160 KiB (its JIT-compiled kernel) and ~0.4 ms to make: a model run at many
# batch sizes would otherwise keep one a size for ever. (TensorFlow keeps up to 1,024.)
PRIMITIVES = 256
_primitives: collections.OrderedDict[tuple[Any, ...], Any] = collections.OrderedDict()
_local = threading.local()  # .stream, .bound (primitive key -> _Bound), .scratch (an array)


def _the_api() -> _Api | None:
    global _api
    library = onednn.library()
    if library is None:
        return None
    if _api is None:
        with _api_lock:
            if _api is None:
                _api = _Api(library.handle)
    return _api


def _strides(x: Array) -> tuple[int, int] | None:
    """``x``'s strides in float32 elements, if it is a float32 matrix laid out by rows or by
    columns (as oneDNN's plain layouts are: ``onednn.layout``), else None."""
    found = onednn.layout(x) if x.ndim == 2 else None
    if found is None:
        return None
    by, step, _ = found
    return (step, 1) if by == b"N" else (1, step)


def packable(w: Array) -> bool:
    """Whether :func:`pack_into` takes ``w``: oneDNN available, ``w`` a float32 matrix laid out by
    rows or by columns."""
    return _the_api() is not None and _strides(w) is not None and min(w.shape) >= 1


def _packing_key(k: int, n: int) -> tuple[Any, ...]:
    """The primitive whose weights' layout :func:`pack_into` makes (the same for any rows of the
    left operand)."""
    return 2, k, n, (k, 1), (n, 1), False


def packed_size(k: int, n: int) -> int:
    """The float32 elements of a ``k`` x ``n`` weight packed."""
    api = _the_api()
    assert api is not None, "oneDNN is not available"
    packing = _primitive(api, _packing_key(k, n))  # held while its descriptor is read
    return int(api.calls.dnnl_memory_desc_get_size(packing.weights)) // 4


def aligned(count: int) -> Array:
    """A new 1-D float32 array of ``count`` elements starting on a cache line."""
    raw = np.empty(count + _ALIGN // 4, np.float32)
    skip = (-raw.__array_interface__["data"][0] % _ALIGN) // 4
    return raw[skip : skip + count]


def pack_into(w: Array, data: Array) -> None:
    """Lay out ``w`` (:func:`packable`) in the blocks oneDNN's matmul reads, into ``data``
    (:func:`packed_size` elements of a 1-D float32 array, on a cache line), for
    :meth:`Packed.of`; on this thread (held to one OpenMP thread by :func:`_primitive`)."""
    api = _the_api()
    strides = _strides(w)
    assert api is not None and strides is not None, "not packable"
    k, n = w.shape
    packing = _primitive(api, _packing_key(k, n))  # held: its descriptor is ``packed``
    assert data.size == packed_size(k, n) and data.flags.c_contiguous
    reorder_into(api, w, (k, n), strides, packing.weights, data)


def reorder_into(
    api: _Api,
    w: Array,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    packed: _Handle,
    data: Array,
) -> None:
    """``w`` (of oneDNN's dims ``shape``, laid out by ``strides`` in elements) laid out as the
    descriptor ``packed`` says, into ``data`` (on a cache line), on this thread, held to one
    OpenMP thread (found by review: a pool thread whose first oneDNN call this was started a
    team of every core)."""
    _single_thread()
    # Each handle destroyed, made or not (a NULL one is a no-op): all in one try.
    reorder, step, source, target = _Handle(), _Handle(), _Handle(), _Handle()
    plain = _md(api, shape, strides)
    try:
        _check(
            api.calls.dnnl_reorder_primitive_desc_create(
                ctypes.byref(reorder), plain, api.engine, packed, api.engine, None
            ),
            "a reorder",
        )
        _check(api.calls.dnnl_primitive_create(ctypes.byref(step), reorder))
        for memory, md, array in ((source, plain, w), (target, packed, data)):
            address = _Handle(array.__array_interface__["data"][0])
            _check(api.calls.dnnl_memory_create(ctypes.byref(memory), md, api.engine, address))
        args = (_Arg * 2)(_Arg(_ARG_SRC, source), _Arg(_ARG_DST, target))
        stream = _stream(api)
        _check(api.calls.dnnl_primitive_execute(step, stream, 2, args), "a reorder")
        _check(api.calls.dnnl_stream_wait(stream))
    finally:
        for memory in (source, target):
            api.calls.dnnl_memory_destroy(memory)
        api.calls.dnnl_primitive_destroy(step)
        api.calls.dnnl_primitive_desc_destroy(reorder)
        api.calls.dnnl_memory_desc_destroy(plain)


def into(a: Array, w: Packed, out: Array, bias: Array | None = None) -> bool:
    """``out[...] = a @ w`` (plus ``bias``, a float32 vector of ``out``'s columns) on the
    calling thread; False, having done nothing, where an operand lies so that
    oneDNN would not read it as it is (``a`` and ``out`` float32, by rows or by columns; ``out``
    writable and apart from ``a``) or ``w``'s layout is not what such a product asks."""
    api = _api
    a_strides, out_strides = _strides(a), _strides(out)
    if api is None or a_strides is None or out_strides is None or not out.flags.writeable:
        return False
    if bias is not None and (
        bias.dtype != np.float32 or bias.strides != (4,) or bias.shape != (out.shape[1],)
    ):
        return False
    if np.may_share_memory(out, a):
        return False
    (m, k), n = a.shape, out.shape[1]
    if k != w.rows or n != w.cols or out.shape[0] != m:
        return False
    key = (m, k, n, a_strides, out_strides, bias is not None)
    primitive = _primitive(api, key)  # held until the product is made
    if primitive.layout != w.layout:  # (an output whose rows lie apart: a plain weight)
        return False
    execute(api, key, primitive, a, w.data, out, bias, f"a {m}x{k}x{n} matmul")
    return True


def execute(
    api: _Api,
    key: tuple[Any, ...],
    primitive: Any,
    src: Array,
    weights: Array,
    dst: Array,
    bias: Array | None,
    what: str,
) -> None:
    """Run ``primitive`` (of ``key``: a matmul or a convolution, with the descriptors
    :class:`_Bound` reads) on these arrays, on this thread's stream, memory objects and
    scratchpad."""
    bound = _bound(api, key, primitive)
    quick = api.quick
    quick.dnnl_memory_set_data_handle(bound.src, src.__array_interface__["data"][0])
    quick.dnnl_memory_set_data_handle(bound.weights, weights.__array_interface__["data"][0])
    quick.dnnl_memory_set_data_handle(bound.dst, dst.__array_interface__["data"][0])
    if bound.bias is not None:
        assert bias is not None
        quick.dnnl_memory_set_data_handle(bound.bias, bias.__array_interface__["data"][0])
    scratch = _scratch(primitive.scratch_bytes)
    quick.dnnl_memory_set_data_handle(bound.scratchpad, scratch)
    status = api.calls.dnnl_primitive_execute(
        primitive.handle, bound.stream, bound.count, bound.args
    )
    _check(status, what)


def _primitive(api: _Api, key: tuple[Any, ...], kind: Any = None) -> Any:
    """The primitive of ``key``, made once: ``kind(api, *key)`` (a :class:`_Primitive` of its
    arguments by default: rows, depth, columns, the strides of ``a`` and of the output, a bias
    or not). Keys of other kinds start with a name of their own."""
    primitive = _primitives.get(key)
    if primitive is not None:
        with contextlib.suppress(KeyError):  # let go meanwhile by another thread
            _primitives.move_to_end(key)
    else:
        # Made with this thread held to one OpenMP thread: oneDNN sizes a primitive's blocking
        # and scratchpad for the threads it may use (1152 bytes of scratchpad against 640 with
        # two, found by review), so that every primitive is made alike, whichever thread asks.
        _single_thread()
        with _api_lock:
            primitive = _primitives.get(key)
            if primitive is None:
                primitive = _primitives[key] = (kind or _Primitive)(api, *key)
                while len(_primitives) > PRIMITIVES:
                    _primitives.popitem(last=False)
    return primitive


def _single_thread() -> None:
    """This thread's OpenMP team held to itself (``onednn``)."""
    onednn.hold_to_this_thread()


class _Stream:
    """A thread's stream, destroyed with the thread's ``_local``."""

    def __init__(self, api: _Api) -> None:
        self.handle = _Handle()
        _check(api.calls.dnnl_stream_create(ctypes.byref(self.handle), api.engine, _IN_ORDER))
        self._destroy = api.calls.dnnl_stream_destroy

    def __del__(self) -> None:
        self._destroy(self.handle)


def _stream(api: _Api) -> _Handle:
    stream: _Stream | None = getattr(_local, "stream", None)
    if stream is None:
        stream = _local.stream = _Stream(api)
        _local.bound = {}
    return stream.handle


def _bound(api: _Api, key: tuple[Any, ...], primitive: Any) -> _Bound:
    bound: dict[tuple[Any, ...], _Bound] | None = getattr(_local, "bound", None)
    found = bound.get(key) if bound is not None else None
    if found is None:
        _single_thread()
        stream = _stream(api)
        if len(_local.bound) >= PRIMITIVES:  # (the keys of primitives long let go, mostly)
            _local.bound.clear()
        found = _local.bound[key] = _Bound(api, primitive, stream)
    return found


def _scratch(nbytes: int) -> int:
    """The address of this thread's scratchpad of at least ``nbytes``, on a cache line."""
    scratch: Array | None = getattr(_local, "scratch", None)
    if scratch is None or scratch.nbytes < nbytes:
        scratch = _local.scratch = aligned(-(-max(nbytes, 4096) // 4))
    address: int = scratch.__array_interface__["data"][0]
    return address
