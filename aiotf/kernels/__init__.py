"""Kernels: the registry, and the numpy kernels (registered when this package is imported)."""

from aiotf.kernels import (
    array_kernels,
    control_flow_kernels,
    conv_kernels,
    data_flow_kernels,
    functional_kernels,
    fused_products,
    internal_kernels,
    logging_kernels,
    math_kernels,
    nn_kernels,
    script_kernels,
    state_kernels,
)
from aiotf.kernels.registry import (
    KernelDef,
    KernelNode,
    OpKernel,
    create_kernel,
    find_kernel_def,
    register_kernel,
)

__all__ = [
    "KernelDef",
    "KernelNode",
    "OpKernel",
    "array_kernels",
    "control_flow_kernels",
    "conv_kernels",
    "create_kernel",
    "data_flow_kernels",
    "find_kernel_def",
    "functional_kernels",
    "fused_products",
    "internal_kernels",
    "logging_kernels",
    "math_kernels",
    "nn_kernels",
    "register_kernel",
    "script_kernels",
    "state_kernels",
]
