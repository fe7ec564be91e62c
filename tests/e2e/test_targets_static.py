"""The example static-weight team (schedules/team-1005.yaml) on each --karmada target: the night
window moves its Deployments to cluster-b wave by wave with the cluster-b floor held, the day
window moves them back; per-wave placements are recorded for docs/fidelity.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.scenario_checks import converged_at, first_leave, floor_breaches, split
from tests.e2e.switch_helpers import load_one, switch
from tests.e2e.targets import Placement, RealTarget, Target
from tidal.engine import events as ev
from tidal.engine.planning import build_plan
from tidal_sim.emulator import DEFAULT_TOPOLOGY

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
TEAM = {"atms-app/teamid": "1005"}
CLUSTERS = ("cluster-a", "cluster-b")


def team_objects() -> list[dict[str, Any]]:
    """The demo topology's namespace ai-app, team-1005-cpp (4:1) and team 1005's Deployments."""
    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    return [
        d
        for d in docs
        if (d["kind"] == "Namespace" and d["metadata"]["name"] == "ai-app")
        or d.get("metadata", {}).get("labels", {}).get("atms-app/teamid") == "1005"
    ]


def fast_schedule(tmp: Path, wave_timeout: float) -> Path:
    """schedules/team-1005.yaml with no pause between waves (the test does not wait minutes)."""
    doc = yaml.safe_load((REPO / "schedules" / "team-1005.yaml").read_text())
    doc["spec"]["rollout"].update(pauseBetweenWaves="0s", waveTimeout=f"{int(wave_timeout)}s")
    for window in doc["spec"]["windows"]:
        window.pop("rollout", None)
    path = tmp / "team-1005.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _day_ready(replicas: dict[str, int]) -> Any:
    def ok(now: Placement) -> bool:
        return all(
            now.get((w, "cluster-b"), (0, 0))[1] >= 1
            and now.get((w, "cluster-a"), (0, 0))[1] >= 1
            and sum(now.get((w, c), (0, 0))[1] for c in CLUSTERS) == n
            and sum(now.get((w, c), (0, 0))[0] for c in CLUSTERS) == n
            for w, n in replicas.items()
        )

    return ok


def _night_ready(replicas: dict[str, int]) -> Any:
    def ok(now: Placement) -> bool:
        return all(
            now.get((w, "cluster-b"), (0, 0)) == (n, n)
            and now.get((w, "cluster-a"), (0, 0)) == (0, 0)
            for w, n in replicas.items()
        )

    return ok


def _run_window(target: Target, path: Path, window: str, workloads: list[str]) -> dict[str, Any]:
    """Run `window`; return the record, the switch start time and per-wave placements."""
    waves: list[dict[str, Any]] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveFinished):
            waves.append(
                {
                    "result": event.result,
                    "t": target.now(),
                    "placements": split(target.placements(), workloads, CLUSTERS),
                }
            )

    plan = build_plan(target.client(), load_one(path).schedule, window)
    predicted = {p.name: dict(p.after) for p in plan.plan.workloads}
    t0 = target.now()
    record = switch(
        target.client(), path, window, on_event=on_event, policy_settle=target.policy_settle
    )
    assert record.result == "succeeded", record.to_json()
    for wave, seen in zip(record.waves, waves, strict=True):
        seen["workloads"] = wave.workloads
    return {"t0": t0, "record": record, "waves": waves, "predicted": predicted}


def test_example_static_team_night_then_day(
    target: Target, fidelity: dict[str, Any], tmp_path: Path
) -> None:
    """Night: every team-1005 Deployment ends 0/all in waves, cluster-b never below 1 ready and
    no wave starts before the previous one converged; day: back to 4:1 with the floor held."""
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
    before = target.wait_serving(_day_ready(replicas), replicas, "day placement, all ready")
    fidelity["before"] = split(before, names, CLUSTERS)
    path = fast_schedule(tmp_path, target.patience)

    for window, arrived in (("night", _night_ready), ("day", _day_ready)):
        run = _run_window(target, path, window, names)
        record = run["record"]
        assert len(record.waves) >= 2 and all(w.result == "succeeded" for w in record.waves)
        final = target.wait_serving(
            arrived(replicas), replicas, f"{window} placement, all ready", 30
        )
        timeline = target.timeline()
        assert floor_breaches(timeline, run["t0"], "cluster-b", set(names), 1) == []
        for earlier, later in zip(record.waves, record.waves[1:], strict=False):
            done = max(
                converged_at(timeline, run["t0"], w) or float("inf") for w in earlier.workloads
            )
            # moved: a replica left (a surge raised ahead only adds: tidal.engine.pacing)
            moved = min(
                first_leave(timeline, run["t0"], w) or float("inf") for w in later.workloads
            )
            missed = [m for m in getattr(target, "missed_reads", []) if m[0] >= run["t0"]]
            assert done <= moved, (
                f"{window}: wave {later.index} moved before "
                f"{earlier.index} converged; member reads missed: {missed}"
            )
        actual = {
            w: {c: n for c, (n, _) in split(final, [w], CLUSTERS)[w].items() if n} for w in names
        }
        fidelity[window] = {
            "waves": run["waves"],
            "final": split(final, names, CLUSTERS),
            "predicted": run["predicted"],
            "seconds": round(target.now() - run["t0"], 1),
        }
        # tidal plan, workload by workload, against what the scheduler then did
        assert {w: run["predicted"].get(w) for w in names} == actual
