"""docs/custom-kinds.md: its schedule loads clean, and the customization it quotes is the one
the emulator's test kind ships with (target and scripts of the rules it shows in full)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tidal.loading import load_schedules

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "custom-kinds.md"
KINDS = REPO / "sim" / "tidal_sim" / "topologies" / "kinds" / "inference-service.yaml"


def blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_documented_schedule_loads(tmp_path: Path) -> None:
    """The TidalSchedule block validates with no error."""
    (text,) = [b for b in blocks() if "kind: TidalSchedule" in b]
    path = tmp_path / "team-inference.yaml"
    path.write_text(text)
    result = load_schedules([path])
    assert [str(e) for e in result.errors] == []
    (loaded,) = result.schedules
    assert loaded.schedule.spec.workloads[0].kind == "InferenceService"


def test_the_documented_customization_is_the_shipped_one() -> None:
    """Target, replicaResource and replicaRevision quoted in the doc equal the shipped file's."""
    (text,) = [b for b in blocks() if "kind: ResourceInterpreterCustomization" in b]
    head = text.split("    statusReflection:")[0]
    quoted = yaml.safe_load(head)
    shipped = next(
        d
        for d in yaml.safe_load_all(KINDS.read_text())
        if d["kind"] == "ResourceInterpreterCustomization"
    )
    assert quoted["spec"]["target"] == shipped["spec"]["target"]
    for rule in ("replicaResource", "replicaRevision"):
        assert quoted["spec"]["customizations"][rule] == shipped["spec"]["customizations"][rule]
