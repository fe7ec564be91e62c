"""The controller manager: one event loop feeding Karmada's controllers from the store.

Like informers, it lists what is already stored, then follows the store's event stream. All
controller work runs under one lock: on the worker thread after `start()`, or synchronously in
`run_until_idle()` (tests with a ManualClock). Clock timers (pod start-up, termination,
scheduler latency, rebalancer TTL) run their callback under the same lock and then drain the
events they caused.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Literal

from tidal_sim.clock import Clock, ManualClock
from tidal_sim.controllers.common import (
    CLUSTER_KIND,
    COP_KIND,
    CPP_KIND,
    CRB_KIND,
    NON_TEMPLATE_KINDS,
    OP_KIND,
    PP_KIND,
    RB_KIND,
    REBALANCER_KIND,
    RIC_KIND,
    due_time,
    type_key,
)
from tidal_sim.controllers.customizations import Customizations
from tidal_sim.controllers.detector import Detector
from tidal_sim.controllers.host import Pending
from tidal_sim.controllers.members import Members
from tidal_sim.controllers.rebalancer import RebalancerController
from tidal_sim.controllers.scheduler import Scheduler
from tidal_sim.controllers.status import StatusWriter
from tidal_sim.controllers.team_estimator import TeamEstimator
from tidal_sim.controllers.timeline import Timeline
from tidal_sim.controllers.webhook import karmada_admission
from tidal_sim.controllers.works import Works
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Store, WatchEvent
from tidal_sim.version import LATEST_RELEASE, KarmadaVersion

log = logging.getLogger(__name__)
_IGNORED_KINDS = frozenset({"Event", "Lease", "Namespace", "Work"})
_POLL_SECONDS = 0.005


class ControllerManager:
    """Detector, scheduler, rebalancer, members and status, driven by one store and one clock.

    It is each controller's host (controllers.host.ControllerHost): they see it, and through
    it each other, only through that interface."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        scheduler_latency: float = 0.0,
        feature_gates: frozenset[str] = frozenset(),
        karmada_version: KarmadaVersion = LATEST_RELEASE,
        team_estimator: TeamEstimator | None = None,
        seed: int = 0,
        status_delay: float = 0.0,
        cluster_status_interval: float = 0.0,
        empty_workload_propagation: bool = False,
        policy_change_lag: float = 0.0,
    ) -> None:
        self.store = store
        self.policy_change_lag = policy_change_lag
        # karmada-scheduler --enable-empty-workload-propagation
        self.empty_workload_propagation = empty_workload_propagation
        self.clock = clock
        self.feature_gates = frozenset(feature_gates)
        self.karmada_version = karmada_version
        self.team_estimator = team_estimator or TeamEstimator()
        self.timeline = Timeline(clock)
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._batches: dict[float, list[Pending]] = {}
        self.customizations = Customizations()
        self.detector = Detector(self, seed)
        self.scheduler = Scheduler(self, scheduler_latency)
        self.rebalancer = RebalancerController(self)
        self.members = Members(self)
        self.works = Works(self)
        self.status = StatusWriter(
            self, status_delay=status_delay, cluster_interval=cluster_status_interval
        )
        if karmada_admission not in store.admission:
            store.admission.append(karmada_admission)
        self._sub = store.subscribe(self._accepts)
        self._initial: list[WatchEvent] = []
        self._cutoff: dict[tuple[str, str, str], int] = {}
        for rtype in sorted(store.kinds.all(), key=_startup_order):
            if rtype.kind in _IGNORED_KINDS:
                continue
            items, rv = store.list(rtype, copy_=False)
            self._cutoff[(rtype.group, rtype.version, rtype.plural)] = rv
            self._initial.extend(WatchEvent("ADDED", rtype, obj, None, rv) for obj in items)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> ControllerManager:
        """React to store events on a worker thread (and start the clock's timer thread)."""
        if self._thread is None:
            self._stopping.clear()
            self.clock.start()
            self._thread = threading.Thread(target=self._run, name="sim-controllers", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.store.unsubscribe(self._sub)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def run_locked(self, fn: Callable[[], None]) -> None:
        """Run `fn` under the manager lock (as a controller would), from any thread."""
        with self._lock:
            fn()

    def run_until_idle(self) -> None:
        """Process every queued event and the work it causes, synchronously."""
        with self._lock:
            self._drain()
            if isinstance(self.clock, ManualClock):
                self.clock.run_due()
                self._drain()

    def _run(self) -> None:
        # Events are only ever taken off the queue under the lock, so `run_until_idle()` from
        # another thread never returns while an event is half-way through.
        while not self._stopping.wait(_POLL_SECONDS):
            if self._idle():
                continue
            with self._lock:
                try:
                    self._drain()
                except Exception:  # a controller bug must not stop the emulator
                    log.exception("sim controllers failed on an event")

    def _idle(self) -> bool:
        return not (
            self._initial
            or not self._sub.events.empty()
            or self.detector.queue
            or self.scheduler.ready
            or self.status.pending()
        )

    # -- scheduling work -----------------------------------------------------------------
    def after(self, delay: float, fn: Callable[[], None]) -> Pending:
        """Run `fn` under the manager lock after `delay` sim seconds, then drain.

        Work due in the same millisecond shares one clock timer (thousands of pods starting
        together cost one wake-up, not thousands).
        """
        due = due_time(self.clock.now(), delay)
        entry = Pending(fn)
        batch = self._batches.get(due)
        if batch is not None:
            batch.append(entry)
            return entry
        self._batches[due] = [entry]

        def fire() -> None:
            with self._lock:
                try:
                    for each in self._batches.pop(due, []):
                        if not each.cancelled:
                            each.fn()
                    self._drain()
                except Exception:
                    if self._thread is None:
                        raise  # synchronous use (tests): surface the bug
                    log.exception("sim controllers failed in a timer")

        self.clock.call_at(due, fire)
        return entry

    def write(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], None],
        *,
        subresource: Literal["status"] | None = None,
    ) -> dict[str, Any]:
        """Read-modify-write one object; returns the stored object (read it, never mutate it)."""
        return self.store.mutate(
            rtype, namespace, name, change, subresource=subresource, copy_result=False
        )

    def binding_type(self, kind: str) -> ResourceType:
        rtype = self.store.kinds.by_kind("work.karmada.io/v1alpha2", kind)
        if rtype is None:  # pragma: no cover - the kinds are built in
            raise LookupError(f"binding kind {kind} is not registered")
        return rtype

    def _drain(self) -> None:
        while True:
            if self._initial:
                initial, self._initial = self._initial, []
                for event in initial:
                    self._dispatch(event)
                continue
            try:
                pending: WatchEvent | None = self._sub.events.get_nowait()
            except queue.Empty:
                pending = None
            if pending is not None:
                event = pending
                key = (event.rtype.group, event.rtype.version, event.rtype.plural)
                if event.resource_version > self._cutoff.get(key, 0):
                    self._dispatch(event)
                continue
            if self.detector.run_one():
                continue
            if self.scheduler.run_one():
                continue
            if self.status.flush():
                continue
            if self._sub.events.empty():
                return

    # -- events --------------------------------------------------------------------------
    def _accepts(self, event: WatchEvent) -> bool:
        return event.rtype.kind not in _IGNORED_KINDS

    def _dispatch(self, event: WatchEvent) -> None:
        kind = event.rtype.kind
        obj: dict[str, Any] = event.obj
        old = event.old if event.type != "DELETED" else None
        if kind in (PP_KIND, CPP_KIND):
            self.detector.on_policy(event.type, obj, old)
        elif kind in (OP_KIND, COP_KIND):
            for bkey in self.works.on_override(event.type, obj, old):
                self.members.resync(bkey)
        elif kind in (RB_KIND, CRB_KIND):
            meta = obj["metadata"]
            bkey = (kind, meta.get("namespace") or "", meta["name"])
            self.detector.on_binding(event.type, bkey, obj, old)
            self.scheduler.on_binding(event.type, bkey, obj, old)
            self.members.on_binding(event.type, bkey, obj)
        elif kind == CLUSTER_KIND:
            self.scheduler.on_cluster(event.type, obj, old)
            self.members.on_cluster(event.type, obj)
        elif kind == REBALANCER_KIND:
            self.rebalancer.on_event(event.type, obj, old)
        elif kind == RIC_KIND:
            self.customizations.on_event(event.type, obj)
            self.detector.on_customization(obj, old)
        elif kind not in NON_TEMPLATE_KINDS:
            self.detector.on_template(event.type, event.rtype, type_key(event.rtype, obj), obj, old)


def _startup_order(rtype: ResourceType) -> int:
    """Clusters and policies first, then templates, then bindings (as caches fill upstream)."""
    order = {
        CLUSTER_KIND: 0,
        RIC_KIND: 0,
        CPP_KIND: 1,
        PP_KIND: 1,
        OP_KIND: 1,
        COP_KIND: 1,
        RB_KIND: 3,
        CRB_KIND: 3,
        REBALANCER_KIND: 4,
    }
    return order.get(rtype.kind, 2)
