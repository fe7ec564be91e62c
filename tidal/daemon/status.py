"""What `tidal status` shows: every schedule's window in force, last run, next start, controls,
policy drift, and the current leader; computed from the schedule files plus the state objects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tidal.daemon.queue import read_queue
from tidal.daemon.state import CorruptState, ScheduleState, StateStore
from tidal.daemon.sweeping import owners_of, run_active
from tidal.domain.outcomes import RunResult
from tidal.domain.schedule import TidalSchedule
from tidal.domain.windows import Controls, WindowStart, next_start, start_in_force, times_of
from tidal.engine.journal import RunState
from tidal.engine.snapshot import schedule_hash
from tidal.engine.sweeper import LeftoverKind, find_leftovers
from tidal.engine.wave_checks import edited_policies
from tidal.karmada import policies as policies_api
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import KarmadaError
from tidal.karmada.leases import get_lease
from tidal.karmada.views import LeaseView, PolicyView
from tidal.loading.loader import LoadedSchedule


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def policy_drift(client: KarmadaClient, run: RunState) -> list[dict[str, Any]]:
    """Policies of the last finished run whose spec no longer hashes to what the run wrote."""
    if not run.finished or run.result is not RunResult.SUCCEEDED:
        return []
    return [
        {"policy": key, "reason": "deleted" if how == "deleted" else "spec edited since the run"}
        for key, how in edited_policies(client, run.policies)
    ]


def edit_pending(run: RunState, loaded: LoadedSchedule) -> dict[str, Any] | None:
    """The last run started with another version of the schedule than the file now says: the
    edit applies from the next start (a run in flight finishes against its own version)."""
    if not run.schedule_hash or run.schedule_hash == schedule_hash(loaded):
        return None
    return {
        "runId": run.run_id,
        "window": run.window,
        "runFinished": run.finished,
        "startedWith": run.schedule_hash,
        "current": schedule_hash(loaded),
        "appliesFrom": "the next window start",
    }


def lazy_held(
    client: KarmadaClient, run: RunState | None, schedule: TidalSchedule | None = None
) -> list[dict[str, Any]]:
    """Policies left Lazy by a tidal run that did not finish them (the marks on the policy say
    so, whether or not any journal remembers that run): their unmoved templates wait for the
    next run of a window that names the policy, which takes the Lazy off. Every policy the
    schedule names, and those of its last run; none while a run is under way."""
    held: list[dict[str, Any]] = []
    if run is not None and not run.finished:
        return held
    refs: dict[tuple[str, str | None, str], None] = {}
    for window in schedule.spec.windows if schedule is not None else []:
        for change in window.policies:
            for ref in change.policy_refs():
                refs[(ref.kind, ref.namespace, ref.name)] = None
    for policy in run.policies if run is not None else []:
        refs[(policy.kind, policy.namespace, policy.name)] = None
        if policy.swap_from:  # a rolled-back swap re-created `from`, which holds the Lazy
            refs[(policy.kind, policy.namespace, policy.swap_from)] = None
    for kind, namespace, name in refs:
        view = PolicyView.of(policies_api.find_policy(client, kind, name, namespace))
        added, original = view.temporary_lazy()
        if added and view.lazy_added_by != view.completed_run:
            key = f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"
            held.append({"policy": key, "restoreTo": original})
    return held


def window_in_force(
    run: RunState | None, scheduled: WindowStart | None, drift: list[dict[str, Any]] | None
) -> dict[str, Any] | None:
    """What is in force: the window of the last run when it succeeded and its policies are
    still as it wrote them (`drift` checked and empty: source "cluster"; not checked:
    "journal"), whoever ran it and whatever the clock says; else the window the schedule
    puts in force now (source "schedule"). `scheduled` names the latter in every case."""
    by_clock = scheduled.window if scheduled else None
    if run is not None and run.finished and run.result is RunResult.SUCCEEDED and not drift:
        return {
            "window": run.window,
            "start": run.started_at,
            "source": "journal" if drift is None else "cluster",
            "scheduled": by_clock,
        }
    if scheduled is None:
        return None
    return {
        "window": scheduled.window,
        "start": _iso(scheduled.at),
        "source": "schedule",
        "scheduled": by_clock,
    }


def build_status(
    client: KarmadaClient,
    namespace: str,
    lease_name: str,
    loaded: list[LoadedSchedule],
    now: datetime,
    *,
    check_drift: bool = True,
) -> dict[str, Any]:
    store = StateStore(client, namespace)
    states, runs, corrupt = store.list_all()
    lease = get_lease(client, namespace, lease_name)
    leader = LeaseView.of(lease).holder
    queue = read_queue(client, namespace)
    waiting_now = queue.get("waiting")
    if not isinstance(waiting_now, dict):
        waiting_now = {}
    left = leftovers_now(client, namespace, runs, now)
    found = _Found(states, runs, corrupt, left, waiting_now)
    out = [
        _schedule_entry(client, item, now, found, check_drift=check_drift)
        for item in sorted(loaded, key=lambda s: s.schedule.name)
    ]
    return {
        "leader": leader,
        "now": now.isoformat(),
        "schedules": out,
        "leftovers": {"count": len(left["items"]), "items": left["items"]},
        "queue": {
            "updatedAt": queue.get("updatedAt"),
            "publishedBy": queue.get("publishedBy"),
            "leased": queue.get("leased") or {},
        },
    }


@dataclass(frozen=True)
class _Found:
    """What the status read once for all schedules."""

    states: dict[str, ScheduleState]
    runs: dict[str, RunState]
    corrupt: dict[str, CorruptState]
    left: dict[str, Any]  # leftovers_now
    waiting: dict[str, Any]  # the queue's waiting entries


def _checked_policies(
    client: KarmadaClient, run: RunState | None, schedule: TidalSchedule
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """(drift, drift as checked or None when it could not be, policies held Lazy)."""
    try:
        drift = policy_drift(client, run) if run is not None else []
        return drift, drift, lazy_held(client, run, schedule)
    except KarmadaError as exc:
        cannot = [{"policy": "?", "reason": f"cannot check: {exc}"}]
        return cannot, cannot, []


def _last_run(run: RunState, found: _Found, name: str) -> dict[str, Any]:
    return {
        "runId": run.run_id,
        "window": run.window,
        "phase": run.phase,
        "result": run.result,
        "startedAt": run.started_at,
        "finishedAt": run.finished_at,
        "reason": run.reason,
        "startedBy": run.started_by,
        "waves": [
            {"index": w.index, "result": w.result.reported if w.result is not None else None}
            for w in run.waves
        ],
        "overridesLeft": overrides_left(
            run,
            stopped=run.finished or not _held(found.left, name),
            standing=found.left["standing"],
        ),
    }


def _controls_entry(
    schedule: TidalSchedule, controls: Controls | None, now: datetime
) -> dict[str, Any]:
    """suspended, skipStart and hold (an expired hold is none: the schedule is back)."""
    hold = controls.hold if controls else None
    if hold is not None and hold.until <= now:
        hold = None
    return {
        "suspended": bool(schedule.spec.suspend or (controls and controls.suspended)),
        "skipStart": _iso(controls.skip_start) if controls else None,
        "hold": {"window": hold.window, "until": _iso(hold.until)} if hold else None,
    }


def _schedule_entry(
    client: KarmadaClient, item: LoadedSchedule, now: datetime, found: _Found, *, check_drift: bool
) -> dict[str, Any]:
    """One schedule's entry of the status."""
    schedule = item.schedule
    name = schedule.name
    times = times_of(schedule)
    upcoming = next_start(times, now)
    state = found.states.get(name)
    controls = state.controls if state else None
    handled = state.handled if state else None
    run = found.runs.get(name)
    broken = found.corrupt.get(name)
    drift: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    checked: list[dict[str, Any]] | None = None
    if check_drift:
        drift, checked, held = _checked_policies(client, run, schedule)
    return {
        "name": name,
        "file": str(item.path),
        "timeZone": schedule.spec.time_zone,
        "windowInForce": window_in_force(run, start_in_force(times, now), checked),
        "lastHandled": {
            "window": handled.window,
            "start": _iso(handled.at),
            "outcome": handled.outcome,
            "runId": handled.run_id,
            "reason": handled.reason,
        }
        if handled
        else None,
        "lastRun": _last_run(run, found, name) if run else None,
        "nextStart": {"window": upcoming.window, "start": _iso(upcoming.at)} if upcoming else None,
        **_controls_entry(schedule, controls, now),
        "drift": drift,
        "lazyHeld": held,
        "editPending": edit_pending(run, item) if run is not None else None,
        "blocked": {"reason": broken.reason, "message": str(broken), "repair": broken.repair}
        if broken
        else None,
        "waiting": waiting_of(found.waiting.get(name)),
        "leftovers": [x for x in found.left["items"] if x["schedule"] == name],
        "runControl": run_control_of(controls, run),
    }


def run_control_of(controls: Controls | None, run: RunState | None) -> dict[str, Any] | None:
    """The operator's commands to the run in flight (pause, abort, promote), while it runs."""
    control = controls.run if controls is not None else None
    if control is None or run is None or run.finished or control.run_id != run.run_id:
        return None
    return {
        "runId": control.run_id,
        "paused": control.paused,
        "aborted": control.aborted,
        "promoted": control.promoted,
        "last": control.last,
        "at": _iso(control.at),
        "source": control.source,
    }


def waiting_of(entry: Any) -> dict[str, Any] | None:
    """{reason: slot|capacity, since[, short]} of a schedule the daemon says is waiting."""
    if not isinstance(entry, dict) or entry.get("reason") not in ("slot", "capacity"):
        return None
    out = {"reason": entry["reason"], "since": entry.get("since")}
    if entry.get("short"):
        out["short"] = entry["short"]
    return out


def leftovers_now(
    client: KarmadaClient, namespace: str, runs: dict[str, RunState], now: datetime
) -> dict[str, Any]:
    """{items: every tidal-owned temporary object whose run is not active (kind, object,
    schedule, runId, since, ageSeconds), active: the schedules whose run lock is held}."""
    try:
        found = find_leftovers(client, owners_of(runs))
    except KarmadaError as exc:
        return {
            "items": [
                {
                    "kind": "?",
                    "object": "?",
                    "schedule": None,
                    "runId": None,
                    "since": None,
                    "ageSeconds": None,
                    "reason": f"cannot check: {exc}",
                }
            ],
            "active": set(),
            "standing": None,
        }
    active = {
        x.schedule for x in found if x.schedule and run_active(client, namespace, x.schedule, now)
    }
    return {
        "items": [x.to_json(now) for x in found if x.schedule not in active],
        "active": active,
        "standing": {x.ref for x in found if x.kind is LeftoverKind.OVERRIDE},
    }


def _held(left: dict[str, Any], schedule: str) -> bool:
    return schedule in left["active"]


def overrides_left(
    run: RunState, *, stopped: bool | None = None, standing: set[str] | None = None
) -> list[dict[str, Any]]:
    """The surge overrides a stopped run left in place, per wave, and why (kept on a halt
    because removing them would break a floor; or left by a run that stopped at once, a crash
    included). `stopped`: the run is not going on (default: it finished); `standing`: the
    overrides that exist (None: not known), so one swept since is not shown."""
    out: list[dict[str, Any]] = []
    stopped = run.finished if stopped is None else stopped
    for wave in run.waves:
        for leg in wave.legs:
            record = leg.surge
            if record is None or not record.active or not stopped:
                continue
            there = [o for o in record.overrides if standing is None or o in standing]
            if not there:
                continue
            out.append(
                {
                    "wave": wave.index,
                    "rollback": leg.direction.rollback,
                    "overrides": there,
                    "step": record.step.value,
                    "reason": record.kept
                    or "the run stopped before releasing them; "
                    "the sweeper (or `tidal cleanup`) removes "
                    "them",
                }
            )
    return out
