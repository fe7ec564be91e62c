"""The benchmark's TidalSchedule files, written to a temp dir and loaded by tidal's own loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tidal.loading import load_schedules


def write_schedule(
    directory: Path,
    name: str,
    windows: list[dict[str, Any]],
    rollout: dict[str, Any],
    workloads: list[dict[str, Any]] | None = None,
    extra_files: dict[str, dict[str, Any]] | None = None,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    yaml = YAML()
    for rel, manifest in (extra_files or {}).items():
        with (directory / rel).open("w") as fh:
            yaml.dump(manifest, fh)
    doc: dict[str, Any] = {
        "apiVersion": "tidal.io/v1alpha1",
        "kind": "TidalSchedule",
        "metadata": {"name": name},
        "spec": {"timeZone": "UTC", "windows": windows, "rollout": rollout},
    }
    if workloads:
        doc["spec"]["workloads"] = workloads
    path = directory / f"{name}.yaml"
    with path.open("w") as fh:
        yaml.dump(doc, fh)
    return path


def load_one(path: Path) -> Any:
    """The LoadedSchedule of one file; a clear error if the file does not load."""
    result = load_schedules([path])
    if result.errors:
        raise ValueError("; ".join(str(e) for e in result.errors))
    return result.schedules[0]


def patch_window(name: str, policy: str, placement: dict[str, Any], trigger: str) -> dict[str, Any]:
    return {
        "name": name,
        "start": "23:00" if name == "night" else "07:00",
        "trigger": trigger,
        "policies": [
            {
                "kind": "ClusterPropagationPolicy",
                "name": policy,
                "patch": {"spec": {"placement": placement}},
            }
        ],
    }
