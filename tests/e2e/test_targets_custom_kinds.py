"""Differential check of the custom kind on the emulator and on real Karmada (`--karmada=real` or
`both`): the same InferenceService CRD, ResourceInterpreterCustomization and objects give the
same interpreted replicas and requests, the same revised member replicas and the same
aggregated status. On the real plane the CRD is installed on the control plane and on both
members, and a small operator thread plays each member's controller: after a delay it writes
an InferenceService's status as ready (as a real operator would)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.surge_helpers import FULL_AVAILABILITY
from tests.e2e.switch_helpers import (
    DAY,
    NS,
    cluster,
    dynamic_placement,
    schedule_text,
    static_placement,
    switch,
    write_schedule,
)
from tests.e2e.targets import RealTarget, kubectl
from tests.e2e.test_switch_custom_kinds import (
    API,
    DYNAMIC_NIGHT,
    KIND,
    STATIC,
    WORKLOADS,
    inference_service,
    kind_cpp,
    kind_documents,
)
from tidal.karmada.overrides import list_overrides

pytestmark = pytest.mark.e2e

SIZES = {"llm-00": 4, "llm-01": 5, "llm-02": 3}
PLACEMENT = static_placement({"cluster-a": 3, "cluster-b": 1})
OPERATOR_DELAY = 2.0  # seconds before a member's operator reports an object ready
Row = dict[str, Any]


def objects() -> list[dict[str, Any]]:
    """The RIC, the namespace, the policy and the InferenceServices (the CRD apart)."""
    ric = [d for d in kind_documents() if d["kind"] == "ResourceInterpreterCustomization"]
    policy = kind_cpp("isvc-diff", PLACEMENT)
    policy["spec"]["resourceSelectors"][0]["labelSelector"] = {"matchLabels": {"team": "diff"}}
    services = []
    for name, n in SIZES.items():
        svc = inference_service(name, n, cpu="250m")
        svc["metadata"]["labels"] = {"team": "diff"}
        services.append(svc)
    return [
        *ric,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        policy,
        *services,
    ]


def rows_of(
    binding: dict[str, Any], members: dict[str, int | None], template_status: dict[str, Any]
) -> Row:
    """What the differential compares for one workload."""
    spec, status = binding["spec"], binding.get("status") or {}
    items = {i["clusterName"]: i for i in status.get("aggregatedStatus") or []}
    return {
        "replicas": spec.get("replicas"),
        "requests": (spec.get("replicaRequirements") or {}).get("resourceRequest"),
        "assigned": {c["name"]: c.get("replicas") for c in spec.get("clusters") or []},
        "member instances": members,
        "aggregated ready": {
            c: (i.get("status") or {}).get("readyReplicas") for c, i in sorted(items.items())
        },
        "health": {c: i.get("health") for c, i in sorted(items.items())},
        "template ready": template_status.get("readyReplicas"),
        "template replicas": template_status.get("replicas"),
    }


def settled(rows: dict[str, Row]) -> bool:
    return len(rows) == len(SIZES) and all(
        r["template ready"] == SIZES[name] and set(r["health"].values()) == {"Healthy"}
        for name, r in rows.items()
    )


def wait_rows(read: Any, patience: float) -> dict[str, Row]:
    deadline = time.monotonic() + patience
    rows: dict[str, Row] = {}
    while time.monotonic() < deadline:
        try:
            rows = read()
        except (AssertionError, KeyError):
            rows = {}
        if settled(rows):
            return rows
        time.sleep(0.5)
    return rows


def emulator_rows(make_emulator: Any) -> dict[str, Row]:
    from tidal_sim.clock import ScaledClock

    topo = [
        *[d for d in kind_documents() if d["kind"] == "CustomResourceDefinition"],
        cluster("cluster-a", startup=OPERATOR_DELAY),
        cluster("cluster-b", startup=OPERATOR_DELAY),
        *objects(),
    ]
    emu = make_emulator(topo, clock=ScaledClock(10.0))
    rb = emu.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    work = emu.kinds.by_kind("work.karmada.io/v1alpha1", "Work")
    isvc = emu.kinds.by_kind(API, KIND)

    def read() -> dict[str, Row]:
        works, _ = emu.store.list(work)
        out = {}
        for name in SIZES:
            members: dict[str, int | None] = {}
            for w in works:
                manifest = w["spec"]["workload"]["manifests"][0]
                if manifest["metadata"]["name"] == name and manifest["kind"] == KIND:
                    cluster_name = w["metadata"]["namespace"].removeprefix("karmada-es-")
                    members[cluster_name] = manifest["spec"]["serving"]["instances"]
            out[name] = rows_of(
                emu.store.get(rb, NS, f"{name}-inferenceservice"),
                dict(sorted(members.items())),
                emu.store.get(isvc, NS, name).get("status") or {},
            )
        return out

    return wait_rows(read, 30.0)


class MemberOperator:
    """Plays the InferenceService controller of each member: an object whose status has not
    caught up with its spec for OPERATOR_DELAY seconds gets a ready status."""

    def __init__(self, members: dict[str, Path]) -> None:
        self.members = members
        self.paused: set[str] = set()  # members whose operator stopped reporting
        self.seen: dict[tuple[str, str, int], float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True, name="isvc-operator")
        self.thread.start()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for member, kubeconfig in self.members.items():
                if member in self.paused:
                    continue
                try:
                    self.reconcile(member, kubeconfig)
                except AssertionError:
                    continue  # the CRD or namespace is not there yet

    def reconcile(self, cluster: str, kubeconfig: Path) -> None:
        items = json.loads(
            kubectl(
                kubeconfig, "get", "inferenceservices.inference.tidal.io", "-n", NS, "-o", "json"
            )
        )["items"]
        now = time.monotonic()
        for obj in items:
            meta, want = obj["metadata"], obj["spec"]["serving"].get("instances", 1)
            status = obj.get("status") or {}
            ready = status.get("readyReplicas")
            if status.get("observedGeneration") == meta["generation"] and ready == want:
                continue
            key = (cluster, meta["name"], meta["generation"])
            first = self.seen.setdefault(key, now)
            if ready is not None and want < ready:
                ready = want  # instances removed: not ready any more, at once
            elif now - first >= OPERATOR_DELAY:
                ready = want  # new instances ready after the delay
            elif status.get("observedGeneration") == meta["generation"]:
                continue
            ready = ready or 0
            body = {
                "status": {
                    "observedGeneration": meta["generation"],
                    "replicas": want,
                    "updatedReplicas": want,
                    "readyReplicas": ready,
                    "availableReplicas": ready,
                    "updatedReadyReplicas": ready,
                }
            }
            kubectl(
                kubeconfig,
                "patch",
                "inferenceservices.inference.tidal.io",
                meta["name"],
                "-n",
                NS,
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps(body),
            )

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def install_kind(plane: Any) -> None:
    """The CRD on the plane and on both members, once Karmada's Cluster status lists it for
    each member: a binding scheduled before that finds no member serving the kind (the
    APIEnablement filter), and the scheduler's backoff may retry it after this test stops
    waiting (a CI run of 2026-12-07 found every binding unscheduled after 180 s)."""
    crd = [d for d in kind_documents() if d["kind"] == "CustomResourceDefinition"]
    for kubeconfig in (plane.kubeconfig, *plane.members.values()):
        kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(crd))
        kubectl(
            kubeconfig,
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/inferenceservices.inference.tidal.io",
        )
    deadline = time.monotonic() + 60
    while not all(serves_kind(plane, member) for member in plane.members):
        assert time.monotonic() < deadline, "no member's Cluster status lists the kind in 60 s"
        time.sleep(1)


def serves_kind(plane: Any, member: str) -> bool:
    """The member's Cluster status (apiEnablements) lists the custom kind."""
    found = json.loads(kubectl(plane.kubeconfig, "get", "cluster", member, "-o", "json"))
    return any(
        group.get("groupVersion") == API
        and any(r.get("kind") == KIND for r in group.get("resources") or [])
        for group in (found.get("status") or {}).get("apiEnablements") or []
    )


def binding_conditions(plane: Any) -> dict[str, list[str]]:
    """Per workload, its binding's conditions (type, status, reason: message): what a failed
    comparison prints, so a binding left unscheduled says why."""
    out = {}
    for name in SIZES:
        found = json.loads(
            kubectl(
                plane.kubeconfig, "get", "rb", "-n", NS, f"{name}-inferenceservice", "-o", "json"
            )
        )
        out[name] = [
            f"{c.get('type')}={c.get('status')} {c.get('reason')}: {c.get('message')}"
            for c in (found.get("status") or {}).get("conditions") or []
        ]
    return out


def real_rows(plane: Any) -> dict[str, Row]:
    install_kind(plane)
    kubectl(plane.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects()))
    operator = MemberOperator(plane.members)

    def read() -> dict[str, Row]:
        out = {}
        for name in SIZES:
            members: dict[str, int | None] = {}
            for member, kubeconfig in plane.members.items():
                found = json.loads(
                    kubectl(
                        kubeconfig,
                        "get",
                        "inferenceservices.inference.tidal.io",
                        "-n",
                        NS,
                        "-o",
                        "json",
                    )
                )["items"]
                for obj in found:
                    if obj["metadata"]["name"] == name:
                        members[member] = obj["spec"]["serving"].get("instances")
            binding = json.loads(
                kubectl(
                    plane.kubeconfig,
                    "get",
                    "rb",
                    "-n",
                    NS,
                    f"{name}-inferenceservice",
                    "-o",
                    "json",
                )
            )
            template = json.loads(
                kubectl(
                    plane.kubeconfig,
                    "get",
                    "inferenceservices.inference.tidal.io",
                    "-n",
                    NS,
                    name,
                    "-o",
                    "json",
                )
            )
            out[name] = rows_of(
                binding, dict(sorted(members.items())), template.get("status") or {}
            )
        return out

    try:
        rows = wait_rows(read, 180.0)
        if not settled(rows):
            print("\nbinding conditions on the real plane:", binding_conditions(plane))
        return rows
    finally:
        operator.close()
        kubectl(
            plane.kubeconfig,
            "delete",
            "-f",
            "-",
            "--wait=false",
            "--ignore-not-found",
            stdin=yaml.safe_dump_all([o for o in objects() if o["kind"] != "Namespace"]),
        )


def test_emulator_and_real_karmada_interpret_the_custom_kind_alike(
    request: pytest.FixtureRequest, make_emulator: Any
) -> None:
    """Per workload: binding replicas and requests, the 3:1 split, each member's revised
    spec.serving.instances, aggregated ready replicas and health, and the template's
    aggregated status are the same on both (the rows are the differential table)."""
    if request.config.getoption("karmada") == "emulator":
        pytest.skip("needs a real plane: run with --karmada=real or --karmada=both")
    emulated = emulator_rows(make_emulator)
    assert settled(emulated), emulated
    real = real_rows(request.getfixturevalue("real_plane"))
    print("\ncustom kind differential (emulator = real):")
    for name in SIZES:
        for key, value in emulated[name].items():
            mark = "=" if real.get(name, {}).get(key) == value else "!="
            print(f"  {name} {key}: {value} {mark} {real.get(name, {}).get(key)}")
    assert real == emulated


class MemberSampler:
    """Reads each member's InferenceServices a few times a second: (t, name, cluster, ready)."""

    def __init__(self, members: dict[str, Path]) -> None:
        self.members = members
        self.samples: list[tuple[float, str, str, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True, name="isvc-sampler")
        self.thread.start()

    def run(self) -> None:
        while not self.stop.wait(0.3):
            for member, kubeconfig in self.members.items():
                try:
                    items = json.loads(
                        kubectl(
                            kubeconfig,
                            "get",
                            "inferenceservices.inference.tidal.io",
                            "-n",
                            NS,
                            "-o",
                            "json",
                            timeout=10,
                        )
                    )["items"]
                except AssertionError:
                    continue
                now = time.time()
                seen = {
                    o["metadata"]["name"]: int((o.get("status") or {}).get("readyReplicas") or 0)
                    for o in items
                }
                for name in self.names():
                    self.samples.append((now, name, member, seen.get(name, 0)))

    def names(self) -> list[str]:
        return [f"rt-{i}" for i in range(REAL_WORKLOADS)]

    def split(self) -> dict[str, dict[str, int]]:
        last: dict[str, dict[str, int]] = {}
        for _, name, member, ready in self.samples:
            last.setdefault(name, {})[member] = ready
        return {n: {c: r for c, r in split.items() if r} for n, split in last.items()}

    def dips(self, since: float, keep: dict[str, int], replicas: int) -> list[str]:
        """Moments after `since` a workload had fewer ready than `replicas` across members, or
        a member fewer than the share it keeps."""
        ready: dict[str, dict[str, int]] = {}
        out = []
        for t, name, member, n in self.samples:
            ready.setdefault(name, {})[member] = n
            if t < since or len(ready[name]) < len(self.members):
                continue
            if sum(ready[name].values()) < replicas:
                out.append(f"{name} at {t:.1f}: {sum(ready[name].values())}/{replicas}")
            for c, k in keep.items():
                if ready[name].get(c, 0) < k:
                    out.append(f"{name} {c} at {t:.1f}: {ready[name].get(c, 0)} < {k}")
        return out

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


REAL_WORKLOADS = 20  # as many as the emulator's runs (issue 29's acceptance)


@contextlib.contextmanager
def real_team(
    plane: Any, placement: dict[str, Any], *, lazy: bool = False
) -> Iterator[tuple[MemberOperator, MemberSampler]]:
    """The CRD on the plane and its members, the customization, policy team-cpp and
    REAL_WORKLOADS InferenceServices of 5, with the member operator and a sampler running;
    everything but the namespace deleted afterwards."""
    install_kind(plane)
    ric = [d for d in kind_documents() if d["kind"] == "ResourceInterpreterCustomization"]
    services = [inference_service(f"rt-{i}", 5, cpu="250m") for i in range(REAL_WORKLOADS)]
    objs = [
        *ric,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        kind_cpp("team-cpp", placement, lazy=lazy),
        *services,
    ]
    kubectl(plane.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(objs))
    operator, sampler = MemberOperator(plane.members), MemberSampler(plane.members)
    try:
        yield operator, sampler
    finally:
        operator.close()
        sampler.close()
        kubectl(
            plane.kubeconfig,
            "delete",
            "-f",
            "-",
            "--wait=true",
            "--ignore-not-found",
            "--timeout=120s",
            stdin=yaml.safe_dump_all([o for o in objs if o["kind"] != "Namespace"]),
        )


def wait_split(sampler: MemberSampler, want: Any, seconds: float) -> dict[str, dict[str, int]]:
    """The members' ready split once `want(split)` holds, or as it is after `seconds`."""
    deadline = time.monotonic() + seconds
    while not want(sampler.split()) and time.monotonic() < deadline:
        time.sleep(1)
    return sampler.split()


def real_client(plane: Any) -> Any:
    from tidal.karmada.client import KarmadaClient, RetryPolicy

    return KarmadaClient.from_kubeconfig(
        plane.kubeconfig,
        None,
        retry=RetryPolicy(attempts=8, base_delay=0.05, max_delay=1.0, max_retry_after=2.0),
    )


def real_only(request: pytest.FixtureRequest) -> Any:
    if request.config.getoption("karmada") == "emulator":
        pytest.skip("needs a real plane: run with --karmada=real or --karmada=both")
    return request.getfixturevalue("real_plane")


ROLLOUT = FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 3").replace(
    "waveTimeout: 60s", "waveTimeout: 180s"
)


def test_real_karmada_switches_the_custom_kind_night_and_day_under_a_full_floor(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """On real Karmada: 6 InferenceServices 4:1 -> cluster-b -> 4:1 in surged waves under
    minAvailablePercent 100: both runs succeed, no workload has fewer than 5 ready and
    cluster-b never fewer than the 1 it keeps, as on the emulator (test_switch_custom_kinds)."""
    plane = real_only(request)
    day = {f"rt-{i}": {"cluster-a": 4, "cluster-b": 1} for i in range(REAL_WORKLOADS)}
    night = {n: {"cluster-b": 5} for n in day}
    with real_team(plane, DAY) as (_, sampler):
        assert wait_split(sampler, lambda s: s == day, 180) == day
        time.sleep(3)  # the status delay: bindings show what the members do
        client = real_client(plane)
        path = write_schedule(
            tmp_path, schedule_text("team-isvc-real", ROLLOUT, windows=STATIC, workloads=WORKLOADS)
        )
        for window, after in (("night", night), ("day", day)):
            since = time.time()
            record = switch(client, path, window, policy_settle=RealTarget.policy_settle)
            assert record.result == "succeeded", record.to_json()
            assert wait_split(sampler, lambda s, a=after: s == a, 120) == after
            assert sampler.dips(since, {"cluster-b": 1}, 5) == []
            time.sleep(3)


def test_real_karmada_moves_the_custom_kind_off_a_dynamic_weight_cluster_without_a_dip(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A Lazy DynamicWeight policy over both members narrowed to cluster-b, wave by wave
    under a full floor: every workload ends 5 in cluster-b, none below 5 ready on the way."""
    plane = real_only(request)
    with real_team(plane, dynamic_placement(), lazy=True) as (_, sampler):
        before = wait_split(
            sampler,
            lambda s: len(s) == REAL_WORKLOADS and all(sum(v.values()) == 5 for v in s.values()),
            180,
        )
        assert all(sum(v.values()) == 5 for v in before.values()), before
        time.sleep(3)
        path = write_schedule(
            tmp_path,
            schedule_text("team-isvc-dyn", ROLLOUT, windows=DYNAMIC_NIGHT, workloads=WORKLOADS),
        )
        since = time.time()
        record = switch(real_client(plane), path, "night", policy_settle=RealTarget.policy_settle)
        assert record.result == "succeeded", record.to_json()
        night = {n: {"cluster-b": 5} for n in before}
        assert wait_split(sampler, lambda s: s == night, 120) == night
        keep = {"cluster-b": min(v.get("cluster-b", 0) for v in before.values())}
        assert sampler.dips(since, keep, 5) == []


def test_real_karmada_member_whose_operator_stops_reporting_halts_the_switch(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """cluster-b's operator stops reporting: the first wave's surge in cluster-b never shows
    ready, the wave fails within waveTimeout and the run halts; nothing left cluster-a (no
    workload below 5 ready) and no override is left behind."""
    plane = real_only(request)
    day = {f"rt-{i}": {"cluster-a": 4, "cluster-b": 1} for i in range(REAL_WORKLOADS)}
    with real_team(plane, DAY) as (operator, sampler):
        assert wait_split(sampler, lambda s: s == day, 180) == day
        time.sleep(3)
        operator.paused.add("cluster-b")
        rollout = ROLLOUT.replace("waveTimeout: 180s", "waveTimeout: 20s")
        path = write_schedule(
            tmp_path, schedule_text("team-isvc-stop", rollout, windows=STATIC, workloads=WORKLOADS)
        )
        client = real_client(plane)
        since = time.time()
        record = switch(client, path, "night", policy_settle=RealTarget.policy_settle)
        assert record.result == "failed", record.to_json()
        assert len(record.waves) == 1 and "not ready within waveTimeout" in str(
            record.waves[0].reason
        )
        assert sampler.dips(since, {"cluster-a": 4}, 5) == []
        assert list_overrides(client, schedule="team-isvc-stop") == []
        operator.paused.clear()
