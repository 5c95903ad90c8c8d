"""Kernels of the nodes the runtime inserts: call-frame ``_Arg``/``_Retval`` and ``_Send``/``_Recv``."""

from __future__ import annotations

from typing import Any

from aiotf.kernels.context import DEAD, StepContext, rendezvous_key
from aiotf.kernels.registry import register_kernel


@register_kernel("_Arg")
def arg(ctx: StepContext, *, index: int) -> Any:
    return ctx.args[index]


@register_kernel("_Retval")
def retval(ctx: StepContext, value: Any, *, index: int) -> None:
    ctx.retvals[index] = value


@register_kernel("_Send")
def send(
    ctx: StepContext,
    value: Any,
    *,
    tensor_name: bytes,
    send_device: bytes,
    send_device_incarnation: int,
    recv_device: bytes,
) -> None:
    key = rendezvous_key(
        send_device.decode(),
        send_device_incarnation,
        recv_device.decode(),
        tensor_name.decode(),
        ctx.frame_iter,
    )
    ctx.rendezvous.send(key, value, value is DEAD)


@register_kernel("_Recv")
async def recv(
    ctx: StepContext,
    *,
    tensor_name: bytes,
    send_device: bytes,
    send_device_incarnation: int,
    recv_device: bytes,
) -> Any:
    key = rendezvous_key(
        send_device.decode(),
        send_device_incarnation,
        recv_device.decode(),
        tensor_name.decode(),
        ctx.frame_iter,
    )
    value, is_dead = await ctx.rendezvous.recv(key)
    return DEAD if is_dead else value
