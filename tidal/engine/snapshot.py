"""The schedule a run started with, kept in its journal: a hash to tell an edit, and the
content (swap manifests included) to finish the run against after a crash."""

from __future__ import annotations

from typing import Any

from tidal.domain.schedule import TidalSchedule
from tidal.engine.journal import content_hash


def _schedule_of(loaded: Any) -> TidalSchedule:
    schedule: TidalSchedule = loaded.schedule if hasattr(loaded, "schedule") else loaded
    return schedule


def snapshot_of(loaded: Any) -> dict[str, Any]:
    """The schedule as JSON, with the swap manifests the model does not dump."""
    schedule = _schedule_of(loaded)
    data: dict[str, Any] = schedule.model_dump(mode="json", by_alias=True, exclude_none=True)
    for window, dumped in zip(schedule.spec.windows, data["spec"]["windows"], strict=True):
        for change, item in zip(window.policies, dumped["policies"], strict=True):
            if change.swap is not None and change.swap.manifest is not None:
                item["swap"]["manifest"] = change.swap.manifest
    return data


def schedule_hash(loaded: Any) -> str:
    """A hash of what the schedule says (not of its file's comments or layout)."""
    return content_hash(snapshot_of(loaded))


def restore(snapshot: dict[str, Any]) -> TidalSchedule:
    """The schedule a journal kept."""
    return TidalSchedule.model_validate(snapshot, context={"manifests_loaded": True})
