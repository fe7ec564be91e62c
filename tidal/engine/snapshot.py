"""The schedule a run started with, kept in its journal: a hash to tell an edit, and the
content (swap manifests included) to finish the run against after a crash."""

from __future__ import annotations

from typing import Any, Protocol

from tidal.domain.schedule import TidalSchedule
from tidal.engine.journal import content_hash


class HasSchedule(Protocol):
    """A loaded schedule file (tidal.loading's LoadedSchedule)."""

    @property
    def schedule(self) -> TidalSchedule: ...


ScheduleSource = TidalSchedule | HasSchedule


def schedule_of(source: ScheduleSource) -> TidalSchedule:
    return source if isinstance(source, TidalSchedule) else source.schedule


def snapshot_of(loaded: ScheduleSource) -> dict[str, Any]:
    """The schedule as JSON, with the swap manifests the model does not dump."""
    schedule = schedule_of(loaded)
    data: dict[str, Any] = schedule.model_dump(mode="json", by_alias=True, exclude_none=True)
    for window, dumped in zip(schedule.spec.windows, data["spec"]["windows"], strict=True):
        for change, item in zip(window.policies, dumped["policies"], strict=True):
            if change.swap is not None and change.swap.manifest is not None:
                item["swap"]["manifest"] = change.swap.manifest
    return data


def schedule_hash(loaded: ScheduleSource) -> str:
    """A hash of what the schedule says (not of its file's comments or layout)."""
    return content_hash(snapshot_of(loaded))


def restore(snapshot: dict[str, Any]) -> TidalSchedule:
    """The schedule a journal kept."""
    return TidalSchedule.model_validate(snapshot, context={"manifests_loaded": True})
