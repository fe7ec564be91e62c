"""How many more replicas a team may run in one member cluster: the team estimator's answer.

Pure: the caller hands in what it read from the member (the team's ResourceQuotas, its node
pool) and from Karmada (the replicas the team's bindings hold there), the window cap in force,
and the replica's requirements. The answer is the minimum over the sources configured for the
team on that cluster:

- quota: for every ResourceQuota of the namespace, per resource the replica requests (and
  `pods`), floor((hard - used) / request); a quota that does not name a resource does not limit
  it (the member's admission would let it through);
- pool: the pool's nodes the replica may land on (schedulable, Ready, its node selector and
  required affinity met, every NoSchedule/NoExecute taint tolerated), each taking
  floor((allocatable - requests of its bound pods) / request) replicas, fewest over the
  resources and its free pod slots, added up node by node (packed per node, never summed as one
  pool, which would count fragments no replica fits in);
- cap: the window's replica cap minus the replicas the team's bindings hold there.

Every source counts the binding's own replicas as taken (quota `used` and bound pods include
them), as Karmada's own estimators do; a Fresh reschedule adds them back
(pkg/scheduler/core/division_algorithm.go dynamicFreshScale), so an answer may be negative,
down to minus the binding's own replicas there: a capacity of 0 then empties the cluster.
-1 is "cannot tell" to karmada-scheduler (pkg/estimator/client UnauthenticReplica), so a real
-1 is answered as -2; no configured source answers -1 ("cannot tell", never a guess).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import time
from enum import Enum

from tidal.domain.prediction import whole

CANNOT_TELL = -1  # karmada-scheduler's UnauthenticReplica: the estimator has no answer

# The planner's view of a team estimator: (namespace, kind, name, per-replica request, cluster
# names) -> the answer per cluster (-1 or absent: cannot tell).
TeamEstimate = Callable[[str, str, str, Mapping[str, float], Sequence[str]], Mapping[str, int]]

# Quota keys that stand for a requested resource (k8s.io/apiserver quota evaluators): the plain
# name for the native compute resources, `requests.<name>` for every resource.
_NATIVE = ("cpu", "memory", "ephemeral-storage")
_POD_KEYS = ("pods", "count/pods")


class Limit(Enum):
    """What bounded an answer (a metric label and a log field)."""

    QUOTA = "quota"
    POOL = "pool"
    CAP = "cap"
    NONE = "none"  # no source configured or none limits the request: cannot tell


def clock_time(text: str) -> time:
    """A time of day written HH:MM; ValueError saying how to write it."""
    hours, _, minutes = text.partition(":")
    try:
        if len(minutes) == 2 and hours.isdigit() and minutes.isdigit():
            return time(int(hours), int(minutes))
    except ValueError:
        pass
    raise ValueError(f"{text!r} is not a time of day; write HH:MM, e.g. 22:00")


@dataclass(frozen=True)
class CapacityWindow:
    """A time of day with its own replica cap ([start, end), may span midnight)."""

    start: time
    end: time
    replicas: int

    def covers(self, moment: time) -> bool:
        if self.start <= self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


@dataclass(frozen=True)
class ReplicaCap:
    """A team's replica cap on one cluster: `replicas` outside its windows (None: no cap)."""

    replicas: int | None = None
    windows: tuple[CapacityWindow, ...] = ()

    def at(self, moment: time) -> int | None:
        for window in self.windows:
            if window.covers(moment):
                return window.replicas
        return self.replicas


@dataclass(frozen=True)
class QuotaView:
    name: str
    hard: Mapping[str, float]
    used: Mapping[str, float]


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True)
class NodeTerm:
    """One required node-affinity term: every (key, operator, values) holds."""

    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    fields: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # only metadata.name exists


@dataclass(frozen=True)
class NodeView:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, float]  # `pods` included
    requested: Mapping[str, float]  # requests of the pods bound there and not finished
    pods: int = 0
    schedulable: bool = True  # Ready and not cordoned
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class ReplicaClaim:
    """One replica's requirements, as karmada-scheduler sends them."""

    request: Mapping[str, float] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[NodeTerm, ...] = ()  # OR of terms; empty: any node
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class TeamFacts:
    """What is known of one team on one cluster; None: that source is not configured."""

    quotas: Sequence[QuotaView] | None = None
    pool: Sequence[NodeView] | None = None
    cap: int | None = None
    held: int = 0  # replicas the team's bindings hold on the cluster (the cap's `used`)
    own: int = 0  # replicas of the asking binding there (a Fresh reschedule adds them back)
    pool_fit: int | None = None  # pool_replicas(claim, pool), when the caller has it already


@dataclass(frozen=True)
class Estimate:
    replicas: int
    limit: Limit


def _quota_fit(quota: QuotaView, request: Mapping[str, float]) -> int | None:
    fits: list[int] = []
    wanted = {name: need for name, need in request.items() if need > 0}
    for key, hard in quota.hard.items():
        if key in _POD_KEYS:
            need = 1.0
        else:
            name = key.removeprefix("requests.")
            if name != key or name in _NATIVE:
                need = wanted.get(name, 0.0)
            else:
                continue  # limits.*, count/*, storage: not what a replica's requests spend
        if need > 0:
            fits.append(_floor(hard - quota.used.get(key, 0.0), need))
    return min(fits) if fits else None


def _floor(have: float, need: float) -> int:
    """Whole replicas of `need` in `have`, negative when `have` is (over the quota)."""
    return whole(have, need) if have >= 0 else math.floor(have / need + 1e-9)


def _term_holds(term: NodeTerm, node: NodeView) -> bool:
    exprs = [(node.labels, e) for e in term.expressions]
    exprs += [({"metadata.name": node.name}, f) for f in term.fields]
    return bool(exprs) and all(_expression_holds(labels, e) for labels, e in exprs)


def _expression_holds(labels: Mapping[str, str], expr: tuple[str, str, tuple[str, ...]]) -> bool:
    key, operator, values = expr
    have = labels.get(key)
    if operator == "In":
        return have in values
    if operator == "NotIn":
        return have not in values
    if operator == "Exists":
        return have is not None
    if operator == "DoesNotExist":
        return have is None
    if operator in ("Gt", "Lt") and have is not None and len(values) == 1:
        try:
            left, right = int(have), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def admits(claim: ReplicaClaim, node: NodeView) -> bool:
    """Whether the replica may land on the node (kube-scheduler's node filters it can check)."""
    if not node.schedulable:
        return False
    if any(node.labels.get(k) != v for k, v in claim.node_selector.items()):
        return False
    if claim.affinity and not any(_term_holds(t, node) for t in claim.affinity):
        return False
    return all(
        any(t.tolerates(taint) for t in claim.tolerations)
        for taint in node.taints
        if taint.effect in ("NoSchedule", "NoExecute")
    )


def node_fit(claim: ReplicaClaim, node: NodeView) -> int:
    """Replicas that still fit on one node (0 when it does not admit them)."""
    if not admits(claim, node):
        return 0
    fits = [int(node.allocatable.get("pods", 0)) - node.pods]
    for name, need in claim.request.items():
        if need > 0:
            fits.append(
                whole(node.allocatable.get(name, 0.0) - node.requested.get(name, 0.0), need)
            )
    return max(0, min(fits))


def pool_replicas(claim: ReplicaClaim, pool: Sequence[NodeView]) -> int:
    """Replicas the pool holds, node by node."""
    return sum(node_fit(claim, node) for node in pool)


def team_estimate(claim: ReplicaClaim, facts: TeamFacts) -> Estimate:
    """The team's answer on one cluster (see the module doc); -1 when nothing can tell."""
    found: list[tuple[int, Limit]] = []
    for quota in facts.quotas or ():
        fit = _quota_fit(quota, claim.request)
        if fit is not None:
            found.append((fit, Limit.QUOTA))
    if facts.pool_fit is not None:
        found.append((facts.pool_fit, Limit.POOL))
    elif facts.pool is not None:
        found.append((pool_replicas(claim, facts.pool), Limit.POOL))
    if facts.cap is not None:
        found.append((facts.cap - facts.held, Limit.CAP))
    if not found:
        return Estimate(CANNOT_TELL, Limit.NONE)
    replicas, limit = min(found, key=lambda item: item[0])
    replicas = max(replicas, -facts.own)
    if replicas == CANNOT_TELL:
        replicas = CANNOT_TELL - 1  # a real -1 would read as "cannot tell"
    return Estimate(replicas, limit)


def combined(general: int, team: int) -> int:
    """What karmada-scheduler keeps per cluster: the minimum of the answers that tell."""
    return general if team == CANNOT_TELL else min(general, team)
