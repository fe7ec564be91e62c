"""(Cluster)ResourceBindings: list (paged) and a resumable watch that keeps a live cache.

The watch resumes from the last resourceVersion it saw after a dropped connection or a
server-side timeout, and re-lists when the server answers 410 Gone (too old a version).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from tidal.karmada.client import (
    CLUSTER_RESOURCE_BINDINGS,
    RESOURCE_BINDINGS,
    KarmadaClient,
    Obj,
    Resource,
)
from tidal.karmada.errors import Gone
from tidal.karmada.paging import list_paged


def resource(cluster_scoped: bool) -> Resource:
    return CLUSTER_RESOURCE_BINDINGS if cluster_scoped else RESOURCE_BINDINGS


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name')}"


def list_bindings(
    client: KarmadaClient,
    namespace: str | None = None,
    *,
    cluster_scoped: bool = False,
    label_selector: str | None = None,
) -> tuple[list[Obj], str]:
    return list_paged(
        client,
        resource(cluster_scoped),
        None if cluster_scoped else namespace,
        label_selector=label_selector,
    )


class BindingWatch:
    """A live view of the bindings in one namespace (or all): list once, then watch.

    `cache` maps "namespace/name" to the latest object; `changes(seconds)` yields each
    changed object (deleted ones have `deleted=True` in the yielded tuple) as it arrives.
    With `keys` ("namespace/name" of the bindings a reader needs) the cache and the changes
    are those keys only; the namespace is still listed and watched whole (the API cannot
    select by a set of names), but nothing else is kept.
    """

    def __init__(
        self,
        client: KarmadaClient,
        namespace: str | None = None,
        *,
        cluster_scoped: bool = False,
        max_watch_seconds: float = 10.0,
        keys: Iterable[str] | None = None,
    ) -> None:
        self.client = client
        self.namespace = None if cluster_scoped else namespace
        self.res = resource(cluster_scoped)
        self.max_watch_seconds = max_watch_seconds
        self.keys = None if keys is None else frozenset(keys)
        self.cache: dict[str, Obj] = {}
        self.version = ""
        self.relists = 0
        self.watches = 0

    def start(self) -> dict[str, Obj]:
        items, self.version = list_paged(self.client, self.res, self.namespace)
        self.cache = {key: item for item in items if self.wants(key := key_of(item))}
        return self.cache

    def wants(self, key: str) -> bool:
        return self.keys is None or key in self.keys

    def relist(self) -> list[tuple[Obj, bool]]:
        """List again; report what changed against the cache (after a 410)."""
        old = self.cache
        self.relists += 1
        self.start()
        out: list[tuple[Obj, bool]] = []
        for key, obj in self.cache.items():
            if old.get(key) != obj:
                out.append((obj, False))
        out.extend((obj, True) for key, obj in old.items() if key not in self.cache)
        return out

    def changes(self, seconds: float) -> Iterator[tuple[Obj, bool]]:
        """Watch for up to about `seconds` (the caller may stop early); yields (obj, deleted)."""
        if not self.version:
            self.start()
        timeout = max(1, math.ceil(min(seconds, self.max_watch_seconds)))
        query: dict[str, Any] = {
            "resourceVersion": self.version,
            "timeoutSeconds": timeout,
            "allowWatchBookmarks": True,
        }
        self.watches += 1
        try:
            for event in self.client.stream(
                self.res, self.res.path(self.namespace), query, read_timeout=timeout + 5.0
            ):
                kind = event.get("type")
                obj = event.get("object") or {}
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if version:
                    self.version = str(version)
                if kind == "BOOKMARK":
                    continue
                key = key_of(obj)
                if not self.wants(key):
                    continue
                if kind == "DELETED":
                    self.cache.pop(key, None)
                    yield obj, True
                else:
                    self.cache[key] = obj
                    yield obj, False
        except Gone:
            yield from self.relist()
