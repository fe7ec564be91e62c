"""Resource templates (Deployments, custom kinds...): list by label selector, paged; touch."""

from __future__ import annotations

from typing import Any

from tidal.karmada.client import KarmadaClient, Obj, Resource
from tidal.karmada.names import SWITCH_RUN, SWITCHED_AT
from tidal.karmada.policies import MERGE_PATCH

PAGE_SIZE = 500


def list_paged(client: KarmadaClient, res: Resource, namespace: str | None = None, *,
               label_selector: str | None = None, field_selector: str | None = None,
               page_size: int = PAGE_SIZE) -> tuple[list[Obj], str]:
    """Every object matching the selectors, page by page; and the list's resourceVersion."""
    items: list[Obj] = []
    token: str | None = None
    version = ""
    while True:
        query: dict[str, Any] = {"limit": page_size, "continue": token,
                                 "labelSelector": label_selector or None,
                                 "fieldSelector": field_selector or None}
        page = client.request("list", res, "GET", res.path(namespace), query=query)
        items.extend(page.get("items") or [])
        meta = page.get("metadata") or {}
        version = str(meta.get("resourceVersion") or version)
        token = meta.get("continue") or None
        if not token:
            return items, version


def list_templates(client: KarmadaClient, api_version: str, kind: str, namespace: str | None,
                   label_selector: str | None) -> list[Obj]:
    res = client.resource_for(api_version, kind)
    items, _ = list_paged(client, res, namespace if res.namespaced else None,
                          label_selector=label_selector)
    for item in items:  # list items carry no kind
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items


def touch(client: KarmadaClient, api_version: str, kind: str, namespace: str | None, name: str,
          *, stamp: str, run_id: str) -> Obj:
    """Set tidal's switched-at annotation: a user edit in Karmada's eyes (no .karmada.io)."""
    res = client.resource_for(api_version, kind)
    body = {"metadata": {"annotations": {SWITCHED_AT: stamp, SWITCH_RUN: run_id}}}
    return client.request("patch", res, "PATCH", res.path(namespace, name), body=body,
                          content_type=MERGE_PATCH, retry_conflict=True)
