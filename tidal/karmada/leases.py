"""Verbs on coordination.k8s.io/v1 Leases (leader election), over KarmadaClient's one call path.

Writes carry the object's resourceVersion and are never retried on 409: a Conflict means
another replica wrote first, which is exactly what the elector must learn.
"""

from __future__ import annotations

from tidal.karmada.client import KNOWN, STRICT, KarmadaClient, Resource
from tidal.karmada.objects import Obj

LEASES: Resource = next(r for r in KNOWN if r.kind == "Lease")


def get_lease(client: KarmadaClient, namespace: str, name: str) -> Obj | None:
    """The Lease, or None when it does not exist."""
    return client.find(LEASES, namespace, name)


def create_lease(client: KarmadaClient, namespace: str, name: str, spec: Obj) -> Obj:
    """Create the Lease (AlreadyExists when another replica created it first)."""
    body = {
        "apiVersion": LEASES.api_version,
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return client.request("create", LEASES, "POST", LEASES.path(namespace), body=body, query=STRICT)


def update_lease(client: KarmadaClient, lease: Obj) -> Obj:
    """Replace the Lease; its metadata.resourceVersion makes a stale write a Conflict."""
    return client.replace(LEASES, lease)
