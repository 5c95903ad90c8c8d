"""Allocators: numpy owns the memory; an allocator keeps the books (bytes in use and peak).

The executor's interpreted flat schedule charges each output tensor to its device's allocator
when a kernel produces it and credits it back when the last consumer has taken it, so
``bytes_in_use`` is the live tensor memory of those steps on the device and ``peak_bytes_in_use``
its high-water mark. Compiled steps (``runtime/flat_compiler.py``) keep no books: they would
cost more than the kernels of a small graph. Only the event-loop thread updates the books.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class AllocatorStats:
    num_allocs: int = 0
    bytes_in_use: int = 0
    peak_bytes_in_use: int = 0
    largest_alloc_size: int = 0


class TrackingAllocator:
    """Counts the bytes of the tensors charged to it."""

    __slots__ = ("name", "stats")

    def __init__(self, name: str) -> None:
        self.name = name
        self.stats = AllocatorStats()

    def allocate(self, nbytes: int) -> None:
        s = self.stats
        s.num_allocs += 1
        s.bytes_in_use += nbytes
        if s.bytes_in_use > s.peak_bytes_in_use:
            s.peak_bytes_in_use = s.bytes_in_use
        if nbytes > s.largest_alloc_size:
            s.largest_alloc_size = nbytes

    def deallocate(self, nbytes: int) -> None:
        self.stats.bytes_in_use -= nbytes

    @property
    def bytes_in_use(self) -> int:
        return self.stats.bytes_in_use

    @property
    def peak_bytes_in_use(self) -> int:
        return self.stats.peak_bytes_in_use

    def reset_peak(self) -> None:
        self.stats.peak_bytes_in_use = self.stats.bytes_in_use
