"""The run-owned OverridePolicies of a surging wave: names, labels, bodies, and their writes.

One override per workload (bounded by the wave size): it selects exactly that template by name
and replaces `/spec/replicas` in each destination cluster with the replicas the surge sets
there (one rule per cluster). Karmada applies overrides after dividing the replicas, so the
member runs that many while the binding's split is unchanged. Namespaced templates get an
OverridePolicy in their namespace, cluster-scoped ones a ClusterOverridePolicy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidal.domain.surge import REPLICAS_PATH
from tidal.domain.waves import WorkloadKey
from tidal.karmada.client import KarmadaClient, Obj, Resource
from tidal.karmada.errors import AlreadyExists, NotFound

API_VERSION = "policy.karmada.io/v1alpha1"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
LABEL_SCHEDULE = "tidal.io/schedule"
LABEL_RUN = "tidal.io/run"
LABEL_WAVE = "tidal.io/wave"
MANAGER = "tidal"


@dataclass(frozen=True)
class OverrideRef:
    """Where one override lives; journalled as `kind/namespace/name` (namespace empty for a
    ClusterOverridePolicy)."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> OverrideRef:
        kind, namespace, name = text.split("/", 2)
        return cls(kind, namespace, name)


def override_name(schedule: str, run_id: str, wave: int, index: int, back: bool) -> str:
    return f"tidal-{schedule}-{run_id}-w{wave}{'-back' if back else ''}-{index}"


def ref_for(key: WorkloadKey, name: str) -> OverrideRef:
    kind = "OverridePolicy" if key.namespace else "ClusterOverridePolicy"
    return OverrideRef(kind, key.namespace, name)


def labels(schedule: str, run_id: str, wave: int) -> dict[str, str]:
    return {LABEL_MANAGED: MANAGER, LABEL_SCHEDULE: schedule, LABEL_RUN: run_id,
            LABEL_WAVE: str(wave)}


def body(ref: OverrideRef, key: WorkloadKey, replicas: Mapping[str, int],
         labels_: Mapping[str, str]) -> Obj:
    """The override raising `key`'s member replicas to `replicas` per cluster."""
    selector: dict[str, Any] = {"apiVersion": key.api_version, "kind": key.kind,
                                "name": key.name}
    meta: dict[str, Any] = {"name": ref.name, "labels": dict(labels_)}
    if ref.namespace:
        selector["namespace"] = ref.namespace
        meta["namespace"] = ref.namespace
    rules = [{"targetCluster": {"clusterNames": [cluster]},
              "overriders": {"plaintext": [{"path": REPLICAS_PATH, "operator": "replace",
                                            "value": n}]}}
             for cluster, n in sorted(replicas.items())]
    return {"apiVersion": API_VERSION, "kind": ref.kind, "metadata": meta,
            "spec": {"resourceSelectors": [selector], "overrideRules": rules}}


def _resource(client: KarmadaClient, kind: str) -> Resource:
    return client.resource_for(API_VERSION, kind)


def apply_override(client: KarmadaClient, ref: OverrideRef, obj: Obj) -> None:
    """Create it, or replace the rules of the one already there (a resume, a refit)."""
    res = _resource(client, ref.kind)
    ns = ref.namespace or None
    try:
        client.request("create", res, "POST", res.path(ns), body=obj)
    except AlreadyExists:
        patch = {"spec": obj["spec"], "metadata": {"labels": obj["metadata"]["labels"]}}
        client.request("patch", res, "PATCH", res.path(ns, ref.name), body=patch,
                       content_type="application/merge-patch+json")


def delete_override(client: KarmadaClient, ref: OverrideRef) -> bool:
    """Delete it; False when it was gone already."""
    res = _resource(client, ref.kind)
    try:
        client.request("delete", res, "DELETE", res.path(ref.namespace or None, ref.name))
    except NotFound:
        return False
    return True


def list_overrides(client: KarmadaClient, schedule: str) -> list[tuple[OverrideRef, Obj]]:
    """Every override tidal made for `schedule` (any run), found by its labels."""
    out: list[tuple[OverrideRef, Obj]] = []
    query = {"labelSelector": f"{LABEL_MANAGED}={MANAGER},{LABEL_SCHEDULE}={schedule}"}
    for kind in ("OverridePolicy", "ClusterOverridePolicy"):
        res = _resource(client, kind)
        listed = client.request("list", res, "GET", res.path(), query=query)
        for item in listed.get("items") or []:
            meta = item.get("metadata") or {}
            out.append((OverrideRef(kind, str(meta.get("namespace") or ""),
                                    str(meta.get("name"))), item))
    return out
