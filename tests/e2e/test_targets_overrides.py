"""A make-before-break surge by OverridePolicy on each --karmada target, driven with kubectl over
HTTP: 80/20 of 10 in cluster-a/cluster-b, an override raises cluster-b's member to 10 while
cluster-a keeps its 8, the Work records the policy, the binding counts b's 10 ready (the
template's status sums 8 + 10); deleting the override brings b back to 2 (its Work keeps the
stale annotation). The same with a ClusterOverridePolicy excluding cluster-a."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.e2e.targets import Placement, RealTarget, Target, kubectl

pytestmark = pytest.mark.e2e

NS = "ai-app"
WEB = f"{NS}/Deployment/surge-web"
LABELS = {"tidal.io/test": "overrides"}
# wall seconds to wait before concluding that nothing happened (the emulator runs 20x)
QUIET = {"emulator": 1.0, "real": 8.0}


def _weights(a: int, b: int) -> list[dict[str, Any]]:
    return [
        {"targetCluster": {"clusterNames": [name]}, "weight": weight}
        for name, weight in (("cluster-a", a), ("cluster-b", b))
        if weight
    ]


def _objects(replicas: int = 10, a: int = 4, b: int = 1) -> list[dict[str, Any]]:
    """Namespace, a static PropagationPolicy (weights a:b) and the Deployment."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "surge-web", "namespace": NS, "labels": LABELS},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "surge-web"}
                ],
                "placement": {
                    "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"staticWeightList": _weights(a, b)},
                    },
                },
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "surge-web", "namespace": NS, "labels": LABELS},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "surge-web"}},
                "template": {
                    "metadata": {"labels": {"app": "surge-web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "web",
                                "image": "web",
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            }
                        ]
                    },
                },
            },
        },
    ]


def _surge(kind: str, target_cluster: dict[str, Any], value: int = 10) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "surge-web-wave-1", "labels": LABELS}
    if kind == "OverridePolicy":
        meta["namespace"] = NS
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "spec": {
            "resourceSelectors": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": NS,
                    "name": "surge-web",
                }
            ],
            "overrideRules": [
                {
                    "targetCluster": target_cluster,
                    "overriders": {
                        "plaintext": [
                            {"path": "/spec/replicas", "operator": "replace", "value": value}
                        ]
                    },
                }
            ],
        },
    }


def _at(a: tuple[int, int], b: tuple[int, int]) -> Callable[[Placement], bool]:
    def ok(now: Placement) -> bool:
        return now.get((WEB, "cluster-a"), (0, 0)) == a and now.get((WEB, "cluster-b"), (0, 0)) == b

    return ok


def _find_work(target: Target, cluster: str) -> dict[str, Any] | None:
    """The Work of surge-web in the cluster's execution namespace (found by its manifest)."""
    works = json.loads(
        kubectl(target.kubeconfig, "get", "works", "-n", f"karmada-es-{cluster}", "-o", "json")
    )["items"]
    for work in works:
        manifests = work["spec"]["workload"]["manifests"]
        meta = manifests[0]["metadata"]
        if (manifests[0]["kind"], meta.get("namespace"), meta["name"]) == (
            "Deployment",
            NS,
            "surge-web",
        ):
            return dict(work)
    return None


def _work(target: Target, cluster: str) -> dict[str, Any]:
    work = _find_work(target, cluster)
    assert work is not None, f"{target.name}: no Work of surge-web in {cluster}"
    return work


def _assigned(target: Target) -> dict[str, int]:
    binding = json.loads(
        kubectl(
            target.kubeconfig,
            "get",
            "resourcebindings",
            "-n",
            NS,
            "surge-web-deployment",
            "-o",
            "json",
        )
    )
    return {c["name"]: c["replicas"] for c in binding["spec"].get("clusters") or []}


def _ready_in_binding(target: Target) -> dict[str, int]:
    binding = json.loads(
        kubectl(
            target.kubeconfig,
            "get",
            "resourcebindings",
            "-n",
            NS,
            "surge-web-deployment",
            "-o",
            "json",
        )
    )
    return {
        i["clusterName"]: int((i.get("status") or {}).get("readyReplicas", 0))
        for i in binding.get("status", {}).get("aggregatedStatus") or []
    }


def _cleanup(target: Target) -> None:
    for kind in ("overridepolicies", "clusteroverridepolicies"):
        scope = ["-n", NS] if kind == "overridepolicies" else []
        kubectl(
            target.kubeconfig,
            "delete",
            kind,
            *scope,
            "-l",
            "tidal.io/test=overrides",
            "--ignore-not-found",
        )
    kubectl(target.kubeconfig, "delete", "deployment", "-n", NS, "surge-web", "--ignore-not-found")
    kubectl(
        target.kubeconfig,
        "delete",
        "propagationpolicy",
        "-n",
        NS,
        "surge-web",
        "--ignore-not-found",
    )


@pytest.mark.parametrize(
    "kind,target_cluster",
    [
        ("OverridePolicy", {"clusterNames": ["cluster-b"]}),
        ("ClusterOverridePolicy", {"exclude": ["cluster-a"]}),
    ],
)
def test_override_surges_one_member_and_its_deletion_brings_it_back(
    target: Target, fidelity: dict[str, Any], kind: str, target_cluster: dict[str, Any]
) -> None:
    """b runs 10 (a keeps 8 all along) under the override, the Work names the policy, the
    binding counts b's 10 ready; deleted, b returns to its assigned 2."""
    if isinstance(target, RealTarget):
        target.reset()
    _cleanup(target)
    try:
        kubectl(target.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(_objects()))
        target.wait_for(_at((8, 8), (2, 2)), "80/20 of 10, all ready")
        t0 = target.now()
        kubectl(
            target.kubeconfig, "apply", "-f", "-", stdin=json.dumps(_surge(kind, target_cluster))
        )
        surged = target.wait_for(_at((8, 8), (10, 10)), "cluster-b surged to 10 ready")
        work = _work(target, "cluster-b")
        key = (
            "policy.karmada.io/applied-overrides"
            if kind == "OverridePolicy"
            else "policy.karmada.io/applied-cluster-overrides"
        )
        applied = json.loads(work["metadata"]["annotations"][key])
        assert [a["policyName"] for a in applied] == ["surge-web-wave-1"]
        assert work["spec"]["workload"]["manifests"][0]["spec"]["replicas"] == 10
        assert key not in (_work(target, "cluster-a")["metadata"].get("annotations") or {})
        assert (
            _work(target, "cluster-a")["spec"]["workload"]["manifests"][0]["spec"]["replicas"] == 8
        )
        assigned = json.loads(
            kubectl(
                target.kubeconfig,
                "get",
                "resourcebindings",
                "-n",
                NS,
                "surge-web-deployment",
                "-o",
                "json",
            )
        )["spec"]["clusters"]
        assert {c["name"]: c["replicas"] for c in assigned} == {"cluster-a": 8, "cluster-b": 2}
        target.wait_for(
            lambda _: _ready_in_binding(target) == {"cluster-a": 8, "cluster-b": 10},
            "binding aggregatedStatus counting b's 10 ready",
        )

        def template_ready() -> int:
            deployment = json.loads(
                kubectl(target.kubeconfig, "get", "deployment", "-n", NS, "surge-web", "-o", "json")
            )
            return int(deployment.get("status", {}).get("readyReplicas", 0))

        # Karmada sums the members' status into the template's: 8 + 10 over spec.replicas 10
        target.wait_for(lambda _: template_ready() == 18, "template status summing 8 + 10")
        # cluster-a never dipped while b surged
        dips = [
            s
            for s in target.timeline()
            if s["t"] >= t0
            and s["workload"] == WEB
            and s["cluster"] == "cluster-a"
            and s["ready"] < 8
        ]
        assert dips == []
        scope = ["-n", NS] if kind == "OverridePolicy" else []
        kubectl(target.kubeconfig, "delete", kind.lower(), *scope, "surge-web-wave-1")
        released = target.wait_for(_at((8, 8), (2, 2)), "cluster-b back to 2")
        # Work annotations are merged, never pruned: the deleted policy's entry stays, stale
        work = _work(target, "cluster-b")
        assert [a["policyName"] for a in json.loads(work["metadata"]["annotations"][key])] == [
            "surge-web-wave-1"
        ]
        assert work["spec"]["workload"]["manifests"][0]["spec"]["replicas"] == 2
        fidelity.update(
            kind=kind,
            surged={c: surged[(WEB, c)] for c in ("cluster-a", "cluster-b")},
            released={c: released[(WEB, c)] for c in ("cluster-a", "cluster-b")},
            seconds=round(target.now() - t0, 1),
        )
    finally:
        _cleanup(target)


def test_an_override_cannot_reach_a_cluster_assigned_no_replicas(
    target: Target, fidelity: dict[str, Any]
) -> None:
    """2 replicas at 4:1 all go to cluster-a; cluster-b, absent from spec.clusters, gets no
    Work, so an override setting its replicas to 2 starts nothing there."""
    if isinstance(target, RealTarget):
        target.reset()
    _cleanup(target)
    try:
        kubectl(target.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(_objects(2)))
        target.wait_for(_at((2, 2), (0, 0)), "2 in cluster-a, all ready")
        assert _assigned(target) == {"cluster-a": 2}
        kubectl(
            target.kubeconfig,
            "apply",
            "-f",
            "-",
            stdin=json.dumps(_surge("OverridePolicy", {"clusterNames": ["cluster-b"]}, 2)),
        )
        time.sleep(QUIET[target.name])  # real members took under 1 s to follow an override
        assert _find_work(target, "cluster-b") is None
        assert target.placements().get((WEB, "cluster-b"), (0, 0)) == (0, 0)
        assert _assigned(target) == {"cluster-a": 2}
        fidelity.update(cluster_b_work=False)
    finally:
        _cleanup(target)


def test_holding_the_source_by_override_makes_the_move_before_the_break(
    target: Target, fidelity: dict[str, Any]
) -> None:
    """0/100 -> 80/20 of 10 with cluster-b held at 10 by an override: cluster-a (no Work
    before, so not surgeable) starts its 8 while b keeps 10 ready; released, b drops to 2."""
    if isinstance(target, RealTarget):
        target.reset()
    _cleanup(target)
    try:
        kubectl(target.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(_objects(10, 0, 1)))
        target.wait_for(_at((0, 0), (10, 10)), "all 10 in cluster-b, ready")
        kubectl(
            target.kubeconfig,
            "apply",
            "-f",
            "-",
            stdin=json.dumps(_surge("OverridePolicy", {"clusterNames": ["cluster-b"]}, 10)),
        )
        t0 = target.now()
        kubectl(target.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all(_objects()))
        moved = target.wait_for(_at((8, 8), (10, 10)), "cluster-a ready while b is held")
        assert _assigned(target) == {"cluster-a": 8, "cluster-b": 2}
        dips = [
            s
            for s in target.timeline()
            if s["t"] >= t0
            and s["workload"] == WEB
            and s["cluster"] == "cluster-b"
            and s["ready"] < 10
        ]
        assert dips == []
        kubectl(target.kubeconfig, "delete", "overridepolicy", "-n", NS, "surge-web-wave-1")
        released = target.wait_for(_at((8, 8), (2, 2)), "cluster-b released to 2")
        fidelity.update(
            moved={c: moved[(WEB, c)] for c in ("cluster-a", "cluster-b")},
            released={c: released[(WEB, c)] for c in ("cluster-a", "cluster-b")},
            seconds=round(target.now() - t0, 1),
        )
    finally:
        _cleanup(target)
