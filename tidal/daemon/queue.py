"""Who waits, for what, since when: the daemon's queue as `tidal status` and /status show it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from tidal.daemon.budget import CapacityWait


class WaitReason(StrEnum):
    SLOT = "slot"  # every concurrency slot (TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES) is taken
    CAPACITY = "capacity"  # a wave waits for surge room in its destination clusters


def queue_report(slots: Mapping[str, datetime], capacity: Mapping[str, CapacityWait],
                 leased: Mapping[str, Mapping[str, float]], now: datetime) -> dict[str, Any]:
    """{"now", "waiting": {schedule: {reason, since, seconds, [holder, short]}}, "leased"}."""
    waiting: dict[str, dict[str, Any]] = {}
    for name, since in slots.items():
        waiting[name] = {"reason": WaitReason.SLOT.value, "since": since.isoformat(),
                         "seconds": round((now - since).total_seconds(), 1)}
    for name, wait in capacity.items():
        waiting[name] = {"reason": WaitReason.CAPACITY.value, "since": wait.since.isoformat(),
                         "seconds": round((now - wait.since).total_seconds(), 1),
                         "holder": wait.holder, "short": wait.short}
    return {"now": now.isoformat(), "waiting": dict(sorted(waiting.items())),
            "leased": {c: dict(r) for c, r in sorted(leased.items())}}
