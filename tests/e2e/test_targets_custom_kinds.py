"""Differential check of the custom kind on the emulator and on real Karmada (`--karmada=real` or
`both`): the same InferenceService CRD, ResourceInterpreterCustomization and objects give the
same interpreted replicas and requests, the same revised member replicas and the same
aggregated status. On the real plane the CRD is installed on the control plane and on both
members, and a small operator thread plays each member's controller: after a delay it writes
an InferenceService's status as ready (as a real operator would)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.switch_helpers import NS, cluster, static_placement
from tests.e2e.targets import kubectl
from tests.e2e.test_switch_custom_kinds import (
    API,
    KIND,
    inference_service,
    kind_cpp,
    kind_documents,
)

pytestmark = pytest.mark.e2e

SIZES = {"llm-00": 4, "llm-01": 5, "llm-02": 3}
PLACEMENT = static_placement({"cluster-a": 3, "cluster-b": 1})
OPERATOR_DELAY = 2.0  # seconds before a member's operator reports an object ready
Row = dict[str, Any]


def objects() -> list[dict[str, Any]]:
    """The RIC, the namespace, the policy and the InferenceServices (the CRD apart)."""
    ric = [d for d in kind_documents() if d["kind"] == "ResourceInterpreterCustomization"]
    policy = kind_cpp("isvc-diff", PLACEMENT)
    policy["spec"]["resourceSelectors"][0]["labelSelector"] = {
        "matchLabels": {"team": "diff"}}
    services = []
    for name, n in SIZES.items():
        svc = inference_service(name, n, cpu="250m")
        svc["metadata"]["labels"] = {"team": "diff"}
        services.append(svc)
    return [*ric, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            policy, *services]


def rows_of(binding: dict[str, Any], members: dict[str, int | None],
            template_status: dict[str, Any]) -> Row:
    """What the differential compares for one workload."""
    spec, status = binding["spec"], binding.get("status") or {}
    items = {i["clusterName"]: i for i in status.get("aggregatedStatus") or []}
    return {
        "replicas": spec.get("replicas"),
        "requests": (spec.get("replicaRequirements") or {}).get("resourceRequest"),
        "assigned": {c["name"]: c.get("replicas") for c in spec.get("clusters") or []},
        "member instances": members,
        "aggregated ready": {c: (i.get("status") or {}).get("readyReplicas")
                             for c, i in sorted(items.items())},
        "health": {c: i.get("health") for c, i in sorted(items.items())},
        "template ready": template_status.get("readyReplicas"),
        "template replicas": template_status.get("replicas"),
    }


def settled(rows: dict[str, Row]) -> bool:
    return len(rows) == len(SIZES) and all(
        r["template ready"] == SIZES[name] and set(r["health"].values()) == {"Healthy"}
        for name, r in rows.items())


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

    topo = [*[d for d in kind_documents() if d["kind"] == "CustomResourceDefinition"],
            cluster("cluster-a", startup=OPERATOR_DELAY), cluster("cluster-b",
                                                                  startup=OPERATOR_DELAY),
            *objects()]
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
            out[name] = rows_of(emu.store.get(rb, NS, f"{name}-inferenceservice"),
                                dict(sorted(members.items())),
                                emu.store.get(isvc, NS, name).get("status") or {})
        return out

    return wait_rows(read, 30.0)


class MemberOperator:
    """Plays the InferenceService controller of each member: an object whose status has not
    caught up with its spec for OPERATOR_DELAY seconds gets a ready status."""

    def __init__(self, members: dict[str, Path]) -> None:
        self.members = members
        self.seen: dict[tuple[str, str, int], float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True, name="isvc-operator")
        self.thread.start()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for member, kubeconfig in self.members.items():
                try:
                    self.reconcile(member, kubeconfig)
                except AssertionError:
                    continue  # the CRD or namespace is not there yet

    def reconcile(self, cluster: str, kubeconfig: Path) -> None:
        items = json.loads(kubectl(kubeconfig, "get", "inferenceservices.inference.tidal.io",
                                   "-n", NS, "-o", "json"))["items"]
        now = time.monotonic()
        for obj in items:
            meta, want = obj["metadata"], obj["spec"]["serving"].get("instances", 1)
            status = obj.get("status") or {}
            if status.get("observedGeneration") == meta["generation"] and \
                    status.get("readyReplicas") == want:
                continue
            key = (cluster, meta["name"], meta["generation"])
            first = self.seen.setdefault(key, now)
            if now - first < OPERATOR_DELAY:
                continue
            body = {"status": {"observedGeneration": meta["generation"], "replicas": want,
                               "updatedReplicas": want, "readyReplicas": want,
                               "availableReplicas": want, "updatedReadyReplicas": want}}
            kubectl(kubeconfig, "patch", "inferenceservices.inference.tidal.io", meta["name"],
                    "-n", NS, "--subresource=status", "--type=merge", "-p", json.dumps(body))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def real_rows(plane: Any) -> dict[str, Row]:
    crd = [d for d in kind_documents() if d["kind"] == "CustomResourceDefinition"]
    for kubeconfig in (plane.kubeconfig, *plane.members.values()):
        kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(crd))
        kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
                "crd/inferenceservices.inference.tidal.io")
    kubectl(plane.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects()))
    operator = MemberOperator(plane.members)

    def read() -> dict[str, Row]:
        out = {}
        for name in SIZES:
            members: dict[str, int | None] = {}
            for member, kubeconfig in plane.members.items():
                found = json.loads(kubectl(kubeconfig, "get",
                                           "inferenceservices.inference.tidal.io", "-n", NS,
                                           "-o", "json"))["items"]
                for obj in found:
                    if obj["metadata"]["name"] == name:
                        members[member] = obj["spec"]["serving"].get("instances")
            binding = json.loads(kubectl(plane.kubeconfig, "get", "rb", "-n", NS,
                                         f"{name}-inferenceservice", "-o", "json"))
            template = json.loads(kubectl(plane.kubeconfig, "get",
                                          "inferenceservices.inference.tidal.io", "-n", NS,
                                          name, "-o", "json"))
            out[name] = rows_of(binding, dict(sorted(members.items())),
                                template.get("status") or {})
        return out

    try:
        return wait_rows(read, 180.0)
    finally:
        operator.close()
        kubectl(plane.kubeconfig, "delete", "-f", "-", "--wait=false", "--ignore-not-found",
                stdin=yaml.safe_dump_all([o for o in objects() if o["kind"] != "Namespace"]))


def test_emulator_and_real_karmada_interpret_the_custom_kind_alike(
        request: pytest.FixtureRequest, make_emulator: Any) -> None:
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
