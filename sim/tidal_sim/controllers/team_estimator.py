"""A team-level replica estimator, as a platform registers beside Karmada's general one.

karmada-scheduler asks every registered estimator (pkg/estimator/client/interface.go
ReplicaEstimator) how many replicas each cluster can take and keeps the minimum per cluster
(pkg/scheduler/core/util.go calAvailableReplicas; an estimator that cannot tell answers -1 and is
left out). This one answers from team capacities the topology declares:

    EmulatorSettings.spec.teamEstimator:
      timeZone: Europe/Berlin
      teams:
        - name: team-2001-gpu@cluster-a
          cluster: cluster-a
          teamSelector: {matchLabels: {atms-app/teamid: "2001"}}   # template labels
          replicas: 24                        # the team's replica capacity there by default
          schedule:                           # times of day with another capacity
            - {from: "22:00", to: "06:00", replicas: 0}

The answer for a binding is the team's capacity there minus every replica the team already
has there, its own included, as the general estimator counts a binding's own pods as
allocated. It goes below zero when the team holds more than its capacity, down to minus the
binding's own replicas there: a Fresh reschedule adds those back (dynamicFreshScale), so what
the binding may keep there is the capacity its team's other workloads leave, and 0 capacity
empties the cluster. (The scheduler sums the answers, so going lower would take room away
from the other clusters. A real estimator finds the binding in the request context:
calAvailableReplicas puts "kind=..., name=ns/name" under util.ContextKeyObject.) An answer of
exactly -1 means "cannot tell" to the scheduler (UnauthenticReplica), which would then ignore
this estimator for that cluster, so -1 is answered as -2 (costing the sum one replica).
An admin override (`set_override`, or POST /sim/v1/teamcapacity) wins over the schedule
until cleared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tidal_sim.controllers.matching import label_selector_matches as selector_matches

Obj = dict[str, Any]
UNAUTHENTIC_REPLICA = -1  # estimatorclient.UnauthenticReplica: "this estimator cannot tell"


class TeamEstimatorError(ValueError):
    """A teamEstimator setting that cannot be used; the message names the field."""


@dataclass(frozen=True)
class CapacityWindow:
    start: time
    end: time
    replicas: int

    def covers(self, moment: time) -> bool:
        if self.start <= self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end  # spans midnight


@dataclass(frozen=True)
class TeamCapacity:
    name: str
    cluster: str
    selector: Mapping[str, Any]
    replicas: int
    schedule: tuple[CapacityWindow, ...] = ()

    def at(self, moment: time) -> int:
        for window in self.schedule:
            if window.covers(moment):
                return window.replicas
        return self.replicas


@dataclass
class TeamEstimator:
    teams: tuple[TeamCapacity, ...] = ()
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    overrides: dict[str, int] = field(default_factory=dict)
    suspended: bool = False  # answer "cannot tell" everywhere (as if not registered)

    def capacity(self, team: TeamCapacity, now: float) -> int:
        if team.name in self.overrides:
            return self.overrides[team.name]
        return team.at(datetime.fromtimestamp(now, self.zone).time())

    def set_override(self, name: str, replicas: int | None) -> None:
        """Pin a team's capacity (None: back to the schedule); KeyError for an unknown name."""
        if name not in {t.name for t in self.teams}:
            known = ", ".join(t.name for t in self.teams) or "none declared"
            raise KeyError(f"no team capacity named {name!r} (known: {known})")
        if replicas is None:
            self.overrides.pop(name, None)
        elif replicas < 0:
            raise ValueError("replicas must be >= 0")
        else:
            self.overrides[name] = replicas

    def follow(self, moment: datetime, teams: Iterable[str] | None = None) -> None:
        """Pin the teams (default: all) to what their schedules say at `moment` (a demo whose
        windows were brought forward keeps the capacities of the times they were written for)."""
        local = moment.astimezone(self.zone).time()
        chosen = None if teams is None else set(teams)
        for team in self.teams:
            if chosen is None or team.name in chosen:
                self.overrides[team.name] = team.at(local)

    def teams_of(self, labels: Iterable[Mapping[str, str]]) -> set[str]:
        """Names of the team capacities whose selector matches any of these template labels."""
        sets = list(labels)
        return {t.name for t in self.teams if any(selector_matches(t.selector, lb) for lb in sets)}

    def state(self, now: float) -> list[Obj]:
        return [
            {
                "name": t.name,
                "cluster": t.cluster,
                "replicas": self.capacity(t, now),
                "overridden": t.name in self.overrides,
            }
            for t in self.teams
        ]

    def estimate(
        self,
        cluster: str,
        labels: Mapping[str, str],
        now: float,
        placed: Callable[[str], Iterable[tuple[Mapping[str, str], int]]],
        own: int = 0,
    ) -> int | None:
        """Replicas the team of `labels` may still add in `cluster` (negative: over its
        capacity); None when no team rule covers it. `placed(cluster)` yields (template
        labels, replicas) of every binding there."""
        answer: int | None = None
        if self.suspended:
            return None
        for team in self.teams:
            if team.cluster != cluster or not selector_matches(team.selector, labels):
                continue
            used = sum(
                count for other, count in placed(cluster) if selector_matches(team.selector, other)
            )
            free = max(self.capacity(team, now) - used, -own)
            answer = free if answer is None else min(answer, free)
        if answer == UNAUTHENTIC_REPLICA:
            answer -= 1
        return answer


def _clock_time(where: str, text: Any) -> time:
    try:
        hours, minutes = str(text).split(":")
        return time(int(hours), int(minutes))
    except ValueError:
        raise TeamEstimatorError(f"{where}: {text!r} is not a time of day; write HH:MM") from None


def _count(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TeamEstimatorError(f"{where}: replicas must be a whole number >= 0, not {value!r}")
    return value


def _team(where: str, index: int, raw: Any) -> TeamCapacity:
    """One teamEstimator.teams entry: cluster, teamSelector, replicas and its schedule."""
    if not isinstance(raw, dict) or not raw.get("cluster"):
        raise TeamEstimatorError(f"{where}: needs cluster, teamSelector and replicas")
    selector = raw.get("teamSelector") or {}
    if not isinstance(selector, dict):
        raise TeamEstimatorError(f"{where}.teamSelector: must be a label selector")
    schedule = [
        _window(f"{where}.schedule[{j}]", window)
        for j, window in enumerate(raw.get("schedule") or [])
    ]
    name = str(raw.get("name") or f"team-{index}@{raw['cluster']}")
    return TeamCapacity(
        name,
        str(raw["cluster"]),
        selector,
        _count(f"{where}.replicas", raw.get("replicas")),
        tuple(schedule),
    )


def _window(at: str, window: Any) -> CapacityWindow:
    if not isinstance(window, dict):
        raise TeamEstimatorError(f"{at}: write {{from: HH:MM, to: HH:MM, replicas: N}}")
    return CapacityWindow(
        _clock_time(f"{at}.from", window.get("from")),
        _clock_time(f"{at}.to", window.get("to")),
        _count(f"{at}.replicas", window.get("replicas")),
    )


def parse_team_estimator(spec: Any) -> TeamEstimator:
    """The teamEstimator setting; TeamEstimatorError naming the field on a bad one."""
    if spec is None:
        return TeamEstimator()
    if not isinstance(spec, dict):
        raise TeamEstimatorError("teamEstimator: must be a mapping with timeZone and teams")
    unknown = set(spec) - {"timeZone", "teams"}
    if unknown:
        raise TeamEstimatorError(f"teamEstimator: unknown field(s) {', '.join(sorted(unknown))}")
    try:
        zone = ZoneInfo(str(spec.get("timeZone") or "UTC"))
    except (ZoneInfoNotFoundError, ValueError):
        raise TeamEstimatorError(
            f"teamEstimator.timeZone: unknown time zone {spec.get('timeZone')!r}"
        ) from None
    teams = [
        _team(f"teamEstimator.teams[{i}]", i, raw) for i, raw in enumerate(spec.get("teams") or [])
    ]
    return TeamEstimator(tuple(teams), zone)
