"""WorkloadRebalancers (apps.karmada.io/v1alpha1): create one per wave, read its status."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from tidal.karmada.client import STRICT, WORKLOAD_REBALANCERS, KarmadaClient
from tidal.karmada.errors import AlreadyExists, NotFound
from tidal.karmada.objects import RebalancerWorkload, WorkloadRebalancer


def create_rebalancer(
    client: KarmadaClient,
    name: str,
    workloads: Sequence[RebalancerWorkload],
    *,
    ttl_seconds: int | None = 300,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> WorkloadRebalancer:
    """Create it; if it already exists (a retried create, a resume) return the existing one."""
    spec: dict[str, object] = {"workloads": [dict(w) for w in workloads]}
    if ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds
    body = {
        "apiVersion": WORKLOAD_REBALANCERS.api_version,
        "kind": "WorkloadRebalancer",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": spec,
    }
    res = WORKLOAD_REBALANCERS
    try:
        return cast(
            WorkloadRebalancer,
            client.request("create", res, "POST", res.path(), body=body, query=STRICT),
        )
    except AlreadyExists:
        return get_rebalancer(client, name)


def get_rebalancer(client: KarmadaClient, name: str) -> WorkloadRebalancer:
    res = WORKLOAD_REBALANCERS
    return cast(WorkloadRebalancer, client.request("get", res, "GET", res.path(name=name)))


def delete_rebalancer(client: KarmadaClient, name: str) -> bool:
    res = WORKLOAD_REBALANCERS
    try:
        client.request("delete", res, "DELETE", res.path(name=name))
    except NotFound:
        return False
    return True


def delete_labelled(client: KarmadaClient, selector: str) -> list[str]:
    """Delete every rebalancer `selector` selects in one request (deletecollection); the names
    deleted. Forbidden where the RBAC does not grant deletecollection."""
    res = WORKLOAD_REBALANCERS
    answer = client.request(
        "deletecollection", res, "DELETE", res.path(), query={"labelSelector": selector}
    )
    return [str((item.get("metadata") or {}).get("name")) for item in answer.get("items") or []]
