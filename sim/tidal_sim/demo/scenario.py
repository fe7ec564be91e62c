"""The demo's schedules: the two example teams, with their windows brought forward.

Where they come from: `schedules/` in the current directory when it holds both example files
(a checkout of the repository), otherwise the copy shipped inside the package
(sim/tidal_sim/demo/examples, kept identical to schedules/ by a test).

The transform rewrites each window's `start` to a daily cron minute in the schedule's own time
zone: the first window (night) at `first`, the next (day) `gap` later, and so on. Nothing else
of the rollout changes (waves, pauses, floors, triggers); skipDates and suspend are cleared so
the demo runs on any date. The daemon then loads the rewritten files like any others.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

EXAMPLE_FILES = ("team-1005.yaml", "team-2001.yaml")
PACKAGED_EXAMPLES = Path(__file__).parent / "examples"
# Night first: the demo shows the switch away from the day layout, then back.
WINDOW_ORDER = ("night", "day")


class ScenarioError(Exception):
    """The examples cannot be used (missing, unreadable); the message says what to fix."""


@dataclass(frozen=True)
class DemoWindow:
    schedule: str
    window: str
    at: datetime  # the instant the demo's copy starts this window (UTC)
    local: str  # the rewritten start, as written (cron, local time)
    original: str  # the start as the example file had it
    time_zone: str


def examples_dir(cwd: Path) -> tuple[Path, str]:
    """The examples to use and a phrase saying where they came from."""
    local = cwd / "schedules"
    if all((local / name).is_file() for name in EXAMPLE_FILES):
        return local, f"{local} (current directory)"
    return PACKAGED_EXAMPLES, f"{PACKAGED_EXAMPLES} (shipped with tidal)"


def original_moment(window: DemoWindow) -> datetime | None:
    """When the window would start on the demo's day had it not been brought forward: its
    written time of day ("23:00" or a daily cron "0 22 * * *") in its time zone; None for
    other starts."""
    text = window.original.strip()
    parts = text.split()
    try:
        if len(parts) == 1 and ":" in text:
            hour, minute = (int(p) for p in text.split(":"))
        elif len(parts) == 5 and parts[2:] == ["*", "*", "*"]:
            minute, hour = int(parts[0]), int(parts[1])
        else:
            return None
        day = window.at.astimezone(ZoneInfo(window.time_zone)).date()
        return datetime(
            day.year, day.month, day.day, hour, minute, tzinfo=ZoneInfo(window.time_zone)
        )
    except ValueError:
        return None


def demo_order(names: list[str]) -> list[str]:
    """Windows in the order the demo runs them: night, day, then any others as written."""
    known = [n for n in WINDOW_ORDER if n in names]
    return known + [n for n in names if n not in known]


def first_start(real_now: float, lead_seconds: float) -> datetime:
    """The first whole minute at least `lead_seconds` after `real_now` (epoch seconds)."""
    minute = (int(real_now + lead_seconds) // 60 + 1) * 60
    return datetime.fromtimestamp(minute, tz=UTC)


def bring_forward(
    source: Path, target: Path, *, first: datetime, gap: timedelta
) -> list[DemoWindow]:
    """Copy the example schedules (and the policy files they swap in) from `source` to
    `target`, starting their windows at `first`, `first + gap`, ... (whole minutes)."""
    if first.second or first.microsecond or gap.total_seconds() % 60:
        raise ValueError("window starts are cron minutes: first and gap must be whole minutes")
    target.mkdir(parents=True, exist_ok=True)
    policies = source / "policies"
    if policies.is_dir():
        shutil.copytree(policies, target / "policies", dirs_exist_ok=True)
    yaml = YAML()
    yaml.preserve_quotes = True
    windows: list[DemoWindow] = []
    for name in EXAMPLE_FILES:
        path = source / name
        try:
            doc = yaml.load(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ScenarioError(
                f"{path}: cannot read the example schedule ({exc}); "
                "run `tidal demo` from a checkout or reinstall tidal"
            ) from exc
        windows += _rewrite(doc, path, first, gap)
        with (target / name).open("w", encoding="utf-8") as out:
            yaml.dump(doc, out)
    return windows


def _rewrite(doc: Any, path: Path, first: datetime, gap: timedelta) -> list[DemoWindow]:
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("windows"), list):
        raise ScenarioError(
            f"{path}: not a TidalSchedule with spec.windows; "
            "restore the example from the repository"
        )
    zone = str(spec.get("timeZone") or "UTC")
    tz = ZoneInfo(zone)
    spec.pop("skipDates", None)
    if spec.get("suspend"):
        spec["suspend"] = False
    by_name = {str(w.get("name")): w for w in spec["windows"] if isinstance(w, dict)}
    out = []
    for index, window_name in enumerate(demo_order(list(by_name))):
        window = by_name[window_name]
        at = first + index * gap
        local = at.astimezone(tz)
        original = str(window.get("start"))
        start = f"{local.minute} {local.hour} * * *"
        window["start"] = start
        if isinstance(window, CommentedMap):
            window.yaml_add_eol_comment(f"tidal demo: was {original!r}", "start")
        schedule = str((doc.get("metadata") or {}).get("name") or path.stem)
        out.append(DemoWindow(schedule, window_name, at, start, original, zone))
    return out
