"""Topologies: manifests applied in order, custom kinds declared by CRDs, settings, errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.sim.http_helpers import call
from tidal_sim.clock import ManualClock
from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator
from tidal_sim.topology import TopologyError, load_topology, load_yaml_documents

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: inferenceservices.serving.example.io}
spec:
  group: serving.example.io
  scope: Namespaced
  names: {kind: InferenceService, plural: inferenceservices, shortNames: [isvc]}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: serving.example.io/v1
kind: InferenceService
metadata: {name: bert, namespace: ml, labels: {team: a}}
spec: {replicas: 2}
"""


def get(emu: Emulator, path: str) -> tuple[int, Any]:
    return call(emu, "GET", path)


def test_crd_in_topology_declares_a_custom_template_kind(
    make_emulator: Any, tmp_path: Path
) -> None:
    """A CustomResourceDefinition document makes its kind servable for later documents."""
    topo = tmp_path / "topo.yaml"
    topo.write_text(CRD)
    emu = make_emulator(topo)
    code, listed = get(emu, "/apis/serving.example.io/v1/namespaces/ml/inferenceservices")
    assert code == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["bert"]
    code, resources = get(emu, "/apis/serving.example.io/v1")
    assert resources["resources"][0]["shortNames"] == ["isvc"]
    req = urllib.request.Request(
        emu.url + "/apis/serving.example.io/v1/namespaces/ml/inferenceservices/bert",
        method="PATCH",
        data=b'{"spec":{"replicas":3}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 415


def test_crd_created_through_the_api_registers_its_kind(emulator: Emulator) -> None:
    """POSTing a CRD at run time makes its resource servable at once."""
    doc = load_yaml_documents(CRD)[0]
    req = urllib.request.Request(
        emulator.url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        method="POST",
        data=json.dumps(doc).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 201
    code, _ = get(emulator, "/apis/serving.example.io/v1/inferenceservices")
    assert code == 200


def test_settings_document_sets_emulator_knobs() -> None:
    """EmulatorSettings carries the scheduler latency and feature gates."""
    topo = load_topology(
        [
            {
                "apiVersion": "sim.tidal.io/v1alpha1",
                "kind": "EmulatorSettings",
                "spec": {
                    "schedulerLatencySeconds": 0.5,
                    "featureGates": ["PropagationPolicyPreemption"],
                },
            }
        ]
    )
    assert topo.settings.scheduler_latency == 0.5
    assert topo.settings.feature_gates == frozenset({"PropagationPolicyPreemption"})
    assert topo.objects == []


def test_unknown_kind_names_file_and_document(tmp_path: Path) -> None:
    """A document of an unserved kind fails with the file, document number and a fix."""
    topo = tmp_path / "t.yaml"
    topo.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
        "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w}\n"
    )
    with pytest.raises(TopologyError) as err:
        Emulator(topo, clock=ManualClock()).start()
    assert f"{topo}: document 2 (Widget w)" in str(err.value)
    assert "CustomResourceDefinition" in str(err.value)


def test_invalid_policy_in_topology_names_the_field(tmp_path: Path) -> None:
    """A topology policy violating the CRD schema fails to load, naming the field path."""
    text = DEFAULT_TOPOLOGY.read_text().replace("weight: 4", "weight: 0")
    topo = tmp_path / "bad.yaml"
    topo.write_text(text)
    emu = Emulator(topo, clock=ManualClock())
    with pytest.raises(TopologyError) as err:
        emu.start()
    emu.stop()
    assert "staticWeightList[0].weight" in str(err.value)


def test_bad_yaml_is_located(tmp_path: Path) -> None:
    """Broken YAML reports FILE:LINE:COL."""
    topo = tmp_path / "broken.yaml"
    topo.write_text("apiVersion: v1\nkind: [Namespace\n")
    with pytest.raises(TopologyError) as err:
        load_topology(topo)
    assert str(err.value).startswith(f"{topo}:3:")


def test_directory_topology_applies_files_in_name_order(make_emulator: Any, tmp_path: Path) -> None:
    """A directory's YAML files are applied in sorted order (namespace before its objects)."""
    (tmp_path / "10-ns.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: late}\n"
    )
    (tmp_path / "20-cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: late}\n"
    )
    emu = make_emulator(tmp_path)
    code, _ = get(emu, "/api/v1/namespaces/late/configmaps/c")
    assert code == 200


def test_default_topology_matches_the_schedules(make_emulator: Any) -> None:
    """The demo topology has its three clusters, the teams' policies and tens of Deployments."""
    emu = make_emulator(DEFAULT_TOPOLOGY, clock=ManualClock())
    _, clusters = get(emu, "/apis/cluster.karmada.io/v1alpha1/clusters")
    assert [c["metadata"]["name"] for c in clusters["items"]] == [
        "cluster-a",
        "cluster-b",
        "cluster-c",
    ]
    _, cpps = get(emu, "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies")
    by_name = {c["metadata"]["name"]: c for c in cpps["items"]}
    static = by_name["team-1005-cpp"]["spec"]
    assert static["resourceSelectors"][0]["labelSelector"]["matchLabels"] == {
        "atms-app/teamid": "1005"
    }
    weights = static["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
    assert [w["weight"] for w in weights] == [4, 1]
    dynamic = by_name["team-2001-cpp-day"]["spec"]["placement"]["replicaScheduling"]
    assert dynamic["weightPreference"]["dynamicWeight"] == "AvailableReplicas"
    _, deps = get(
        emu, "/apis/apps/v1/namespaces/ai-app/deployments?labelSelector=atms-app%2Fteamid%3D1005"
    )
    assert len(deps["items"]) == 20


def test_member_fault_helpers_change_the_cluster(make_emulator: Any) -> None:
    """NotReady, pods-fail and capacity changes are written on the Cluster object."""
    emu = make_emulator(DEFAULT_TOPOLOGY, clock=ManualClock())
    emu.set_cluster_ready("cluster-b", False)
    emu.set_pods_fail("cluster-a")
    emu.set_capacity("cluster-a", {"nvidia.com/gpu": "8"})
    _, a = get(emu, "/apis/cluster.karmada.io/v1alpha1/clusters/cluster-a")
    _, b = get(emu, "/apis/cluster.karmada.io/v1alpha1/clusters/cluster-b")
    ready = [c for c in b["status"]["conditions"] if c["type"] == "Ready"]
    assert [c["status"] for c in ready] == ["False"]
    assert a["metadata"]["annotations"]["sim.tidal.io/pods-fail"] == "true"
    assert a["status"]["resourceSummary"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_settings_reach_the_controllers(make_emulator: Any) -> None:
    """EmulatorSettings' feature gates are handed to the controller manager."""
    emu = make_emulator(
        [
            {
                "apiVersion": "sim.tidal.io/v1alpha1",
                "kind": "EmulatorSettings",
                "spec": {"featureGates": ["PropagationPolicyPreemption"]},
            }
        ],
        clock=ManualClock(),
    )
    assert emu.controllers is not None
    assert emu.controllers.feature_gates == frozenset({"PropagationPolicyPreemption"})


def test_sim_command_rejects_a_bad_topology(tmp_path: Path) -> None:
    """`tidal sim --topology` with a missing file exits 1 with a one-line error."""
    from click.testing import CliRunner

    from tidal_sim.cli.sim import sim_command

    result = CliRunner().invoke(
        sim_command,
        ["--topology", str(tmp_path / "nope.yaml"), "--kubeconfig-out", str(tmp_path / "kc")],
    )
    assert result.exit_code == 1
    missing = tmp_path / "nope.yaml"
    assert result.output.strip().splitlines() == [
        f"error: {missing}: topology file not found; pass an existing file or directory"
    ]
