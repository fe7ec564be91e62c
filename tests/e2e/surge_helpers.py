"""Shared by the make-before-break e2e tests: a GPU team on two clusters, the night and day
windows, and readings of the emulator's timeline (dips, splits)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.switch_helpers import (
    DAY,
    NS,
    cluster,
    cpp,
    deployment,
    namespace,
    schedule_text,
    weights_window,
    write_schedule,
)
from tests.e2e.switch_helpers import switch as run_window
from tidal.engine.budget import Need, Versions
from tidal.karmada.client import CLUSTERS, MERGE_PATCH, KarmadaClient
from tidal.karmada.overrides import list_overrides

GPU = "nvidia.com/gpu"


class Ledger:
    """A SurgeBudget that records each reserve (with its need) and release; `room`: whether
    every reservation is granted."""

    def __init__(self, room: bool) -> None:
        self.room = room
        self.calls: list[tuple[str, str, dict[str, dict[str, float]]]] = []

    def reserve(
        self, holder: str, need: Need, free: Need, versions: Versions | None = None
    ) -> bool:
        self.calls.append(("reserve", holder, {c: dict(a) for c, a in need.items()}))
        return self.room

    def running(self, holder: str, versions: Callable[[], Versions]) -> None:
        self.calls.append(("running", holder, {}))

    def release(self, holder: str, versions: Callable[[], Versions] | None = None) -> None:
        self.calls.append(("release", holder, {}))


FULL_AVAILABILITY = """
        waveSize: 2
        pauseBetweenWaves: 0s
        waveTimeout: 60s
        floors:
          - minAvailablePercent: 100
    """
NIGHT_AND_DAY = weights_window("night", "23:00", {"cluster-b": 1}) + weights_window(
    "day", "07:00", {"cluster-a": 4, "cluster-b": 1}
)


def gpu_cluster(name: str, gpus: int, startup: float = 2.0) -> dict[str, Any]:
    c = cluster(name, startup=startup, termination=0.5)
    c["status"]["resourceSummary"]["allocatable"][GPU] = str(gpus)
    return c


def gpu_deployment(name: str, replicas: int) -> dict[str, Any]:
    d = deployment(name, "t1", replicas)
    d["metadata"]["labels"]["size"] = "big" if replicas >= 3 else "small"
    d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][GPU] = "1"
    return d


def team(replicas: list[int], *, b_gpus: int = 64) -> list[dict[str, Any]]:
    """cluster-a (64 GPUs) and cluster-b, team t1 placed 4:1, one GPU per replica."""
    topo = [
        gpu_cluster("cluster-a", 64),
        gpu_cluster("cluster-b", b_gpus),
        namespace(),
        cpp("team-cpp", "t1", DAY),
    ]
    return topo + [gpu_deployment(f"web-{i}", n) for i, n in enumerate(replicas)]


def surge_schedule(tmp: Path, rollout: str) -> Path:
    return write_schedule(tmp, schedule_text("team-s", rollout, windows=NIGHT_AND_DAY))


def dips(
    emu: Any, since: float, before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
) -> list[str]:
    """Every moment (since `since`) a workload had fewer ready replicas than its spec, or a
    cluster fewer than the share it keeps (min of before and after)."""
    replicas = {w: sum(split.values()) for w, split in before.items()}
    ready: dict[str, dict[str, int]] = {}
    out = []
    for s in emu.timeline():
        ready.setdefault(s["workload"], {})[s["cluster"]] = s["ready"]
        if s["t"] < since or s["workload"] not in replicas:
            continue
        w = s["workload"]
        total = sum(ready[w].values())
        if total < replicas[w]:
            out.append(f"{w} at {s['t']}: {total}/{replicas[w]} ready")
        for c in set(before[w]) | set(after[w]):
            keep = min(before[w].get(c, 0), after[w].get(c, 0))
            if ready[w].get(c, 0) < keep:
                out.append(f"{w} {c} at {s['t']}: {ready[w].get(c, 0)} < {keep}")
    return out


def splits(emu: Any) -> dict[str, dict[str, int]]:
    """Ready per workload and cluster now (emulator timeline)."""
    out: dict[str, dict[str, int]] = {}
    for s in emu.timeline():
        out.setdefault(s["workload"], {})[s["cluster"]] = s["ready"]
    return {w: {c: n for c, n in split.items() if n} for w, split in out.items()}


def desired(emu: Any) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for s in emu.timeline():
        out.setdefault(s["workload"], {})[s["cluster"]] = s["assigned"]
    return {w: {c: n for c, n in split.items() if n} for w, split in out.items()}


def no_overrides(client: KarmadaClient) -> None:
    assert list_overrides(client, schedule="team-s") == []


def switch_without_dips(
    emu: Any,
    client: KarmadaClient,
    path: Path,
    window: str,
    before: dict[str, dict[str, int]],
    after: dict[str, dict[str, int]],
    events: list[Any] | None = None,
) -> None:
    """`window` succeeds, no workload goes below its shares on the way, no override is left."""
    since = emu.clock.now()
    record = run_window(client, path, window, events=events)
    assert record.result == "succeeded", record.to_json()
    assert dips(emu, since, before, after) == []
    no_overrides(client)


def plan_json(path: Path, kubeconfig: Path, window: str) -> dict[str, Any]:
    from click.testing import CliRunner

    from tidal.cli.main import cli

    result = CliRunner().invoke(
        cli, ["plan", str(path), "--window", window, "--kubeconfig", str(kubeconfig), "-o", "json"]
    )
    assert result.exit_code in (0, 3), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def slow_startup(client: KarmadaClient, cluster: str, seconds: float) -> None:
    """From now on `cluster`'s pods take `seconds` (simulated) to start: a surge there waits."""
    client.request(
        "patch",
        CLUSTERS,
        "PATCH",
        CLUSTERS.path(name=cluster),
        content_type=MERGE_PATCH,
        body={"metadata": {"annotations": {"sim.tidal.io/pod-startup-seconds": f"{seconds:g}"}}},
    )


def scale(client: KarmadaClient, name: str, replicas: int, namespace: str = NS) -> None:
    """Set a Deployment's spec.replicas, as a user or an autoscaler would."""
    res = client.resource_for("apps/v1", "Deployment")
    client.request(
        "patch",
        res,
        "PATCH",
        res.path(namespace, name),
        content_type=MERGE_PATCH,
        body={"spec": {"replicas": replicas}},
    )
