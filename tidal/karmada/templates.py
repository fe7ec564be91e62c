"""Resource templates (Deployments, custom kinds...): list by label selector, paged; touch."""

from __future__ import annotations

from tidal.karmada import patches
from tidal.karmada.client import MERGE_PATCH, STRICT, KarmadaClient, Obj
from tidal.karmada.paging import list_paged


def list_templates(
    client: KarmadaClient,
    api_version: str,
    kind: str,
    namespace: str | None,
    label_selector: str | None,
) -> list[Obj]:
    res = client.resource_for(api_version, kind)
    items, _ = list_paged(
        client, res, namespace if res.namespaced else None, label_selector=label_selector
    )
    for item in items:  # list items carry no kind
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items


def touch(
    client: KarmadaClient,
    api_version: str,
    kind: str,
    namespace: str | None,
    name: str,
    *,
    stamp: str,
    run_id: str,
) -> Obj:
    """Set tidal's switched-at annotation: a user edit in Karmada's eyes (no .karmada.io)."""
    res = client.resource_for(api_version, kind)
    return client.request(
        "patch",
        res,
        "PATCH",
        res.path(namespace, name),
        body=patches.touch(stamp, run_id).body(),
        content_type=MERGE_PATCH,
        retry_conflict=True,
        query=STRICT,
    )
