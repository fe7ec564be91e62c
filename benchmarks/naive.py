"""The naive controller B3 compares tidal with: what a quick in-house script would do.

It swaps the policies, then for each wave creates one WorkloadRebalancer PER WORKLOAD and
polls every binding of the wave with a GET once per (simulated) second until the binding is
rescheduled after its rebalancer and all its replicas are ready. Same waves as tidal, so the
difference is only in how it triggers and how it watches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from benchmarks import scenario as sc

REB = ("apps.karmada.io", "v1alpha1", "workloadrebalancers")
RB = ("work.karmada.io", "v1alpha2", "resourcebindings")
CPP = ("policy.karmada.io", "v1alpha1", "clusterpropagationpolicies")


def _ts(text: str | None) -> float:
    if not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _done(binding: dict[str, Any], triggered: float) -> bool:
    status = binding.get("status") or {}
    spec = binding.get("spec") or {}
    if _ts(status.get("lastScheduledTime")) < triggered:
        return False
    generation = (binding.get("metadata") or {}).get("generation")
    if status.get("schedulerObservedGeneration") != generation:
        return False
    ready = sum(
        int((item.get("status") or {}).get("readyReplicas") or 0)
        for item in status.get("aggregatedStatus") or []
    )
    return ready >= int(spec.get("replicas") or 0)


def run_naive(
    objects: Any,
    waves: Sequence[Sequence[str]],
    *,
    swap_from: str,
    swap_to: dict[str, Any],
    speed: float,
    timeout: float = 120.0,
) -> int:
    """Carry out the switch; returns how many waves converged. `objects` is a
    kubernetes CustomObjectsApi; `waves` lists Deployment names."""
    objects.delete_cluster_custom_object(*CPP, swap_from)
    objects.create_cluster_custom_object(*CPP, swap_to)
    done_waves = 0
    for index, wave in enumerate(waves):
        triggered: dict[str, float] = {}
        for name in wave:
            body = {
                "apiVersion": "apps.karmada.io/v1alpha1",
                "kind": "WorkloadRebalancer",
                "metadata": {"name": f"naive-{index}-{name}"},
                "spec": {
                    "ttlSecondsAfterFinished": 60,
                    "workloads": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "namespace": sc.NAMESPACE,
                            "name": name,
                        }
                    ],
                },
            }
            created = objects.create_cluster_custom_object(*REB, body)
            triggered[name] = _ts(created["metadata"].get("creationTimestamp"))
        pending = set(wave)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for name in sorted(pending):
                binding = objects.get_namespaced_custom_object(
                    *RB[:2], sc.NAMESPACE, RB[2], f"{name}-deployment"
                )
                if _done(binding, triggered[name]):
                    pending.discard(name)
            if pending:
                time.sleep(1.0 / speed)  # one poll per binding per simulated second
        if pending:
            break
        done_waves += 1
    return done_waves
