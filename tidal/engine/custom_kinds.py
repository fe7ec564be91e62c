"""Custom kinds in a switch: what Karmada's interpreter tells of their replicas, checked
before any write.

Rule for a custom kind (an API group outside Kubernetes' own): its replicas are the binding's
`spec.replicas`, which Karmada fills from the kind's ResourceInterpreterCustomization
`replicaResource` script; its per-cluster ready replicas are each aggregatedStatus item's
`status.readyReplicas` as the customization's `statusReflection` script reports it (a schedule
whose kind reflects them elsewhere names the field with `spec.workloads[].readyReplicasField`,
e.g. `status.availableInstances`); its health is the customization's `healthInterpretation`.
Refused before any write, naming the kind: a kind named in `spec.workloads` that no
customization gives replicas (Karmada would treat it as replica-less), and, for a surge, a
workload whose replica field cannot be found by running its `replicaRevision` script
(tidal.karmada.interpreters.replica_paths): the surge override writes that field.
"""

from __future__ import annotations

from collections.abc import Sequence

from tidal.domain.schedule import TidalSchedule
from tidal.engine.resolve import Workload
from tidal.karmada.client import KarmadaClient
from tidal.karmada.interpreters import (
    REPLICA_RESOURCE,
    ReplicaFieldError,
    is_custom_kind,
    list_customizations,
    replica_paths,
)


def custom_kind_refusals(
    client: KarmadaClient, schedule: TidalSchedule, workloads: Sequence[Workload], *, surge: bool
) -> list[str]:
    """Why the switch must not start for its custom kinds (empty: it may); for a surge, sets
    each custom workload's `replica_paths`."""
    named = {
        (s.api_version, s.kind): i
        for i, s in enumerate(schedule.spec.workloads)
        if is_custom_kind(s.api_version)
    }
    custom = [w for w in workloads if is_custom_kind(w.key.api_version)]
    if not named and not custom:
        return []
    scripts = list_customizations(client)
    refusals = []
    for (api_version, kind), index in sorted(named.items(), key=lambda kv: kv[1]):
        found = scripts.get((api_version, kind))
        if found is None or not found.has(REPLICA_RESOURCE):
            refusals.append(
                f"spec.workloads[{index}].kind: {kind} ({api_version}): tidal cannot find its "
                f"replicas: no ResourceInterpreterCustomization gives it a {REPLICA_RESOURCE} "
                "script, so Karmada treats it as replica-less; add one (docs/custom-kinds.md) "
                "or leave the kind out of spec.workloads"
            )
    if not surge:
        return refusals
    failed: set[tuple[str, str]] = set()
    for w in custom:
        target = (w.key.api_version, w.key.kind)
        if target in failed:
            continue
        try:
            w.replica_paths = replica_paths(w.template, scripts.get(target))
        except ReplicaFieldError as exc:
            failed.add(target)
            refusals.append(f"surge: {exc}")
    return refusals
