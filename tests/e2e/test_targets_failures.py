"""A floor breach on each --karmada target: a later wave's workload is scaled up while wave 1
runs, so it falls below its minAvailablePercent floor; the running wave fails at once and
`halt` leaves things there while `rollback` returns wave 1 to the day placement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.scenario_checks import split
from tests.e2e.switch_helpers import switch
from tests.e2e.targets import Placement, RealTarget, Target
from tests.e2e.test_targets_static import CLUSTERS, REPO, _day_ready, team_objects
from tidal.engine import events as ev
from tidal.karmada.policies import MERGE_PATCH

pytestmark = pytest.mark.e2e


def floor_schedule(tmp: Path, on_failure: str, wave_timeout: float) -> Path:
    """team-1005 with a 20% availability floor (planned waves keep 1 of 3-5: 20% or more),
    moving directly: the breach comes while wave 1 has moved (a surging wave 1 would still be
    waiting for its raised replicas, with nothing to roll back)."""
    doc = yaml.safe_load((REPO / "schedules" / "team-1005.yaml").read_text())
    doc["spec"]["rollout"].update(
        pauseBetweenWaves="0s",
        waveTimeout=f"{int(wave_timeout)}s",
        onFailure=on_failure,
        floors=[{"minAvailablePercent": 20}],
        strategy="direct",
    )
    for window in doc["spec"]["windows"]:
        window.pop("rollout", None)
    path = tmp / "team-1005.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("on_failure", ["halt", "rollback"])
def test_floor_breach_mid_wave(
    target: Target, fidelity: dict[str, Any], tmp_path: Path, on_failure: str
) -> None:
    """Scaling the last workload to 50 during wave 1 breaches its floor: the run stops after
    wave 1; halt leaves it there, rollback returns wave 1's workloads to the day placement
    (and the victim too, in its own wave, when Karmada placed it at night)."""
    if isinstance(target, RealTarget):
        target.reset()
    objs = team_objects()
    target.apply(objs)
    replicas = {
        f"ai-app/Deployment/{d['metadata']['name']}": d["spec"]["replicas"]
        for d in objs
        if d["kind"] == "Deployment"
    }
    names = sorted(replicas)
    target.wait_serving(_day_ready(replicas), replicas, "day placement, all ready")
    client = target.client()
    deployments = client.resource_for("apps/v1", "Deployment")
    victim = names[-1].rsplit("/", 1)[1]

    def on_event(event: Any) -> None:
        events.append(event)
        if isinstance(event, ev.WaveStarted) and event.wave == 1:
            client.request(
                "patch",
                deployments,
                "PATCH",
                deployments.path("ai-app", victim),
                body={"spec": {"replicas": 50}},
                content_type=MERGE_PATCH,
            )

    events: list[Any] = []
    record = switch(
        client,
        floor_schedule(tmp_path, on_failure, target.patience),
        "night",
        on_event=on_event,
        policy_settle=target.policy_settle,
    )
    rollbacks = [e for e in events if isinstance(e, ev.WaveStarted) and e.rollback]
    if on_failure == "halt":
        assert record.result == "failed" and not rollbacks, record.to_json()
    else:  # the victim, still below its floor as the rollback begins, does not fail it
        assert record.result == "rolledBack", record.to_json()
        assert rollbacks[0].wave == 1, rollbacks
        # then the victim's own wave when Karmada placed it at night (its scale, Lazy policy)
        assert all(e.workloads == (names[-1],) for e in rollbacks[1:]), rollbacks
    assert [(w.index, w.result) for w in record.waves] == [(1, "failed")]
    breaches = [e for e in events if isinstance(e, ev.FloorBreached)]
    assert breaches and breaches[0].workload == names[-1]
    finished = next(e for e in events if isinstance(e, ev.WaveFinished))
    assert finished.failure == "floor_breach"
    first = set(record.waves[0].workloads)

    def settled(now: Placement) -> bool:
        if on_failure == "halt":
            return True
        return bool(_day_ready({w: replicas[w] for w in first})(now))

    after = target.wait_for(settled, f"{on_failure}: placements after the breach", 60)
    fidelity[on_failure] = {
        "result": record.result,
        "wave1": sorted(first),
        "breach": breaches[0].workload,
        "final": split(after, names, CLUSTERS),
    }
