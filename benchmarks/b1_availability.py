"""B1: availability during the night switch, today's practice against tidal, side by side.

Two arms on identical fresh emulators (60 inference Deployments across three teams, day
weights 80/20, night 0/100, pod start-up of several simulated seconds, an accelerated clock):
- today: delete the day ClusterPropagationPolicy and create the night one at once;
- tidal: the same change as a TidalSchedule (swap, touch trigger, waves, floors) run by
  tidal's engine.
The DynamicWeight variant: after cluster-a's free GPUs shrink (training starts), today's swap
of two identical dynamic policies moves nothing, tidal's rebalance waves move the replicas.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import scenario as sc
from benchmarks.harness import RunConfig, Section, SimEngineClock, fmt, karmada_client, wait_until
from benchmarks.schedules import load_one, write_schedule
from benchmarks.timeline import Availability, Floor, analyse, converged_now
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import PlanRefused, run_switch
from tidal.sim.clock import ScaledClock
from tidal.sim.emulator import Emulator

SPEED = 10.0  # simulated seconds per wall second
FLOOR = Floor(("cluster-b",), 1, 50.0)
DAY = {"cluster-a": 4, "cluster-b": 1}
NIGHT = {"cluster-b": 1}


@dataclass
class Arm:
    name: str
    samples: list[dict[str, Any]]
    replicas: dict[str, int]
    start: float
    end: float
    availability: Availability
    result: str = ""
    reason: str = ""
    requests: int = 0
    in_a_after: int = 0
    notes: list[str] = field(default_factory=list)


def b1_fleet() -> sc.Fleet:
    return sc.Fleet(workloads=60, min_replicas=3, max_replicas=8, startup_seconds=5.0,
                    termination_seconds=2.0, gpu_a=400, gpu_b=360, scheduler_latency=0.1)


def _replicas(fleet: sc.Fleet) -> dict[str, int]:
    return {f"{sc.NAMESPACE}/Deployment/{name}": n
            for (name, _), n in zip(sc.workload_names(fleet), sc.replica_counts(fleet), strict=True)}


def _policies(dynamic: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    if dynamic:
        placement = sc.dynamic_placement(["cluster-a", "cluster-b"])
        return (sc.cpp("inference-day", placement, lazy=True),
                sc.cpp("inference-night", placement, lazy=True))
    return (sc.cpp("inference-day", sc.static_placement(DAY)),
            sc.cpp("inference-night", sc.static_placement(NIGHT)))


def _in_a(emu: Emulator) -> int:
    current = emu.controllers.timeline.current()
    return sum(a for (_, cluster), (a, _r) in current.items() if cluster == "cluster-a")


def _shrink_cluster_a(emu: Emulator, gpus: int) -> None:
    """Night: training takes cluster-a's GPUs; what is left for inference is `gpus`."""
    rtype = emu.kinds.by_kind("cluster.karmada.io/v1alpha1", "Cluster")
    obj = emu.store.get(rtype, None, "cluster-a")
    obj["status"]["resourceSummary"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
    emu.store.update(rtype, obj, subresource="status")


def run_arm(arm: str, *, dynamic: bool, workdir: Path, fleet: sc.Fleet | None = None,
            floors: list[dict[str, Any]] | None = None) -> Arm:
    fleet = fleet or b1_fleet()
    replicas = _replicas(fleet)
    day, night = _policies(dynamic)
    emu = Emulator(sc.topology(fleet, [day]), clock=ScaledClock(SPEED)).start()
    try:
        if not wait_until(lambda: converged_now(emu.timeline(), replicas), 120):
            raise RuntimeError("the day distribution did not converge in 120 s")
        if dynamic:
            _shrink_cluster_a(emu, 40)
        emu.reset_requests()
        start = emu.clock.now()
        out = Arm(arm, [], replicas, start, start, Availability())  # tidal: reset at the call
        if arm == "today":
            _today(emu, day, night)
        else:
            _tidal(emu, night, dynamic, workdir, out, floors)
        time.sleep(1.0 / SPEED * 3)
        wait_until(lambda: converged_now(emu.timeline(), replicas), 120)
        time.sleep(1.0 / SPEED)
        out.end = emu.clock.now()
        out.samples = emu.timeline()
        out.requests = int(emu.requests()["total"])
        out.in_a_after = _in_a(emu)
        out.availability = analyse(out.samples, replicas, out.start, out.end, FLOOR)
        return out
    finally:
        emu.stop()


def _today(emu: Emulator, day: dict[str, Any], night: dict[str, Any]) -> None:
    """What the platform does now: `kubectl delete cpp day; kubectl create -f night.yaml`."""
    from kubernetes import client

    from benchmarks.harness import kube_api

    api = kube_api(emu, "platform-script")
    objects = client.CustomObjectsApi(api)
    objects.delete_cluster_custom_object("policy.karmada.io", "v1alpha1",
                                         "clusterpropagationpolicies", day["metadata"]["name"])
    objects.create_cluster_custom_object("policy.karmada.io", "v1alpha1",
                                         "clusterpropagationpolicies", night)
    api.close()


def tidal_schedule(workdir: Path, night: dict[str, Any], dynamic: bool,
                   floors: list[dict[str, Any]] | None = None) -> Path:
    manifest = {k: v for k, v in night.items()}
    if dynamic:  # two policies, identical placement: swap them, then rebalance in waves
        change = {"kind": "ClusterPropagationPolicy",
                  "swap": {"from": "inference-day", "to": "night-policy.yaml"}}
    else:  # the day policy patched to the night placement, activated wave by wave
        change = {"kind": "ClusterPropagationPolicy", "name": "inference-day",
                  "patch": {"spec": {"placement": night["spec"]["placement"]}}}
    window = {"name": "night", "start": "23:00", "trigger": "rebalance" if dynamic else "touch",
              "policies": [change]}
    rollout = {"waveSize": "25%", "pauseBetweenWaves": "2s", "waveTimeout": "2m",
               "floors": floors if floors is not None else default_floors(dynamic),
               "onFailure": "halt"}
    return write_schedule(workdir, "inference-dynamic" if dynamic else "inference", [window],
                          rollout, extra_files={"night-policy.yaml": manifest})


def default_floors(dynamic: bool) -> list[dict[str, Any]]:
    if dynamic:
        return [{"clusters": ["*"], "minReadyReplicas": 1}]
    return [{"clusters": ["cluster-b"], "minReadyReplicas": 1}]


def _tidal(emu: Emulator, night: dict[str, Any], dynamic: bool, workdir: Path, out: Arm,
           floors: list[dict[str, Any]] | None) -> None:
    path = tidal_schedule(workdir, night, dynamic, floors)
    loaded = load_one(path)
    client = karmada_client(emu)
    out.start = emu.clock.now()
    try:
        record = run_switch(client, loaded, "night", clock=SimEngineClock(emu.clock),
                            journal=InMemoryJournal())
        out.result, out.reason = record.result, record.reason or ""
    except PlanRefused as exc:
        out.result, out.reason = "refused", "; ".join(exc.problems[:3])
    finally:
        client.close()
