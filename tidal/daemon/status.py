"""What `tidal status` shows: every schedule's window in force, last run, next start, controls,
policy drift, and the current leader; computed from the schedule files plus the state objects."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tidal.daemon.state import StateStore
from tidal.domain.windows import next_start, start_in_force, times_of
from tidal.engine.journal import RunState
from tidal.engine.policy_change import temporary_lazy
from tidal.engine.snapshot import schedule_hash
from tidal.engine.wave_checks import edited_policies
from tidal.karmada import policies as policies_api
from tidal.karmada.errors import KarmadaError
from tidal.karmada.leases import get_lease


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def policy_drift(client: Any, run: RunState) -> list[dict[str, Any]]:
    """Policies of the last finished run whose spec no longer hashes to what the run wrote."""
    if not run.finished or run.result != "succeeded":
        return []
    return [{"policy": key, "reason": "deleted" if how == "deleted" else
             "spec edited since the run"} for key, how in edited_policies(client, run.policies)]


def edit_pending(run: RunState, loaded: Any) -> dict[str, Any] | None:
    """The last run started with another version of the schedule than the file now says: the
    edit applies from the next start (a run in flight finishes against its own version)."""
    if not run.schedule_hash or run.schedule_hash == schedule_hash(loaded):
        return None
    return {"runId": run.run_id, "window": run.window, "runFinished": run.finished,
            "startedWith": run.schedule_hash, "current": schedule_hash(loaded),
            "appliesFrom": "the next window start"}


def lazy_held(client: Any, run: RunState) -> list[dict[str, Any]]:
    """Policies a halted run left Lazy (with tidal's marks): its unmoved templates wait for
    the next run of a window that names the policy, which takes the Lazy off."""
    held: list[dict[str, Any]] = []
    if not run.finished or run.result != "failed":
        return held
    for policy in run.policies:
        # a rolled-back swap re-created `from`, which then holds the Lazy
        name = policy.swap_from if policy.action == "swap" and policy.restored else None
        obj = policies_api.find_policy(client, policy.kind, name or policy.name,
                                       policy.namespace)
        added, original = temporary_lazy(obj)
        if added:
            held.append({"policy": policy.key, "restoreTo": original})
    return held


def build_status(client: Any, namespace: str, lease_name: str, loaded: list[Any],
                 now: datetime, *, check_drift: bool = True) -> dict[str, Any]:
    store = StateStore(client, namespace)
    states, runs, corrupt = store.list_all()
    lease = get_lease(client, namespace, lease_name)
    leader = ((lease or {}).get("spec") or {}).get("holderIdentity")
    out: list[dict[str, Any]] = []
    for item in sorted(loaded, key=lambda s: s.schedule.name):
        schedule = item.schedule
        name = schedule.name
        times = times_of(schedule)
        in_force = start_in_force(times, now)
        upcoming = next_start(times, now)
        state = states.get(name)
        controls = state.controls if state else None
        handled = state.handled if state else None
        run = runs.get(name)
        broken = corrupt.get(name)
        drift: list[dict[str, Any]] = []
        held: list[dict[str, Any]] = []
        if check_drift and run is not None:
            try:
                drift, held = policy_drift(client, run), lazy_held(client, run)
            except KarmadaError as exc:
                drift = [{"policy": "?", "reason": f"cannot check: {exc}"}]
        hold = controls.hold if controls else None
        out.append({
            "name": name,
            "file": str(item.path),
            "timeZone": schedule.spec.time_zone,
            "windowInForce": {"window": in_force.window, "start": _iso(in_force.at)}
            if in_force else None,
            "lastHandled": {"window": handled.window, "start": _iso(handled.at),
                            "outcome": handled.outcome, "runId": handled.run_id,
                            "reason": handled.reason}
            if handled else None,
            "lastRun": {"runId": run.run_id, "window": run.window, "phase": run.phase,
                        "result": run.result, "startedAt": run.started_at,
                        "finishedAt": run.finished_at} if run else None,
            "nextStart": {"window": upcoming.window, "start": _iso(upcoming.at)}
            if upcoming else None,
            "suspended": bool(schedule.spec.suspend or (controls and controls.suspended)),
            "skipStart": _iso(controls.skip_start) if controls else None,
            "hold": {"window": hold.window, "until": _iso(hold.until)} if hold else None,
            "drift": drift,
            "lazyHeld": held,
            "editPending": edit_pending(run, item) if run is not None else None,
            "blocked": {"reason": broken.reason, "message": str(broken),
                        "repair": broken.repair} if broken else None,
        })
    return {"leader": leader, "now": now.isoformat(), "schedules": out}
