"""YAML schedule files -> domain models, or errors located as FILE:LINE:COL."""

from tidal.loading.errors import LocatedError
from tidal.loading.loader import (
    LoadedSchedule,
    LoadResult,
    collect_files,
    load_schedule_file,
    load_schedules,
)

__all__ = [
    "LoadResult",
    "LoadedSchedule",
    "LocatedError",
    "collect_files",
    "load_schedule_file",
    "load_schedules",
]
