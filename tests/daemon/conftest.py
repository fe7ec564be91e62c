"""In-memory stand-ins for the API objects the daemon writes (resourceVersion semantics kept)."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from tidal.karmada.errors import AlreadyExists, Conflict, Unavailable

Obj = dict[str, Any]


class MemoryLeaseStore:
    """One Lease with optimistic concurrency, shared by electors; can be made unreachable."""

    def __init__(self) -> None:
        self.obj: Obj | None = None
        self.rv = 0
        self.down = False
        self.writes: list[str | None] = []
        self._lock = threading.Lock()

    def _check(self) -> None:
        if self.down:
            raise Unavailable("connection refused")

    def get(self) -> Obj | None:
        with self._lock:
            self._check()
            return copy.deepcopy(self.obj)

    def create(self, spec: Obj) -> Obj:
        with self._lock:
            self._check()
            if self.obj is not None:
                raise AlreadyExists("exists", code=409)
            self.rv += 1
            self.obj = {
                "metadata": {"name": "l", "namespace": "ns", "resourceVersion": str(self.rv)},
                "spec": copy.deepcopy(spec),
            }
            self.writes.append(spec.get("holderIdentity"))
            return copy.deepcopy(self.obj)

    def update(self, lease: Obj) -> Obj:
        with self._lock:
            self._check()
            assert self.obj is not None
            if lease["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
                raise Conflict("stale", code=409)
            self.rv += 1
            self.obj = copy.deepcopy(lease)
            self.obj["metadata"]["resourceVersion"] = str(self.rv)
            self.writes.append(lease["spec"].get("holderIdentity"))
            return copy.deepcopy(self.obj)


@pytest.fixture
def lease_store() -> MemoryLeaseStore:
    """A fresh in-memory Lease (resourceVersion semantics, can be made unreachable)."""
    return MemoryLeaseStore()
