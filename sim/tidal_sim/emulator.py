"""The emulator facade: store + controllers + API server on loopback, driven by one clock.

with Emulator(DEFAULT_TOPOLOGY).start() as emu:
    emu.write_kubeconfig(tmp / "kubeconfig")
    ...  # kubectl / kubernetes client against emu.url
    emu.timeline(); emu.requests(); emu.faults.inject(type="throttle", verb="patch")
"""

from __future__ import annotations

import importlib
import logging
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from ruamel.yaml import YAML

from tidal_sim.apiserver import ApiServer, RequestAccounting, RequestRecord
from tidal_sim.clock import Clock, ManualClock, ScaledClock
from tidal_sim.faults import Faults
from tidal_sim.kinds import KindRegistry, ResourceType
from tidal_sim.store import Obj, Store, StoreError
from tidal_sim.topology import CRD_TYPE, Topology, TopologyError, crd_types, load_topology
from tidal_sim.validation import SchemaValidator
from tidal_sim.version import KarmadaVersion

log = logging.getLogger(__name__)

DEFAULT_TOPOLOGY = Path(__file__).parent / "topologies" / "default.yaml"
BASE_NAMESPACES = ("default", "kube-system", "kube-public", "karmada-system")


def _load_controllers() -> Any:
    try:
        module = importlib.import_module("tidal_sim.controllers")
    except ImportError:
        return None
    return getattr(module, "ControllerManager", None)


class Running:
    """Started on entering a `with` block, stopped on leaving it."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class Emulator(Running):
    """A Karmada control plane in-process: `start()` it, point clients at `url`, `stop()` it."""

    def __init__(
        self,
        topology: Path | str | list[Obj] | None = None,
        *,
        clock: Clock | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        seed: int = 0,
        controllers: bool = True,
        crds_dir: Path | None = None,
        bookmark_interval: float = 1.0,
        rbac: bool = False,
        karmada_version: KarmadaVersion | None = None,
    ) -> None:
        self.clock: Clock = clock or ScaledClock(1.0)
        self.kinds = KindRegistry()
        self.kinds.register(CRD_TYPE)
        self.store = Store(self.kinds, self.clock)
        self.store.admission.append(_namespace_active)
        self.faults = Faults(seed)
        self.accounting = RequestAccounting()
        self.topology: Topology = load_topology(topology)
        if karmada_version is not None:
            self.topology.settings.karmada_version = karmada_version
        self.validator = (
            SchemaValidator(crds_dir)
            if crds_dir
            else SchemaValidator.discover(self.topology.settings.karmada_version)
        )
        if self.validator.source.notice:  # `tidal sim` and `tidal demo` print it
            log.info("%s", self.validator.source.notice)
        manager = _load_controllers() if controllers else None
        self.controllers: Any = None
        if manager is not None:
            settings = self.topology.settings
            self.controllers = manager(
                self.store,
                self.clock,
                scheduler_latency=settings.scheduler_latency,
                feature_gates=settings.feature_gates,
                karmada_version=settings.karmada_version,
                team_estimator=settings.team_estimator,
                seed=seed,
                status_delay=settings.status_delay,
                cluster_status_interval=settings.cluster_status_interval,
                empty_workload_propagation=settings.empty_workload_propagation,
                policy_change_lag=settings.policy_change_lag,
            )
        self.server = ApiServer(
            self.store,
            faults=self.faults,
            accounting=self.accounting,
            admitter=self.validator,
            timeline=self.timeline,
            team_capacity=(self.team_capacity, self.set_team_capacity),
            on_created=self._on_created,
            host=host,
            port=port,
            bookmark_interval=bookmark_interval,
            rbac=rbac,
        )
        if self.topology.settings.member_pods:
            self.mirror_member_pods()
        self._started = False

    def mirror_member_pods(self) -> None:
        """Write the simulated members' Node and Pods behind the cluster proxy, each member
        from the first request that reaches it there on (EmulatorSettings memberPods)."""
        if self.controllers is None or self.controllers.members.mirror is not None:
            return
        from tidal_sim.controllers.member_pods import MemberPods

        members = self.controllers.members
        members.mirror = MemberPods(self.server.members.member)
        self.server.members.on_read = lambda cluster: self.controllers.run_locked(
            lambda: members.mirror_cluster(cluster)
        )

    # -- life cycle ------------------------------------------------------------------------
    def start(self, *, serve: bool = True) -> Emulator:
        """Load the topology and run. `serve=False`: no socket and no worker thread; the
        caller dispatches requests in-process and settles the controllers itself."""
        if self._started:
            return self
        for name in BASE_NAMESPACES:
            self._ensure_namespace(name)
        self.clock.start()
        if self.controllers is not None and serve:
            self.controllers.start()
        self.apply_topology(self.topology)
        if serve:
            self.server.start()
        self._started = True
        self.settle()
        return self

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.server.stop()
        if self.controllers is not None:
            self.controllers.stop()
        self.clock.stop()

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    # -- objects ---------------------------------------------------------------------------
    def apply(self, manifests: list[Obj] | Path | str) -> list[Obj]:
        """Create manifests in order, as a topology is applied; returns the stored objects."""
        return self.apply_topology(load_topology(manifests))

    def apply_topology(self, topology: Topology) -> list[Obj]:
        created = []
        for where, doc in topology.objects:
            try:
                created.append(self._create(doc))
            except (StoreError, ValueError) as exc:
                message = getattr(exc, "message", str(exc))
                name = (doc.get("metadata") or {}).get("name", "?")
                raise TopologyError(f"{where} ({doc.get('kind')} {name}): {message}") from exc
        return created

    def _create(self, doc: Obj) -> Obj:
        rtype = self.kinds.by_kind(str(doc.get("apiVersion")), str(doc.get("kind")))
        if rtype is None:
            raise ValueError(
                f"unknown kind {doc.get('apiVersion')}/{doc.get('kind')}; declare it "
                "with a CustomResourceDefinition earlier in the topology"
            )
        obj = dict(doc)
        obj["metadata"] = dict(obj.get("metadata") or {})
        if rtype.namespaced:
            namespace = obj["metadata"].setdefault("namespace", "default")
            self._ensure_namespace(namespace)
        self.validator.admit(rtype, obj, "Strict")
        stored = self.store.create(rtype, obj)
        self._on_created(rtype, stored)
        return stored

    def _ensure_namespace(self, name: str) -> None:
        ns_type = self.kinds.by_kind("v1", "Namespace")
        assert ns_type is not None
        try:
            self.store.get(ns_type, None, name, copy_=False)
        except StoreError:
            self.store.create(
                ns_type, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )

    def _on_created(self, rtype: ResourceType, obj: Obj) -> None:
        if rtype is CRD_TYPE or (rtype.group, rtype.plural) == (CRD_TYPE.group, CRD_TYPE.plural):
            versions = {v.get("name"): v for v in (obj.get("spec") or {}).get("versions") or []}
            for declared in crd_types(obj):
                self.kinds.register(declared)
                columns = versions.get(declared.version, {}).get("additionalPrinterColumns")
                if columns:
                    self.server.rest.tables.register_printer_columns(declared, columns)

    # -- control and observation -----------------------------------------------------------
    def settle(self) -> None:
        """Let the controllers process every queued event (synchronous with a ManualClock)."""
        if self.controllers is not None and hasattr(self.controllers, "run_until_idle"):
            self.controllers.run_until_idle()

    def advance(self, seconds: float) -> None:
        """Move a ManualClock forward (running due timers), then settle."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs the emulator to run on a ManualClock")
        self.settle()
        self.clock.advance(seconds)
        self.settle()

    # -- member faults (interface 5: expressed on the Cluster object) ------------------------
    def _cluster_type(self) -> ResourceType:
        rtype = self.kinds.by_kind("cluster.karmada.io/v1alpha1", "Cluster")
        assert rtype is not None
        return rtype

    def enforce_rbac(self, enabled: bool = True) -> None:
        """Authorize every caller but `admin` by the RBAC objects stored here (403 otherwise)."""
        self.server.authorizer.enabled = enabled

    def set_cluster_ready(self, name: str, ready: bool = True, *, reason: str = "") -> Obj:
        """Make a member cluster Ready or NotReady (its status condition Ready)."""

        def change(obj: Obj) -> None:
            conditions = obj.setdefault("status", {}).setdefault("conditions", [])
            conditions[:] = [c for c in conditions if c.get("type") != "Ready"]
            conditions.append(
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": reason or ("ClusterReady" if ready else "ClusterNotReachable"),
                    "message": "set by the emulator",
                    "lastTransitionTime": self.clock.rfc3339(),
                }
            )

        return self.store.mutate(self._cluster_type(), None, name, change, subresource="status")

    def set_pods_fail(self, name: str, fail: bool = True) -> Obj:
        """Make pods in a member cluster never become ready (annotation sim.tidal.io/pods-fail)."""

        def change(obj: Obj) -> None:
            annotations = obj["metadata"].setdefault("annotations", {})
            if fail:
                annotations["sim.tidal.io/pods-fail"] = "true"
            else:
                annotations.pop("sim.tidal.io/pods-fail", None)

        return self.store.mutate(self._cluster_type(), None, name, change)

    def set_capacity(self, name: str, allocatable: dict[str, str]) -> Obj:
        """Change a member's allocatable resources (merged into resourceSummary.allocatable)."""

        def change(obj: Obj) -> None:
            summary = obj.setdefault("status", {}).setdefault("resourceSummary", {})
            summary.setdefault("allocatable", {}).update(allocatable)

        return self.store.mutate(self._cluster_type(), None, name, change, subresource="status")

    @property
    def karmada_version(self) -> KarmadaVersion:
        return self.topology.settings.karmada_version

    def set_team_capacity(self, name: str, replicas: int | None) -> list[dict[str, Any]]:
        """Pin a team estimator capacity (None: follow its schedule again); the new state.

        Like any estimator's answer, it is used from the next scheduling pass on: bindings
        waiting as Unschedulable are not requeued by it (they retry within 5 minutes)."""
        estimator = self.topology.settings.team_estimator
        estimator.set_override(name, replicas)
        return estimator.state(self.clock.now())

    def follow_time_of_day(
        self, moment: datetime, workloads: set[str] | None = None
    ) -> list[dict[str, Any]]:
        """Pin the team estimator to its capacities at `moment` (see TeamEstimator.follow):
        every team, or those matching the templates named "namespace/Kind/name"."""
        estimator = self.topology.settings.team_estimator
        teams = None
        if workloads is not None:
            teams = estimator.teams_of(self._template_labels(workloads))
        estimator.follow(moment, teams)
        return estimator.state(self.clock.now())

    def _template_labels(self, workloads: set[str]) -> list[dict[str, str]]:
        out = []
        for key in workloads:
            namespace, kind, name = [*key.split("/", 2), "", "", ""][:3]
            for rtype in self.kinds.all():
                if rtype.kind != kind or rtype.namespaced != bool(namespace):
                    continue
                try:
                    obj = self.store.get(rtype, namespace or None, name, copy_=False)
                except StoreError:
                    continue
                out.append(dict((obj.get("metadata") or {}).get("labels") or {}))
                break
        return out

    def team_capacity(self) -> list[dict[str, Any]]:
        return self.topology.settings.team_estimator.state(self.clock.now())

    def timeline(self) -> list[dict[str, Any]]:
        timeline = getattr(self.controllers, "timeline", None)
        return list(timeline.samples()) if timeline is not None else []

    def bindings_report_ready(self) -> bool:
        """Every ResourceBinding's aggregatedStatus shows each of its clusters with all its
        assigned replicas ready. It lags the members by the status delay, so a switch started
        right after the members converge would still read the old status."""
        rtype = self.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
        if rtype is None:
            return True
        items, _rv = self.store.list(rtype, None, None)
        for binding in items:
            wanted = {
                str(c.get("name")): int(c.get("replicas") or 0)
                for c in (binding.get("spec") or {}).get("clusters") or []
            }
            seen = {
                str(i.get("clusterName")): int((i.get("status") or {}).get("readyReplicas") or 0)
                for i in (binding.get("status") or {}).get("aggregatedStatus") or []
            }
            if any(seen.get(name, 0) < replicas for name, replicas in wanted.items()):
                return False
        return True

    def requests(self) -> dict[str, Any]:
        """Request counts: {"total", "by": {"verb resource": n}, "byVerb", "byResource",
        "byCode"} (see tidal_sim.apiserver.accounting)."""
        return self.accounting.snapshot()

    def request_log(self, since_seq: int = 0) -> list[RequestRecord]:
        return self.accounting.log(since_seq)

    def reset_requests(self) -> None:
        self.accounting.reset()

    def kubeconfig(self, *, user: str = "admin", namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig for this emulator; the token `sim:<user>` names the caller in the log."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "tidal-sim", "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": f"sim:{user}"}}],
            "contexts": [
                {
                    "name": "tidal-sim",
                    "context": {"cluster": "tidal-sim", "user": user, "namespace": namespace},
                }
            ],
            "current-context": "tidal-sim",
            "preferences": {},
        }

    def write_kubeconfig(self, path: Path | str, *, user: str = "admin") -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        yaml = YAML()
        yaml.default_flow_style = False
        with target.open("w") as fh:
            yaml.dump(self.kubeconfig(user=user), fh)
        return target


def _namespace_active(rtype: ResourceType, old: Obj | None, new: Obj) -> None:
    if rtype.group == "" and rtype.plural == "namespaces":
        new.setdefault("status", {}).setdefault("phase", "Active")
