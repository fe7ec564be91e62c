"""The TidalSchedule file as pydantic models: the one contract users edit by hand.

Field names are snake_case in Python and camelCase in YAML. Checks that span several fields
raise one `PydanticCustomError` of type "tidal_semantic" whose ctx["problems"] lists every
problem as (location relative to the model, message), so the loader can point at each key.
"""

from __future__ import annotations

import difflib
import math
import re
import zoneinfo
from datetime import date, timedelta
from functools import lru_cache
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from tidal.domain.cron import can_coincide, dst_collision, parse_start
from tidal.domain.durations import Duration, PositiveDuration

API_VERSION = "tidal.io/v1alpha1"
KIND = "TidalSchedule"
SEMANTIC_ERROR = "tidal_semantic"

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


def raise_problems(problems: list[Problem]) -> None:
    """Raise every problem at once (no-op for an empty list)."""
    if problems:
        raise PydanticCustomError(SEMANTIC_ERROR, "{message}",
                                  {"message": problems[0][1], "problems": problems})


# --- names -----------------------------------------------------------------------------------

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _name_checker(pattern: str, max_length: int, what: str) -> Any:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if len(value) > max_length or not compiled.match(value):
            raise ValueError(
                f"{value!r} is not a valid {what}: use at most {max_length} lower-case letters, "
                "digits and '-', starting and ending with a letter or digit")
        return value

    return check


DnsLabel = Annotated[
    str, AfterValidator(_name_checker(DNS_LABEL, 63, "name")),
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]
ObjectName = Annotated[
    str, AfterValidator(_name_checker(DNS_SUBDOMAIN, 253, "Kubernetes object name")),
    WithJsonSchema({"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 253}),
]
NamespaceName = Annotated[
    str, AfterValidator(_name_checker(DNS_LABEL, 63, "namespace")),
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL, "maxLength": 63}),
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              alias_generator=to_camel, validate_default=False,
                              field_title_generator=lambda name, info: info.alias or to_camel(name))


# --- selection -------------------------------------------------------------------------------

class LabelSelectorRequirement(_Model):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise_problems([(("values",), f"operator {self.operator} needs at least one value; "
                                          "add values: [...]")])
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise_problems([(("values",), f"operator {self.operator} takes no values; "
                                          "remove values")])
        return self


_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_PREFIX = re.compile(DNS_SUBDOMAIN)


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a Kubernetes label key, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix)):
        return f"label key {key!r} has an invalid prefix; use a DNS subdomain before '/'"
    if len(name) > 63 or not _LABEL_NAME.match(name):
        return (f"label key {key!r} is invalid; use at most 63 letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit")
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a Kubernetes label value, or None."""
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        return (f"label value {value!r} is invalid; use at most 63 letters, digits, '-', '_' "
                "or '.', starting and ending with a letter or digit")
    return None


class LabelSelector(_Model):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    @model_validator(mode="after")
    def _valid_labels(self) -> LabelSelector:
        problems: list[Problem] = []
        for key, value in self.match_labels.items():
            problem = label_key_problem(key) or label_value_problem(value)
            if problem:
                problems.append((("matchLabels", key), problem))
        for index, requirement in enumerate(self.match_expressions):
            problem = label_key_problem(requirement.key)
            for value in requirement.values:
                problem = problem or label_value_problem(value)
            if problem:
                problems.append((("matchExpressions", index), problem))
        raise_problems(problems)
        return self


class WorkloadSelector(_Model):
    """Narrows the templates a window moves; default: all claimed by the window's policies."""

    api_version: str = Field(min_length=1, examples=["apps/v1"])
    kind: str = Field(min_length=1, examples=["Deployment"])
    namespace: NamespaceName | None = None
    label_selector: LabelSelector | None = None
    ready_replicas_field: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$",
        description="dotted path in the member status holding ready replicas, "
                    "e.g. status.readyReplicas")


# --- rollout ---------------------------------------------------------------------------------

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
WAVE_SIZE_HINT = 'write a count (e.g. 5) or a percentage of the selected workloads (e.g. "25%")'


class WaveSize(_Model):
    """Workloads per wave: a count or a percentage of the selected set (exactly one is set)."""

    count: int | None = None
    percent: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_user_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"waveSize cannot be a boolean; {WAVE_SIZE_HINT}")
        if isinstance(value, int):
            return {"count": value}
        if isinstance(value, str):
            match = _PERCENT.match(value)
            if match:
                return {"percent": float(match.group(1))}
            if value.strip().isdigit():
                return {"count": int(value)}
            raise ValueError(f"{value!r} is not a wave size; {WAVE_SIZE_HINT}")
        if isinstance(value, dict | WaveSize):
            return value
        raise ValueError(f"expected a count or a percentage; {WAVE_SIZE_HINT}")

    @model_validator(mode="after")
    def _one_positive_value(self) -> WaveSize:
        if (self.count is None) == (self.percent is None):
            raise ValueError(f"set exactly one of count and percent; {WAVE_SIZE_HINT}")
        if self.count is not None and self.count < 1:
            raise ValueError(f"waveSize must be at least 1; {WAVE_SIZE_HINT}")
        if self.percent is not None and not 0 < self.percent <= 100:
            raise ValueError(f"a waveSize percentage must be in (0, 100]; {WAVE_SIZE_HINT}")
        return self

    def for_total(self, total: int) -> int:
        """Workloads per wave for a selection of `total` (at least 1)."""
        if self.count is not None:
            return max(1, min(self.count, total))
        assert self.percent is not None
        return max(1, math.ceil(total * self.percent / 100 - 1e-9))

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return f"{self.percent:g}%"


def _wave_size_text(value: WaveSize) -> int | str:
    return value.count if value.count is not None else str(value)


WaveSizeField = Annotated[
    WaveSize,
    PlainSerializer(_wave_size_text),
    WithJsonSchema({"anyOf": [
        {"type": "integer", "minimum": 1},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"},
    ], "examples": [5, "25%"]}),
]


class Floor(_Model):
    """A per-workload minimum that every wave must keep: per cluster, or across all clusters."""

    clusters: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, min_length=1,
        description='cluster names, or ["*"] for every cluster the workload is scheduled to')
    min_ready_replicas: int | None = Field(default=None, ge=1)
    min_available_percent: float | None = Field(default=None, gt=0, le=100)

    @model_validator(mode="after")
    def _one_kind_of_floor(self) -> Floor:
        per_cluster = self.clusters is not None or self.min_ready_replicas is not None
        if per_cluster and self.min_available_percent is not None:
            raise_problems([(("minAvailablePercent",),
                             "a floor is either clusters + minReadyReplicas or "
                             "minAvailablePercent; split it into two floors")])
        if not per_cluster and self.min_available_percent is None:
            raise_problems([((), "an empty floor; set clusters + minReadyReplicas or "
                                 "minAvailablePercent")])
        if per_cluster and self.clusters is None:
            raise_problems([((), 'minReadyReplicas needs clusters; add clusters: [...] '
                                 '(or ["*"])')])
        if per_cluster and self.min_ready_replicas is None:
            raise_problems([((), "clusters needs minReadyReplicas; add minReadyReplicas: N")])
        if self.clusters and "*" in self.clusters and len(self.clusters) > 1:
            raise_problems([(("clusters",), '"*" already means every cluster; use ["*"] alone')])
        return self

    @property
    def every_cluster(self) -> bool:
        return self.clusters == ["*"]


Order = Literal["name", "smallestFirst", "largestFirst"]
OnFailure = Literal["halt", "rollback"]


class Rollout(_Model):
    """How a window's workloads are moved: waves, pauses, timeouts, floors, failure policy."""

    wave_size: WaveSizeField = Field(default_factory=lambda: WaveSize(percent=25.0))
    pause_between_waves: Duration = timedelta(seconds=30)
    wave_timeout: PositiveDuration = timedelta(minutes=10)
    floors: list[Floor] = Field(default_factory=list)
    on_failure: OnFailure = "halt"
    order: Order = Field(
        default="name",
        description="wave order: name (namespace, name), smallestFirst or largestFirst "
                    "(by spec.replicas, ties by name)")


class RolloutOverride(_Model):
    """A window's own rollout keys; unset keys come from spec.rollout."""

    wave_size: WaveSizeField | None = None
    pause_between_waves: Duration | None = None
    wave_timeout: PositiveDuration | None = None
    floors: list[Floor] | None = None
    on_failure: OnFailure | None = None
    order: Order | None = None


# --- policies --------------------------------------------------------------------------------

PolicyKind = Literal["ClusterPropagationPolicy", "PropagationPolicy"]


class PolicyRef(NamedTuple):
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


class Swap(_Model):
    """Delete policy `from`, create the policy in manifest file `to` (relative to the file)."""

    from_: ObjectName = Field(alias="from")
    to: str = Field(min_length=1, description="path of the policy manifest, relative to this file")
    manifest: SkipJsonSchema[dict[str, Any] | None] = Field(default=None, exclude=True)

    @field_validator("to")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        if value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
            raise ValueError(f"{value!r} is an absolute path; give a path relative to the "
                             "schedule file, inside its directory")
        if ".." in re.split(r"[/\\]", value):
            raise ValueError(f"{value!r} leaves the schedule's directory; keep the manifest "
                             "inside it (no '..')")
        return value

    @field_validator("manifest", mode="before")
    @classmethod
    def _not_from_user(cls, value: Any, info: Any) -> Any:
        if value is not None and not (info.context or {}).get("manifests_loaded"):
            raise ValueError("manifest is read from the `to` file; remove it")
        return value


class PolicyChange(_Model):
    """One policy a window changes: a JSON merge patch on `name`, or a swap of two policies."""

    kind: PolicyKind
    name: ObjectName | None = None
    namespace: NamespaceName | None = None
    patch: dict[str, Any] | None = Field(
        default=None, description="JSON merge patch (RFC 7386) applied to the policy")
    swap: Swap | None = None

    @model_validator(mode="after")
    def _patch_or_swap(self) -> PolicyChange:
        problems: list[Problem] = []
        if self.patch is not None and self.swap is not None:
            problems.append((("swap",), "patch and swap are exclusive; keep one of them"))
        elif self.patch is None and self.swap is None:
            problems.append(((), "a policy change needs patch or swap; add one"))
        if self.patch is not None and self.name is None:
            problems.append(((), "a patch needs the policy's name; add name: <policy>"))
        if self.patch is not None and not self.patch:
            problems.append((("patch",), "the patch is empty; give the fields to change"))
        if self.swap is not None and self.name is not None:
            problems.append((("name",), "a swap takes its names from swap.from and the `to` "
                                        "manifest; remove name"))
        if self.kind == "ClusterPropagationPolicy" and self.namespace is not None:
            problems.append((("namespace",), "a ClusterPropagationPolicy is cluster-scoped; "
                                             "remove namespace"))
        if (self.kind == "PropagationPolicy" and self.namespace is None
                and self.swap is None):
            problems.append(((), "a PropagationPolicy needs its namespace; add namespace: <ns>"))
        raise_problems(problems)
        return self

    @property
    def policy_name(self) -> str:
        """The policy in force after the change: `name` for a patch, the `to` manifest's name."""
        if self.swap is None:
            assert self.name is not None
            return self.name
        return str(self._manifest_metadata()["name"])

    @property
    def policy_namespace(self) -> str | None:
        """Namespace of the policy (None for a ClusterPropagationPolicy)."""
        if self.kind == "ClusterPropagationPolicy":
            return None
        if self.namespace is not None or self.swap is None:
            return self.namespace
        namespace = self._manifest_metadata().get("namespace")
        return str(namespace) if namespace is not None else None

    def policy_refs(self) -> list[PolicyRef]:
        """Every policy this change touches (for a swap: both `from` and `to`)."""
        if self.swap is None:
            return [PolicyRef(self.kind, self.policy_namespace, self.policy_name)]
        refs = [PolicyRef(self.kind, self.policy_namespace, self.swap.from_)]
        if self.swap.manifest is not None:
            refs.append(PolicyRef(self.kind, self.policy_namespace, self.policy_name))
        return refs

    def _manifest_metadata(self) -> dict[str, Any]:
        assert self.swap is not None
        if self.swap.manifest is None:
            raise ValueError(f"swap manifest {self.swap.to!r} is not loaded; use the loader")
        metadata = self.swap.manifest.get("metadata")
        if not isinstance(metadata, dict) or "name" not in metadata:
            raise ValueError(f"swap manifest {self.swap.to!r} has no metadata.name")
        return metadata


# --- windows and the schedule ----------------------------------------------------------------

Trigger = Literal["auto", "touch", "rebalance", "both"]


def _check_start(value: str) -> str:
    parse_start(value)
    return value


def _refuse_non_string_start(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError('start must be quoted text, e.g. "23:00" or "0 23 * * 1-5"')
    return value


StartText = Annotated[
    str, BeforeValidator(_refuse_non_string_start), AfterValidator(_check_start),
    WithJsonSchema({"type": "string", "examples": ["23:00", "0 23 * * 1-5"],
                    "description": 'HH:MM local time, or a 5-field cron expression '
                                   '(local time)'}),
]


class Window(_Model):
    name: DnsLabel
    start: StartText
    policies: list[PolicyChange] = Field(min_length=1)
    trigger: Trigger = "auto"
    rollout: RolloutOverride | None = None

    @model_validator(mode="after")
    def _one_change_per_policy(self) -> Window:
        problems: list[Problem] = []
        seen: dict[tuple[str, str | None, str], int] = {}
        field: tuple[str, ...]
        for index, change in enumerate(self.policies):
            if change.swap is not None:
                key, field = (change.kind, change.namespace, change.swap.from_), ("swap", "from")
            else:
                assert change.name is not None
                key, field = (change.kind, change.namespace, change.name), ("name",)
            if key in seen:
                problems.append((("policies", index, *field),
                                 f"{key[0]} {key[2]} is already changed by policies[{seen[key]}] "
                                 "of this window; merge the two changes into one"))
            else:
                seen[key] = index
        raise_problems(problems)
        return self


@lru_cache(maxsize=1)
def _known_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_time_zone(value: str) -> str:
    """Accept an IANA zone name; suggest the nearest known ones otherwise."""
    if value not in _known_zones():
        try:
            zoneinfo.ZoneInfo(value)
            return value
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            pass
        close = difflib.get_close_matches(value, sorted(_known_zones()), n=1)
        hint = f"did you mean {close[0]}?" if close else "use an IANA name such as Europe/Berlin"
        raise ValueError(f"unknown time zone {value!r}; {hint}")
    return value


TimeZoneName = Annotated[str, AfterValidator(check_time_zone),
                         WithJsonSchema({"type": "string", "examples": ["Asia/Shanghai"],
                                         "description": "IANA time zone name"})]


class ScheduleSpec(_Model):
    time_zone: TimeZoneName
    suspend: bool = False
    catch_up_window: PositiveDuration = timedelta(minutes=30)
    skip_dates: list[date] = Field(default_factory=list)
    workloads: list[WorkloadSelector] = Field(default_factory=list)
    windows: list[Window] = Field(min_length=1)
    rollout: Rollout = Field(default_factory=Rollout)

    @model_validator(mode="after")
    def _windows_distinct(self) -> ScheduleSpec:
        problems: list[Problem] = []
        first_index: dict[str, int] = {}
        for index, window in enumerate(self.windows):
            if window.name in first_index:
                problems.append((("windows", index, "name"),
                                 f"window name {window.name!r} is already used by window "
                                 f"{first_index[window.name] + 1}; give each window its own name"))
            else:
                first_index[window.name] = index
        for index, window in enumerate(self.windows):
            for earlier in self.windows[:index]:
                if can_coincide(earlier.start, window.start):
                    problems.append((("windows", index, "start"),
                                     f"window {window.name!r} can start at the same minute as "
                                     f"window {earlier.name!r}; move one of the starts"))
                    break
                day = dst_collision(parse_start(earlier.start), parse_start(window.start),
                                    self.time_zone)
                if day is not None:
                    problems.append((("windows", index, "start"),
                                     f"window {window.name!r} starts at the same instant as "
                                     f"window {earlier.name!r} when the clocks spring forward in "
                                     f"{self.time_zone} (e.g. {day}: a start in the skipped hour "
                                     "runs at its end); move one of the starts"))
                    break
        raise_problems(problems)
        return self


class Metadata(_Model):
    name: DnsLabel
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class TidalSchedule(_Model):
    """One schedule file: `apiVersion: tidal.io/v1alpha1`, `kind: TidalSchedule`."""

    model_config = ConfigDict(title="TidalSchedule")

    api_version: Literal["tidal.io/v1alpha1"]
    kind: Literal["TidalSchedule"]
    metadata: Metadata
    spec: ScheduleSpec

    @property
    def name(self) -> str:
        return self.metadata.name

    def window(self, name: str) -> Window:
        """The window called `name`; KeyError naming the known windows otherwise."""
        for window in self.spec.windows:
            if window.name == name:
                return window
        known = ", ".join(w.name for w in self.spec.windows)
        raise KeyError(f"schedule {self.name!r} has no window {name!r}; known: {known}")

    def rollout_for(self, window_name: str) -> Rollout:
        """spec.rollout with the window's own rollout keys laid over it."""
        override = self.window(window_name).rollout
        if override is None:
            return self.spec.rollout
        changes = {key: value for key, value in override if value is not None}
        return self.spec.rollout.model_copy(update=changes)

    def policy_refs(self) -> set[PolicyRef]:
        """Every policy any window of this schedule writes or deletes."""
        return {ref for window in self.spec.windows for change in window.policies
                for ref in change.policy_refs()}
