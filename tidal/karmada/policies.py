"""(Cluster)PropagationPolicy verbs: get, merge-patch with resourceVersion, create, delete."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tidal.karmada.client import (
    CLUSTER_PROPAGATION_POLICIES,
    PROPAGATION_POLICIES,
    KarmadaClient,
    Obj,
    Resource,
)
from tidal.karmada.client import MERGE_PATCH as MERGE_PATCH  # the policy writes' content type
from tidal.karmada.client import STRICT as STRICT
from tidal.karmada.errors import NotFound
from tidal.karmada.names import CPP_KIND, claim_label
from tidal.karmada.paging import list_paged
from tidal.karmada.patches import MergePatch

# Every policy write names unknown fields as an error: the apiserver would otherwise drop a
# typo (`weightPreferences:`) in silence and the switch would wait for a change never made.
DRY_RUN = {"fieldValidation": "Strict", "dryRun": "All"}


# (kind, name, namespace) -> the policy as a cache (a run's informer) holds it, None: not there
PolicyLookup = Callable[[str, str, str | None], Obj | None]


def resource(kind: str) -> Resource:
    return CLUSTER_PROPAGATION_POLICIES if kind == CPP_KIND else PROPAGATION_POLICIES


def get_policy(client: KarmadaClient, kind: str, name: str, namespace: str | None) -> Obj:
    res = resource(kind)
    return client.request("get", res, "GET", res.path(namespace, name))


def find_policy(client: KarmadaClient, kind: str, name: str, namespace: str | None) -> Obj | None:
    """The policy, or None when it does not exist."""
    return client.find(resource(kind), namespace, name)


def patch_policy(
    client: KarmadaClient,
    kind: str,
    name: str,
    namespace: str | None,
    patch: MergePatch | Mapping[str, Any],
    resource_version: str | None = None,
    *,
    dry_run: bool = False,
) -> Obj:
    """JSON merge patch with strict field validation; with a resourceVersion the server
    refuses it (Conflict) if stale; a dry run is validated and defaulted, never stored."""
    res = resource(kind)
    merge = patch if isinstance(patch, MergePatch) else MergePatch(patch)
    return client.request(
        "patch",
        res,
        "PATCH",
        res.path(namespace, name),
        body=merge.body(resource_version),
        content_type=MERGE_PATCH,
        query=DRY_RUN if dry_run else STRICT,
        retry_conflict=dry_run,
    )  # a dry run has no resourceVersion to honour


def create_policy(client: KarmadaClient, manifest: Obj, *, dry_run: bool = False) -> Obj:
    """Create with strict field validation (a dry run stores nothing)."""
    kind = str(manifest.get("kind"))
    res = resource(kind)
    namespace = (manifest.get("metadata") or {}).get("namespace")
    return client.request(
        "create",
        res,
        "POST",
        res.path(namespace),
        body=manifest,
        query=DRY_RUN if dry_run else STRICT,
    )


def delete_policy(client: KarmadaClient, kind: str, name: str, namespace: str | None) -> bool:
    """Delete; False when it was already gone."""
    res = resource(kind)
    try:
        client.request("delete", res, "DELETE", res.path(namespace, name))
    except NotFound:
        return False
    return True


def permanent_id(policy: Obj) -> str | None:
    """The id the detector labels claimed templates with (None until the detector saw it)."""
    labels = (policy.get("metadata") or {}).get("labels") or {}
    value = labels.get(claim_label(str(policy.get("kind"))))
    return str(value) if value else None


def claim_selector(policy: Obj) -> str | None:
    """`label=value` selecting the templates this policy claims."""
    pid = permanent_id(policy)
    return f"{claim_label(str(policy.get('kind')))}={pid}" if pid else None


def list_policies(client: KarmadaClient, kind: str) -> list[Obj]:
    """Every policy of `kind` (PropagationPolicies of all namespaces), each with its kind."""
    items, _ = list_paged(client, resource(kind))
    return [{**item, "kind": kind} for item in items]
