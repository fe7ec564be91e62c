"""Teams as the team estimator knows them: which namespaces are a team's, and per member cluster
where its capacity comes from (its ResourceQuotas, a node pool, a replica cap by time window)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from tidal.domain.team_capacity import ReplicaCap

ANY_CLUSTER = "*"  # a cluster rule for every member without one of its own


@dataclass(frozen=True)
class ClusterRule:
    """One team on one member: read its namespace's quotas (`quota`), its node pool (nodes
    matching `pool`, a LabelSelector; None: no pool), and its replica cap."""

    quota: bool = False
    pool: Mapping[str, Any] | None = None
    cap: ReplicaCap = field(default_factory=ReplicaCap)

    @property
    def reads_member(self) -> bool:
        return self.quota or self.pool is not None


@dataclass(frozen=True)
class TeamRule:
    name: str
    namespaces: frozenset[str]
    clusters: Mapping[str, ClusterRule] = field(default_factory=dict)

    def on(self, cluster: str) -> ClusterRule | None:
        return self.clusters.get(cluster) or self.clusters.get(ANY_CLUSTER)


@dataclass(frozen=True)
class Teams:
    teams: tuple[TeamRule, ...] = ()
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))

    def of_namespace(self, namespace: str) -> TeamRule | None:
        return next((t for t in self.teams if namespace in t.namespaces), None)

    def cap(self, rule: ClusterRule, now: datetime) -> int | None:
        """The rule's replica cap in force at `now` (an aware datetime) in the teams' zone."""
        return rule.cap.at(now.astimezone(self.zone).time())

    def pools(self, cluster: str) -> list[Mapping[str, Any]]:
        """The node-pool selectors configured on `cluster` (what the cache must read there)."""
        rules = [t.on(cluster) for t in self.teams]
        return [r.pool for r in rules if r is not None and r.pool is not None]

    def quota_namespaces(self, cluster: str) -> set[str]:
        """The namespaces whose ResourceQuotas are read on `cluster`."""
        found: set[str] = set()
        for team in self.teams:
            rule = team.on(cluster)
            if rule is not None and rule.quota:
                found |= team.namespaces
        return found
