"""The remote mode's arms, run the same way against any plane a kubeconfig reaches: the surge
night (B1: touch trigger, `strategy: surge`), tidal's rebalance swap and the naive controller
(B3). The fleet is the demo topology's team 1005 (its static 4:1 policy, 3-5 replica GPU
Deployments), the one the real-Karmada tier runs; requests are counted on the client side."""

from __future__ import annotations

import copy
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.naive import run_naive
from benchmarks.real_plane import NAMESPACE, Obj, RemotePlane, RequestCounter, Sampler
from benchmarks.schedules import load_one, write_schedule
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import run_switch

TEAM = "1005"
DAY_POLICY = "team-1005-cpp"
NIGHT_POLICY = "team-1005-night"
WAVES = 4  # waves of 25%
NIGHT = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {
        "staticWeightList": [{"targetCluster": {"clusterNames": ["cluster-b"]}, "weight": 1}]
    },
}


def team_objects(workloads: int) -> list[Obj]:
    """Namespace ai-app, team-1005-cpp (4:1) and the first `workloads` team 1005 Deployments."""
    from tidal_sim.emulator import DEFAULT_TOPOLOGY

    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    ns = [d for d in docs if d["kind"] == "Namespace" and d["metadata"]["name"] == NAMESPACE]
    team = [
        d for d in docs if d.get("metadata", {}).get("labels", {}).get("atms-app/teamid") == TEAM
    ]
    policies = [d for d in team if d["kind"] != "Deployment"]
    deployments = sorted(
        (d for d in team if d["kind"] == "Deployment"), key=lambda d: d["metadata"]["name"]
    )
    return ns + policies + deployments[:workloads]


def replicas_of(objs: list[Obj]) -> dict[str, int]:
    return {
        d["metadata"]["name"]: int(d["spec"]["replicas"]) for d in objs if d["kind"] == "Deployment"
    }


def _night_policy(day: Obj) -> Obj:
    night = copy.deepcopy(day)
    night["metadata"] = {"name": NIGHT_POLICY, "labels": {"atms-app/teamid": TEAM}}
    night["spec"]["placement"]["replicaScheduling"] = copy.deepcopy(NIGHT)
    # Lazy: the swap itself moves nothing; each workload moves when its rebalancer says
    night["spec"]["activationPreference"] = "Lazy"
    return night


def schedule(workdir: Path, trigger: str, day: Obj, wave_size: str) -> Any:
    if trigger == "touch":
        change: Obj = {
            "kind": "ClusterPropagationPolicy",
            "name": DAY_POLICY,
            "patch": {"spec": {"placement": {"replicaScheduling": NIGHT}}},
        }
        extra: dict[str, Obj] = {}
    else:
        change = {
            "kind": "ClusterPropagationPolicy",
            "swap": {"from": DAY_POLICY, "to": "night.yaml"},
        }
        extra = {"night.yaml": _night_policy(day)}
    window = {"name": "night", "start": "23:00", "trigger": trigger, "policies": [change]}
    rollout = {
        "waveSize": wave_size,
        "pauseBetweenWaves": "2s",
        "waveTimeout": "3m",
        "order": "name",
        "strategy": "surge",
        # the rebalance arm is B3's: its floor is the cluster-b one only, as there
        "floors": [{"clusters": ["cluster-b"], "minReadyReplicas": 1}]
        + ([{"minAvailablePercent": 100}] if trigger == "touch" else []),
        "onFailure": "halt",
    }
    workloads = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": NAMESPACE,
            "labelSelector": {"matchLabels": {"atms-app/teamid": TEAM}},
            "readyReplicasField": "status.readyReplicas",
        }
    ]
    path = write_schedule(workdir / trigger, f"team-{TEAM}", [window], rollout, workloads, extra)
    return load_one(path)


# setting up ---------------------------------------------------------------------------------
def reset(plane: RemotePlane) -> None:
    """Remove what an earlier arm (or run) left, until no binding of ai-app is left."""
    plane.delete_all(
        [("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")], "atms-app/teamid"
    )
    plane.delete_all(
        [
            ("apps.karmada.io/v1alpha1", "WorkloadRebalancer"),
            ("policy.karmada.io/v1alpha1", "OverridePolicy"),
            ("apps/v1", "Deployment"),
        ]
    )
    plane.wait(lambda b: not b, "no ResourceBinding left in ai-app")


def set_up(plane: RemotePlane, objs: list[Obj], settle: float) -> None:
    """A fresh day: every workload 4:1 over cluster-a/cluster-b and fully ready; then `settle`
    seconds (a real Cluster's status is refreshed every 10 s: the night's plan must see the
    destination's GPUs in use)."""
    reset(plane)
    if settle:
        time.sleep(settle)
    plane.apply(objs)
    want = replicas_of(objs)

    def day(bindings: dict[str, Obj]) -> bool:
        from benchmarks.real_plane import split

        for name, n in want.items():
            if name not in bindings:
                return False
            assigned, ready = split(bindings[name])
            if sum(assigned.values()) != n or ready != assigned or "cluster-b" not in ready:
                return False
        return True

    plane.wait(day, "the day placement, all ready")
    if settle:
        time.sleep(settle)


# results ------------------------------------------------------------------------------------
@dataclass
class Arm:
    counter: RequestCounter
    result: str
    seconds: float
    waves: list[dict[str, float]] = field(default_factory=list)  # touch/scheduled/converged
    converge_seconds: float = -1.0
    first_wave_seconds: float = -1.0  # from the switch's start to its first wave's first write
    bound_seconds: float = 0.0


def _at_night(want: dict[str, int], names: list[str]) -> Any:
    def scheduled(splits: dict[str, Any]) -> bool:
        return all(n in splits and splits[n][0] == {"cluster-b": want[n]} for n in names)

    def converged(splits: dict[str, Any]) -> bool:
        return all(
            n in splits and splits[n][0] == {"cluster-b": want[n]} and splits[n][1] == splits[n][0]
            for n in names
        )

    return scheduled, converged


def _name(workload: str) -> str:
    return workload.rsplit("/", 1)[-1]


def tidal_arm(
    plane: RemotePlane,
    objs: list[Obj],
    workdir: Path,
    trigger: str,
    *,
    policy_settle: float,
    round_seconds: float,
    status_settle: float,
    wave_size: str = "25%",
) -> Arm:
    """One night switch by tidal's engine; per-wave touch -> scheduled -> converged from the
    sampled bindings; the capacity bound as B1's (rounds of `round_seconds`)."""
    set_up(plane, objs, status_settle)
    want = replicas_of(objs)
    day = next(o for o in objs if o["kind"] == "ClusterPropagationPolicy")
    loaded = schedule(workdir, trigger, day, wave_size)
    in_a = sum(
        int(plane_split.get("cluster-a", 0))
        for plane_split in (_assigned(b) for b in plane.bindings().values())
    )
    free_b = plane.free_gpus("cluster-b")
    rounds = math.ceil(in_a / max(free_b, 1)) if in_a else 0
    started: list[tuple[float, list[str]]] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ev.WaveStarted) and not event.rollback:
            started.append((time.time(), [_name(w) for w in event.workloads]))

    counter = RequestCounter()
    client = plane.client(counter)
    sampler = Sampler(plane)
    t0 = time.time()
    with sampler.running():
        record = run_switch(
            client,
            loaded,
            "night",
            clock=SystemClock(),
            journal=InMemoryJournal(),
            on_event=on_event,
            policy_settle=policy_settle,
        )
        seconds = time.time() - t0
        everyone = sorted(want)
        _, all_converged = _at_night(want, everyone)
        deadline = time.monotonic() + 60
        while sampler.first(t0, all_converged) is None and time.monotonic() < deadline:
            time.sleep(0.2)
    client.close()
    arm = Arm(counter, f"{record.result} in {len(record.waves)} waves", seconds)
    arm.bound_seconds = rounds * round_seconds
    done = sampler.first(t0, all_converged)
    arm.converge_seconds = (done - t0) if done is not None else -1.0
    if started:
        arm.first_wave_seconds = started[0][0] - t0
    for touch, names in started:
        scheduled, converged = _at_night(want, names)
        t_s = sampler.first(touch, scheduled)
        t_c = sampler.first(touch, converged)
        if t_s is not None and t_c is not None:
            arm.waves.append(
                {"touch_to_scheduled": t_s - touch, "scheduled_to_converged": t_c - t_s}
            )
    return arm


def _assigned(binding: Obj) -> dict[str, int]:
    from benchmarks.real_plane import split

    return split(binding)[0]


def naive_arm(plane: RemotePlane, objs: list[Obj], *, status_settle: float) -> Arm:
    """benchmarks/naive.py's controller over the official client, each call counted."""
    from kubernetes import client

    set_up(plane, objs, status_settle)
    names = sorted(replicas_of(objs))
    size = max(1, math.ceil(len(names) / WAVES))
    waves = [names[i : i + size] for i in range(0, len(names), size)]
    day = next(o for o in objs if o["kind"] == "ClusterPropagationPolicy")
    counter = RequestCounter()
    api = counter.wrap(plane.kube_api())
    t0 = time.time()
    try:
        done = run_naive(
            client.CustomObjectsApi(api),
            waves,
            swap_from=DAY_POLICY,
            swap_to=_night_policy(day),
            speed=1.0,
            timeout=180.0,
        )
    finally:
        api.close()
    return Arm(counter, f"{done}/{len(waves)} waves converged", time.time() - t0)


def wave_figures(arm: Arm) -> dict[str, float]:
    """Median and max of the per-wave latencies, in ms (-1 when no wave was seen through)."""
    out: dict[str, float] = {}
    for part in ("touch_to_scheduled", "scheduled_to_converged"):
        values = [w[part] * 1000 for w in arm.waves]
        out[f"{part}_ms_median"] = round(statistics.median(values)) if values else -1.0
        out[f"{part}_ms_max"] = round(max(values)) if values else -1.0
    return out
