"""One list+watch per resource kind, shared by every switch of a daemon (an informer).

Without it each wave of each switch lists and watches the bindings on its own: at a hundred
teams switching at the same minute that is a hundred watches and listings. An `Informer` lists
a kind once (all namespaces), keeps watching it from the last resourceVersion (re-listing after
410 Gone), keeps the cache, and hands each reader a `SharedBindingView`: the BindingWatch
interface (`start`, `cache`, `changes`) served from the shared cache and a queue of the events
the reader has not seen. A reader may name the keys it reads (a wave: its team's bindings);
it then holds and is woken for those only, found through an index by key, so a hundred teams
in one namespace do not each copy and follow the whole namespace. `SharedReads` holds the
informers of one daemon and runs them while at least one switch uses them; a run alone
(tidal.engine.switch) has `private` ones of its own, its bindings' one per namespace it reads.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import structlog

from tidal.karmada import policies
from tidal.karmada.bindings import BindingWatch, key_of
from tidal.karmada.client import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    RESOURCE_BINDINGS,
    KarmadaClient,
    Obj,
    Resource,
)
from tidal.karmada.clusters import list_clusters
from tidal.karmada.errors import Forbidden
from tidal.karmada.member_capacity import MemberCapacity
from tidal.karmada.watch_cache import LIVE_WAIT_SECONDS, Event, Informer, Subscriber

__all__ = ["Informer", "SharedBindingView", "SharedReads"]

log = structlog.get_logger("tidal.karmada.informer")


class SharedBindingView(BindingWatch):
    """A BindingWatch served from an Informer: no request of its own."""

    def __init__(
        self, informer: Informer, namespace: str | None, keys: Iterable[str] | None = None
    ) -> None:
        super().__init__(
            informer.client,
            namespace,
            cluster_scoped=informer.res is CLUSTER_RESOURCE_BINDINGS,
            keys=keys,
        )
        self.informer = informer
        self._subscriber: Subscriber | None = None

    def start(self) -> dict[str, Obj]:
        self.cache, self._subscriber = self.informer.subscribe(self.namespace, self.keys)
        self.version = self.informer.version
        return self.cache

    def relist(self) -> list[Event]:
        return []  # the informer re-lists and replays the differences

    def changes(self, seconds: float) -> Iterator[Event]:
        if self._subscriber is None:
            self.start()
        assert self._subscriber is not None
        end = time.monotonic() + max(0.05, min(seconds, self.max_watch_seconds))
        while (left := end - time.monotonic()) > 0:
            event = self._subscriber.get(left)
            if event is None:
                return
            obj, deleted = event
            key = key_of(obj)
            if deleted:
                self.cache.pop(key, None)
            else:
                self.cache[key] = obj
            yield obj, deleted


class SharedReads:
    """The informers of one daemon (bindings, cluster bindings, clusters), each started on
    first use while at least one switch is `in_use`, stopped when the last one ends."""

    def __init__(
        self,
        client: KarmadaClient,
        *,
        private: bool = False,
        member_capacity: bool = False,
        **informer_settings: Any,
    ) -> None:
        # private: the informers of one run alone (tidal.engine.switch), where a check that
        # must see the latest state before acting lists afresh as such a run always did
        self.private = private
        if private:
            informer_settings.setdefault("fail_fast", True)
        self.client, self._settings = client, informer_settings
        # the daemon's: one per kind, across namespaces; a run alone's bindings: one per
        # namespace it reads (what its waves listed before; a hundred runs at once do not
        # each hold every namespace's bindings), keyed "plural/namespace"
        self.informers = {
            res.plural: Informer(client, res, **informer_settings)
            for res in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS)
        }
        self._lock = threading.Lock()
        self._runs = 0
        self._started: set[str] = set()
        self._refused: set[str] = set()  # plurals the RBAC does not let us list and watch
        # the members' free capacity, watched (scheduler.capacity_source: members)
        self.members = MemberCapacity(client, **informer_settings) if member_capacity else None

    @contextlib.contextmanager
    def in_use(self) -> Iterator[SharedReads]:
        with self._lock:
            self._runs += 1
        try:
            yield self
        finally:
            with self._lock:
                self._runs -= 1
                if self._runs == 0:
                    for plural in self._started:
                        self.informers[plural].release()
                    self._started.clear()
                    if self.members is not None:
                        self.members.stop()

    def _key(self, res: Resource, namespace: str | None) -> str:
        if self.private and namespace is not None and res.namespaced:
            return f"{res.plural}/{namespace}"
        return res.plural

    def _informer(
        self, res: Resource, namespace: str | None = None, *, fail_fast: bool = False
    ) -> Informer:
        key = self._key(res, namespace)
        with self._lock:
            informer = self.informers.get(key)
            if informer is None:
                settings = dict(self._settings)
                if fail_fast:
                    settings["fail_fast"] = True
                informer = Informer(self.client, res, namespace=namespace, **settings)
                self.informers[key] = informer
            if key not in self._started:
                self._started.add(key)
                informer.acquire()
        return informer

    def binding_watch(
        self,
        namespace: str | None,
        *,
        cluster_scoped: bool = False,
        keys: Iterable[str] | None = None,
    ) -> BindingWatch:
        """A view of the namespace's bindings (or all), or of only `keys` among them."""
        res = CLUSTER_RESOURCE_BINDINGS if cluster_scoped else RESOURCE_BINDINGS
        scope = None if cluster_scoped else namespace
        return SharedBindingView(self._informer(res, scope), scope, keys=keys)

    def list_clusters(self) -> list[Obj]:
        """The Clusters from the cache while its watch is open; listed afresh while it is
        not (ended, failed, reconnecting): a cache that stopped following is not read."""
        items = self._informer(CLUSTERS).live_items(LIVE_WAIT_SECONDS)
        if items is None:
            log.info("shared_watch_not_live", resource=CLUSTERS.plural, fallback="list")
            return list_clusters(self.client)
        return items

    def clusters_version(self) -> str:
        """The Cluster cache's resourceVersion: it changes with any Cluster's status (and,
        with the members' capacity watched, with any change there)."""
        version = self._informer(CLUSTERS).version
        return version if self.members is None else f"{version}|{self.members.version}"

    def wait_clusters_changed(self, version: str, timeout: float) -> bool:
        """Until any Cluster changes after `version` (True) or `timeout` seconds (False)."""
        return self._informer(CLUSTERS).wait_changed(version, timeout)

    def find_policy(self, kind: str, name: str, namespace: str | None) -> Obj | None:
        """The (Cluster)PropagationPolicy as the watch last saw it (None: not there). A run
        alone's informer lists the kind when the run first reads a policy (its plan), so its
        reads are as fresh as a GET until its own writes; what it then acts on is either
        confirmed afresh (the drift check) or written with the resourceVersion read, which a
        stale copy makes a Conflict that is read again."""
        res = policies.resource(kind)
        scope = namespace if res.namespaced else None
        if res.plural not in self._refused:
            # an error of its listing reaches this reader at once (a GET is the fallback)
            informer = self._informer(res, scope, fail_fast=True)
            try:
                live, found = informer.live_get(f"{scope or ''}/{name}", LIVE_WAIT_SECONDS)
            except Forbidden:
                self._refuse(res, scope)  # an RBAC from before the watch: GET from now on
            else:
                if live:
                    return found
                log.info("shared_watch_not_live", resource=res.plural, fallback="get")
        return policies.find_policy(self.client, kind, name, namespace)

    def _refuse(self, res: Resource, namespace: str | None) -> None:
        """The RBAC refuses to list or watch `res`: stop its informer for good."""
        key = self._key(res, namespace)
        with self._lock:
            self._refused.add(res.plural)
            started = key in self._started
            self._started.discard(key)
        if started:
            self.informers[key].release()
        log.warning("shared_watch_refused", resource=res.plural, fallback="get")

    def wrote_policy(self, obj: Obj) -> None:
        """A policy this run wrote (the server's answer), into the policy cache if its
        informer runs (see Informer.wrote)."""
        res = policies.resource(str(obj.get("kind") or ""))
        namespace = (obj.get("metadata") or {}).get("namespace") if res.namespaced else None
        key = self._key(res, namespace)
        with self._lock:
            informer = self.informers.get(key) if key in self._started else None
        if informer is not None:
            informer.wrote(obj)

    def list_bindings(self, namespace: str | None, cluster_scoped: bool = False) -> list[Obj]:
        """What `tidal.karmada.bindings.list_bindings` would list, from the shared cache."""
        res = CLUSTER_RESOURCE_BINDINGS if cluster_scoped else RESOURCE_BINDINGS
        scope = None if cluster_scoped else namespace
        return self._informer(res, scope).items(scope)
