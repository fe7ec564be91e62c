"""Verbs on the daemon's state objects: ConfigMaps in the state namespace (and the namespace).

Updates carry metadata.resourceVersion and are never retried on 409 (fencing: a Conflict means
another writer got there first).
"""

from __future__ import annotations

import contextlib

from tidal.karmada.client import KNOWN, STRICT, KarmadaClient, Resource
from tidal.karmada.errors import AlreadyExists, Forbidden, NotFound
from tidal.karmada.objects import Obj
from tidal.karmada.paging import list_paged

CONFIGMAPS: Resource = next(r for r in KNOWN if r.kind == "ConfigMap")
NAMESPACES: Resource = next(r for r in KNOWN if r.kind == "Namespace")


def get_configmap(client: KarmadaClient, namespace: str, name: str) -> Obj | None:
    """The ConfigMap, or None when it does not exist."""
    return client.find(CONFIGMAPS, namespace, name)


def list_configmaps(client: KarmadaClient, namespace: str, label_selector: str) -> list[Obj]:
    """ConfigMaps in the namespace matching the selector (paged)."""
    items, _ = list_paged(
        client, CONFIGMAPS, namespace, label_selector=label_selector, page_size=200
    )
    return items


def create_configmap(
    client: KarmadaClient,
    namespace: str,
    name: str,
    data: dict[str, str],
    labels: dict[str, str] | None = None,
) -> Obj:
    """Create the ConfigMap (AlreadyExists when another writer created it first)."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data,
    }
    return client.request(
        "create", CONFIGMAPS, "POST", CONFIGMAPS.path(namespace), body=body, query=STRICT
    )


def update_configmap(client: KarmadaClient, configmap: Obj) -> Obj:
    """Replace the ConfigMap; a stale metadata.resourceVersion is a Conflict."""
    return client.replace(CONFIGMAPS, configmap)


def ensure_namespace(client: KarmadaClient, name: str) -> None:
    """Create the namespace when missing; best effort (RBAC may forbid it; then it must exist)."""
    try:
        client.request("get", NAMESPACES, "GET", NAMESPACES.path(None, name))
        return
    except NotFound:
        pass
    except Forbidden:
        return
    with contextlib.suppress(AlreadyExists, Forbidden):
        client.request(
            "create",
            NAMESPACES,
            "POST",
            NAMESPACES.path(),
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            query=STRICT,
        )
