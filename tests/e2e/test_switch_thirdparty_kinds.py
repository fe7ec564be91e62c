"""Karmada's shipped Kruise CloneSet customization (read from the karmada module in the Go module
cache at test time) drives a make-before-break switch of CloneSets on the emulator: the surge
overrides set spec.replicas because that is what its replicaRevision writes, floors hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.surge_helpers import FULL_AVAILABILITY, dips, splits
from tests.e2e.switch_helpers import (
    DAY,
    NS,
    MakeEmulator,
    client_for,
    cluster,
    namespace,
    schedule_text,
    switch,
    write_schedule,
)
from tests.e2e.test_switch_custom_kinds import STATIC, converge, kind_cpp
from tests.sim.thirdparty import TREE, module_dir
from tidal.karmada.overrides import list_overrides
from tidal_sim.topology import load_yaml_documents

pytestmark = pytest.mark.e2e

API, KIND = "apps.kruise.io/v1alpha1", "CloneSet"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clonesets.apps.kruise.io"},
    "spec": {
        "group": "apps.kruise.io",
        "scope": "Namespaced",
        "names": {"kind": KIND, "plural": "clonesets", "singular": "cloneset"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def cloneset_customization() -> dict[str, Any]:
    root, why = module_dir()
    if root is None:
        pytest.skip(f"karmada's thirdparty customizations are not reachable: {why}")
    path = root / TREE / "apps.kruise.io/v1alpha1/CloneSet/customizations.yaml"
    ric: dict[str, Any] = load_yaml_documents(path.read_text())[0]
    return ric


def cloneset(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": KIND,
        "metadata": {"name": name, "namespace": NS, "labels": {"team": "t1"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
        },
    }


def test_clonesets_switch_with_karmadas_own_customization(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """8 CloneSets 4:1 -> cluster-b and back, surged under a 100% floor, no dip."""
    policy = kind_cpp("team-cpp", DAY)
    policy["spec"]["resourceSelectors"][0].update(apiVersion=API, kind=KIND)
    topo = [
        CRD,
        cloneset_customization(),
        cluster("cluster-a", startup=0.5, termination=0.2),
        cluster("cluster-b", startup=0.5, termination=0.2),
        namespace(),
        policy,
    ]
    topo += [cloneset(f"cs-{i}", 5) for i in range(8)]
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    workloads = (
        f"- apiVersion: {API}\n  kind: {KIND}\n  namespace: {NS}\n"
        "  labelSelector: {matchLabels: {team: t1}}\n"
    )
    path = write_schedule(
        tmp_path,
        schedule_text(
            "team-cs",
            FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 4"),
            windows=STATIC,
            workloads=workloads,
        ),
    )
    day = {f"{NS}/{KIND}/cs-{i}": {"cluster-a": 4, "cluster-b": 1} for i in range(8)}
    night = {w: {"cluster-b": 5} for w in day}
    assert converge(emu, day) == day
    for window, before, after in (("night", day, night), ("day", night, day)):
        since = emu.clock.now()
        record = switch(client, path, window)
        assert record.result == "succeeded", record.to_json()
        assert converge(emu, after) == after
        assert dips(emu, since, before, after) == []
        assert list_overrides(client, schedule="team-cs") == []
    assert splits(emu) == day
