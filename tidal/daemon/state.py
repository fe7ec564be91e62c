"""State that survives restarts and replicas, kept in ConfigMaps in the state namespace.

Per schedule two objects:
- `tidal-run-<schedule>`  data.run: the engine's RunState (the Journal; token = resourceVersion);
- `tidal-sched-<schedule>` data.handled: the last window start the daemon dealt with (ran,
  missed, skipped) and data.controls: the operator's suspend / skip-next / hold.
They are separate so that an operator's `tidal suspend` never makes a running switch's journal
write look like another writer (a 409 on the journal means fenced out, nothing else).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TypedDict

from tidal.domain.run_control import RunCommand, RunControl
from tidal.domain.windows import Controls, Handled, Hold
from tidal.engine.journal import JournalLost, RunState
from tidal.karmada import state_objects as cm
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import AlreadyExists, Conflict, NotFound
from tidal.karmada.objects import Obj
from tidal.karmada.views import ConfigMapView

LABELS = {"app.kubernetes.io/managed-by": "tidal"}


RUN_PREFIX, SCHEDULE_PREFIX = "tidal-run-", "tidal-sched-"


class CorruptState(Exception):
    """A state object tidal cannot read (edited by hand, truncated): the schedule is blocked
    until an operator repairs it; nothing is written over it."""

    reason = "state_corrupt"

    def __init__(self, schedule: str, namespace: str, name: str, detail: str) -> None:
        self.schedule, self.object = schedule, f"{namespace}/{name}"
        self.detail = " ".join(detail.split())[:300]
        self.repair = f"kubectl --namespace {namespace} delete configmap {name}"
        super().__init__(
            f"state object {self.object} cannot be read ({self.detail}); "
            f"repair it or delete it: {self.repair}"
        )


_UNREADABLE = (ValueError, KeyError, TypeError, AttributeError)


def _corrupt(schedule: str, obj: Obj, exc: Exception) -> CorruptState:
    view = ConfigMapView(obj)
    return CorruptState(schedule, view.namespace, view.name, f"{type(exc).__name__}: {exc}")


def run_object_name(schedule: str) -> str:
    return RUN_PREFIX + schedule


def schedule_object_name(schedule: str) -> str:
    return SCHEDULE_PREFIX + schedule


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


class HoldData(TypedDict):
    window: str
    until: str
    since: str


class RunControlData(TypedDict, total=False):
    """data.controls.run: the commands given to the switch in flight."""

    runId: str
    paused: bool
    promoted: bool
    aborted: bool
    last: str | None
    at: str | None
    source: str | None


class ControlsData(TypedDict, total=False):
    """data.controls of the schedule object, as JSON."""

    suspended: bool
    skipStart: str | None
    hold: HoldData | None
    run: RunControlData | None
    retryRun: str | None


class HandledData(TypedDict, total=False):
    """data.handled of the schedule object, as JSON (window and at always written)."""

    window: str
    at: str
    outcome: str
    runId: str | None
    updatedAt: str | None
    reason: str


def controls_to_dict(c: Controls) -> ControlsData:
    hold = None
    if c.hold is not None:
        hold = HoldData(
            window=c.hold.window, until=c.hold.until.isoformat(), since=c.hold.since.isoformat()
        )
    run = None
    if c.run is not None:
        run = RunControlData(
            runId=c.run.run_id,
            paused=c.run.paused,
            promoted=c.run.promoted,
            aborted=c.run.aborted,
            last=c.run.last,
            at=_iso(c.run.at),
            source=c.run.source,
        )
    data = ControlsData(suspended=c.suspended, skipStart=_iso(c.skip_start), hold=hold, run=run)
    if c.retry_run:
        data["retryRun"] = c.retry_run
    return data


def _command(value: str | None) -> RunCommand | None:
    try:
        return RunCommand(value) if value else None
    except ValueError:  # written by a newer version: no command known here
        return None


def controls_from_dict(d: ControlsData) -> Controls:
    hold, run = d.get("hold"), d.get("run")
    return Controls(
        suspended=bool(d.get("suspended")),
        skip_start=_dt(d.get("skipStart")),
        hold=Hold(
            window=hold["window"],
            until=datetime.fromisoformat(hold["until"]),
            since=datetime.fromisoformat(hold["since"]),
        )
        if hold
        else None,
        run=RunControl(
            run_id=run["runId"],
            paused=bool(run.get("paused")),
            promoted=bool(run.get("promoted")),
            aborted=bool(run.get("aborted")),
            last=_command(run.get("last")),
            at=_dt(run.get("at")),
            source=run.get("source"),
        )
        if run
        else None,
        retry_run=d.get("retryRun") or None,
    )


class DaemonOutcome(StrEnum):
    """How the daemon handled a window start (stored as data.handled.outcome)."""

    STARTED = "started"  # claimed; the run is under way (or its claimant died)
    SUCCEEDED = "succeeded"  # the run's result (tidal.engine.states.RunResult) ...
    FAILED = "failed"
    ROLLED_BACK = "rolledBack"
    MISSED = "missed"  # too late for catchUpWindow
    SKIPPED = "skipped"  # `tidal skip`
    REFUSED = "refused"  # not started: an unsafe plan, a bad schedule, ...
    ABANDONED = "abandoned"  # claimed, the claimant died, no longer due
    BEFORE_FIRST_RUN = "beforeFirstRun"  # the start was before tidal managed the schedule
    RETRY = "retry"  # given back after a retryable error before anything was written
    UNKNOWN = "unknown"

    @classmethod
    def _missing_(cls, value: object) -> DaemonOutcome:
        return cls.UNKNOWN  # written by a newer version: read, never fatal


@dataclass(frozen=True)
class HandledRecord:
    """The last start handled, with how."""

    window: str
    at: datetime
    outcome: DaemonOutcome
    run_id: str | None = None
    updated_at: datetime | None = None
    reason: str = ""  # why a start did not run (missed, skipped, refused, abandoned)

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", DaemonOutcome(self.outcome))

    @property
    def handled(self) -> Handled:
        return Handled(window=self.window, at=self.at)

    def to_dict(self) -> HandledData:
        data = HandledData(
            window=self.window,
            at=self.at.isoformat(),
            outcome=str(self.outcome),
            runId=self.run_id,
            updatedAt=_iso(self.updated_at),
        )
        if self.reason:
            data["reason"] = self.reason
        return data

    @classmethod
    def from_dict(cls, d: HandledData) -> HandledRecord:
        return cls(
            window=d["window"],
            at=datetime.fromisoformat(d["at"]),
            outcome=DaemonOutcome(d.get("outcome", DaemonOutcome.UNKNOWN)),
            run_id=d.get("runId"),
            updated_at=_dt(d.get("updatedAt")),
            reason=str(d.get("reason", "")),
        )


@dataclass
class ScheduleState:
    """The schedule object as read: handled record, controls, and the token to write it back."""

    schedule: str
    handled: HandledRecord | None
    controls: Controls
    token: str | None  # resourceVersion, None when the object does not exist yet


class StateStore:
    """Reads and writes the per-schedule state objects; also the engine's Journal."""

    def __init__(
        self,
        client: KarmadaClient,
        namespace: str,
        guard: Callable[[], bool] = lambda: True,
        writer: str | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.guard = guard  # False when this replica must not write (lost the lease)
        self.writer = writer  # recorded as a new run's startedBy

    def _check_guard(self, what: str) -> None:
        if not self.guard():
            raise Conflict(f"{what}: this replica is not the leader", code=409, reason="NotLeader")

    # --- Journal protocol (tidal.engine.journal) -----------------------------------------
    def may_save(self) -> bool:
        return self.guard()

    def load(self, schedule_name: str) -> RunState | None:
        return self._run_of(
            cm.get_configmap(self.client, self.namespace, run_object_name(schedule_name)),
            schedule_name,
        )

    @staticmethod
    def _run_of(obj: Obj | None, schedule: str = "") -> RunState | None:
        """The run the object holds; CorruptState when its data cannot be read."""
        if obj is None or not ConfigMapView(obj).data.get("run"):
            return None
        try:
            return RunState.from_json(
                obj["data"]["run"], journal_token=obj["metadata"]["resourceVersion"]
            )
        except _UNREADABLE as exc:
            raise _corrupt(
                schedule or str(obj["metadata"].get("name", "")).removeprefix(RUN_PREFIX), obj, exc
            ) from exc

    def save(self, state: RunState) -> None:
        self._check_guard(f"save run state of {state.schedule}")
        if state.started_by is None:
            state.started_by = self.writer
        name = run_object_name(state.schedule)
        data = {"run": state.to_json()}
        if state.journal_token is None:
            current = cm.get_configmap(self.client, self.namespace, name)
            if current is None:
                state.journal_token = self._create(
                    name, state.schedule, data, f"run state of {state.schedule}"
                )
                return
            stored = self._run_of(current, state.schedule)
            if stored is not None and not stored.finished:
                raise Conflict(
                    f"run state of {state.schedule} holds an unfinished run",
                    code=409,
                    reason="Conflict",
                )
            state.journal_token = current["metadata"]["resourceVersion"]
        # Conflict propagates: fenced out
        try:
            state.journal_token = self._update(name, state.schedule, state.journal_token, data)
        except NotFound as exc:
            raise JournalLost(
                f"run state ConfigMap {self.namespace}/{name} of run "
                f"{state.run_id} was deleted while the run was under way"
            ) from exc

    # --- handled record and controls -------------------------------------------------------
    def read(self, schedule: str) -> ScheduleState:
        obj = cm.get_configmap(self.client, self.namespace, schedule_object_name(schedule))
        return self._state_of(schedule, obj)

    @staticmethod
    def _state_of(schedule: str, obj: Obj | None) -> ScheduleState:
        if obj is None:
            return ScheduleState(schedule, None, Controls(), None)
        data = obj.get("data") or {}
        try:
            handled = (
                HandledRecord.from_dict(json.loads(data["handled"]))
                if data.get("handled")
                else None
            )
            controls = (
                controls_from_dict(json.loads(data["controls"]))
                if data.get("controls")
                else Controls()
            )
        except _UNREADABLE as exc:
            raise _corrupt(schedule, obj, exc) from exc
        return ScheduleState(schedule, handled, controls, obj["metadata"]["resourceVersion"])

    def _write(self, schedule: str, token: str | None, data: dict[str, str]) -> str:
        name = schedule_object_name(schedule)
        if token is None:
            return self._create(name, schedule, data, f"state of {schedule}")
        return self._update(name, schedule, token, data)

    def _create(self, name: str, schedule: str, data: dict[str, str], what: str) -> str:
        """Create a state object; its resourceVersion. Conflict when another writer made it."""
        try:
            made = cm.create_configmap(
                self.client, self.namespace, name, data, {**LABELS, "tidal.io/schedule": schedule}
            )
        except AlreadyExists as exc:
            raise Conflict(
                f"{what} created by another writer", code=409, reason="Conflict"
            ) from exc
        return str(made["metadata"]["resourceVersion"])

    def _update(self, name: str, schedule: str, token: str | None, data: dict[str, str]) -> str:
        """Replace a state object's data, fenced on `token`; its new resourceVersion."""
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "resourceVersion": token,
                "labels": {**LABELS, "tidal.io/schedule": schedule},
            },
            "data": data,
        }
        return str(cm.update_configmap(self.client, body)["metadata"]["resourceVersion"])

    def record_handled(self, seen: ScheduleState, record: HandledRecord) -> ScheduleState:
        """Write the handled record, fenced on the record we read: Conflict when another replica
        wrote a different handled record since (a change of controls only is merged)."""
        self._check_guard(f"record {record.outcome} of {seen.schedule}")
        current = seen
        for _ in range(5):
            data = {
                "handled": json.dumps(record.to_dict(), sort_keys=True),
                "controls": json.dumps(controls_to_dict(current.controls), sort_keys=True),
            }
            try:
                token = self._write(seen.schedule, current.token, data)
                return ScheduleState(seen.schedule, record, current.controls, token)
            except Conflict:
                current = self.read(seen.schedule)
                if current.handled != seen.handled:
                    raise
        raise Conflict(f"state of {seen.schedule} keeps changing", code=409, reason="Conflict")

    def update_controls(self, schedule: str, change: Callable[[Controls], Controls]) -> Controls:
        """Read-modify-write the operator controls (retried on 409; the handled record kept)."""
        for _ in range(10):
            current = self.read(schedule)
            new = change(current.controls)
            data = {"controls": json.dumps(controls_to_dict(new), sort_keys=True)}
            if current.handled is not None:
                data["handled"] = json.dumps(current.handled.to_dict(), sort_keys=True)
            try:
                self._write(schedule, current.token, data)
                return new
            except Conflict:
                continue
        raise Conflict(f"controls of {schedule} keep changing", code=409, reason="Conflict")

    def list_states(self) -> dict[str, ScheduleState]:
        """Every schedule's handled record and controls, by schedule name."""
        return self.list_all()[0]

    def list_all(
        self,
    ) -> tuple[dict[str, ScheduleState], dict[str, RunState], dict[str, CorruptState]]:
        """Every schedule's state and last run (as `load` reads it), by schedule name, from
        one list of the state objects; and the objects that cannot be read, by schedule."""
        states: dict[str, ScheduleState] = {}
        runs: dict[str, RunState] = {}
        corrupt: dict[str, CorruptState] = {}
        selector = ",".join(f"{k}={v}" for k, v in LABELS.items())
        for obj in cm.list_configmaps(self.client, self.namespace, selector):
            name = obj["metadata"]["name"]
            try:
                if name.startswith(SCHEDULE_PREFIX):
                    schedule = name.removeprefix(SCHEDULE_PREFIX)
                    states[schedule] = self._state_of(schedule, obj)
                elif name.startswith(RUN_PREFIX):
                    run = self._run_of(obj, name.removeprefix(RUN_PREFIX))
                    if run is not None:
                        runs[name.removeprefix(RUN_PREFIX)] = run
            except CorruptState as exc:
                corrupt.setdefault(exc.schedule, exc)
        return states, runs, corrupt
