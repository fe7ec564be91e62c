"""The answer to one MaxAvailableReplicas question, from a snapshot, with the reason for it.

Every question gets a number, never an error: karmada-scheduler drops every estimator answer of
a scheduling pass when one cluster's call fails (karmada #6815), so "cannot tell" is -1.

| case                                              | answer | reason              |
|---------------------------------------------------|--------|---------------------|
| nothing read yet (just started)                   | -1     | not_ready           |
| the cluster is not a Karmada Cluster              | -1     | unknown_cluster     |
| no namespace in the request field nor metadata    | -1     | no_namespace        |
| the namespace is no team's                        | -1     | no_team             |
| the team has no rule for the cluster              | -1     | no_rule             |
| a malformed request (quantity, affinity bytes)    | -1     | bad_request         |
| the member could not be read (no view yet)        | -1     | member_unreadable   |
| the member's view is older than the bound         | -1     | stale               |
| Karmada's bindings are older than the bound (cap) | -1     | stale               |
| quota/pool/cap configured but none limits it      | -1     | no_limit            |
| otherwise: min over quota, pool, cap (may be <0)  | n      | answered            |
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from tidal.domain.selectors import label_selector_matches
from tidal.domain.team_capacity import (
    CANNOT_TELL,
    Limit,
    NodeView,
    ReplicaClaim,
    TeamFacts,
    pool_replicas,
    team_estimate,
)
from tidal.domain.teams import ClusterRule, Teams
from tidal.estimator.cache import Snapshot
from tidal.estimator.wire import Workload
from tidal.karmada.members import MemberView
from tidal.karmada.names import binding_name


class Reason(Enum):
    ANSWERED = "answered"
    NOT_READY = "not_ready"
    UNKNOWN_CLUSTER = "unknown_cluster"
    NO_NAMESPACE = "no_namespace"
    NO_TEAM = "no_team"
    NO_RULE = "no_rule"
    BAD_REQUEST = "bad_request"
    MEMBER_UNREADABLE = "member_unreadable"
    STALE = "stale"
    NO_LIMIT = "no_limit"


@dataclass(frozen=True)
class Answer:
    replicas: int
    reason: Reason
    limit: Limit = Limit.NONE
    team: str = ""


def _cannot(reason: Reason, team: str = "") -> Answer:
    return Answer(CANNOT_TELL, reason, Limit.NONE, team)


def _own(snapshot: Snapshot, cluster: str, workload: Workload | None) -> int:
    if workload is None:
        return 0
    placed = snapshot.bindings.get(
        (workload.namespace, binding_name(workload.name, workload.kind)), {}
    )
    return placed.get(cluster, 0)


def _facts(
    snapshot: Snapshot,
    teams: Teams,
    rule: ClusterRule,
    cluster: str,
    namespace: str,
    team: str,
    claim: ReplicaClaim,
    now: datetime,
    bound: timedelta,
) -> TeamFacts | Reason:
    member = snapshot.members.get(cluster)
    quotas = None
    if rule.reads_member:
        if member is None or member.view is None:
            return Reason.MEMBER_UNREADABLE
        if member.read_at is None or now - member.read_at > bound:
            return Reason.STALE
        if rule.quota:
            quotas = member.view.quotas.get(namespace, ())
    fit = None
    if rule.pool is not None and member is not None and member.view is not None:
        fit = POOLS.fit(member.view, rule.pool, claim)
    cap = teams.cap(rule, now)
    if cap is not None and (snapshot.read_at is None or now - snapshot.read_at > bound):
        return Reason.STALE
    return TeamFacts(quotas, None, cap, snapshot.held.get((cluster, team), 0), pool_fit=fit)


class PoolFits:
    """Per member view: the pool's nodes per selector, and the pool's fit per claim, worked
    out once (a pass of the scheduler asks about many bindings of few shapes). Bounded; a new
    view (the next refresh) starts afresh."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._view: MemberView | None = None
        self._nodes: dict[str, list[NodeView]] = {}
        self._fits: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def fit(self, view: MemberView, selector: Mapping[str, Any], claim: ReplicaClaim) -> int:
        skey, ckey = repr(sorted(selector.items())), repr(claim)
        with self._lock:
            if self._view is not view:
                self._view, self._nodes, self._fits = view, {}, {}
            known = self._fits.get((skey, ckey))
            if known is not None:
                return known
            nodes = self._nodes.get(skey)
        if nodes is None:
            nodes = [n for n in view.nodes or () if label_selector_matches(selector, n.labels)]
        fit = pool_replicas(claim, nodes)
        with self._lock:
            if self._view is view:
                self._nodes[skey] = nodes
                if len(self._fits) < self._limit:
                    self._fits[(skey, ckey)] = fit
        return fit


POOLS = PoolFits()


def answer(
    snapshot: Snapshot,
    teams: Teams,
    cluster: str,
    claim: ReplicaClaim | None,
    namespace: str,
    workload: Workload | None,
    now: datetime,
    bound: timedelta,
) -> Answer:
    """The replicas the workload's team may still add in `cluster` (see the module's table);
    `claim` None: the request could not be read."""
    if snapshot.read_at is None:
        return _cannot(Reason.NOT_READY)
    if cluster not in snapshot.clusters:
        return _cannot(Reason.UNKNOWN_CLUSTER)
    if not namespace:
        return _cannot(Reason.NO_NAMESPACE)
    labels = (
        snapshot.labels.get((namespace, workload.kind, workload.name))
        if workload is not None and workload.namespace in ("", namespace)
        else None
    )
    team = teams.team_of(namespace, labels)
    if team is None:
        return _cannot(Reason.NO_TEAM)
    rule = team.on(cluster)
    if rule is None:
        return _cannot(Reason.NO_RULE, team.name)
    if claim is None:
        return _cannot(Reason.BAD_REQUEST, team.name)
    facts = _facts(snapshot, teams, rule, cluster, namespace, team.name, claim, now, bound)
    if isinstance(facts, Reason):
        return _cannot(facts, team.name)
    own = _own(snapshot, cluster, workload)
    estimate = team_estimate(claim, replace(facts, own=own))
    if estimate.limit is Limit.NONE:
        return _cannot(Reason.NO_LIMIT, team.name)
    return Answer(estimate.replicas, Reason.ANSWERED, estimate.limit, team.name)
