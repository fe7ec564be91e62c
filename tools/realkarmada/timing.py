"""How long Karmada takes from a template touch to a scheduled binding to a converged
aggregatedStatus: `python -m tools.realkarmada.timing --kubeconfig F [--rounds N]`.

Works against any Karmada API (the real plane or `tidal sim`), so the emulator's timing can be
calibrated from the real figures. Uses namespace tidal-timing and CPP tidal-timing, removed after.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

NS = "tidal-timing"
POLICY = "tidal-timing"
REPLICAS = 4


def _weights(weights: dict[str, int], lazy: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS}],
        "placement": {
            "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {
                    "staticWeightList": [
                        {"targetCluster": {"clusterNames": [c]}, "weight": w}
                        for c, w in sorted(weights.items())
                    ]
                },
            },
        },
    }
    if lazy:
        spec["activationPreference"] = "Lazy"
    return spec


class Probe:
    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config

        api = config.new_client_from_config(kubeconfig)
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.crd = client.CustomObjectsApi(api)

    def binding(self, name: str) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            rb: dict[str, Any] = self.crd.get_namespaced_custom_object(
                "work.karmada.io", "v1alpha2", NS, "resourcebindings", f"{name}-deployment"
            )
            return rb
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def until(
        self, name: str, pred: Callable[[dict[str, Any]], bool], timeout: float = 120
    ) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rb = self.binding(name)
            if rb is not None and pred(rb):
                return time.monotonic()
            time.sleep(0.05)
        raise TimeoutError(f"binding of {name} did not reach the state in {timeout}s")

    def setup(self) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.create_namespace({"metadata": {"name": NS}})
        except ApiException as e:
            if e.status != 409:
                raise
        self.crd.create_cluster_custom_object(
            "policy.karmada.io",
            "v1alpha1",
            "clusterpropagationpolicies",
            {
                "apiVersion": "policy.karmada.io/v1alpha1",
                "kind": "ClusterPropagationPolicy",
                "metadata": {"name": POLICY},
                "spec": _weights({"cluster-a": 1, "cluster-b": 1}, lazy=True),
            },
        )

    def teardown(self) -> None:
        from contextlib import suppress

        with suppress(Exception):
            self.crd.delete_cluster_custom_object(
                "policy.karmada.io", "v1alpha1", "clusterpropagationpolicies", POLICY
            )
        with suppress(Exception):
            self.core.delete_namespace(NS)

    def round(self, i: int) -> dict[str, float]:
        """Create a Deployment (a:1 b:1), then patch the Lazy policy to b only and touch the
        template: seconds to the scheduled binding and to a converged aggregatedStatus."""
        name = f"probe-{i}"
        t0 = time.monotonic()
        self.apps.create_namespaced_deployment(
            NS,
            {
                "metadata": {"name": name},
                "spec": {
                    "replicas": REPLICAS,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "probe",
                                    "resources": {"requests": {"cpu": "10m"}},
                                }
                            ]
                        },
                    },
                },
            },
        )
        split = {"cluster-a": 2, "cluster-b": 2}
        t_sched = self.until(name, lambda rb: _assigned(rb) == split)
        t_ready = self.until(name, lambda rb: _ready(rb) == split)
        self.crd.patch_cluster_custom_object(
            "policy.karmada.io",
            "v1alpha1",
            "clusterpropagationpolicies",
            POLICY,
            {"spec": _weights({"cluster-b": 1}, lazy=True)},
        )
        time.sleep(1.0)  # Lazy: nothing moves until the touch
        t1 = time.monotonic()
        self.apps.patch_namespaced_deployment(
            name, NS, {"metadata": {"annotations": {"tidal.io/timing-touch": str(time.time())}}}
        )
        moved = {"cluster-b": REPLICAS}
        t_sched2 = self.until(name, lambda rb: _assigned(rb) == moved)
        t_ready2 = self.until(name, lambda rb: _ready(rb) == moved)
        self.crd.patch_cluster_custom_object(
            "policy.karmada.io",
            "v1alpha1",
            "clusterpropagationpolicies",
            POLICY,
            {"spec": _weights({"cluster-a": 1, "cluster-b": 1}, lazy=True)},
        )
        self.apps.delete_namespaced_deployment(name, NS)
        return {
            "create_to_scheduled": t_sched - t0,
            "create_to_ready": t_ready - t0,
            "touch_to_scheduled": t_sched2 - t1,
            "touch_to_converged": t_ready2 - t1,
        }


def _assigned(rb: dict[str, Any]) -> dict[str, int]:
    return {
        c["name"]: c.get("replicas", 0)
        for c in rb.get("spec", {}).get("clusters") or []
        if c.get("replicas", 0)
    }


def _ready(rb: dict[str, Any]) -> dict[str, int]:
    out = {}
    for item in rb.get("status", {}).get("aggregatedStatus") or []:
        ready = (item.get("status") or {}).get("readyReplicas", 0)
        if item.get("applied") and ready:
            out[item["clusterName"]] = ready
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.realkarmada.timing")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    probe = Probe(args.kubeconfig)
    probe.teardown()
    time.sleep(2)
    probe.setup()
    try:
        rounds = [probe.round(i) for i in range(args.rounds)]
    finally:
        probe.teardown()
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        print(
            f"{key:22} median {statistics.median(values):6.2f}s  min {min(values):6.2f}s  "
            f"max {max(values):6.2f}s  (n={len(values)})"
        )


if __name__ == "__main__":
    main()
