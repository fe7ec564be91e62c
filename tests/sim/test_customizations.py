"""Custom kinds interpreted by ResourceInterpreterCustomization Lua scripts, as Karmada does."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.sim.karmada_harness import TWO, Harness, static_weights
from tidal_sim.controllers.customizations import Customizations, InterpreterError
from tidal_sim.luavm import LuaVM
from tidal_sim.topology import crd_types, load_yaml_documents

Obj = dict[str, Any]
KINDS_FILE = Path(__file__).parents[2] / "sim/tidal_sim/topologies/kinds/inference-service.yaml"
API = "inference.tidal.io/v1alpha1"
KIND = "InferenceService"


def kind_documents() -> tuple[Obj, Obj]:
    """The CRD and the customization of the emulator's InferenceService kind."""
    crd, ric = load_yaml_documents(KINDS_FILE.read_text())
    return crd, ric


def with_kind(h: Harness, ric: Obj | None = None) -> None:
    """Serve the InferenceService kind in the harness, interpreted by `ric` (default: ours)."""
    crd, default = kind_documents()
    for rtype in crd_types(crd):
        h.kinds.register(rtype)
    h.store.create(_ric_type(h), copy.deepcopy(ric or default))


def _ric_type(h: Harness) -> Any:
    rtype = h.kinds.by_kind("config.karmada.io/v1alpha1", "ResourceInterpreterCustomization")
    assert rtype is not None
    return rtype


def isvc(h: Harness, name: str, instances: int, cpu: str = "250m") -> Obj:
    rtype = h.kinds.by_kind(API, KIND)
    assert rtype is not None
    body = {
        "apiVersion": API,
        "kind": KIND,
        "metadata": {"name": name, "namespace": "team", "labels": {"app": name}},
        "spec": {
            "serving": {
                "instances": instances,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "model",
                                "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                            }
                        ]
                    }
                },
            }
        },
    }
    return h.store.create(rtype, body)


def selectors() -> list[Obj]:
    return [{"apiVersion": API, "kind": KIND}]


def binding(h: Harness, name: str) -> Obj:
    return h.binding(name, kind=KIND)


def work_manifests(h: Harness) -> dict[str, Obj]:
    rtype = h.kinds.by_kind("work.karmada.io/v1alpha1", "Work")
    assert rtype is not None
    items, _ = h.store.list(rtype)
    return {
        w["metadata"]["namespace"].removeprefix("karmada-es-"): w["spec"]["workload"]["manifests"][
            0
        ]
        for w in items
    }


def broken(rule: str, script: str) -> Obj:
    _, ric = kind_documents()
    ric = copy.deepcopy(ric)
    ric["spec"]["customizations"][rule]["luaScript"] = script
    return ric


def test_replicas_and_requirements_come_from_the_replica_script() -> None:
    """GetReplicas sets the binding's replicas and per-replica requests (with namespace)."""
    h = Harness()
    h.cluster("a")
    with_kind(h)
    h.cpp("p", {"clusterAffinity": {"clusterNames": ["a"]}}, selectors=selectors())
    isvc(h, "llm", 4)
    h.settle()
    spec = binding(h, "llm")["spec"]
    assert spec["replicas"] == 4
    assert spec["replicaRequirements"] == {
        "resourceRequest": {"cpu": "250m", "memory": "1Gi"},
        "namespace": "team",
    }


def test_members_get_revised_replicas_and_report_through_the_scripts() -> None:
    """Static 3:1 split: each Work's instances are revised; pods start after the start-up
    delay; the binding reflects member status and health; the template aggregates it."""
    h = Harness()
    h.cluster("a", annotations={"sim.tidal.io/pod-startup-seconds": "5"})
    h.cluster("b", annotations={"sim.tidal.io/pod-startup-seconds": "5"})
    with_kind(h)
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(a=3, b=1)}, selectors=selectors())
    isvc(h, "llm", 4)
    h.settle()
    manifests = work_manifests(h)
    assert {c: m["spec"]["serving"]["instances"] for c, m in manifests.items()} == {"a": 3, "b": 1}
    assert "replicas" not in manifests["a"]["spec"]
    h.advance(4.9)
    items = {i["clusterName"]: i for i in binding(h, "llm")["status"]["aggregatedStatus"]}
    assert items["a"]["status"]["readyReplicas"] == 0 and items["a"]["health"] == "Unhealthy"
    h.advance(0.1)
    items = {i["clusterName"]: i for i in binding(h, "llm")["status"]["aggregatedStatus"]}
    reflected = items["a"]["status"]
    assert reflected["generation"] == reflected.pop("observedGeneration")
    assert reflected == {
        "replicas": 3,
        "readyReplicas": 3,
        "updatedReplicas": 3,
        "availableReplicas": 3,
        "generation": reflected["generation"],
        "resourceTemplateGeneration": 1,
    }
    assert {i["health"] for i in items.values()} == {"Healthy"}
    status = _template(h, "llm")["status"]
    assert status == {
        "replicas": 4,
        "readyReplicas": 4,
        "updatedReplicas": 4,
        "availableReplicas": 4,
        "observedGeneration": 1,
    }


def _template(h: Harness, name: str) -> Obj:
    rtype = h.kinds.by_kind(API, KIND)
    assert rtype is not None
    return h.store.get(rtype, "team", name)


def test_an_override_of_the_revised_field_sets_the_member_count() -> None:
    """An OverridePolicy replacing /spec/serving/instances in b makes b's operator run 3."""
    h = Harness()
    h.cluster("a", annotations={"sim.tidal.io/pod-startup-seconds": "0"})
    h.cluster("b", annotations={"sim.tidal.io/pod-startup-seconds": "0"})
    with_kind(h)
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(a=1, b=1)}, selectors=selectors())
    isvc(h, "llm", 2)
    rtype = h.kinds.by_kind("policy.karmada.io/v1alpha1", "OverridePolicy")
    assert rtype is not None
    h.store.create(
        rtype,
        {
            "metadata": {"name": "raise", "namespace": "team"},
            "spec": {
                "resourceSelectors": [{"apiVersion": API, "kind": KIND, "name": "llm"}],
                "overrideRules": [
                    {
                        "targetCluster": {"clusterNames": ["b"]},
                        "overriders": {
                            "plaintext": [
                                {
                                    "path": "/spec/serving/instances",
                                    "operator": "replace",
                                    "value": 3,
                                }
                            ]
                        },
                    }
                ],
            },
        },
    )
    h.settle()
    h.advance(0.1)
    items = {i["clusterName"]: i for i in binding(h, "llm")["status"]["aggregatedStatus"]}
    assert items["b"]["status"]["readyReplicas"] == 3
    assert items["a"]["status"]["readyReplicas"] == 1


def test_a_failing_replica_script_leaves_the_template_without_binding() -> None:
    """GetReplicas raising: no binding (upstream's detector returns the error); a fixed
    customization makes the detector try again."""
    h = Harness()
    h.cluster("a")
    with_kind(h, broken("replicaResource", "function GetReplicas(obj) error('boom') end"))
    h.cpp("p", {"clusterAffinity": {"clusterNames": ["a"]}}, selectors=selectors())
    isvc(h, "llm", 2)
    h.settle()
    rtype = h.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    assert rtype is not None
    assert h.store.list(rtype)[0] == []
    _, good = kind_documents()

    def fix(obj: Obj) -> None:
        obj["spec"] = good["spec"]

    h.store.mutate(_ric_type(h), None, "inferenceservice", fix)
    h.settle()
    assert binding(h, "llm")["spec"]["replicas"] == 2


def test_a_failing_revision_skips_the_member_work() -> None:
    """ReviseReplica raising: the cluster gets no Work and runs nothing."""
    h = Harness()
    h.cluster("a")
    with_kind(h, broken("replicaRevision", "function ReviseReplica(obj, n) return nil end"))
    h.cpp("p", {"clusterAffinity": {"clusterNames": ["a"]}}, selectors=selectors())
    isvc(h, "llm", 2)
    h.settle()
    assert work_manifests(h) == {}
    assert binding(h, "llm")["spec"]["clusters"] == [{"name": "a", "replicas": 2}]


def test_a_failing_health_script_reads_unknown() -> None:
    """InterpretHealth raising (or returning a non-boolean) makes the member's health Unknown."""
    h = Harness()
    h.cluster("a", annotations={"sim.tidal.io/pod-startup-seconds": "0"})
    with_kind(h, broken("healthInterpretation", "function InterpretHealth(o) return 1 end"))
    h.cpp("p", {"clusterAffinity": {"clusterNames": ["a"]}}, selectors=selectors())
    isvc(h, "llm", 2)
    h.settle()
    h.advance(0.1)
    (item,) = binding(h, "llm")["status"]["aggregatedStatus"]
    assert item["health"] == "Unknown" and item["status"]["readyReplicas"] == 2


def test_a_script_that_runs_too_long_times_out() -> None:
    """A script past the VM's time budget fails like an error (upstream: one second)."""
    custom = Customizations(LuaVM(timeout=0.05))
    _, ric = kind_documents()
    ric = copy.deepcopy(ric)
    ric["spec"]["customizations"]["healthInterpretation"]["luaScript"] = (
        "function InterpretHealth(o) while true do end end"
    )
    custom.load([ric])
    with pytest.raises(InterpreterError, match="timed out"):
        custom.interpret_health({"apiVersion": API, "kind": KIND, "metadata": {"name": "x"}})


@pytest.mark.parametrize("function", ["loadstring", "setmetatable", "rawget"])
def test_unsafe_functions_are_refused_as_upstream(function: str) -> None:
    """Functions Karmada's sandbox replaces raise its 'not supported' error."""
    custom = Customizations()
    custom.load(
        [
            {
                "metadata": {"name": "t"},
                "spec": {
                    "target": {"apiVersion": API, "kind": KIND},
                    "customizations": {
                        "healthInterpretation": {
                            "luaScript": f"function InterpretHealth(o) {function}('x') "
                            "return true end"
                        }
                    },
                },
            }
        ]
    )
    with pytest.raises(InterpreterError, match="is not supported in karmada customized"):
        custom.interpret_health({"apiVersion": API, "kind": KIND, "metadata": {"name": "x"}})


def test_customizations_merge_by_name_first_script_wins() -> None:
    """Two customizations of one kind: per operation, the first by name that sets it wins."""
    custom = Customizations()
    script = "function InterpretHealth(o) return {} end"
    custom.load(
        [
            {
                "metadata": {"name": "b"},
                "spec": {
                    "target": {"apiVersion": API, "kind": KIND},
                    "customizations": {
                        "healthInterpretation": {"luaScript": script.replace("{}", "false")}
                    },
                },
            },
            {
                "metadata": {"name": "a"},
                "spec": {
                    "target": {"apiVersion": API, "kind": KIND},
                    "customizations": {
                        "healthInterpretation": {"luaScript": script.replace("{}", "true")}
                    },
                },
            },
        ]
    )
    assert custom.interpret_health({"apiVersion": API, "kind": KIND, "metadata": {"name": "x"}})
