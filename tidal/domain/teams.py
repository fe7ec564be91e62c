"""Teams as the team estimator knows them: which namespaces are a team's, and per member cluster
where its capacity comes from (its ResourceQuotas, a node pool, a replica cap by time window)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from tidal.domain.selectors import label_selector_matches
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
    """A team: the workloads of its namespaces (every namespace when none is listed) whose
    templates match `selector` (a LabelSelector; None: every workload there)."""

    name: str
    namespaces: frozenset[str]
    clusters: Mapping[str, ClusterRule] = field(default_factory=dict)
    selector: Mapping[str, Any] | None = None

    def on(self, cluster: str) -> ClusterRule | None:
        return self.clusters.get(cluster) or self.clusters.get(ANY_CLUSTER)

    def owns(self, namespace: str, labels: Mapping[str, str] | None) -> bool:
        """Whether a workload of `namespace` with template `labels` (None: not known) is ours."""
        if self.namespaces and namespace not in self.namespaces:
            return False
        if self.selector is None:
            return True
        return labels is not None and label_selector_matches(self.selector, labels)


@dataclass(frozen=True)
class Teams:
    teams: tuple[TeamRule, ...] = ()
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))

    def of_namespace(self, namespace: str) -> TeamRule | None:
        return self.team_of(namespace, None)

    def team_of(self, namespace: str, labels: Mapping[str, str] | None) -> TeamRule | None:
        """The first team owning the workload (teams with a template selector first match by
        labels, so list the narrower teams first)."""
        return next((t for t in self.teams if t.owns(namespace, labels)), None)

    @property
    def by_labels(self) -> bool:
        """Whether any team needs the templates' labels."""
        return any(t.selector is not None for t in self.teams)

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
