"""How a window's workloads are moved: wave size, pauses, timeouts, floors, failure policy."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, PlainSerializer, WithJsonSchema, model_validator

from tidal.domain.durations import Duration, PositiveDuration
from tidal.domain.schedule_base import ContractModel as _Model
from tidal.domain.schedule_base import raise_problems

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
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"},
            ],
            "examples": [5, "25%"],
        }
    ),
]


class Floor(_Model):
    """A per-workload minimum that every wave must keep: per cluster, or across all clusters."""

    clusters: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description='cluster names, or ["*"] for every cluster the workload is scheduled to',
    )
    min_ready_replicas: int | None = Field(default=None, ge=1)
    min_available_percent: float | None = Field(default=None, gt=0, le=100)

    @model_validator(mode="after")
    def _one_kind_of_floor(self) -> Floor:
        per_cluster = self.clusters is not None or self.min_ready_replicas is not None
        if per_cluster and self.min_available_percent is not None:
            raise_problems(
                [
                    (
                        ("minAvailablePercent",),
                        "a floor is either clusters + minReadyReplicas or "
                        "minAvailablePercent; split it into two floors",
                    )
                ]
            )
        if not per_cluster and self.min_available_percent is None:
            raise_problems(
                [((), "an empty floor; set clusters + minReadyReplicas or minAvailablePercent")]
            )
        if per_cluster and self.clusters is None:
            raise_problems(
                [((), 'minReadyReplicas needs clusters; add clusters: [...] (or ["*"])')]
            )
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
Strategy = Literal["surge", "direct"]
WhenNoRoom = Literal["direct", "refuse"]


class Surge(_Model):
    """Make-before-break waves: how much of a destination's free capacity a surge may use,
    and what happens to a workload whose surge can never fit."""

    headroom_percent: float = Field(
        default=10.0,
        ge=0,
        lt=100,
        description="share of each destination cluster's free capacity that surges leave "
        "unused (waves are sized so their surge fits the rest)",
    )
    when_no_room: WhenNoRoom = Field(
        default="direct",
        description="a workload whose surge can never fit: direct (moved without surge, "
        "only if its floors still hold) or refuse (the plan is refused)",
    )


class Rollout(_Model):
    """How a window's workloads are moved: waves, pauses, timeouts, floors, failure policy."""

    wave_size: WaveSizeField = Field(default_factory=lambda: WaveSize(percent=25.0))
    pause_between_waves: Duration = Field(
        default=timedelta(seconds=30),
        description="the pause after a wave; with strategy surge it halves after each wave "
        "that succeeded, down to an eighth (half of it after wave 1, a quarter after wave 2, "
        "an eighth from wave 3 on; a resumed run counts its clean waves afresh)",
    )
    wave_timeout: PositiveDuration = timedelta(minutes=10)
    floors: list[Floor] = Field(default_factory=list)
    on_failure: OnFailure = "halt"
    order: Order = Field(
        default="name",
        description="wave order: name (namespace, name), smallestFirst or largestFirst "
        "(by spec.replicas, ties by name)",
    )
    strategy: Strategy = Field(
        default="surge",
        description="surge: each wave raises its destinations first (an OverridePolicy) and "
        "moves once they are ready; direct: move at once (replicas dip)",
    )
    surge: Surge = Field(default_factory=Surge)


class RolloutOverride(_Model):
    """A window's own rollout keys; unset keys come from spec.rollout."""

    wave_size: WaveSizeField | None = None
    pause_between_waves: Duration | None = None
    wave_timeout: PositiveDuration | None = None
    floors: list[Floor] | None = None
    on_failure: OnFailure | None = None
    order: Order | None = None
    strategy: Strategy | None = None
    surge: Surge | None = None
