"""The WorkloadRebalancer controller (pkg/controllers/workloadrebalancer upstream).

For each listed workload it sets the binding's spec.rescheduleTriggeredAt to the rebalancer's
creationTimestamp (only when unset or older) and records `Successful` (the trigger was written,
nothing more), or `Failed`/`ReferencedBindingNotFound`. finishTime is set when no workload is
left to retry; with ttlSecondsAfterFinished the object is deleted that long after finishTime.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from tidal_sim.clock import parse_rfc3339
from tidal_sim.controllers.common import CRB_KIND, RB_KIND, Obj, binding_name, stored
from tidal_sim.store import NotFound

if TYPE_CHECKING:
    from tidal_sim.controllers.host import ControllerHost, Pending

REBALANCER_API = "apps.karmada.io/v1alpha1"


def _workload_sort_key(item: dict[str, Any]) -> str:
    w = item.get("workload") or {}
    return " ".join(str(w.get(k, "")) for k in ("apiVersion", "kind", "namespace", "name"))


def _still_wanted(items: list[Obj], wanted: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(the observed items kept: those the spec still names, and the Successful ones; the
    wanted workloads not observed yet)."""
    remaining = list(wanted)
    observed: list[Obj] = []
    for item in items:
        workload = item.get("workload") or {}
        if workload in remaining:
            observed.append({k: (dict(v) if isinstance(v, dict) else v) for k, v in item.items()})
            remaining = [w for w in remaining if w != workload]
        elif item.get("result") == "Successful":
            observed.append(dict(item))
    return observed, remaining


class RebalancerController:
    def __init__(self, mgr: ControllerHost) -> None:
        self.mgr = mgr
        self._ttl: dict[str, Pending] = {}

    def on_event(self, etype: str, obj: Obj, old: Obj | None) -> None:
        name = obj["metadata"]["name"]
        if etype == "DELETED":
            timer = self._ttl.pop(name, None)
            if timer is not None:
                timer.cancel()
            return
        if etype == "MODIFIED" and old is not None and old.get("spec") == obj.get("spec"):
            return
        self.reconcile(name)

    def reconcile(self, name: str) -> None:
        found = stored(self.mgr.store, REBALANCER_API, "WorkloadRebalancer", name)
        if found is None:
            return
        rtype, rebalancer = found
        old_status = rebalancer.get("status") or {}
        observed = self._sync_from_spec(rebalancer)
        retry = self._trigger_all(observed, rebalancer["metadata"].get("creationTimestamp", ""))
        new_status: Obj = {
            "observedWorkloads": observed,
            "observedGeneration": rebalancer["metadata"].get("generation", 1),
        }
        if old_status.get("finishTime"):
            new_status["finishTime"] = old_status["finishTime"]
        if new_status != old_status:
            if retry == 0:
                new_status["finishTime"] = self.mgr.clock.rfc3339()

            def write(o: Obj) -> None:
                o["status"] = new_status

            rebalancer = self.mgr.write(rtype, None, name, write, subresource="status")
        if retry:
            self.mgr.after(1.0, lambda: self.reconcile(name))
            return
        self._expire_after_ttl(name, rebalancer)

    def _trigger_all(self, observed: list[Obj], created: str) -> int:
        """Trigger each workload not yet done (Successful, or Failed when its binding is
        missing); how many must be tried again."""
        retry = 0
        for item in observed:
            if item.get("result") in ("Successful", "Failed"):
                continue
            outcome = self._trigger(item["workload"], created)
            if outcome == "retry":
                retry += 1
            elif outcome == "missing":
                item["result"], item["reason"] = "Failed", "ReferencedBindingNotFound"
            else:
                item["result"] = "Successful"
        return retry

    def _expire_after_ttl(self, name: str, rebalancer: Obj) -> None:
        """Delete a finished rebalancer once its ttlSecondsAfterFinished has passed."""
        ttl = (rebalancer.get("spec") or {}).get("ttlSecondsAfterFinished")
        finish = (rebalancer.get("status") or {}).get("finishTime")
        if ttl is None or not finish:
            return
        remaining = parse_rfc3339(finish) + float(ttl) - self.mgr.clock.now()
        if remaining > 0:
            previous = self._ttl.pop(name, None)
            if previous is not None:
                previous.cancel()
            self._ttl[name] = self.mgr.after(remaining, lambda: self._expire(name))
            return
        self._expire(name)

    def _expire(self, name: str) -> None:
        self._ttl.pop(name, None)
        rtype = self.mgr.store.kinds.by_kind(REBALANCER_API, "WorkloadRebalancer")
        if rtype is None:
            return
        with contextlib.suppress(NotFound):
            self.mgr.store.delete(rtype, None, name)

    def _sync_from_spec(self, rebalancer: Obj) -> list[Obj]:
        wanted = [dict(w) for w in (rebalancer.get("spec") or {}).get("workloads") or []]
        observed, remaining = _still_wanted(
            (rebalancer.get("status") or {}).get("observedWorkloads") or [], wanted
        )
        observed += [{"workload": w} for i, w in enumerate(remaining) if w not in remaining[:i]]
        observed.sort(key=_workload_sort_key)
        return observed

    def _trigger(self, workload: Obj, created: str) -> str:
        namespace = workload.get("namespace") or ""
        kind = RB_KIND if namespace else CRB_KIND
        rtype = self.mgr.binding_type(kind)
        name = binding_name(str(workload.get("kind", "")), str(workload.get("name", "")))
        try:
            binding = self.mgr.store.get(rtype, namespace or None, name, copy_=False)
        except NotFound:
            return "missing"
        triggered = (binding.get("spec") or {}).get("rescheduleTriggeredAt")
        if triggered and int(parse_rfc3339(created)) <= int(parse_rfc3339(triggered)):
            return "ok"

        def write(obj: Obj) -> None:
            obj.setdefault("spec", {})["rescheduleTriggeredAt"] = created

        try:
            self.mgr.write(rtype, namespace or None, name, write)
        except NotFound:
            return "missing"
        return "ok"
