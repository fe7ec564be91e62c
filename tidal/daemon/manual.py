"""The journal `tidal switch` uses: the daemon's ConfigMap journal behind the schedule's run
lock, so a manual run and the daemon never act on one schedule at once.

The lock (and the state namespace) are taken at the first save, which the engine makes only
after the plan and preflight passed: a refused plan still writes nothing. Later saves are
refused once the lock could not be renewed (the engine then stops: FencedOut)."""

from __future__ import annotations

from tidal.daemon.lease import ElectionTimings, LockBusy, RunLock, manual_run_lock
from tidal.daemon.state import StateStore
from tidal.domain.clock import Clock
from tidal.engine.journal import RunState
from tidal.karmada.client import KarmadaClient

__all__ = ["LockBusy", "ManualRunJournal"]


class ManualRunJournal:
    def __init__(
        self,
        client: KarmadaClient,
        namespace: str,
        identity: str,
        clock: Clock,
        timings: ElectionTimings | None = None,
    ) -> None:
        self.client, self.namespace, self.identity = client, namespace, identity
        self.clock, self.timings = clock, timings or ElectionTimings()
        self.lock: RunLock | None = None
        self.store = StateStore(client, namespace, guard=self._held, writer=f"cli:{identity}")

    def _held(self) -> bool:
        return self.lock is not None and self.lock.held()

    def holds_lock(self) -> bool:
        """Whether this run may still act (the lock taken at the first save and held)."""
        return self._held()

    def load(self, schedule_name: str) -> RunState | None:
        return self.store.load(schedule_name)

    def may_save(self) -> bool:
        """Before the first save (which takes the lock) or while the lock is held."""
        return self.lock is None or self.lock.held()

    def save(self, state: RunState) -> None:
        if self.lock is None:
            from tidal.karmada.state_objects import ensure_namespace

            ensure_namespace(self.client, self.namespace)
            self.lock = manual_run_lock(
                self.client, self.namespace, state.schedule, self.identity, self.clock, self.timings
            )  # LockBusy
            gate_writes = getattr(self.client, "gate_writes", None)
            if gate_writes is not None:  # from now on every acting write needs the lock
                gate_writes(self.lock.elector)
        self.store.save(state)

    def close(self) -> None:
        if self.lock is not None:
            gate_writes = getattr(self.client, "gate_writes", None)
            if gate_writes is not None:
                gate_writes(None)
            self.lock.release()
            self.lock = None
