"""Member clusters (cluster.karmada.io/v1alpha1)."""

from __future__ import annotations

from tidal.karmada.client import CLUSTERS, KarmadaClient, Obj
from tidal.karmada.paging import list_paged


def list_clusters(client: KarmadaClient) -> list[Obj]:
    items, _ = list_paged(client, CLUSTERS)
    return items
