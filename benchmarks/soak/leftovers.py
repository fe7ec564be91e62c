"""The soak's promise 9 (issue 25): nothing tidal writes outlives its run by more than the
sweep interval, and no override caps a workload below its spec.

Fed from the checker's subscription: tidal's OverridePolicies (owner labels), the run states
(when each run ended) and the bindings (each workload's spec and assignment). An override is
a violation when it is deleted, or still there at the end, later than `sweep_seconds` after
its run ended; and when, for longer than `cap_grace_seconds` (the run's refit after the
move), the replicas it sets plus what the binding assigns elsewhere add up to less than the
workload's spec."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
RUN_LABEL = "tidal.io/run"
MANAGED_BY = "app.kubernetes.io/managed-by"


@dataclass
class Override:
    run_id: str
    replicas: dict[str, int]
    workloads: list[str]  # template names (one namespace)


def _replicas(obj: Obj) -> dict[str, int]:
    out: dict[str, int] = {}
    for rule in (obj.get("spec") or {}).get("overrideRules") or []:
        clusters = ((rule.get("targetCluster") or {}).get("clusterNames")) or []
        for item in (rule.get("overriders") or {}).get("plaintext") or []:
            if item.get("path") == "/spec/replicas" and isinstance(item.get("value"), int):
                out.update({str(c): int(item["value"]) for c in clusters})
    return out


@dataclass
class LeftoverWatch:
    sweep_seconds: float
    cap_grace_seconds: float
    report: Callable[[str], None]
    overrides: dict[str, Override] = field(default_factory=dict)
    ended: dict[str, float] = field(default_factory=dict)  # run id -> when it was done
    capping: dict[tuple[str, str], float] = field(default_factory=dict)  # since when
    bindings: dict[str, Obj] = field(default_factory=dict)  # workload name -> binding
    seen: int = 0
    checks: int = 0

    def on_override(self, kind: str, obj: Obj, now: float) -> None:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(MANAGED_BY) != "tidal":
            return
        name = f"{meta.get('namespace')}/{meta.get('name')}"
        if kind == "DELETED":
            gone = self.overrides.pop(name, None)
            if gone is not None:
                self._outlived(name, gone, now, "deleted")
                for key in [k for k in self.capping if k[0] == name]:
                    self.capping.pop(key)
            return
        if name not in self.overrides:
            self.seen += 1
        selectors = (obj.get("spec") or {}).get("resourceSelectors") or []
        self.overrides[name] = Override(
            str(labels.get(RUN_LABEL, "")), _replicas(obj), [str(s.get("name")) for s in selectors]
        )
        self._caps(now, [name])

    def on_run_state(self, state: Obj, now: float) -> None:
        if state.get("phase") == "done":
            self.ended.setdefault(str(state.get("runId")), now)

    def on_binding(self, workload: str, binding: Obj | None, now: float) -> None:
        if binding is None:
            self.bindings.pop(workload, None)
        else:
            self.bindings[workload] = binding
        self._caps(now, [n for n, o in self.overrides.items() if workload in o.workloads])

    def _outlived(self, name: str, override: Override, now: float, how: str) -> None:
        ended = self.ended.get(override.run_id)
        self.checks += 1
        if ended is not None and now - ended > self.sweep_seconds:
            self.report(
                f"override {name} of run {override.run_id} {how} "
                f"{now - ended:.0f}s after its run ended (sweep interval "
                f"{self.sweep_seconds:g}s)"
            )

    def _caps(self, now: float, names: list[str]) -> None:
        for name in names:
            override = self.overrides[name]
            for workload in override.workloads:
                key = (name, workload)
                binding = self.bindings.get(workload)
                if binding is None or not _caps(override.replicas, binding):
                    self.capping.pop(key, None)
                    continue
                since = self.capping.setdefault(key, now)
                if now - since > self.cap_grace_seconds:
                    self.report(
                        f"override {name} caps {workload} below its spec for {now - since:.0f}s"
                    )

    def finish(self, now: float) -> None:
        """At the end of the soak: what is still there, and any cap still held."""
        for name, override in self.overrides.items():
            self._outlived(name, override, now, "still there")
        self._caps(now, list(self.overrides))


def _caps(replicas: dict[str, int], binding: Obj) -> bool:
    spec = binding.get("spec") or {}
    wanted = int(spec.get("replicas") or 0)
    assigned = {
        str(c.get("name")): int(c.get("replicas") or 0)
        for c in spec.get("clusters") or []
        if c.get("name")
    }
    running = sum(replicas.values()) + sum(n for c, n in assigned.items() if c not in replicas)
    return bool(wanted) and running < wanted
