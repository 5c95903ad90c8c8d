"""What a kernel that asks for ``ctx`` receives: the state of one step on one device."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np


class Dead:
    """The value of a dead tensor (an untaken Switch branch). One instance: :data:`DEAD`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = Dead()


class Ref:
    """A ref tensor (TensorFlow 1.x ``float32_ref``): the mutable slot of a ``VariableV2``.

    Ref outputs travel along ref edges as this object. The executor dereferences it where a
    non-ref input consumes it, raising ``FailedPreconditionError`` while ``value`` is None
    (uninitialized). ``buffer`` is the variable's memory, which the kernels that update it write
    into (``state_kernels.py``); ``value`` is a read-only view of it, what readers get, so a value
    read earlier sees later updates, as TensorFlow's aliasing does.
    """

    __slots__ = ("buffer", "dtype", "name", "shape", "value")

    def __init__(self, name: str, dtype: Any = None, shape: Any = None) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.buffer: Any = None
        self.value: Any = None

    def set_buffer(self, buffer: Any) -> None:
        """Make ``buffer`` (a writable array) the variable's memory."""
        view = buffer.view()
        view.flags.writeable = False
        self.buffer = buffer
        self.value = view

    def __repr__(self) -> str:
        return f"Ref({self.name!r}, initialized={self.value is not None})"


@dataclasses.dataclass(frozen=True)
class ResourceHandle:
    """What a ``resource`` tensor holds: where a resource lives in a device's ResourceMgr.

    A resource tensor is a 0-d numpy object array holding one handle (:meth:`as_tensor`); kernels
    look the resource up in ``ctx.device.resource_manager`` by ``(container, name)``.
    """

    device: str
    container: str
    name: str
    kind: str  # what lives there: "Var", "FIFOQueue", ...

    def as_tensor(self) -> np.ndarray:
        out = np.empty((), dtype=object)
        out[()] = self
        return out


class Rendezvous(Protocol):
    """The table Send and Recv kernels meet through (implemented by ``aiotf.runtime``)."""

    def send(self, key: str, value: Any, is_dead: bool = False) -> None: ...

    async def recv(self, key: str) -> tuple[Any, bool]: ...

    def abort(self, status: BaseException) -> None: ...


class StepContext:
    """Per step and partition: the call frame (``args``/``retvals``), rendezvous, device, stats."""

    __slots__ = (
        "args",
        "device",
        "frame_iter",
        "functions",
        "rendezvous",
        "retvals",
        "stats",
        "step_id",
    )

    def __init__(
        self,
        step_id: int,
        rendezvous: Rendezvous,
        args: list[Any],
        retvals: list[Any],
        device: Any = None,
        functions: Any = None,
        stats: Any = None,
    ) -> None:
        self.step_id = step_id
        self.rendezvous = rendezvous
        self.args = args
        self.retvals = retvals
        self.device = device
        self.functions = functions  # the session's function library runtime (v2 control flow)
        self.stats = stats  # a traced step's StepStatsCollector (runtime/step_stats.py), else None
        self.frame_iter = "0:0"

    def for_frame(self, frame_iter: str) -> StepContext:
        """This step's context as seen by a node in another loop frame or iteration."""
        child = StepContext(
            self.step_id,
            self.rendezvous,
            self.args,
            self.retvals,
            self.device,
            self.functions,
            self.stats,
        )
        child.frame_iter = frame_iter
        return child


def rendezvous_key(
    send_device: str, incarnation: int, recv_device: str, tensor_name: str, frame_iter: str
) -> str:
    """TensorFlow's key: ``src_device;src_incarnation(hex);dst_device;tensor_name;frame:iter``."""
    return f"{send_device};{incarnation & 0xFFFFFFFFFFFFFFFF:016x};{recv_device};{tensor_name};{frame_iter}"
