"""Free capacity of the members as it is now: each member's Nodes and Pods, watched through
Karmada's cluster proxy and kept as running totals.

Karmada's Cluster status summarises a member's free resources every
`--cluster-status-update-frequency` (10 s by default), so room another tenant gives back
reaches a waiting wave up to that late. karmada-scheduler-estimator reads the members
themselves instead; so does this: one list+watch of Nodes and one of Pods per member (started
for a member the first time a wave needs room there), each object reduced to its amounts as it
arrives. What is free is the allocatable of the Ready, schedulable nodes minus the requests of
every pod not finished, bound or still waiting for a node (a terminating pod keeps its room, as
kube-scheduler counts it), and a `pods` count; the resources Karmada's summary names
(allocatable - allocated - allocating), from objects rather than from a periodic summary.

Versions: a member's Pod watch's resourceVersion (the member's own, not Karmada's). A wave
whose surged replicas exist asks `versions_now`: the member's current version read afresh (a list of
one pod), once the watch has caught up with it, less one, so a report from that watch version
on counts those replicas (a member that changes no more still shows them counted).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import structlog

from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.errors import Forbidden, KarmadaError
from tidal.karmada.members import pod_requests, proxied, resources_of
from tidal.karmada.watch_cache import Informer

log = structlog.get_logger("tidal.karmada.member_capacity")

_FINISHED = ("Succeeded", "Failed")
REOPEN_GRACE_SECONDS = 5.0  # a watch reopening this long still counts as following
CATCH_UP_SECONDS = 1.0  # how long versions_now waits for the watch to reach the read version


def pod_amounts(pod: Obj) -> Obj:
    """What a pod counts for: its requests and one `pods`, nothing once it finished."""
    meta = pod.get("metadata") or {}
    finished = (pod.get("status") or {}).get("phase") in _FINISHED
    amounts = {} if finished else {**pod_requests(pod), "pods": 1.0}
    key = {"namespace": meta.get("namespace"), "name": meta.get("name")}
    return {"metadata": key, "amounts": amounts}


def node_amounts(node: Obj) -> Obj:
    """What a node offers: its allocatable while Ready and schedulable, else nothing."""
    meta, spec, status = (node.get(k) or {} for k in ("metadata", "spec", "status"))
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    usable = ready and not spec.get("unschedulable")
    amounts = resources_of(status.get("allocatable")) if usable else {}
    return {"metadata": {"name": meta.get("name")}, "amounts": amounts}


class MemberTally:
    """One member's allocatable and requested totals, kept by two watches."""

    def __init__(
        self,
        client: KarmadaClient,
        cluster: str,
        reopen_grace: float = REOPEN_GRACE_SECONDS,
        **informer_settings: Any,
    ) -> None:
        self.client, self.cluster, self.reopen_grace = client, cluster, reopen_grace
        self._lock = threading.Lock()
        self.allocatable: dict[str, float] = {}
        self.requested: dict[str, float] = {}
        self.requested_by_namespace: dict[str, dict[str, float]] = {}
        self._shapes: dict[tuple[tuple[str, float], ...], Mapping[str, float]] = {}
        self._refused = False  # the member's refusal was logged
        self.nodes = Informer(
            client,
            proxied(cluster, "nodes", "Node", False),
            digest=node_amounts,
            on_change=lambda old, new: self._fold(self.allocatable, old, new),
            on_error=self._failed,
            **informer_settings,
        )
        self.pods = Informer(
            client,
            proxied(cluster, "pods", "Pod", True),
            digest=self._pod,
            on_change=self._pod_changed,
            on_error=self._failed,
            **informer_settings,
        )
        for informer in (self.nodes, self.pods):
            informer.acquire()

    def _pod(self, pod: Obj) -> Obj:
        """The pod's digest, its amounts one read-only mapping per distinct shape: tens of
        thousands of pods of a few shapes cost a reference each, not a dict each."""
        digest = pod_amounts(pod)
        shape = tuple(sorted(digest["amounts"].items()))
        shared = self._shapes.get(shape)
        if shared is None:
            shared = self._shapes[shape] = MappingProxyType(dict(shape))
        digest["amounts"] = shared
        return digest

    def _failed(self, exc: KarmadaError) -> None:
        """One warning for a member whose RBAC refuses the watches: it is read from its Cluster
        status meanwhile (the watches keep retrying, backing off)."""
        if not isinstance(exc, Forbidden):
            return
        with self._lock:
            first, self._refused = not self._refused, True
        if first:
            log.warning(
                "member_capacity_refused",
                cluster=self.cluster,
                error=str(exc),
                fix="grant list and watch on nodes and pods in the member to the user Karmada's "
                "cluster proxy impersonates, or set TIDAL_SCHEDULER__CAPACITY_SOURCE="
                "cluster-status",
                fallback="cluster-status",
            )

    def _fold(self, into: dict[str, float], old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            _add(into, old, -1.0)
            _add(into, new, 1.0)

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            for obj, sign in ((old, -1.0), (new, 1.0)):
                if obj is not None:
                    _add(self.requested, obj, sign)
                    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
                    _add(self.requested_by_namespace.setdefault(namespace, {}), obj, sign)

    def requested_in(self, namespaces: Iterable[str]) -> dict[str, float]:
        """What the pods of `namespaces` request together now (the watch's view)."""
        with self._lock:
            total: dict[str, float] = {}
            for namespace in set(namespaces):
                for name, amount in self.requested_by_namespace.get(namespace, {}).items():
                    total[name] = total.get(name, 0.0) + amount
            return total

    @property
    def live(self) -> bool:
        """Both watches follow the member (open, or reopening after one ended a moment ago:
        the totals are then the member's state at their version)."""
        return self.nodes.following(self.reopen_grace) and self.pods.following(self.reopen_grace)

    def free(self) -> tuple[dict[str, float], str]:
        """What is free now, and the Pod watch's version it counts every pod up to (read
        together, so a version never runs ahead of the amounts)."""

        def amounts() -> dict[str, float]:
            with self._lock:
                return {
                    name: amount - self.requested.get(name, 0.0)
                    for name, amount in self.allocatable.items()
                }

        version, free = self.pods.snapshot(amounts)
        return free, version

    def version_now(self) -> str:
        """A version after which every report counts the pods that exist now: the member's
        version is read afresh and, once the Pod watch has reached it (version V), V - 1 is
        returned, as a budget counts what exists by a report of a later version than the one
        read then, and a report at V already counts it. "" (unknown) when the member cannot be
        read or the watch does not catch up."""
        res = self.pods.res
        try:
            page = self.client.request("list", res, "GET", res.path(), query={"limit": 1})
        except KarmadaError as exc:
            log.warning("member_version_unread", cluster=self.cluster, error=str(exc))
            return ""
        wanted = str((page.get("metadata") or {}).get("resourceVersion") or "")
        if not wanted.isdigit():
            return ""

        def caught_up() -> bool:
            seen = self.pods.version
            return seen.isdigit() and int(seen) >= int(wanted)

        if not caught_up() and not self.pods.wait_until(caught_up, CATCH_UP_SECONDS):
            log.info(
                "member_watch_behind",
                cluster=self.cluster,
                read=wanted,
                watched=self.pods.version,
                waited=CATCH_UP_SECONDS,
            )
            return ""
        return str(int(self.pods.version) - 1)

    def stop(self) -> None:
        for informer in (self.nodes, self.pods):
            informer.release()


def _add(into: dict[str, float], digest: Obj | None, sign: float) -> None:
    for name, amount in ((digest or {}).get("amounts") or {}).items():
        into[name] = into.get(name, 0.0) + sign * float(amount)


class MemberCapacity:
    """The tallies of the members waves ask about (one per member, started on first ask)."""

    def __init__(
        self,
        client: KarmadaClient,
        reopen_grace: float = REOPEN_GRACE_SECONDS,
        **informer_settings: Any,
    ) -> None:
        self.client, self._settings = client, informer_settings
        self.reopen_grace = reopen_grace
        self._lock = threading.Lock()
        self._tallies: dict[str, MemberTally] = {}

    def _tally(self, cluster: str) -> MemberTally:
        with self._lock:
            tally = self._tallies.get(cluster)
            if tally is None:
                tally = self._tallies[cluster] = MemberTally(
                    self.client, cluster, self.reopen_grace, **self._settings
                )
                log.info("member_capacity_watch_started", cluster=cluster)
            return tally

    def free(self, clusters: Iterable[str]) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
        """(free, version) of each of `clusters` whose watches are live; the others are left
        out (the caller reads them from Cluster status meanwhile)."""
        free: dict[str, dict[str, float]] = {}
        versions: dict[str, str] = {}
        for cluster in sorted(set(clusters)):
            tally = self._tally(cluster)
            if tally.live:
                free[cluster], versions[cluster] = tally.free()
        return free, versions

    def requested_in(self, namespaces: Iterable[str]) -> dict[str, dict[str, float]]:
        """cluster -> what the pods of `namespaces` request there now, for each member whose
        watches are live (see MemberTally.requested_in)."""
        with self._lock:
            tallies = list(self._tallies.values())
        wanted = set(namespaces)
        return {t.cluster: t.requested_in(wanted) for t in tallies if t.live}

    def versions_now(self, clusters: Iterable[str]) -> dict[str, str]:
        """Each watched member's version read afresh (see MemberTally.version_now)."""
        with self._lock:
            tallies = [t for name, t in self._tallies.items() if name in set(clusters)]
        return {t.cluster: t.version_now() for t in tallies if t.live}

    @property
    def version(self) -> str:
        """Changes whenever any watched member changes (a waiting wave looks again)."""
        with self._lock:
            return ",".join(f"{t.nodes.version}/{t.pods.version}" for t in self._tallies.values())

    def stop(self) -> None:
        with self._lock:
            tallies, self._tallies = list(self._tallies.values()), {}
        for tally in tallies:
            tally.stop()


def merged(
    reported: Mapping[str, Mapping[str, float]],
    reported_versions: Mapping[str, str],
    current: Mapping[str, Mapping[str, float]],
    current_versions: Mapping[str, str],
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Cluster status free amounts with the members' current ones in their place where there
    are; a Cluster status version is marked ("status:<rv>") so that no budget compares it
    with a member's version (an unknown version counts every hold in full)."""
    free = {name: dict(amounts) for name, amounts in reported.items()}
    versions = {name: f"status:{v}" for name, v in reported_versions.items()}
    for name, amounts in current.items():
        free[name] = dict(amounts)
        versions[name] = current_versions[name]
    return free, versions
