"""The CPU device: numpy kernels, a thread pool per device, ``device_count["CPU"]`` of them.

``ConfigProto.inter_op_parallelism_threads`` sizes each device's pool: how many expensive sync
kernels of the session's steps run at once on one device (TensorFlow's inter-op pool runs
independent ops concurrently). 0 picks the number of cores; a negative value, which TensorFlow
takes as "run every op in the caller's thread", is one thread: kernels run one at a time and the
event loop stays free. Threads inside one op come from the same pool (see ``device.py``), so
``intra_op_parallelism_threads`` does not size anything here. ``docs/sessions.md`` has the table.
"""

from __future__ import annotations

import os
from typing import Any

from aiotf.devices.device import Device
from aiotf.devices.factory import register_device_factory
from aiotf.framework import errors

CPU_MEMORY_LIMIT = 268435456  # what TensorFlow reports for a CPU device


class CPUDevice(Device):
    device_type = "CPU"


def _cpu_factory(config: Any, name_prefix: str) -> list[Device]:
    count = 1
    threads = 0
    if config is not None:
        count = int(config.device_count.get("CPU", 1))
        threads = int(config.inter_op_parallelism_threads)
    if threads < 0:
        threads = 1
    threads = threads or os.cpu_count() or 1
    if count < 1:  # ``device_count={"CPU": 0}``: TF's AddCpuDevices finds none and says so
        raise errors.NotFoundError(None, None, "No CPU devices are available in this process")
    return [
        CPUDevice(f"{name_prefix}/device:CPU:{i}", CPU_MEMORY_LIMIT, threads, "device: CPU")
        for i in range(count)
    ]


register_device_factory("CPU", _cpu_factory, priority=50)
