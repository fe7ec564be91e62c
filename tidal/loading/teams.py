"""The team estimator's file: which namespaces make a team and where its capacity comes from.

    apiVersion: tidal.io/v1alpha1
    kind: TeamCapacity
    metadata: {name: platform}
    spec:
      timeZone: Europe/Berlin            # of the windows' times of day
      teams:
        - name: team-2001
          namespaces: [team-2001]        # and/or
          templateSelector: {matchLabels: {atms-app/teamid: "2001"}}   # templates' labels
          clusters:
            cluster-a:
              quota: true                # the namespace's ResourceQuotas on cluster-a
              nodePool: {matchLabels: {pool: team-2001}}
              replicas: 40               # a replica cap (absent: none)
              windows: [{from: "22:00", to: "06:00", replicas: 0}]
            "*": {quota: true}           # every other member

Errors are `FILE:LINE:COL: message` naming the field and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from tidal.domain.team_capacity import CapacityWindow, ReplicaCap, clock_time
from tidal.domain.teams import ClusterRule, TeamRule, Teams
from tidal.loading.errors import LocatedError, YamlProblem
from tidal.loading.yamlfile import position, read_yaml_file


class TeamsFileError(ValueError):
    """A teams file that cannot be used; str() is one line per problem."""

    def __init__(self, problems: list[LocatedError]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


_STRICT = ConfigDict(extra="forbid", populate_by_name=True)


class _Window(BaseModel):
    model_config = _STRICT
    start: str = Field(alias="from")
    end: str = Field(alias="to")
    replicas: int = Field(ge=0)

    @field_validator("start", "end")
    @classmethod
    def _hhmm(cls, value: str) -> str:
        clock_time(value)
        return value


class _Cluster(BaseModel):
    model_config = _STRICT
    quota: bool = False
    node_pool: dict[str, Any] | None = Field(None, alias="nodePool")
    replicas: int | None = Field(None, ge=0)
    windows: list[_Window] = []


class _Team(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    namespaces: list[str] = []
    template_selector: dict[str, Any] | None = Field(None, alias="templateSelector")
    clusters: dict[str, _Cluster] = Field(min_length=1)

    @model_validator(mode="after")
    def _who(self) -> _Team:
        if not self.namespaces and self.template_selector is None:
            raise ValueError("name the team's namespaces, its templateSelector, or both")
        return self


class _Spec(BaseModel):
    model_config = _STRICT
    time_zone: str = Field("UTC", alias="timeZone")
    teams: list[_Team] = []

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r}; write an IANA name such as Europe/Berlin"
            ) from None
        return value


class _File(BaseModel):
    model_config = _STRICT
    api_version: Literal["tidal.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["TeamCapacity"]
    metadata: dict[str, Any] = {}
    spec: _Spec


def _where(tree: Any, loc: tuple[int | str, ...]) -> tuple[int, int]:
    node, at = tree, (1, 1)
    for key in loc:
        at = position(node, key, at)
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break
    return at


def _rules(spec: _Spec) -> Teams:
    teams = []
    for team in spec.teams:
        clusters = {
            name: ClusterRule(
                c.quota,
                c.node_pool,
                ReplicaCap(
                    c.replicas,
                    tuple(
                        CapacityWindow(clock_time(w.start), clock_time(w.end), w.replicas)
                        for w in c.windows
                    ),
                ),
            )
            for name, c in team.clusters.items()
        }
        teams.append(
            TeamRule(team.name, frozenset(team.namespaces), clusters, team.template_selector)
        )
    return Teams(tuple(teams), ZoneInfo(spec.time_zone))


def load_teams(path: Path) -> Teams:
    """The teams of the file at `path`; TeamsFileError with every problem located."""
    try:
        doc = read_yaml_file(path)
    except YamlProblem as exc:
        raise TeamsFileError([LocatedError(str(path), exc.line, exc.col, exc.message)]) from None
    try:
        parsed = _File.model_validate(doc.data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            line, col = _where(doc.tree, loc)
            field = ".".join(str(p) for p in loc) or "(document)"
            problems.append(LocatedError(str(path), line, col, f"{field}: {err['msg']}"))
        raise TeamsFileError(problems) from None
    seen: dict[str, str] = {}
    for i, team in enumerate(parsed.spec.teams):
        if team.template_selector is not None:
            continue  # teams sharing a namespace are told apart by their templates' labels
        for ns in team.namespaces:
            if ns in seen:
                line, col = _where(doc.tree, ("spec", "teams", i, "namespaces"))
                raise TeamsFileError(
                    [
                        LocatedError(
                            str(path),
                            line,
                            col,
                            f"spec.teams.{i}.namespaces: {ns} is already team "
                            f"{seen[ns]}'s; a namespace belongs to one team",
                        )
                    ]
                )
            seen[ns] = team.name
    return _rules(parsed.spec)
