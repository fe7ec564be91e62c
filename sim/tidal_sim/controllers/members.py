"""Member clusters: capacity, pods that start after a delay if they fit, termination, faults.

Each binding's spec.clusters is the desired replica count per member. Pods of a member workload
are pending (no room), starting (placed; ready after the cluster's start-up delay), ready, or
terminating (removed; hold their resources for the termination delay). Karmada moves replicas
without surge: a replica taken from a cluster goes at once, its replacement starts elsewhere.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tidal_sim.controllers.common import (
    DEFAULT_POD_STARTUP_SECONDS,
    DEFAULT_TERMINATION_SECONDS,
    POD_STARTUP_ANNOTATION,
    PODS_FAIL_ANNOTATION,
    TERMINATION_ANNOTATION,
    WORKLOAD_KINDS,
    Obj,
    annotations_of,
    clone,
    due_time,
    member_reachable,
)
from tidal_sim.controllers.customizations import InterpreterError, Operation
from tidal_sim.controllers.member_pods import MemberPods
from tidal_sim.controllers.quantity import Resources, resource_list
from tidal_sim.store import NotFound

if TYPE_CHECKING:
    from tidal_sim.controllers.host import ControllerHost

BKey = tuple[str, str, str]  # binding kind, namespace, name
# on the member's object: the template generation it was built from (binding controller)
TEMPLATE_GENERATION_ANNOTATION = "resourcetemplate.karmada.io/generation"
log = logging.getLogger(__name__)

_seq = itertools.count()


@dataclass(eq=False)
class Pod:
    binding: BKey
    request: Resources
    state: str = "pending"  # pending | starting | ready | terminating | gone
    armed: bool = False  # a start-up timer will make it ready
    seq: int = field(default_factory=lambda: next(_seq))

    @property
    def shape(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(self.request.items()))


@dataclass
class ClusterState:
    name: str
    allocatable: Resources = field(default_factory=dict)
    used: Resources = field(default_factory=dict)
    pending_demand: Resources = field(default_factory=dict)
    pending: deque[Pod] = field(default_factory=deque)  # may hold gone pods: skip them
    pending_shapes: Counter[tuple[tuple[str, int], ...]] = field(default_factory=Counter)
    startup: float = DEFAULT_POD_STARTUP_SECONDS
    termination: float = DEFAULT_TERMINATION_SECONDS
    pods_fail: bool = False
    ready: bool = True
    exists: bool = True
    bindings: set[BKey] = field(default_factory=set)

    def queue(self, pod: Pod) -> None:
        self.pending.append(pod)
        self.pending_shapes[pod.shape] += 1
        _add(self.pending_demand, pod.request)

    def unqueue(self, pod: Pod) -> None:
        """Out of the queue's accounting; the deque drops it lazily (removing from the middle
        of thousands of pending pods one by one is quadratic)."""
        shape = pod.shape
        self.pending_shapes[shape] -= 1
        if self.pending_shapes[shape] <= 0:
            del self.pending_shapes[shape]
        _add(self.pending_demand, pod.request, -1)

    def has_pending(self) -> bool:
        while self.pending and self.pending[0].state != "pending":
            self.pending.popleft()
        return bool(self.pending)

    def fits(self, request: Resources) -> bool:
        """Room for one more pod? No capacity reported at all means no limit; a reported
        list without `pods` does not limit the pod count."""
        if not self.allocatable:
            return True
        for name, amount in request.items():
            if name == "pods" and "pods" not in self.allocatable:
                continue
            if self.used.get(name, 0) + amount > self.allocatable.get(name, 0):
                return False
        return True


@dataclass
class MemberWorkload:
    desired: int = 0
    pods: list[Pod] = field(default_factory=list)  # not terminating
    generation: int = 0
    template_generation: int = 0

    def count(self, state: str) -> int:
        return sum(1 for p in self.pods if p.state == state)


@dataclass
class BindingState:
    workload: str  # "ns/Kind/name" for the timeline
    is_workload: bool
    request: Resources
    targets: dict[str, int]
    resource_version: str
    template_generation: int
    members: dict[str, MemberWorkload] = field(default_factory=dict)
    replicas: dict[str, int] = field(default_factory=dict)  # per member, after overrides
    kind: tuple[str, str] = ("", "")  # the template's apiVersion and kind


def _mirrored(pod: Pod) -> tuple[str, str]:
    """The pod's name and namespace in its member (tidal_sim.controllers.member_pods)."""
    return f"{pod.binding[2]}-{pod.seq}", pod.binding[1] or "default"


def _add(into: Resources, request: Resources, sign: int = 1) -> None:
    for name, amount in request.items():
        into[name] = into.get(name, 0) + sign * amount


def _float_annotation(annotations: dict[str, str], key: str, default: float) -> float:
    try:
        return max(0.0, float(annotations.get(key, default)))
    except (TypeError, ValueError):
        return default


class Members:
    """The pods of every member workload, and each member cluster's resource accounting."""

    def __init__(self, mgr: ControllerHost) -> None:
        self.mgr = mgr
        self.clusters: dict[str, ClusterState] = {}
        self.bindings: dict[BKey, BindingState] = {}
        self.by_template_name: dict[str, set[BKey]] = {}  # for policies that select by name
        self._reflected: dict[tuple[BKey, str], dict[str, Any]] = {}  # last good items
        # pods due to become ready, grouped by (cluster, due time): one timer per group
        self._starting: dict[tuple[str, float], list[Pod]] = {}
        self.mirror: MemberPods | None = None  # the members' Pods behind the proxy (opt-in)

    # -- the members' pods behind the proxy (member_pods.py) -------------------------------
    def _mirror_for(self, cluster: str) -> MemberPods | None:
        """The mirror, when `cluster` is written."""
        return self.mirror if self.mirror is not None and cluster in self.mirror.clusters else None

    def mirror_cluster(self, cluster: str) -> None:
        """Write `cluster`'s Node and pods from now on, starting with those it has (not those
        terminating right now: nothing lists them); once per member (under the lock)."""
        if self.mirror is None or cluster in self.mirror.clusters:
            return
        self.mirror.clusters.add(cluster)
        state = self.clusters.get(cluster)
        if state is None:
            return
        self.mirror.node(cluster, state.allocatable)
        for bkey in sorted(state.bindings):
            member = self.bindings[bkey].members.get(cluster) if bkey in self.bindings else None
            for pod in member.pods if member else []:
                if pod.state != "gone":
                    bound = pod.state != "pending"
                    self.mirror.created(cluster, *_mirrored(pod), pod.request, bound=bound)

    # -- events ------------------------------------------------------------------------
    def on_cluster(self, etype: str, cluster: Obj) -> None:
        name = cluster["metadata"]["name"]
        state = self.clusters.get(name)
        if etype == "DELETED":
            self._cluster_gone(state)
            return
        if state is None:
            state = self.clusters[name] = ClusterState(name)
        annotations = annotations_of(cluster)
        summary = (cluster.get("status") or {}).get("resourceSummary") or {}
        allocatable = resource_list(summary.get("allocatable"))
        startup = _float_annotation(
            annotations, POD_STARTUP_ANNOTATION, DEFAULT_POD_STARTUP_SECONDS
        )
        termination = _float_annotation(
            annotations, TERMINATION_ANNOTATION, DEFAULT_TERMINATION_SECONDS
        )
        pods_fail = str(annotations.get(PODS_FAIL_ANNOTATION, "")).lower() == "true"
        ready = member_reachable(cluster)
        changed_health = state.ready != ready or not state.exists
        grew = any(allocatable.get(k, 0) > state.allocatable.get(k, 0) for k in allocatable)
        resized = allocatable != state.allocatable
        recovered = state.pods_fail and not pods_fail
        state.allocatable, state.startup, state.termination = allocatable, startup, termination
        if (mirror := self._mirror_for(name)) is not None:
            mirror.node(name, allocatable)
        state.pods_fail, state.ready, state.exists = pods_fail, ready, True
        if recovered:
            self._rearm(state)
        if grew:
            self._start_pending(state)
        if etype == "ADDED" or changed_health:
            for bkey in state.bindings:
                self.mgr.status.mark_binding(bkey)
        # allocatable and allocatableModelings come from the same status collection upstream
        self.mgr.status.mark_cluster(name, urgent=resized)

    def _cluster_gone(self, state: ClusterState | None) -> None:
        if state is not None:
            state.exists = False
            for bkey in state.bindings:
                self.mgr.status.mark_binding(bkey)

    def _rearm(self, state: ClusterState) -> None:
        """Pods fail no more in the cluster: its starting pods not yet timed get their timer."""
        for bkey in list(state.bindings):
            member = self.bindings[bkey].members.get(state.name) if bkey in self.bindings else None
            for pod in member.pods if member else []:
                if pod.state == "starting" and not pod.armed:
                    self._arm_start(state, pod)

    def on_binding(self, etype: str, bkey: BKey, binding: Obj) -> None:
        state = self.bindings.get(bkey)
        if etype == "DELETED":
            self._binding_gone(bkey, state)
            return
        spec = binding.get("spec") or {}
        resource = spec.get("resource") or {}
        is_workload = bool(spec.get("replicas")) or spec.get("replicaRequirements") is not None
        targets = {
            c["name"]: int(c.get("replicas") or 0)
            for c in spec.get("clusters") or []
            if c.get("name")
        }
        resource_version = str(resource.get("resourceVersion", ""))
        replicas = self.mgr.works.replicas(bkey, binding, targets, is_workload)
        if state is not None and (
            state.targets,
            state.resource_version,
            state.is_workload,
            state.replicas,
        ) == (targets, resource_version, is_workload, replicas):
            return
        request = resource_list((spec.get("replicaRequirements") or {}).get("resourceRequest"))
        request["pods"] = 1
        template_generation = self.mgr.detector.template_generation(resource)
        if state is None:
            state = self._new_binding(bkey, resource, is_workload, request, template_generation)
        resynced = state.resource_version != resource_version
        state.is_workload, state.request = is_workload, request
        state.resource_version, state.template_generation = resource_version, template_generation
        old_targets, state.targets = state.targets, targets
        state.replicas = replicas
        for cluster in sorted(set(old_targets) | set(targets)):
            self._member(bkey, state, cluster, resynced=resynced)
        self.mgr.status.mark_binding(bkey)

    def _new_binding(
        self,
        bkey: BKey,
        resource: Obj,
        is_workload: bool,
        request: Resources,
        template_generation: int,
    ) -> BindingState:
        workload = "/".join(str(resource.get(k, "")) for k in ("namespace", "kind", "name"))
        state = self.bindings[bkey] = BindingState(
            workload,
            is_workload,
            request,
            {},
            str(resource.get("resourceVersion", "")),
            template_generation,
            kind=(str(resource.get("apiVersion", "")), str(resource.get("kind", ""))),
        )
        self.by_template_name.setdefault(str(resource.get("name", "")), set()).add(bkey)
        return state

    def _binding_gone(self, bkey: BKey, state: BindingState | None) -> None:
        if state is not None:
            for cluster in list(state.members):
                self._set_desired(bkey, state, cluster, 0)
                self.clusters.get(cluster, ClusterState(cluster)).bindings.discard(bkey)
            del self.bindings[bkey]
            named = self.by_template_name.get(state.workload.rsplit("/", 1)[-1], set())
            named.discard(bkey)
        self.mgr.works.forget(bkey)

    def _member(self, bkey: BKey, state: BindingState, cluster: str, *, resynced: bool) -> None:
        """One member cluster of a binding: its workload (a new generation when the template
        changed), its desired replicas, and forgotten once neither assigned nor holding pods."""
        member = state.members.get(cluster)
        if member is None:
            member = state.members[cluster] = MemberWorkload(generation=1)
            member.template_generation = state.template_generation
        elif resynced:
            member.generation += 1
            member.template_generation = state.template_generation
        self.clusters.setdefault(cluster, ClusterState(cluster, exists=False)).bindings.add(bkey)
        wanted = state.replicas.get(cluster, 0) if state.is_workload else 0
        self._set_desired(bkey, state, cluster, wanted)
        if cluster not in state.targets and not member.pods:
            del state.members[cluster]
            self.clusters[cluster].bindings.discard(bkey)

    def resync(self, bkey: BKey) -> None:
        """Rebuild one binding's Works (an override policy selecting it changed)."""
        try:
            binding = self.mgr.store.get(
                self.mgr.binding_type(bkey[0]), bkey[1] or None, bkey[2], copy_=False
            )
        except NotFound:
            return
        self.on_binding("MODIFIED", bkey, binding)

    # -- pods ----------------------------------------------------------------------------
    def _set_desired(
        self, bkey: BKey, state: BindingState, cluster_name: str, desired: int
    ) -> None:
        member = state.members.get(cluster_name)
        if member is None:
            return
        cluster = self.clusters.setdefault(cluster_name, ClusterState(cluster_name, exists=False))
        if member.desired != desired:
            member.generation += 1
            member.desired = desired
        while len(member.pods) < desired:
            pod = Pod(bkey, dict(state.request))
            member.pods.append(pod)
            room = cluster.exists and not cluster.has_pending() and cluster.fits(pod.request)
            if (mirror := self._mirror_for(cluster_name)) is not None:
                mirror.created(cluster_name, *_mirrored(pod), pod.request, bound=room)
            if room:
                self._place(cluster, pod, mirrored=True)
            else:
                cluster.queue(pod)
        if len(member.pods) > desired:
            order = {"pending": 0, "starting": 1, "ready": 2}
            victims = sorted(member.pods, key=lambda p: (order.get(p.state, 0), -p.seq))
            for pod in victims[: len(member.pods) - desired]:
                member.pods.remove(pod)
                self._remove(cluster, pod)
        self._record(state, cluster_name, member)
        self.mgr.status.mark_cluster(cluster_name)

    def _place(self, cluster: ClusterState, pod: Pod, *, mirrored: bool = False) -> None:
        """`mirrored`: the pod was written to the member bound already."""
        _add(cluster.used, pod.request)
        pod.state = "starting"
        if not mirrored and (mirror := self._mirror_for(cluster.name)) is not None:
            mirror.placed(cluster.name, *_mirrored(pod))
        if not cluster.pods_fail:
            self._arm_start(cluster, pod)

    def _arm_start(self, cluster: ClusterState, pod: Pod) -> None:
        if cluster.startup <= 0:
            pod.state = "ready"
            return
        pod.armed = True
        due = due_time(self.mgr.clock.now(), cluster.startup)
        group = self._starting.get((cluster.name, due))
        if group is not None:
            group.append(pod)
            return
        self._starting[(cluster.name, due)] = [pod]

        def become_ready() -> None:
            pods = self._starting.pop((cluster.name, due), [])
            touched: set[BKey] = set()
            for each in pods:
                each.armed = False
                if each.state != "starting" or cluster.pods_fail:
                    continue
                each.state = "ready"
                touched.add(each.binding)
            for bkey in sorted(touched):
                self._changed(bkey, cluster.name)

        self.mgr.after(due - self.mgr.clock.now(), become_ready)

    def _remove(self, cluster: ClusterState, pod: Pod) -> None:
        if pod.state == "pending":
            cluster.unqueue(pod)
            pod.state = "gone"
            if (mirror := self._mirror_for(cluster.name)) is not None:
                mirror.gone(cluster.name, *_mirrored(pod))
            return
        pod.state = "terminating"
        if cluster.termination <= 0:
            self._free(cluster, pod)
            return

        def terminated() -> None:
            self._free(cluster, pod)
            self.mgr.status.mark_cluster(cluster.name)

        self.mgr.after(cluster.termination, terminated)

    def _free(self, cluster: ClusterState, pod: Pod) -> None:
        if pod.state != "terminating":
            return
        pod.state = "gone"
        _add(cluster.used, pod.request, -1)
        if (mirror := self._mirror_for(cluster.name)) is not None:
            mirror.gone(cluster.name, *_mirrored(pod))
        self._start_pending(cluster)

    def _start_pending(self, cluster: ClusterState) -> None:
        if not cluster.exists:
            return
        # In queue order, start every pod that fits; once every shape still queued has failed
        # to fit, nothing behind can (the room only shrinks during the pass): stop there.
        kept: deque[Pod] = deque()
        full: set[tuple[tuple[str, int], ...]] = set()
        while cluster.pending and len(full) < len(cluster.pending_shapes):
            pod = cluster.pending.popleft()
            if pod.state != "pending":
                continue
            if pod.shape not in full and cluster.fits(pod.request):
                cluster.unqueue(pod)
                self._place(cluster, pod)
                self._changed(pod.binding, cluster.name)
            else:
                full.add(pod.shape)
                kept.append(pod)
        kept.extend(cluster.pending)
        cluster.pending = kept
        self.mgr.status.mark_cluster(cluster.name)

    def _changed(self, bkey: BKey, cluster_name: str) -> None:
        state = self.bindings.get(bkey)
        member = state.members.get(cluster_name) if state else None
        if state is None or member is None:
            return
        self._record(state, cluster_name, member)
        self.mgr.status.mark_binding(bkey)

    def _record(self, state: BindingState, cluster: str, member: MemberWorkload) -> None:
        if state.is_workload:
            self.mgr.timeline.record(state.workload, cluster, member.desired, member.count("ready"))

    # -- views for status --------------------------------------------------------------
    def member_status(self, bkey: BKey, cluster_name: str) -> dict[str, Any] | None:
        """The aggregatedStatus item of one member, or None if the binding has none there."""
        state = self.bindings.get(bkey)
        cluster = self.clusters.get(cluster_name)
        if state is None or cluster_name not in state.targets:
            return None
        if cluster is None or not cluster.exists:
            return {  # applied=false is omitted, as Go's omitempty does
                "clusterName": cluster_name,
                "appliedMessage": f'cluster "{cluster_name}" not found',
                "health": "Unknown",
            }
        member = state.members.get(cluster_name)
        if not state.is_workload or member is None:
            return {
                "clusterName": cluster_name,
                "applied": True,
                "health": "Healthy" if cluster.ready else "Unknown",
            }
        ready = member.count("ready")
        replicas = len(member.pods)
        if state.kind in self.mgr.customizations.kinds() and state.kind[1] not in WORKLOAD_KINDS:
            return self._custom_status(bkey, state, cluster, member)
        raw = {
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": max(0, member.desired - ready),
            "observedGeneration": member.generation,
            "generation": member.generation,
            "resourceTemplateGeneration": member.template_generation,
        }
        healthy = replicas >= member.desired and ready >= replicas
        return {
            "clusterName": cluster_name,
            "applied": True,
            "health": ("Healthy" if healthy else "Unhealthy") if cluster.ready else "Unknown",
            "status": {k: v for k, v in raw.items() if v},  # Go's omitempty
        }

    def _custom_status(
        self, bkey: BKey, state: BindingState, cluster: ClusterState, member: MemberWorkload
    ) -> dict[str, Any]:
        """A customized kind's aggregatedStatus item: the member's object (its operator
        reports like a Deployment's controller) through the kind's statusReflection (else
        its whole .status) and healthInterpretation (else healthy), as the work status
        controller does (work_status_controller.go reflectStatus, interpretHealth)."""
        custom = self.mgr.customizations
        observed = self._observed(bkey, cluster.name, member)
        item: dict[str, Any] = {"clusterName": cluster.name, "applied": True}
        status: Any = observed.get("status")
        if custom.enabled(*state.kind, Operation.INTERPRET_STATUS):
            try:
                status = custom.reflect_status(observed)
            except InterpreterError as exc:  # the Work keeps the status it last reflected
                log.info("sim work status controller: %s", exc)
                return self._reflected.get((bkey, cluster.name)) or {**item, "health": "Unknown"}
        health = "Healthy"
        if not cluster.ready:
            health = "Unknown"
        elif custom.enabled(*state.kind, Operation.INTERPRET_HEALTH):
            try:
                health = "Healthy" if custom.interpret_health(observed) else "Unhealthy"
            except InterpreterError as exc:
                log.info("sim work status controller: %s", exc)
                health = "Unknown"
        item["health"] = health
        if status is not None:
            item["status"] = status
        self._reflected[(bkey, cluster.name)] = item
        return item

    def _observed(self, bkey: BKey, cluster: str, member: MemberWorkload) -> dict[str, Any]:
        """The custom object as the member cluster holds it, status written by its operator."""
        manifest: dict[str, Any] = clone(self.mgr.works.manifest(bkey, cluster) or {})
        meta = manifest.setdefault("metadata", {})
        meta["generation"] = member.generation
        annotations = meta.setdefault("annotations", {})
        annotations[TEMPLATE_GENERATION_ANNOTATION] = str(member.template_generation)
        ready = member.count("ready")
        replicas = len(member.pods)
        manifest["status"] = {
            "observedGeneration": member.generation,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReadyReplicas": ready,
        }
        return manifest

    def cluster_usage(self, name: str) -> tuple[Resources, Resources]:
        """(allocated, allocating) of a member cluster, as integer amounts."""
        state = self.clusters.get(name)
        if state is None:
            return {}, {}
        return dict(state.used), dict(state.pending_demand)
