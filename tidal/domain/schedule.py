"""The TidalSchedule file as pydantic models: the one contract users edit by hand.

Field names are snake_case in Python and camelCase in YAML. Building blocks live in
schedule_base (names, zones, semantic problems) and rollout (waves, floors); everything is
importable from here.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from tidal.domain.cron import can_coincide, dst_collision, parse_start
from tidal.domain.durations import PositiveDuration
from tidal.domain.patch_scope import FIELD_PATH, allow_field_problem, scope_problems
from tidal.domain.rollout import (
    WAVE_SIZE_HINT,
    Floor,
    OnFailure,
    Order,
    Rollout,
    RolloutOverride,
    WaveSize,
    WaveSizeField,
)
from tidal.domain.schedule_base import (
    API_VERSION,
    DNS_LABEL,
    DNS_SUBDOMAIN,
    KIND,
    SEMANTIC_ERROR,
    DnsLabel,
    Loc,
    NamespaceName,
    ObjectName,
    Problem,
    TimeZoneName,
    check_time_zone,
    label_key_problem,
    label_value_problem,
    raise_problems,
)
from tidal.domain.schedule_base import ContractModel as _Model

__all__ = [
    "API_VERSION",
    "DNS_LABEL",
    "DNS_SUBDOMAIN",
    "KIND",
    "SEMANTIC_ERROR",
    "WAVE_SIZE_HINT",
    "DnsLabel",
    "Floor",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Loc",
    "Metadata",
    "NamespaceName",
    "ObjectName",
    "OnFailure",
    "Order",
    "PolicyChange",
    "PolicyKind",
    "PolicyRef",
    "Problem",
    "Rollout",
    "RolloutOverride",
    "ScheduleSpec",
    "Swap",
    "TidalSchedule",
    "TimeZoneName",
    "Trigger",
    "WaveSize",
    "WaveSizeField",
    "Window",
    "WorkloadSelector",
    "check_time_zone",
    "label_key_problem",
    "label_value_problem",
    "raise_problems",
]

# --- selection -------------------------------------------------------------------------------


class LabelSelectorRequirement(_Model):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise_problems(
                [
                    (
                        ("values",),
                        f"operator {self.operator} needs at least one value; add values: [...]",
                    )
                ]
            )
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise_problems(
                [(("values",), f"operator {self.operator} takes no values; remove values")]
            )
        return self


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
        default=None,
        pattern=r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$",
        description="dotted path in the member status holding ready replicas, "
        "e.g. status.readyReplicas",
    )


# --- policies --------------------------------------------------------------------------------

PolicyKind = Literal["ClusterPropagationPolicy", "PropagationPolicy"]


class PolicyRef(NamedTuple):
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"

    @property
    def key(self) -> str:
        """`Kind/namespace/name`, or `Kind/name` cluster-wide: how journals and plans key it."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"


class Swap(_Model):
    """Delete policy `from`, create the policy in manifest file `to` (relative to the file)."""

    from_: ObjectName = Field(alias="from")
    to: str = Field(min_length=1, description="path of the policy manifest, relative to this file")
    manifest: SkipJsonSchema[dict[str, Any] | None] = Field(default=None, exclude=True)

    @field_validator("to")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        if value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
            raise ValueError(
                f"{value!r} is an absolute path; give a path relative to the "
                "schedule file, inside its directory"
            )
        if ".." in re.split(r"[/\\]", value):
            raise ValueError(
                f"{value!r} leaves the schedule's directory; keep the manifest inside it (no '..')"
            )
        return value

    @field_validator("manifest", mode="before")
    @classmethod
    def _not_from_user(cls, value: Any, info: Any) -> Any:
        if value is not None and not (info.context or {}).get("manifests_loaded"):
            raise ValueError("manifest is read from the `to` file; remove it")
        return value


def _check_field_path(path: str) -> str:
    why = allow_field_problem(path)
    if why is not None:
        raise ValueError(why)
    return path


_FIELD_PATH_SCHEMA = WithJsonSchema(
    {"type": "string", "pattern": FIELD_PATH.pattern, "examples": ["spec.failover"]}
)
# A policy change checks its own entries with its patch (every problem reported at once)
FieldPathText = Annotated[str, _FIELD_PATH_SCHEMA]
FieldPath = Annotated[str, AfterValidator(_check_field_path), _FIELD_PATH_SCHEMA]


class PolicyChange(_Model):
    """One policy a window changes: a JSON merge patch on `name`, or a swap of two policies."""

    kind: PolicyKind
    name: ObjectName | None = None
    namespace: NamespaceName | None = None
    patch: dict[str, Any] | None = Field(
        default=None,
        description="JSON merge patch (RFC 7386) applied to the policy; it may "
        "change spec.placement only, plus the fields in allowFields, "
        "never metadata",
    )
    swap: Swap | None = None
    allow_fields: list[FieldPathText] = Field(
        default_factory=list,
        description="fields under spec this change may set besides spec.placement, as dotted "
        "paths (e.g. spec.failover); shown in the plan. metadata never",
    )

    @model_validator(mode="after")
    def _patch_or_swap(self) -> PolicyChange:
        problems: list[Problem] = []
        for index, path in enumerate(self.allow_fields):
            why = allow_field_problem(path)
            if why is not None:
                problems.append((("allowFields", index), why))
        if self.patch is not None:
            allowed = [f for f in self.allow_fields if allow_field_problem(f) is None]
            problems += [
                (("patch", *loc), message) for loc, message in scope_problems(self.patch, allowed)
            ]
        problems += self._shape_problems()
        raise_problems(problems)
        return self

    def _shape_problems(self) -> list[Problem]:
        """Patch xor swap, and the names and namespace each needs."""
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
            problems.append(
                (
                    ("name",),
                    "a swap takes its names from swap.from and the `to` manifest; remove name",
                )
            )
        return problems + self._scope_problems()

    def _scope_problems(self) -> list[Problem]:
        """A ClusterPropagationPolicy has no namespace; a patched PropagationPolicy one."""
        if self.kind == "ClusterPropagationPolicy" and self.namespace is not None:
            return [
                (("namespace",), "a ClusterPropagationPolicy is cluster-scoped; remove namespace")
            ]
        if self.kind == "PropagationPolicy" and self.namespace is None and self.swap is None:
            return [((), "a PropagationPolicy needs its namespace; add namespace: <ns>")]
        return []

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

# Bounds a hand-written schedule never reaches; the loader checks them before parsing the file
# in full, so a hostile file costs milliseconds, not minutes.
MAX_WINDOWS = 100
MAX_POLICIES_PER_WINDOW = 50
# Schedules compete for the daemon's slots and surge capacity in this order (higher first).
MIN_PRIORITY, MAX_PRIORITY = -1000, 1000
# A start older than a day is never caught up: the next daily start comes first.
MAX_CATCH_UP_WINDOW = timedelta(hours=24)

Trigger = Literal["auto", "touch", "rebalance", "both"]


def _check_start(value: str) -> str:
    parse_start(value)
    return value


def _refuse_non_string_start(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError('start must be quoted text, e.g. "23:00" or "0 23 * * 1-5"')
    return value


StartText = Annotated[
    str,
    BeforeValidator(_refuse_non_string_start),
    AfterValidator(_check_start),
    WithJsonSchema(
        {
            "type": "string",
            "examples": ["23:00", "0 23 * * 1-5"],
            "description": "HH:MM local time, or a 5-field cron expression (local time)",
        }
    ),
]


class Window(_Model):
    name: DnsLabel
    start: StartText
    policies: list[PolicyChange] = Field(min_length=1, max_length=MAX_POLICIES_PER_WINDOW)
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
                problems.append(
                    (
                        ("policies", index, *field),
                        f"{key[0]} {key[2]} is already changed by policies[{seen[key]}] "
                        "of this window; merge the two changes into one",
                    )
                )
            else:
                seen[key] = index
        raise_problems(problems)
        return self


def _with_allowed(window: Any, inherited: list[str]) -> Any:
    """A raw window whose policy changes also allow `inherited`."""
    if not isinstance(window, dict) or not isinstance(window.get("policies"), list):
        return window
    changes = []
    for change in window["policies"]:
        if isinstance(change, dict):
            own = change.get("allowFields", change.get("allow_fields"))
            if own is None or isinstance(own, list):
                key = "allow_fields" if "allow_fields" in change else "allowFields"
                merged = list(own or []) + [f for f in inherited if f not in (own or [])]
                change = {**change, key: merged}
        changes.append(change)
    return {**window, "policies": changes}


class ScheduleSpec(_Model):
    time_zone: TimeZoneName
    suspend: bool = False
    priority: int = Field(
        default=0,
        ge=MIN_PRIORITY,
        le=MAX_PRIORITY,
        description="order among schedules switching at the same time, higher first: for "
        "the daemon's concurrency slots and its shared surge capacity (within a "
        "priority, schedules take turns wave by wave)",
    )
    catch_up_window: PositiveDuration = timedelta(minutes=30)
    skip_dates: list[date] = Field(default_factory=list)
    workloads: list[WorkloadSelector] = Field(default_factory=list)
    windows: list[Window] = Field(min_length=1, max_length=MAX_WINDOWS)
    rollout: Rollout = Field(default_factory=Rollout)
    allow_fields: list[FieldPath] = Field(
        default_factory=list,
        description="fields under spec every policy change of this schedule may set besides "
        "spec.placement (added to each change's own allowFields); metadata never",
    )

    @model_validator(mode="before")
    @classmethod
    def _inherit_allow_fields(cls, data: Any) -> Any:
        """Every policy change may also set the schedule's allowFields (the valid ones: a bad
        entry is reported once, where it is written)."""
        if not isinstance(data, dict):
            return data
        inherited = data.get("allowFields", data.get("allow_fields"))
        if not isinstance(inherited, list):
            return data
        valid = [f for f in inherited if isinstance(f, str) and allow_field_problem(f) is None]
        windows = data.get("windows")
        if not valid or not isinstance(windows, list):
            return data
        data = dict(data)
        data["windows"] = [_with_allowed(w, valid) for w in windows]
        return data

    @field_validator("catch_up_window", mode="wrap")
    @classmethod
    def _catch_up_bounded(cls, value: Any, handler: Any) -> timedelta:
        parsed: timedelta = handler(value)
        if parsed > MAX_CATCH_UP_WINDOW:
            raise ValueError(
                f"{value} is longer than the limit of 24h; a start older than a day is never "
                "caught up (the next start comes first): write at most 24h"
            )
        return parsed

    @model_validator(mode="after")
    def _windows_distinct(self) -> ScheduleSpec:
        problems: list[Problem] = []
        first_index: dict[str, int] = {}
        for index, window in enumerate(self.windows):
            if window.name in first_index:
                problems.append(
                    (
                        ("windows", index, "name"),
                        f"window name {window.name!r} is already used by window "
                        f"{first_index[window.name] + 1}; give each window its own name",
                    )
                )
            else:
                first_index[window.name] = index
        for index, window in enumerate(self.windows):
            for earlier in self.windows[:index]:
                if can_coincide(earlier.start, window.start):
                    problems.append(
                        (
                            ("windows", index, "start"),
                            f"window {window.name!r} can start at the same minute as "
                            f"window {earlier.name!r}; move one of the starts",
                        )
                    )
                    break
                day = dst_collision(
                    parse_start(earlier.start), parse_start(window.start), self.time_zone
                )
                if day is not None:
                    problems.append(
                        (
                            ("windows", index, "start"),
                            f"window {window.name!r} starts at the same instant as "
                            f"window {earlier.name!r} when the clocks spring forward in "
                            f"{self.time_zone} (e.g. {day}: a start in the skipped hour "
                            "runs at its end); move one of the starts",
                        )
                    )
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
        return {
            ref
            for window in self.spec.windows
            for change in window.policies
            for ref in change.policy_refs()
        }
