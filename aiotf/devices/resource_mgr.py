"""Per-device resources (variables, queues) by container and name, as TensorFlow's ResourceMgr."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

DEFAULT_CONTAINER = "localhost"


class ResourceMgr:
    """``(container, name) -> resource``. Thread-safe: kernels in the pool may look up too."""

    def __init__(self, default_container: str = DEFAULT_CONTAINER) -> None:
        self.default_container = default_container
        self._lock = threading.Lock()
        self._containers: dict[str, dict[str, Any]] = {}

    def lookup_or_create(self, container: str, name: str, create: Callable[[], Any]) -> Any:
        with self._lock:
            table = self._containers.setdefault(container or self.default_container, {})
            if name not in table:
                table[name] = create()
            return table[name]

    def has_container(self, container: str) -> bool:
        with self._lock:
            return (container or self.default_container) in self._containers

    def lookup(self, container: str, name: str) -> Any | None:
        with self._lock:
            return self._containers.get(container or self.default_container, {}).get(name)

    def delete(self, container: str, name: str) -> Any | None:
        """Remove and return resource ``name`` of ``container`` (None when there is none)."""
        with self._lock:
            return self._containers.get(container or self.default_container, {}).pop(name, None)

    def cleanup(self, container: str) -> None:
        with self._lock:
            self._containers.pop(container, None)

    def clear(self, containers: Iterable[str] | None = None) -> None:
        """Drop ``containers`` (all of them when None)."""
        with self._lock:
            if containers is None:
                self._containers.clear()
            else:
                for c in containers:
                    self._containers.pop(c, None)
