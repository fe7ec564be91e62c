"""The record of assigned and ready replicas per workload and member cluster, sampled on change."""

from __future__ import annotations

import threading
from typing import Any

from tidal_sim.clock import Clock


class Timeline:
    """Samples `{t, workload, cluster, assigned, ready}`; one is added whenever a pair changes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: list[dict[str, Any]] = []
        self._last: dict[tuple[str, str], tuple[int, int]] = {}

    def record(self, workload: str, cluster: str, assigned: int, ready: int) -> None:
        """Add a sample if (assigned, ready) differs from the last one for this pair."""
        key = (workload, cluster)
        with self._lock:
            if self._last.get(key) == (assigned, ready):
                return
            if key not in self._last and assigned == 0 and ready == 0:
                return
            self._last[key] = (assigned, ready)
            self._samples.append(
                {
                    "t": self._clock.now(),
                    "workload": workload,
                    "cluster": cluster,
                    "assigned": assigned,
                    "ready": ready,
                }
            )

    def samples(self, since: float | None = None) -> list[dict[str, Any]]:
        """All samples in time order (copies), optionally only those at or after `since`."""
        with self._lock:
            return [dict(s) for s in self._samples if since is None or s["t"] >= since]

    def current(self) -> dict[tuple[str, str], tuple[int, int]]:
        """The latest (assigned, ready) of every (workload, cluster) pair."""
        with self._lock:
            return dict(self._last)

    def clear(self) -> None:
        with self._lock:
            self._samples.clear()
