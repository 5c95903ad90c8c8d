"""oneDNN's convolution primitive, for the convolutions of few input channels.

A convolution that aiotf makes as a product (``kernels/conv_kernels.py``: the input's windows
copied out as the rows of a matrix, im2col, then multiplied by the filter) spends as long copying
as multiplying when the input has few channels, as a network's first layer has: each window is a
few floats. oneDNN's direct convolution reads the input where it lies. On one core of the AMD
EPYC of ``docs/performance.md``, eight images of 28x28 by a 5x5 filter of one channel in, 32 out
(the cnn's first layer): 98 against 158 µs; 3 channels by 3x3 to 32: 135 against 290; 16 by 3x3:
509 against 727 (fourteenth session). It is one call that lets the GIL go, where the im2col is
several numpy calls, each of which, on two pool threads, may wait for the GIL.

:func:`into` convolves a block of whole NHWC images, stride 1, undilated, with the padding it is
given, into a block of NHWC outputs, on the calling thread, by the filter laid out in the
blocks its :func:`primitive` reads (:func:`pack`; the kernel keeps that of a frozen filter as a
derived value, as TensorFlow's oneDNN kernels keep a constant filter reordered). The primitives
(one a shape), streams, memory objects and scratchpads are ``onednn_matmul``'s.

Bits: each output is the sum over the window's taps and channels in the order oneDNN's kernel
takes them. On the shapes above it came out the same as the im2col product by oneDNN's GEMM
(``dnnl_sgemm``), but a convolution is made by this primitive in every block (``conv_kernels``
asks for every block or none).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiotf.devices import onednn
from aiotf.devices import onednn_matmul as mm

Array = np.ndarray[Any, Any]

_FORWARD_INFERENCE = 96  # dnnl_forward_inference
_DIRECT = 1  # dnnl_convolution_direct
# The most input channels a convolution takes here: up to 16 it measured faster than the im2col
# product on every shape tried (1.3-2.2x on one core); more were not measured.
MAX_CHANNELS = 16

Pads = tuple[int, int, int, int]  # top, bottom, left, right


def _nhwc(n: int, c: int, h: int, w: int) -> tuple[int, ...]:
    """The strides, in elements, of an NHWC array in oneDNN's order of dims (N, C, H, W)."""
    return h * w * c, 1, w * c, c


class _ConvPrimitive(mm._Made):
    """A forward convolution primitive for one shape: NHWC input and output (dense), the filter
    in the layout oneDNN picks (``layout``), no bias."""

    def __init__(
        self,
        api: Any,
        tag: str,
        n: int,
        h: int,
        w: int,
        c: int,
        oh: int,
        ow: int,
        oc: int,
        kh: int,
        kw: int,
        pads: Pads,
    ) -> None:
        self.src = mm._md(api, (n, c, h, w), _nhwc(n, c, h, w))
        self.dst = mm._md(api, (n, oc, oh, ow), _nhwc(n, oc, oh, ow))
        self.bias = None
        self.key = (tag, n, h, w, c, oh, ow, oc, kh, kw, pads)
        top, bottom, left, right = pads

        def describe(desc: Any, weights: Any, attr: Any) -> int:
            return int(
                api.calls.dnnl_convolution_forward_primitive_desc_create(
                    desc, api.engine, _FORWARD_INFERENCE, _DIRECT, self.src, weights, None,
                    self.dst, mm._dims((1, 1)), mm._dims((0, 0)), mm._dims((top, left)),
                    mm._dims((bottom, right)), attr,
                )
            )  # fmt: skip

        what = f"a {kh}x{kw} convolution primitive of {c} channels to {oc}"
        self._make(api, (oc, c, kh, kw), describe, what)


def takes(x: Array, f: Array) -> bool:
    """Whether :func:`into` convolves ``x`` by ``f``: a float32 NHWC input laid out densely
    (C-contiguous), a float32 HWIO filter of its channels, at most MAX_CHANNELS; oneDNN
    loaded."""
    return (
        x.dtype == f.dtype == np.float32
        and x.ndim == f.ndim == 4
        and f.shape[2] == x.shape[3] <= MAX_CHANNELS
        and x.flags.c_contiguous
        and onednn.available()
    )


def primitive(x: Array, f: Array, out_hw: tuple[int, int], pads: Pads) -> _ConvPrimitive:
    """The primitive that convolves ``x`` by ``f`` (:func:`takes`) into outputs of ``out_hw``
    with ``pads`` (top, bottom, left, right), made once: its ``layout`` and ``weights_size``
    are its packed filter's."""
    api = mm._the_api()
    assert api is not None
    (n, h, w, c), (kh, kw, _, oc), (oh, ow) = x.shape, f.shape, out_hw
    key = ("conv", n, h, w, c, oh, ow, oc, kh, kw, pads)
    made: _ConvPrimitive = mm._primitive(api, key, _ConvPrimitive)
    return made


def pack(f: Array, conv: _ConvPrimitive) -> Array:
    """The HWIO filter ``f`` laid out as ``conv`` reads it: a new 1-D float32 array."""
    api = mm._the_api()
    assert api is not None
    kh, kw, c, oc = f.shape
    f = np.ascontiguousarray(f, np.float32)
    data = mm.aligned(conv.weights_size)
    strides = (1, oc, kw * c * oc, c * oc)  # oneDNN's dims (OC, IC, KH, KW) of the HWIO array
    mm.reorder_into(api, f, (oc, c, kh, kw), strides, conv.weights, data)
    return data


def into(x: Array, packed: Array, out: Array, conv: _ConvPrimitive) -> None:
    """``out`` (a new NHWC float32 array, C-contiguous) = the stride-1 convolution of the NHWC
    ``x`` by the filter ``packed`` for ``conv`` (:func:`pack`), padded with zeros as ``conv``
    was made, on the calling thread."""
    assert out.flags.c_contiguous and out.dtype == np.float32
    api = mm._the_api()
    assert api is not None
    mm.execute(api, conv.key, conv, x, packed, out, None, "a convolution")
