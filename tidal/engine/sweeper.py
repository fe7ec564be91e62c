"""Finding and undoing what tidal wrote for a run that is no longer there (issue 25).

Everything a run writes that must not outlive it carries its owner: surge overrides their
labels and annotations (schedule, run, `tidal.io/purpose: surge`), a bridge placement its
mark on the policy (schedule, runId, purpose bridge, since, and the placement to put back), a
temporary Lazy the run id that added it. `find_leftovers` lists every such object on the
control plane, whatever schedule it came from (one that no longer exists too); `sweep` undoes
those whose run is not active (the caller says which are: tidal.daemon.sweeping):

- an override is deleted once the workloads it selects keep every replica ready without it
  (each member falls back to what the binding assigns); otherwise it is kept, and said why,
  and the next sweep looks again, so floors hold while the surge is lifted one override at a
  time;
- a bridge placement is replaced by the placement recorded before it (a placement edited
  since stays; only the mark goes);
- a temporary Lazy is reported, never lifted here: lifting it would move every template the
  policy claims at once, outside any wave; a run of a window naming the policy lifts it.

Each call is retried on 429/5xx/timeouts within the budget (tidal.engine.patience); sweeping
twice does nothing more the second time.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from tidal.domain.clock import Clock
from tidal.engine.bridging import restore_policy
from tidal.engine.patience import patiently
from tidal.karmada import bindings as bindings_api
from tidal.karmada import policies as policies_api
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.errors import Forbidden, KarmadaError
from tidal.karmada.names import BRIDGE_PLACEMENT, CPP_KIND, PP_KIND, binding_name
from tidal.karmada.overrides import COP_KIND, OverrideRef, delete_override, list_overrides
from tidal.karmada.views import BindingView, OverrideView, PolicyView, parse_time


class LeftoverKind(StrEnum):
    OVERRIDE = "override"
    BRIDGE = "bridge"
    LAZY = "lazy"


class SweepResult(StrEnum):
    REMOVED = "removed"  # an override deleted
    RESTORED = "restored"  # a bridge placement replaced by the one before it
    KEPT = "kept"  # left, for the reason given (the next sweep looks again)
    WOULD_SWEEP = "would sweep"  # --dry-run


@dataclass(frozen=True)
class Leftover:
    """One tidal-owned temporary object: `ref` is `Kind/namespace/name` (namespace empty for
    a cluster-scoped one); `schedule` "" when no mark names it."""

    kind: LeftoverKind
    ref: str
    schedule: str
    run_id: str
    since: datetime | None

    def age_seconds(self, now: datetime) -> float | None:
        return None if self.since is None else max((now - self.since).total_seconds(), 0.0)

    def to_json(self, now: datetime) -> dict[str, Any]:
        age = self.age_seconds(now)
        return {
            "kind": self.kind.value,
            "object": self.ref,
            "schedule": self.schedule or None,
            "runId": self.run_id or None,
            "since": self.since.isoformat() if self.since else None,
            "ageSeconds": None if age is None else round(age),
        }


@dataclass(frozen=True)
class SweepAction:
    leftover: Leftover
    result: SweepResult
    reason: str = ""

    def to_json(self, now: datetime) -> dict[str, Any]:
        return {**self.leftover.to_json(now), "result": self.result.value, "reason": self.reason}


def _policy_ref(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind}/{namespace or ''}/{name}"


def _parse_policy_ref(ref: str) -> tuple[str, str | None, str]:
    kind, namespace, name = ref.split("/", 2)
    return kind, namespace or None, name


def find_leftovers(client: KarmadaClient, lazy_owners: Mapping[str, str]) -> list[Leftover]:
    """Every temporary object tidal wrote that is still there (active runs' too: `sweep`
    leaves those); `lazy_owners`: run id -> schedule, from the journals (a Lazy mark names
    only the run)."""
    out = [
        Leftover(
            LeftoverKind.OVERRIDE,
            f"{v.kind}/{v.namespace}/{v.name}",
            v.schedule or "",
            v.run_id or "",
            v.created,
        )
        for v in list_overrides(client)
    ]
    for kind in (CPP_KIND, PP_KIND):
        try:
            listed = policies_api.list_policies(client, kind)
        except Forbidden:  # an RBAC from before the sweep: overrides are still found
            continue
        for obj in listed:
            view = PolicyView(obj)
            ref = _policy_ref(kind, view.metadata.get("namespace"), view.name)
            text = view.annotations.get(BRIDGE_PLACEMENT)
            if text is not None:
                mark = _mark(text)
                out.append(
                    Leftover(
                        LeftoverKind.BRIDGE,
                        ref,
                        str(mark.get("schedule") or ""),
                        str(mark.get("runId") or ""),
                        parse_time(mark.get("since")) or view.created,
                    )
                )
            added, _ = view.temporary_lazy()
            by = view.lazy_added_by
            if added and by and by != view.completed_run:
                out.append(
                    Leftover(LeftoverKind.LAZY, ref, lazy_owners.get(by, ""), by, view.last_changed)
                )
    return out


def _mark(text: str) -> dict[str, Any]:
    try:
        mark = json.loads(text)
    except ValueError:
        return {}
    return mark if isinstance(mark, dict) else {}


def sweep(
    client: KarmadaClient,
    clock: Clock,
    leftovers: list[Leftover],
    *,
    active: Callable[[Leftover], bool],
    dry_run: bool = False,
    budget_seconds: float = 30.0,
) -> list[SweepAction]:
    """Undo each leftover whose run is not `active` (see the module); one action each."""
    actions = []
    for leftover in leftovers:
        if active(leftover):
            continue
        try:
            actions.append(_sweep_one(client, clock, leftover, dry_run, budget_seconds))
        except KarmadaError as exc:  # the next sweep tries again
            actions.append(SweepAction(leftover, SweepResult.KEPT, f"API error: {exc}"))
    return actions


def _sweep_one(
    client: KarmadaClient, clock: Clock, leftover: Leftover, dry_run: bool, budget: float
) -> SweepAction:
    if leftover.kind is LeftoverKind.LAZY:
        return SweepAction(
            leftover,
            SweepResult.KEPT,
            "lifting it would move every template the policy claims at once; "
            "a run of a window naming the policy lifts it (or patch "
            "spec.activationPreference back by hand)",
        )
    if leftover.kind is LeftoverKind.BRIDGE:
        if dry_run:
            return SweepAction(
                leftover, SweepResult.WOULD_SWEEP, "the placement from before the bridge goes back"
            )
        kind, namespace, name = _parse_policy_ref(leftover.ref)
        restored = patiently(
            client,
            clock,
            budget,
            functools.partial(
                restore_policy, client, kind, name, namespace, run_id=leftover.run_id
            ),
        )
        if not restored:
            return SweepAction(leftover, SweepResult.KEPT, "bridged again by another run since")
        return SweepAction(leftover, SweepResult.RESTORED)
    ref = OverrideRef.parse(leftover.ref)
    why = _short_without(client, ref)
    if why:
        return SweepAction(leftover, SweepResult.KEPT, why)
    if dry_run:
        return SweepAction(leftover, SweepResult.WOULD_SWEEP, "deleted")
    patiently(client, clock, budget, functools.partial(delete_override, client, ref))
    return SweepAction(leftover, SweepResult.REMOVED)


def _short_without(client: KarmadaClient, ref: OverrideRef) -> str:
    """Why deleting the override would leave a workload it selects short of ready replicas
    ('' if none would be): each member falls back to what its binding assigns."""
    found = client.find(ref.resource, ref.namespace or None, ref.name)
    if found is None:
        return ""
    templates = OverrideView.of({**found, "kind": ref.kind}).templates()
    cluster_scoped = ref.kind == COP_KIND
    listed: dict[str, Obj] | None = None
    if len(templates) > 1:  # a wave's override (one per split): one listing, not a GET each
        items, _ = bindings_api.list_bindings(
            client, ref.namespace or None, cluster_scoped=cluster_scoped
        )
        listed = {bindings_api.key_of(item): item for item in items}
    for _api, kind, namespace, name in templates:
        scope = None if cluster_scoped else namespace
        if listed is not None:
            binding = listed.get(f"{scope or ''}/{binding_name(name, kind)}")
        else:
            binding = client.find(
                bindings_api.resource(cluster_scoped), scope, binding_name(name, kind)
            )
        if binding is None:
            continue  # its template is gone: nothing to serve
        view = BindingView.of(binding)
        assigned, ready = view.assignment(), view.ready()
        served = sum(min(ready.get(c, 0), n) for c, n in assigned.items())
        wanted = view.replicas or 0
        if served < wanted:
            return (
                f"removing it would leave {namespace}/{kind}/{name} {served}/{wanted} "
                "ready where its binding assigns them (not ready yet)"
            )
    return ""


__all__ = ["Leftover", "LeftoverKind", "SweepAction", "SweepResult", "find_leftovers", "sweep"]
