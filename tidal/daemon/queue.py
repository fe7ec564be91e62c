"""Who waits, for what, since when: the daemon's queue as `tidal status` and /status show it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

import structlog

from tidal.daemon.budget import CapacityWait
from tidal.domain.clock import Clock
from tidal.karmada import state_objects as cm
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import KarmadaError

log = structlog.get_logger("tidal.daemon.queue")


class WaitReason(StrEnum):
    SLOT = "slot"  # every concurrency slot (TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES) is taken
    CAPACITY = "capacity"  # a wave waits for surge room in its destination clusters


def queue_report(
    slots: Mapping[str, datetime],
    capacity: Mapping[str, CapacityWait],
    leased: Mapping[str, Mapping[str, float]],
    now: datetime,
) -> dict[str, Any]:
    """{"now", "waiting": {schedule: {reason, since, seconds, [holder, short]}}, "leased"}."""
    waiting: dict[str, dict[str, Any]] = {}
    for name, since in slots.items():
        waiting[name] = {
            "reason": WaitReason.SLOT.value,
            "since": since.isoformat(),
            "seconds": round((now - since).total_seconds(), 1),
        }
    for name, wait in capacity.items():
        waiting[name] = {
            "reason": WaitReason.CAPACITY.value,
            "since": wait.since.isoformat(),
            "seconds": round((now - wait.since).total_seconds(), 1),
            "holder": wait.holder,
            "short": wait.short,
        }
    return {
        "now": now.isoformat(),
        "waiting": dict(sorted(waiting.items())),
        "leased": {c: dict(r) for c, r in sorted(leased.items())},
    }


QUEUE_OBJECT = "tidal-queue"


class QueuePublisher:
    """Keeps the ConfigMap `tidal-queue` (data.queue: the report without its clock-dependent
    numbers) in step with the daemon's queue, so `tidal status` can show it: written only when
    it changed, at most once per `interval` seconds. `notify()` (every change, every resync)
    only wakes the publisher's own thread: a switch never waits for this write."""

    def __init__(
        self,
        client: KarmadaClient,
        namespace: str,
        identity: str,
        clock: Clock,
        *,
        interval: float = 5.0,
    ) -> None:
        self.client, self.namespace, self.identity, self.clock = client, namespace, identity, clock
        self.interval = interval
        self._lock = threading.Lock()
        self._published: dict[str, Any] | None = None
        self._last = -1e18
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, report: Callable[[], dict[str, Any]], may_write: Callable[[], bool]) -> None:
        def run() -> None:
            while not self._stop.is_set():
                self._wake.wait()
                self._wake.clear()
                if self._stop.is_set():
                    return
                wait = self.interval - (self.clock.monotonic() - self._last)
                if wait > 0 and self._stop.wait(wait):  # within the interval: write after it
                    return
                try:
                    self.publish(report(), may_write())
                except Exception as exc:  # status only: never kills the thread
                    log.warning(
                        "queue_publish_failed", error=str(exc), error_class=type(exc).__name__
                    )

        self._thread = threading.Thread(target=run, name="tidal-queue", daemon=True)
        self._thread.start()

    def notify(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(2)

    def publish(self, report: dict[str, Any], may_write: bool) -> bool:
        """Write `report` if it changed and the interval allows; True when written."""
        content = {
            "waiting": {
                name: {k: v for k, v in entry.items() if k != "seconds"}
                for name, entry in report["waiting"].items()
            },
            "leased": report["leased"],
        }
        with self._lock:
            now = self.clock.monotonic()
            if not may_write or content == self._published or now - self._last < self.interval:
                return False
            try:
                self._write(
                    {
                        **content,
                        "publishedBy": self.identity,
                        "updatedAt": self.clock.now().isoformat(),
                    }
                )
            except KarmadaError as exc:  # status only: the next change or resync tries again
                log.warning("queue_publish_failed", error=str(exc), error_class=type(exc).__name__)
                return False
            self._published, self._last = content, now
            return True

    def _write(self, data: dict[str, Any]) -> None:
        text = json.dumps(data, sort_keys=True)
        existing = cm.get_configmap(self.client, self.namespace, QUEUE_OBJECT)
        if existing is None:
            cm.create_configmap(
                self.client,
                self.namespace,
                QUEUE_OBJECT,
                {"queue": text},
                labels={"app.kubernetes.io/managed-by": "tidal"},
            )
            return
        existing["data"] = {"queue": text}
        cm.update_configmap(self.client, existing)


def read_queue(client: KarmadaClient, namespace: str) -> dict[str, Any]:
    """The last published queue ({} when none or unreadable: status goes on without it)."""
    obj = cm.get_configmap(client, namespace, QUEUE_OBJECT)
    try:
        data = json.loads(((obj or {}).get("data") or {}).get("queue") or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
