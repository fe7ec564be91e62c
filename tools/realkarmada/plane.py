"""Bring a real Karmada control plane and two kwok members up on 127.0.0.1, or take it down.

Order: certificates, etcd, karmada-apiserver (kube-apiserver), CRDs, kube-controller-manager,
karmada-aggregated-apiserver behind its APIService, karmada-webhook and its configurations,
karmada-controller-manager, `tidal estimator` (tools/realkarmada/estimator.py), karmada-scheduler
with its scheduler-estimator flags, then each member (kwokctl, fake GPU nodes) joined with
karmadactl. `up` returns once both Clusters are Ready with a resourceSummary.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.realkarmada import estimator, upstream
from tools.realkarmada.build import Built, build, cache_root
from tools.realkarmada.pki import Pki
from tools.realkarmada.procs import (
    STATE,
    PlaneError,
    Supervisor,
    free_port,
    http_ok,
    https_ok,
    stop_pids,
    tail,
    tls_ok,
)
from tools.realkarmada.versions import DEFAULT_KARMADA, ToolchainError

MEMBERS: dict[str, dict[str, str]] = {
    "cluster-a": {"tidal.io/workloads": "training-inference"},
    "cluster-b": {"tidal.io/workloads": "inference"},
}
# (nodes, capacity per node): the totals of the emulator's demo topology, so that capacity-driven
# placements (DynamicWeight) can be compared: cluster-a 1024 cpu, 8Ti, 160 GPUs, 2200 pods;
# cluster-b 768 cpu, 6Ti, 128 GPUs, 1100 pods.
NODES: dict[str, tuple[int, dict[str, str]]] = {
    "cluster-a": (8, {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "20", "pods": "275"}),
    "cluster-b": (4, {"cpu": "192", "memory": "1536Gi", "nvidia.com/gpu": "32", "pods": "275"}),
}

# kwok's 'general' pod stages wait 1 s plus up to 5 s of jitter each (create, then ready): a pod
# took 2-12 s to serve, and the real tier spent most of its time there. 1 s of jitter keeps the
# order of the stages and their randomness, at 2-4 s a pod.
POD_JITTER_MS = 1000


def default_work_dir() -> Path:
    """TIDAL_REALKARMADA_PLANE, else the cache's plane dir: two planes on one machine (two
    checkouts' test runs) need two work dirs, or each reuses or stops the other's."""
    return Path(os.environ.get("TIDAL_REALKARMADA_PLANE") or cache_root() / "plane")


@dataclass(frozen=True)
class Plane:
    """A running plane as recorded in its work dir's state file."""

    work: Path
    kubeconfig: Path
    members: dict[str, Path]
    version: str

    @classmethod
    def load(cls, work: Path | None = None) -> Plane | None:
        work = work or default_work_dir()
        try:
            s = json.loads((work / STATE).read_text())
            return cls(
                work,
                Path(s["kubeconfig"]),
                {k: Path(v) for k, v in s["members"].items()},
                s["version"],
            )
        except (OSError, KeyError, ValueError):
            return None

    def healthy(self) -> bool:
        """True when the Karmada API answers and both Clusters are Ready."""
        try:
            return _clusters_ready(self.kubeconfig)
        except (PlaneError, OSError):
            return False


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise PlaneError("kubectl not found on PATH: install kubectl")
    done = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        text=True,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise PlaneError(f"kubectl {' '.join(args[:3])}: {done.stderr.strip()[-500:]}")
    return done.stdout


def _apply(kubeconfig: Path, docs: list[dict[str, Any]]) -> None:
    _kubectl(
        kubeconfig,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs),
    )


def _clusters_ready(kubeconfig: Path) -> bool:
    items = json.loads(_kubectl(kubeconfig, "get", "clusters", "-o", "json", timeout=15))["items"]
    ready = {
        c["metadata"]["name"]
        for c in items
        if any(
            x["type"] == "Ready" and x["status"] == "True"
            for x in c.get("status", {}).get("conditions", [])
        )
        and c.get("status", {}).get("resourceSummary", {}).get("allocatable")
    }
    return ready >= set(MEMBERS)


def _kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, name: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": name,
                "clusters": [
                    {
                        "name": name,
                        "cluster": {"server": server, "certificate-authority-data": _b64file(ca)},
                    }
                ],
                "users": [
                    {
                        "name": "admin",
                        "user": {
                            "client-certificate-data": _b64file(cert),
                            "client-key-data": _b64file(key),
                        },
                    }
                ],
                "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
            }
        )
    )
    return path


def _b64file(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


class Bringup:
    """One `up`: each step starts a process and waits for it, recording PIDs as it goes."""

    def __init__(self, built: Built, work: Path) -> None:
        self.bin = built
        self.version = built.release.karmada
        self.work = work
        self.sup = Supervisor(work)
        self.pki = Pki(work / "pki")
        taken: set[int] = set()
        self.ports = {
            n: free_port(taken)
            for n in (
                "etcd",
                "etcd-peer",
                "apiserver",
                "aggregated",
                "webhook",
                "webhook-health",
                "webhook-metrics",
                "kcm",
                "cm-health",
                "cm-metrics",
                "sched-health",
                "sched-metrics",
                "estimator-grpc",
                "estimator-http",
            )
        }
        self.sup.state.update(
            version=self.version,
            ports=self.ports,
            members={},
            bin_dir=str(built.bin_dir),
            kwok_workdir=str(work / "kwok"),
        )
        self.admin_crt, self.admin_key = self.pki.issue(
            "admin", "admin", org="system:masters", client=True
        )
        self.kubeconfig = _kubeconfig(
            work / "karmada.kubeconfig",
            f"https://127.0.0.1:{self.ports['apiserver']}",
            self.pki.ca,
            self.admin_crt,
            self.admin_key,
            "karmada-apiserver",
        )
        self.sup.state["kubeconfig"] = str(self.kubeconfig)

    def run(self) -> Path:
        self.etcd()
        self.apiserver()
        self.crds_and_namespaces()
        self.kube_controller_manager()
        self.aggregated_apiserver()
        self.webhook()
        self.team_estimator()
        self.karmada_controllers()
        for name, labels in MEMBERS.items():
            self.member(name, labels)
        self.sup.wait("karmada-controller-manager", lambda: _clusters_ready(self.kubeconfig), 180)
        return self.kubeconfig

    def _b(self, name: str) -> str:
        return str(self.bin.path(name))

    def etcd(self) -> None:
        p, peer = self.ports["etcd"], self.ports["etcd-peer"]
        self.sup.start(
            "etcd",
            [
                self._b("etcd"),
                "--name",
                "karmada",
                "--data-dir",
                str(self.work / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{p}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{p}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"karmada=http://127.0.0.1:{peer}",
                "--listen-metrics-urls",
                "",
                "--quota-backend-bytes",
                str(2 << 30),
            ],
        )
        self.sup.wait("etcd", lambda: http_ok(f"http://127.0.0.1:{p}/health"), 60)

    def apiserver(self) -> None:
        crt, key = self.pki.issue(
            "apiserver",
            "karmada-apiserver",
            server=True,
            dns=("kubernetes", "kubernetes.default", "kubernetes.default.svc"),
        )
        proxy_crt, proxy_key = self.pki.issue(
            "front-proxy-client", "front-proxy-client", client=True
        )
        sa_key, sa_pub = self.pki.service_account_keys()
        ca = str(self.pki.ca)
        self.sup.start(
            "karmada-apiserver",
            [
                self._b("kube-apiserver"),
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.ports['apiserver']}",
                f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                "--allow-privileged=true",
                "--authorization-mode=RBAC",
                f"--client-ca-file={ca}",
                f"--tls-cert-file={crt}",
                f"--tls-private-key-file={key}",
                "--disable-admission-plugins=StorageObjectInUseProtection,ServiceAccount",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={sa_key}",
                "--service-cluster-ip-range=10.96.0.0/12",
                f"--proxy-client-cert-file={proxy_crt}",
                f"--proxy-client-key-file={proxy_key}",
                f"--requestheader-client-ca-file={ca}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-username-headers=X-Remote-User",
                "--enable-aggregator-routing=false",
                "--profiling=false",
                "--endpoint-reconciler-type=none",
            ],
        )
        url = f"https://127.0.0.1:{self.ports['apiserver']}/readyz"
        self.sup.wait(
            "karmada-apiserver",
            lambda: https_ok(url, self.pki.ca, self.admin_crt, self.admin_key),
            120,
        )

    def crds_and_namespaces(self) -> None:
        webhook = f"https://127.0.0.1:{self.ports['webhook']}"
        ns = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
            for n in ("karmada-system", "karmada-cluster")
        ]
        _apply(
            self.kubeconfig, ns + upstream.karmada_crds(self.version, webhook, self.pki.ca_pem())
        )
        _kubectl(
            self.kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"
        )

    def kube_controller_manager(self) -> None:
        k = str(self.kubeconfig)
        self.sup.start(
            "kube-controller-manager",
            [
                self._b("kube-controller-manager"),
                f"--kubeconfig={k}",
                f"--authentication-kubeconfig={k}",
                f"--authorization-kubeconfig={k}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['kcm']}",
                "--controllers=namespace,garbagecollector,serviceaccount-token,clusterrole-aggregation",
                f"--root-ca-file={self.pki.ca}",
                f"--service-account-private-key-file={self.pki.dir / 'sa.key'}",
                "--leader-elect=false",
                "--cluster-name=karmada",
            ],
        )

    def aggregated_apiserver(self) -> None:
        crt, key = self.pki.issue(
            "aggregated",
            "karmada-aggregated-apiserver",
            server=True,
            dns=("karmada-aggregated-apiserver.karmada-system.svc",),
        )
        k, port = str(self.kubeconfig), self.ports["aggregated"]
        self.sup.start(
            "karmada-aggregated-apiserver",
            [
                self._b("karmada-aggregated-apiserver"),
                f"--kubeconfig={k}",
                f"--authentication-kubeconfig={k}",
                f"--authorization-kubeconfig={k}",
                f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                f"--tls-cert-file={crt}",
                f"--tls-private-key-file={key}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--audit-log-path=-",
                "--audit-log-maxage=0",
                "--audit-log-maxbackup=0",
            ],
        )
        _apply(
            self.kubeconfig,
            [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": "karmada-aggregated-apiserver",
                        "namespace": "karmada-system",
                    },
                    "spec": {
                        "type": "ExternalName",
                        "externalName": "localhost",
                        "ports": [{"port": port, "protocol": "TCP", "targetPort": port}],
                    },
                },
                {
                    "apiVersion": "apiregistration.k8s.io/v1",
                    "kind": "APIService",
                    "metadata": {"name": "v1alpha1.cluster.karmada.io"},
                    "spec": {
                        "group": "cluster.karmada.io",
                        "version": "v1alpha1",
                        "groupPriorityMinimum": 2000,
                        "versionPriority": 10,
                        "caBundle": upstream._b64(self.pki.ca_pem()),
                        "service": {
                            "name": "karmada-aggregated-apiserver",
                            "namespace": "karmada-system",
                            "port": port,
                        },
                    },
                },
            ],
        )
        self.sup.wait(
            "karmada-aggregated-apiserver",
            lambda: _kubectl(self.kubeconfig, "get", "clusters", timeout=10) is not None,
            120,
        )

    def webhook(self) -> None:
        certs = self.work / "webhook-certs"
        certs.mkdir()
        crt, key = self.pki.issue("webhook", "karmada-webhook", server=True)
        shutil.copy(crt, certs / "tls.crt")
        shutil.copy(key, certs / "tls.key")
        self.sup.start(
            "karmada-webhook",
            [
                self._b("karmada-webhook"),
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['webhook']}",
                f"--cert-dir={certs}",
                f"--metrics-bind-address=127.0.0.1:{self.ports['webhook-metrics']}",
                f"--health-probe-bind-address=127.0.0.1:{self.ports['webhook-health']}",
            ],
        )
        self.sup.wait("karmada-webhook", lambda: tls_ok(self.ports["webhook"], self.pki.ca), 90)
        _apply(
            self.kubeconfig,
            upstream.karmada_webhook_configurations(
                self.version, f"https://127.0.0.1:{self.ports['webhook']}", self.pki.ca_pem()
            ),
        )

    def team_estimator(self) -> None:
        """`tidal estimator` (no teams yet) and the Services karmada-scheduler dials it by,
        before the scheduler starts: it dials each member's estimator once the Cluster exists."""
        grpc_port, http_port = self.ports["estimator-grpc"], self.ports["estimator-http"]
        teams = self.work / "teams.yaml"
        teams.write_text(estimator.NO_TEAMS)
        _apply(
            self.kubeconfig, estimator.services(list(MEMBERS), grpc_port) + estimator.rbac("admin")
        )
        args = estimator.args(self.kubeconfig, teams, grpc_port, http_port)
        self.sup.state["estimator"] = {
            "grpc": grpc_port,
            "http": http_port,
            "teams": str(teams),
            "args": args,
        }
        self.sup.start(estimator.NAME, args, env=estimator.env())
        self.sup.wait(
            estimator.NAME, functools.partial(http_ok, f"http://127.0.0.1:{http_port}/healthz"), 60
        )

    def karmada_controllers(self) -> None:
        k, p = str(self.kubeconfig), self.ports
        cm, sched = self._b("karmada-controller-manager"), self._b("karmada-scheduler")
        self.sup.start(
            "karmada-controller-manager",
            [
                cm,
                f"--kubeconfig={k}",
                *serving_flags(cm, p["cm-health"], p["cm-metrics"]),
                "--cluster-status-update-frequency=10s",
            ],
        )
        self.sup.start(
            "karmada-scheduler",
            [
                sched,
                f"--kubeconfig={k}",
                *serving_flags(sched, p["sched-health"], p["sched-metrics"]),
                *estimator.scheduler_flags(),
            ],
        )
        for name, port in (
            ("karmada-controller-manager", "cm-health"),
            ("karmada-scheduler", "sched-health"),
        ):
            self.sup.wait(
                name, functools.partial(http_ok, f"http://127.0.0.1:{self.ports[port]}/healthz"), 90
            )

    def member(self, name: str, labels: dict[str, str]) -> None:
        kwok_dir = self.work / "kwok"
        config = self.work / f"{name}.kwokctl.yaml"
        options = {
            "runtime": "binary",
            "bindAddress": "127.0.0.1",
            "kubeAuthorization": True,
            "kubeApiserverBinary": self._b("kube-apiserver"),
            "kubeControllerManagerBinary": self._b("kube-controller-manager"),
            "kubeSchedulerBinary": self._b("kube-scheduler"),
            "kwokControllerBinary": self._b("kwok"),
            "etcdBinary": self._b("etcd"),
            "kubeVersion": self.bin.release.kubernetes,
        }
        if shutil.which("kubectl"):
            options["kubectlBinary"] = shutil.which("kubectl")
        config.write_text(
            yaml.safe_dump_all(
                [
                    {
                        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
                        "kind": "KwokctlConfiguration",
                        "options": options,
                    },
                    *upstream.kwok_stages(POD_JITTER_MS),
                ]
            )
        )
        env = {"KWOK_WORKDIR": str(kwok_dir)}
        log = self.sup.logs / f"kwokctl-{name}.log"
        with log.open("ab") as f:
            done = subprocess.run(
                [
                    self._b("kwokctl"),
                    "create",
                    "cluster",
                    "--name",
                    name,
                    "--config",
                    str(config),
                    "--wait",
                    "2m",
                ],
                env={**os.environ, **env},
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
                timeout=300,
            )
        if done.returncode != 0:
            raise PlaneError(
                f"kwokctl create cluster {name} failed; last lines of {log}:\n{tail(log)}"
            )
        members: dict[str, str] = self.sup.state["members"]  # type: ignore[assignment]
        member_kc = self.work / f"{name}.kubeconfig"
        members[name] = str(member_kc)
        self.sup.save()
        out = subprocess.run(
            [self._b("kwokctl"), "get", "kubeconfig", "--name", name],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        member_kc.write_text(out.stdout)
        count, capacity = NODES[name]
        _apply(member_kc, [_node(name, i, capacity) for i in range(count)])
        join_log = self.sup.logs / f"karmadactl-join-{name}.log"
        with join_log.open("ab") as f:
            done = subprocess.run(
                [
                    self._b("karmadactl"),
                    "join",
                    name,
                    f"--kubeconfig={self.kubeconfig}",
                    f"--cluster-kubeconfig={member_kc}",
                    f"--cluster-context=kwok-{name}",
                ],
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
                timeout=180,
            )
        if done.returncode != 0:
            raise PlaneError(
                f"karmadactl join {name} failed; last lines of {join_log}:\n{tail(join_log)}"
            )
        _kubectl(
            self.kubeconfig,
            "label",
            "--overwrite",
            "cluster",
            name,
            *(f"{k}={v}" for k, v in labels.items()),
        )


def serving_flags(binary: str, health: int, metrics: int) -> list[str]:
    """Health and metrics listeners of a Karmada controller on 127.0.0.1, in the flags its
    release has: v1.18 has --health-probe-bind-address; v1.10 serves /healthz (the scheduler
    /metrics too) on --bind-address:--secure-port, plain HTTP despite the name."""
    done = subprocess.run(
        [binary, "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    offered = set(re.findall(r"(--[\w-]+)", done.stdout + done.stderr))
    if "--health-probe-bind-address" in offered:
        return [
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
        ]
    flags = ["--bind-address=127.0.0.1", f"--secure-port={health}"]
    if "--metrics-bind-address" in offered:
        flags.append(f"--metrics-bind-address=127.0.0.1:{metrics}")
    return flags


def _node(cluster: str, i: int, capacity: dict[str, str]) -> dict[str, Any]:
    name = f"{cluster}-gpu-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "nvidia.com/gpu.present": "true",
            },
        },
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def up(karmada: str = DEFAULT_KARMADA, work: Path | None = None) -> Plane:
    """Bring the plane up in `work` (default: the cache's plane dir); on failure stop what was
    started and raise PlaneError naming the process."""
    work = work or default_work_dir()
    running = Plane.load(work)
    if running is not None:
        raise PlaneError(
            f"a plane is already recorded in {work}: run `python -m tools.realkarmada down` first"
        )
    built = build(karmada)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    b = Bringup(built, work)
    try:
        b.run()
    except BaseException:
        down(work, remove=False)
        raise
    plane = Plane.load(work)
    assert plane is not None
    return plane


def down(work: Path | None = None, remove: bool = True) -> list[str]:
    """Stop every process recorded in `work` (members through kwokctl, which stops its own by
    PID), then remove the work dir. Returns what was stopped."""
    work = work or default_work_dir()
    try:
        state = json.loads((work / STATE).read_text())
    except (OSError, ValueError):
        if remove:
            shutil.rmtree(work, ignore_errors=True)
        return []
    stopped: list[str] = []
    kwokctl = Path(state.get("bin_dir", "")) / "kwokctl"
    for name in state.get("members", {}):
        if kwokctl.exists():
            subprocess.run(
                [str(kwokctl), "delete", "cluster", "--name", name],
                env={**os.environ, "KWOK_WORKDIR": state["kwok_workdir"]},
                capture_output=True,
                check=False,
                timeout=120,
            )
        stopped.append(name)
    stopped += stop_pids(state.get("pids", {}), starts=state.get("starts"))
    if remove:
        shutil.rmtree(work, ignore_errors=True)
    return stopped


def up_command(karmada: str, kubeconfig_out: Path, work: Path | None) -> int:
    started = time.monotonic()
    try:
        plane = up(karmada, work)
    except (PlaneError, ToolchainError) as e:
        print(f"realkarmada up: {e}", file=sys.stderr)
        return 1
    shutil.copy(plane.kubeconfig, kubeconfig_out)
    print(
        f"Karmada {plane.version} up in {time.monotonic() - started:.0f}s "
        f"(work dir {plane.work}); kubeconfig: {kubeconfig_out}"
    )
    for name, kc in plane.members.items():
        print(f"  member {name}: {kc}")
    return 0


def down_command(work: Path | None) -> int:
    stopped = down(work)
    print(f"realkarmada down: stopped {', '.join(stopped) or 'nothing (no plane recorded)'}")
    return 0
