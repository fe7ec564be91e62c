"""End-to-end targets: the emulator or a real Karmada control plane (tools.realkarmada), behind
one interface: load objects, read placements, sample a timeline of (assigned, ready) per
(workload, member cluster)."""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import Any

from tidal.karmada.bindings import list_bindings
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.karmada.views import BindingView
from tidal.settings import KarmadaSettings

Placement = dict[tuple[str, str], tuple[int, int]]  # (ns/Kind/name, cluster) -> (assigned, ready)


class Target(ABC):
    """A Karmada API the e2e scenarios run against."""

    name: str
    kubeconfig: Path
    # seconds a scenario may wait for placements to converge on this target
    patience: float
    # a run's TIDAL_KARMADA__POLICY_SETTLE_SECONDS here: the emulator's detector has no lag
    # unless a topology sets one; a real detector's is the setting's default
    policy_settle: float = 0.0

    def client(self) -> KarmadaClient:
        return KarmadaClient.from_kubeconfig(
            self.kubeconfig,
            None,
            retry=RetryPolicy(attempts=8, base_delay=0.05, max_delay=0.5, max_retry_after=1.0),
        )

    @abstractmethod
    def apply(self, objs: list[dict[str, Any]]) -> None: ...

    @abstractmethod
    def timeline(self) -> list[dict[str, Any]]:
        """Samples {t, workload, cluster, assigned, ready} in time order (t on one clock)."""

    @abstractmethod
    def now(self) -> float: ...

    @abstractmethod
    def occupy_gpus(self, cluster: str, gpus: int) -> None:
        """Take `gpus` GPUs of `cluster` away from Karmada's view (training jobs at night) and
        return once Karmada's Cluster status shows it."""

    def placements(self) -> Placement:
        out: Placement = {}
        for s in self.timeline():
            out[(s["workload"], s["cluster"])] = (s["assigned"], s["ready"])
        return out

    def wait_reported(self, replicas: dict[str, int], namespace: str = "ai-app") -> None:
        """Until Karmada's bindings report every workload (`namespace/Kind/name` -> replicas)
        fully ready across clusters, as tidal reads it: the members can be ready a moment
        before the aggregated status says so."""
        client = self.client()
        deadline = time.monotonic() + self.patience
        while True:
            ready = {}
            for binding in list_bindings(client, namespace)[0]:
                resource = (binding.get("spec") or {}).get("resource") or {}
                key = f"{namespace}/{resource.get('kind')}/{resource.get('name')}"
                ready[key] = sum(n for n in BindingView(binding).ready().values())
            short = {w: ready.get(w, 0) for w, n in replicas.items() if ready.get(w, 0) < n}
            if not short:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: bindings never reported ready: {short}")
            time.sleep(0.5)

    def wait_serving(
        self, pred: Any, replicas: dict[str, int], what: str, timeout: float | None = None
    ) -> Placement:
        """Until the members show `pred` and Karmada's bindings report `replicas` ready: a
        switch plans its floors on the bindings, which trail the members by a status delay."""
        seen = self.wait_for(pred, what, timeout)
        self.wait_reported(replicas)
        return seen

    def wait_for(self, pred: Any, what: str, timeout: float | None = None) -> Placement:
        deadline = time.monotonic() + (timeout or self.patience)
        now = self.placements()
        while not pred(now):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: {what} not reached; placements: {now}")
            time.sleep(0.2)
            now = self.placements()
        return now


class EmulatorTarget(Target):
    name = "emulator"
    patience = 30.0

    def __init__(self, emulator: Any, tmp: Path) -> None:
        self.emu = emulator
        self.kubeconfig = emulator.write_kubeconfig(tmp / "kubeconfig")

    def apply(self, objs: list[dict[str, Any]]) -> None:
        self.emu.apply(objs)

    def timeline(self) -> list[dict[str, Any]]:
        return [{**s, "t": _seconds(s["t"])} for s in self.emu.timeline()]

    def now(self) -> float:
        return _seconds(self.emu.clock.now())

    def occupy_gpus(self, cluster: str, gpus: int) -> None:
        """Training Deployment pinned to `cluster` through Karmada, one GPU a pod, up to `gpus`
        in use; returns once the Cluster's status counts them (the emulator's status controller
        recomputes the summary from its pods, so a patched summary would not last)."""
        client = self.client()
        from tidal.karmada.client import CLUSTERS

        def used() -> int:
            c = client.request("get", CLUSTERS, "GET", CLUSTERS.path(name=cluster))
            rs = c["status"]["resourceSummary"]
            return int(rs.get("allocated", {}).get("nvidia.com/gpu", "0"))

        count = max(0, gpus - used())
        self.apply(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "training"}},
                {
                    "apiVersion": "policy.karmada.io/v1alpha1",
                    "kind": "PropagationPolicy",
                    "metadata": {"name": "training", "namespace": "training"},
                    "spec": {
                        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                        "placement": {
                            "clusterAffinity": {"clusterNames": [cluster]},
                            "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
                        },
                    },
                },
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "training", "namespace": "training"},
                    "spec": {
                        "replicas": count,
                        "selector": {"matchLabels": {"app": "training"}},
                        "template": {
                            "metadata": {"labels": {"app": "training"}},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "t",
                                        "image": "trainer",
                                        "resources": {
                                            "requests": {"nvidia.com/gpu": "1"},
                                            "limits": {"nvidia.com/gpu": "1"},
                                        },
                                    }
                                ]
                            },
                        },
                    },
                },
            ]
        )
        self.wait_for(lambda _: used() >= gpus, f"{cluster} status showing {gpus} GPUs in use")


class RealTarget(Target):
    """A running real plane: objects created with kubectl; a sampler thread reads every member's
    Deployments (spec.replicas = assigned, status.readyReplicas = ready) a few times a second."""

    name = "real"
    patience = 180.0
    policy_settle = float(KarmadaSettings.model_fields["policy_settle_seconds"].default)

    def __init__(
        self, kubeconfig: Path, members: dict[str, Path], namespace: str, version: str
    ) -> None:
        from kubernetes import client, config

        self.kubeconfig = kubeconfig
        self.version = version  # the Karmada release, "v1.18.2"
        self.release = tuple(int(p) for p in version.lstrip("v").split(".")[:2])
        self.namespace = namespace
        self._kubeconfigs = members
        # the official client, held as Any: untyped loader, models read attribute by attribute
        new_client: Any = config.new_client_from_config
        self._apps: dict[str, Any] = {
            n: client.AppsV1Api(new_client(str(kc))) for n, kc in members.items()
        }
        self._samples: list[dict[str, Any]] = []
        # (t, cluster, error) of member reads that failed: a gap the timeline cannot see into
        self.missed_reads: list[tuple[float, str, str]] = []
        self._last: dict[tuple[str, str], tuple[int, int]] = {}
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="real-sampler")
        self._thread.start()

    def now(self) -> float:
        return time.time()

    def occupy_gpus(self, cluster: str, gpus: int) -> None:
        """'training' pods straight on the member, one GPU each, until `gpus` of the cluster's
        GPUs are in use (the other pods there count). The count is taken from the member's live
        pods, not from the Cluster's resourceSummary: that summary is refreshed every 10 s and
        still counts the pods of a scenario just reset, so a count from it comes out short."""

        def summary_gpus() -> int:
            c = json.loads(kubectl(self.kubeconfig, "get", "cluster", cluster, "-o", "json"))
            rs: dict[str, Any] = c["status"].get("resourceSummary", {})
            return int(rs.get("allocated", {}).get("nvidia.com/gpu", "0"))

        applied: list[int] = []

        def occupied(_: Placement) -> bool:
            count = max(0, gpus - self._member_gpus(cluster, exclude="training"))
            if not applied or applied[-1] != count:  # other pods came or went: follow them
                self._training(cluster, count)
                applied.append(count)
            return summary_gpus() >= gpus and self._member_gpus(cluster) >= gpus

        self.wait_for(occupied, f"{cluster} status showing {gpus} GPUs in use", 120)

    def _member_gpus(self, cluster: str, exclude: str | None = None) -> int:
        """GPUs requested by the member's pods that are bound, not finished and not deleting."""
        pods = json.loads(kubectl(self._kubeconfigs[cluster], "get", "pods", "-A", "-o", "json"))[
            "items"
        ]
        return sum(
            int(c.get("resources", {}).get("requests", {}).get("nvidia.com/gpu", "0"))
            for p in pods
            if p["metadata"]["namespace"] != exclude
            and p["spec"].get("nodeName")
            and "deletionTimestamp" not in p["metadata"]
            and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            for c in p["spec"]["containers"]
        )

    def _training(self, cluster: str, replicas: int) -> None:
        kubectl(
            self._kubeconfigs[cluster],
            "apply",
            "-f",
            "-",
            stdin=json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "training"}},
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "metadata": {"name": "training", "namespace": "training"},
                            "spec": {
                                "replicas": replicas,
                                "selector": {"matchLabels": {"app": "training"}},
                                "template": {
                                    "metadata": {"labels": {"app": "training"}},
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "t",
                                                "image": "trainer",
                                                "resources": {
                                                    "requests": {"nvidia.com/gpu": "1"},
                                                    "limits": {"nvidia.com/gpu": "1"},
                                                },
                                            }
                                        ]
                                    },
                                },
                            },
                        },
                    ],
                }
            ),
        )

    def default_models(self) -> None:
        """Put back the resource models Karmada gives a new Cluster (read from a throwaway
        Cluster object, so that they are the running release's)."""
        probe = {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "tidal-model-probe"},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"},
        }
        created = json.loads(
            kubectl(self.kubeconfig, "create", "-o", "json", "-f", "-", stdin=json.dumps(probe))
        )
        kubectl(self.kubeconfig, "delete", "cluster", "tidal-model-probe", "--wait=false")
        self._set_models(created["spec"]["resourceModels"])

    def _set_models(self, models: list[dict[str, Any]]) -> None:
        for cluster in self._kubeconfigs:
            kubectl(
                self.kubeconfig,
                "patch",
                "cluster",
                cluster,
                "--type",
                "merge",
                "-p",
                json.dumps({"spec": {"resourceModels": models}}),
            )

        def graded(_: Placement) -> bool:
            for cluster in self._kubeconfigs:
                c = json.loads(kubectl(self.kubeconfig, "get", "cluster", cluster, "-o", "json"))
                modelings = c["status"].get("resourceSummary", {}).get("allocatableModelings", [])
                if len(modelings) != len(models) or not any(m["count"] for m in modelings):
                    return False
            return True

        self.wait_for(graded, "the resource models in the Clusters' status", 60)

    def model_gpus(self) -> None:
        """Give both Clusters resource models that grade nodes by nvidia.com/gpu too (grades at
        the demo nodes' sizes). Karmada's default models know only cpu and memory, so its
        general estimator finds room for no GPU pod (see docs/fidelity.md#resource-models)."""
        inf = "9223372036854775807"
        bounds = [
            ("0", "128", "0", "1Ti", "0", "20"),
            ("128", "192", "1Ti", "1536Gi", "20", "32"),
            ("192", inf, "1536Gi", inf, "32", inf),
        ]
        models = [
            {
                "grade": g,
                "ranges": [
                    {"name": "cpu", "min": c0, "max": c1},
                    {"name": "memory", "min": m0, "max": m1},
                    {"name": "nvidia.com/gpu", "min": g0, "max": g1},
                ],
            }
            for g, (c0, c1, m0, m1, g0, g1) in enumerate(bounds)
        ]
        self._set_models(models)

    def release_gpus(self, cluster: str) -> None:
        kubectl(
            self._kubeconfigs[cluster],
            "delete",
            "namespace",
            "training",
            "--ignore-not-found",
            "--wait=false",
        )

    def apply(self, objs: list[dict[str, Any]]) -> None:
        kubectl(
            self.kubeconfig,
            "apply",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}),
        )

    def timeline(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._samples)

    def placements(self) -> Placement:
        """Read the members now (the sampler's last round may be a quarter second old)."""
        self._sample_once()
        return super().placements()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._sample_once()
            self._stop.wait(0.25)

    def _sample_once(self) -> None:
        with self._reading:
            t = time.time()
            seen: dict[tuple[str, str], tuple[int, int]] = {}
            read: set[str] = set()
            for cluster, apps in self._apps.items():
                try:
                    items = apps.list_namespaced_deployment(
                        self.namespace, _request_timeout=5
                    ).items
                except Exception as e:  # a member briefly unreachable: sample again later
                    self.missed_reads.append((t, cluster, type(e).__name__))
                    continue
                read.add(cluster)
                for d in items:
                    key = (f"{self.namespace}/Deployment/{d.metadata.name}", cluster)
                    seen[key] = (d.spec.replicas or 0, d.status.ready_replicas or 0)
            with self._lock:
                for key in set(self._last) | set(seen):
                    if key[1] not in read:
                        continue
                    value = seen.get(key, (0, 0))
                    if self._last.get(key) != value:
                        self._samples.append(
                            {
                                "t": t,
                                "workload": key[0],
                                "cluster": key[1],
                                "assigned": value[0],
                                "ready": value[1],
                            }
                        )
                        self._last[key] = value

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def reset(self) -> None:
        """Delete what earlier scenarios left (team policies, the namespace's Deployments and
        overrides, rebalancers, training on members) and wait until the members hold none of it."""
        for cluster in self._kubeconfigs:
            self.release_gpus(cluster)
        for kind, scope in (
            ("cpp", ["-l", "atms-app/teamid"]),
            ("workloadrebalancers", ["--all"]),
            ("pp", ["-n", self.namespace, "--all"]),
            ("overridepolicies", ["-n", self.namespace, "--all"]),
            ("deployments", ["-n", self.namespace, "--all"]),
        ):
            kubectl(
                self.kubeconfig,
                "delete",
                kind,
                *scope,
                "--ignore-not-found",
                "--wait=true",
                timeout=120,
            )
        self.wait_for(lambda now: all(a == 0 for a, _ in now.values()), "members emptied")
        # Karmada refreshes Cluster status every 10 s: a scenario's plan must not read the GPUs
        # of the pods just deleted as still in use
        self.wait_for(
            lambda _: all(self._status_gpus(c) == self._member_gpus(c) for c in self._kubeconfigs),
            "Cluster status showing the members' GPUs in use",
        )

    def _status_gpus(self, cluster: str) -> int:
        """GPUs in use in `cluster` as its Cluster status says (allocated + allocating)."""
        c = json.loads(kubectl(self.kubeconfig, "get", "cluster", cluster, "-o", "json"))
        summary: dict[str, Any] = (c.get("status") or {}).get("resourceSummary") or {}
        return sum(
            int((summary.get(part) or {}).get("nvidia.com/gpu", "0"))
            for part in ("allocated", "allocating")
        )


def _seconds(t: Any) -> float:
    return float(t.timestamp()) if isinstance(t, datetime) else float(t)


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
    import subprocess

    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        text=True,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
