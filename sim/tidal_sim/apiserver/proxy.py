"""Karmada's cluster proxy: `/apis/cluster.karmada.io/v1alpha1/clusters/<name>/proxy/<path>`.

karmada-aggregated-apiserver forwards such a request to the member's apiserver with the
Cluster's credentials. The emulator keeps, per member, a small apiserver of its own holding
what a member reader asks for (Namespaces, Nodes, Pods, ResourceQuotas), written by tests and
demos through the same proxy path; the emulator's own scheduling never reads it. A Cluster
that does not exist answers 404; one whose Ready condition is False or Unknown, or that a test
cut off (`unreachable`), answers 503 as the proxy does when the member does not answer; one a
test made `refusing` answers 403, as a member whose RBAC does not grant the impersonated user. Every
proxied request is accounted as resource `clusters/proxy` (cost of reading the members).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from tidal_sim.apiserver.accounting import RequestAccounting
from tidal_sim.apiserver.errors import ApiError, not_found_path
from tidal_sim.apiserver.request import Request, Response, StreamResponse
from tidal_sim.apiserver.rest import RestHandlers, error_response, verb_of
from tidal_sim.apiserver.routing import UnknownResource, parse_route
from tidal_sim.apiserver.watching import WatchRegistry
from tidal_sim.faults import Faults
from tidal_sim.kinds import KindRegistry, ResourceType
from tidal_sim.store import NotFound, Store

PATH = re.compile(r"^/apis/cluster\.karmada\.io/v1alpha1/clusters/([^/]+)/proxy(/.*)?$")
MEMBER_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", False, True, ("ns",)),
    ResourceType("", "v1", "Node", "nodes", False, True, ("no",)),
    ResourceType("", "v1", "Pod", "pods", True, True, ("po",)),
    ResourceType("", "v1", "ResourceQuota", "resourcequotas", True, True, ("quota",)),
)


@dataclass
class _Member:
    store: Store
    rest: RestHandlers


class ClusterProxy:
    """The members' apiservers behind the proxy path, made on first use per Cluster."""

    def __init__(self, karmada: Store, accounting: RequestAccounting) -> None:
        self.karmada = karmada
        self.accounting = accounting
        self.unreachable: set[str] = set()  # members a test cut off
        # members whose own RBAC refuses the user the proxy impersonates (a test's choice)
        self.refusing: set[str] = set()
        # told of each request that reaches a member, before it is answered (the emulator's
        # mirror of the simulated pods starts writing that member: controllers/member_pods.py)
        self.on_read: Callable[[str], None] | None = None
        self._members: dict[str, _Member] = {}
        self._lock = threading.Lock()

    def member(self, cluster: str) -> Store:
        """The member's store (made empty on first use)."""
        with self._lock:
            if cluster not in self._members:
                store = Store(KindRegistry(MEMBER_TYPES), self.karmada.clock)
                rest = RestHandlers(store, Faults(), WatchRegistry(store))
                self._members[cluster] = _Member(store, rest)
            return self._members[cluster].store

    def handle(self, req: Request) -> Response | StreamResponse:
        match = PATH.match(req.path)
        assert match is not None
        cluster, rest_path = match.group(1), match.group(2) or "/"
        result = self._answer(req, cluster, rest_path)
        verb = req.method.lower()
        self.accounting.record(
            verb,
            "clusters/proxy",
            "cluster.karmada.io",
            None,
            cluster,
            result.code,
            req.user_agent,
            req.identity,
            None,
            False,
        )
        return result

    def _answer(self, req: Request, cluster: str, path: str) -> Response | StreamResponse:
        try:
            clusters = self.karmada.kinds.by_plural("cluster.karmada.io", "v1alpha1", "clusters")
            if clusters is None:
                raise NotFound(cluster)
            obj = self.karmada.get(clusters, None, cluster)
        except NotFound:
            return error_response(
                ApiError(404, f'clusters.cluster.karmada.io "{cluster}" not found')
            )
        ready = next(
            (
                c
                for c in (obj.get("status") or {}).get("conditions") or []
                if c.get("type") == "Ready"
            ),
            None,
        )
        if cluster in self.unreachable or (ready is not None and ready.get("status") != "True"):
            return error_response(ApiError(503, f"cluster {cluster} is not reachable"))
        if cluster in self.refusing:
            return error_response(
                ApiError(
                    403,
                    f'forbidden: User "{req.identity}" cannot {req.method.lower()} {path} in '
                    f"cluster {cluster}",
                )
            )
        if self.on_read is not None:
            self.on_read(cluster)
        store = self.member(cluster)
        try:
            route = parse_route(store.kinds, path)
            if route is None:
                raise not_found_path(path)
            verb = verb_of(req.method, route, req)
            return self._members[cluster].rest.handle(verb, route, replace(req, path=path))
        except UnknownResource:
            return error_response(not_found_path(path))
        except ApiError as exc:
            return error_response(exc)
