"""Custom kinds with replicas over HTTP: 20 InferenceServices (a CRD interpreted by a
ResourceInterpreterCustomization's Lua scripts) switch like Deployments, static and
DynamicWeight, with a 100% floor and no dip; surge overrides set the field the customization
revises (spec.serving.instances); a kind without replicas is refused before any write."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.surge_helpers import FULL_AVAILABILITY, desired, dips, splits
from tests.e2e.switch_helpers import (
    DAY,
    NS,
    MakeEmulator,
    client_for,
    cluster,
    dynamic_placement,
    namespace,
    schedule_text,
    switch,
    weights_window,
    write_schedule,
    writes,
)
from tidal.engine import events as ev
from tidal.engine.refusal import PlanRefused
from tidal.karmada.client import OVERRIDE_POLICIES, RESOURCE_BINDINGS
from tidal.karmada.overrides import list_overrides
from tidal_sim.topology import load_yaml_documents

pytestmark = pytest.mark.e2e

KINDS = Path(__file__).parents[2] / "sim/tidal_sim/topologies/kinds/inference-service.yaml"
API, KIND = "inference.tidal.io/v1alpha1", "InferenceService"
WORKLOADS = f"""
- apiVersion: {API}
  kind: {KIND}
  namespace: {NS}
  labelSelector: {{matchLabels: {{team: t1}}}}
"""
STATIC = weights_window("night", "23:00", {"cluster-b": 1}) + weights_window(
    "day", "07:00", {"cluster-a": 4, "cluster-b": 1}
)


def kind_documents() -> list[dict[str, Any]]:
    """The InferenceService CRD and its ResourceInterpreterCustomization."""
    return [d for d in load_yaml_documents(KINDS.read_text()) if d]


def inference_service(name: str, replicas: int, cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": KIND,
        "metadata": {"name": name, "namespace": NS, "labels": {"team": "t1"}},
        "spec": {
            "serving": {
                "instances": replicas,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "model", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                        ]
                    }
                },
            }
        },
    }


def kind_cpp(name: str, placement: dict[str, Any], *, lazy: bool = False) -> dict[str, Any]:
    spec = {
        "resourceSelectors": [
            {
                "apiVersion": API,
                "kind": KIND,
                "namespace": NS,
                "labelSelector": {"matchLabels": {"team": "t1"}},
            }
        ],
        "placement": copy.deepcopy(placement),
    }
    if lazy:
        spec["activationPreference"] = "Lazy"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def topology(
    placement: dict[str, Any], *, count: int = 20, lazy: bool = False
) -> list[dict[str, Any]]:
    topo = [
        *kind_documents(),
        cluster("cluster-a", startup=0.5, termination=0.2),
        cluster("cluster-b", startup=0.5, termination=0.2),
        namespace(),
        kind_cpp("team-cpp", placement, lazy=lazy),
    ]
    return topo + [inference_service(f"llm-{i:02d}", 5) for i in range(count)]


def name(i: int) -> str:
    return f"{NS}/{KIND}/llm-{i:02d}"


def _splits_once(emu: Any, done: Any, seconds: float) -> dict[str, dict[str, int]]:
    """The ready splits once `done(splits)` holds, or as they are after `seconds`."""
    deadline = time.monotonic() + seconds
    now = splits(emu)
    while not done(now) and time.monotonic() < deadline:
        time.sleep(0.05)
        now = splits(emu)
    return now


def converge(
    emu: Any, want: dict[str, dict[str, int]], seconds: float = 5.0
) -> dict[str, dict[str, int]]:
    """The ready splits once they are `want` (the emulator applies the run's last override
    deletion moments after the run returns), or as they are after `seconds`."""
    return _splits_once(emu, lambda now: now == want, seconds)


def day_served(emu: Any, count: int = 20, seconds: float = 10.0) -> dict[str, dict[str, int]]:
    """The ready splits once all `count` workloads run what Karmada assigned them (the
    emulator's first scheduling and start-ups, slower on a loaded machine), or as they are
    after `seconds`."""
    return _splits_once(emu, lambda now: len(now) == count and now == desired(emu), seconds)


def override_paths(client: Any, into: set[str]) -> Any:
    """An event callback collecting the plaintext paths of the OverridePolicies there now."""

    def collect(event: Any) -> None:
        if isinstance(event, ev.WaveProgress | ev.GatePassed):
            listing = client.request("list", OVERRIDE_POLICIES, "GET", OVERRIDE_POLICIES.path(NS))
            for op in listing["items"]:
                for rule in op["spec"]["overrideRules"]:
                    into.update(p["path"] for p in rule["overriders"]["plaintext"])

    return collect


def test_twenty_custom_workloads_switch_night_and_day_without_a_dip(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Static 4:1 -> cluster-b -> 4:1: every wave surges spec.serving.instances first, the
    100% floor holds, no workload or kept share dips, no override is left."""
    emu = make_switch_emulator(topology(DAY))
    client = client_for(emu, tmp_path)
    path = write_schedule(
        tmp_path,
        schedule_text(
            "team-isvc",
            FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 5"),
            windows=STATIC,
            workloads=WORKLOADS,
        ),
    )
    day = {name(i): {"cluster-a": 4, "cluster-b": 1} for i in range(20)}
    night = {w: {"cluster-b": 5} for w in day}
    assert converge(emu, day) == day
    paths: set[str] = set()
    for window, before, after in (("night", day, night), ("day", night, day)):
        since = emu.clock.now()
        record = switch(client, path, window, on_event=override_paths(client, paths))
        assert record.result == "succeeded", record.to_json()
        assert len(record.waves) == 4
        assert converge(emu, after) == after
        assert dips(emu, since, before, after) == []
        assert list_overrides(client, schedule="team-isvc") == []
    assert paths == {"/spec/serving/instances"}


DYNAMIC_NIGHT = """
- name: night
  start: "22:00"
  policies:
    - kind: ClusterPropagationPolicy
      name: team-cpp
      patch:
        spec:
          placement:
            clusterAffinity:
              clusterNames: [cluster-b]
"""


def test_twenty_custom_workloads_move_off_a_dynamic_weight_cluster_without_a_dip(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A Lazy DynamicWeight policy over both clusters narrowed to cluster-b, moved wave by
    wave: all replicas end in cluster-b, none dips below its spec or the share a cluster
    keeps. (Not Lazy, Karmada would reschedule every binding at the patch, before any
    surge is ready: docs/custom-kinds.md.)"""
    emu = make_switch_emulator(topology(dynamic_placement(), lazy=True))
    client = client_for(emu, tmp_path)
    path = write_schedule(
        tmp_path,
        schedule_text(
            "team-isvc-dyn",
            FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 5"),
            windows=DYNAMIC_NIGHT,
            workloads=WORKLOADS,
        ),
    )
    before = day_served(emu)
    assert set(before) == {name(i) for i in range(20)}
    assert all(set(split) == {"cluster-a", "cluster-b"} for split in before.values())
    after = {w: {"cluster-b": 5} for w in before}
    since = emu.clock.now()
    record = switch(client, path, "night")
    assert record.result == "succeeded", record.to_json()
    assert len(record.waves) == 4
    assert converge(emu, after) == after
    assert dips(emu, since, before, after) == []
    assert list_overrides(client, schedule="team-isvc-dyn") == []


def test_a_custom_kind_without_replicas_is_refused_before_any_write(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """No customization gives InferenceService replicas: the switch is refused naming the kind
    and where the schedule names it, and nothing is written."""
    topo = [d for d in topology(DAY, count=2) if d["kind"] != "ResourceInterpreterCustomization"]
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    path = write_schedule(
        tmp_path, schedule_text("team-isvc", FULL_AVAILABILITY, windows=STATIC, workloads=WORKLOADS)
    )
    emu.reset_requests()
    with pytest.raises(PlanRefused) as refused:
        switch(client, path, "night")
    assert any(
        p.startswith(f"spec.workloads[0].kind: {KIND} ({API}): tidal cannot find its replicas")
        for p in refused.value.problems
    )
    assert writes(emu) == []


def test_a_revision_that_writes_no_field_refuses_the_surge(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A replicaRevision script that does not write the count anywhere: a surge is refused
    before any write, naming the kind."""
    topo = topology(DAY, count=2)
    for d in topo:
        if d["kind"] == "ResourceInterpreterCustomization":
            d["spec"]["customizations"]["replicaRevision"]["luaScript"] = (
                "function ReviseReplica(obj, n) return obj end"
            )
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    path = write_schedule(
        tmp_path, schedule_text("team-isvc", FULL_AVAILABILITY, windows=STATIC, workloads=WORKLOADS)
    )
    emu.reset_requests()
    with pytest.raises(PlanRefused) as refused:
        switch(client, path, "night")
    assert any(
        f"surge: {KIND} ({API}): its replicaRevision script writes the replica count "
        "to no field" in p
        for p in refused.value.problems
    )
    assert writes(emu) == []


def test_ready_replicas_reflected_under_another_name_are_counted_by_the_schedule_field(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A customization reflecting ready replicas as status.readyInstances (not readyReplicas):
    with `readyReplicasField: status.readyInstances` the surge waits for them, floors count
    them, and the switch passes without a dip."""
    topo = topology(DAY, count=4)
    for d in topo:
        if d["kind"] == "ResourceInterpreterCustomization":
            rules = d["spec"]["customizations"]
            rules["statusReflection"]["luaScript"] = rules["statusReflection"]["luaScript"].replace(
                "status.readyReplicas =", "status.readyInstances ="
            )
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    workloads = WORKLOADS + "  readyReplicasField: status.readyInstances\n"
    path = write_schedule(
        tmp_path, schedule_text("team-isvc", FULL_AVAILABILITY, windows=STATIC, workloads=workloads)
    )
    binding = client.request(
        "get", RESOURCE_BINDINGS, "GET", RESOURCE_BINDINGS.path(NS, "llm-00-inferenceservice")
    )
    item = binding["status"]["aggregatedStatus"][0]["status"]
    assert "readyReplicas" not in item and item["readyInstances"] >= 1
    (tmp_path / "unnamed").mkdir()
    unnamed = write_schedule(
        tmp_path / "unnamed",
        schedule_text("team-isvc", FULL_AVAILABILITY, windows=STATIC, workloads=WORKLOADS),
    )
    with pytest.raises(PlanRefused, match="floor does not hold now"):
        switch(client, unnamed, "night")  # counted as readyReplicas: none ready
    day = {name(i): {"cluster-a": 4, "cluster-b": 1} for i in range(4)}
    night = {w: {"cluster-b": 5} for w in day}
    since = emu.clock.now()
    record = switch(client, path, "night")
    assert record.result == "succeeded", record.to_json()
    assert converge(emu, night) == night
    assert dips(emu, since, day, night) == []


def test_a_member_whose_custom_workloads_never_get_ready_halts_the_switch(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b's pods never start (its operator reports nothing ready): the first wave's
    surge times out, the run halts, nothing left cluster-a and no override is left."""
    topo = topology(DAY, count=6)
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    day = {name(i): {"cluster-a": 4, "cluster-b": 1} for i in range(6)}
    assert converge(emu, day) == day
    emu.set_pods_fail("cluster-b", True)
    rollout = FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 3").replace(
        "waveTimeout: 60s", "waveTimeout: 5s"
    )
    path = write_schedule(
        tmp_path, schedule_text("team-isvc-stop", rollout, windows=STATIC, workloads=WORKLOADS)
    )
    since = emu.clock.now()
    record = switch(client, path, "night")
    assert record.result == "failed", record.to_json()
    assert len(record.waves) == 1 and "not ready within waveTimeout" in record.waves[0].reason
    assert dips(emu, since, day, {w: {"cluster-a": 4} for w in day}) == []
    assert list_overrides(client, schedule="team-isvc-stop") == []
