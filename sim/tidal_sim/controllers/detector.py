"""The resource detector: policies claim templates, and bindings are created and refreshed.

Follows pkg/detector upstream: a claimed template keeps its policy (no re-matching) unless a
higher-priority policy preempts it (spec.preemption=Always and the feature gate); an unclaimed
one is matched PropagationPolicy first, then ClusterPropagationPolicy, each by explicit
priority, then implicit priority (name > labelSelector > all), then policy name.
Lazy activation (pkg/util/eventfilter): a template change made only by Karmada (claim labels,
any label/annotation whose key contains `.karmada.io`, generation) does not refresh the
binding of a template claimed by a Lazy policy.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

from tidal_sim.controllers.claims import (
    add_claim,
    binding_current,
    change_by_karmada,
    interpret_replicas,
    merge_binding,
    owner_reference,
    policy_id,
    specification_changed,
)
from tidal_sim.controllers.common import (
    CPP_ID_LABEL,
    CPP_KIND,
    CPP_NAME_ANNOTATION,
    CRB_KIND,
    PP_ID_LABEL,
    PP_KIND,
    PP_NAME_ANNOTATION,
    PP_NAMESPACE_ANNOTATION,
    RB_KIND,
    Obj,
    ObjKey,
    annotations_of,
    binding_name,
    is_reserved_namespace,
    labels_of,
    reference_key,
)
from tidal_sim.controllers.customizations import InterpreterError, Operation
from tidal_sim.controllers.matching import MISMATCH, selectors_priority
from tidal_sim.controllers.policies import (
    cleanup_claim,
    handle_policy_change,
    handle_policy_deletion,
)
from tidal_sim.kinds import ResourceType
from tidal_sim.store import NotFound

if TYPE_CHECKING:
    from tidal_sim.controllers.host import ControllerHost

log = logging.getLogger(__name__)

PolicyRef = tuple[str, str, str]  # kind, namespace ("" for CPP), name


class Detector:
    def __init__(self, mgr: ControllerHost, seed: int = 0) -> None:
        self.mgr = mgr
        self.rng = random.Random(seed)  # per-template re-match delays after a policy deletion
        self.templates: dict[ObjKey, Obj] = {}
        self.template_types: dict[ObjKey, ResourceType] = {}
        self.policies: dict[PolicyRef, Obj] = {}
        self.pps_by_namespace: dict[str, set[str]] = {}
        self.waiting: set[ObjKey] = set()
        self.claimed: dict[str, set[ObjKey]] = {}  # policy id -> templates labelled with it
        self.bound: dict[str, set[tuple[str, str, str]]] = {}  # policy id -> bindings labelled
        self._deferred: set[ObjKey] = set()  # unclaimed by a deleted policy, matched later
        self.queue: deque[tuple[ObjKey, bool]] = deque()
        self._queued: set[tuple[ObjKey, bool]] = set()

    # -- lookups -----------------------------------------------------------------------
    def template_generation(self, resource: dict[str, Any]) -> int:
        template = self.templates.get(reference_key(resource))
        return int(template["metadata"].get("generation", 1)) if template else 0

    def _claim(self, template: Obj) -> tuple[PolicyRef, str] | None:
        labels, annotations = labels_of(template), annotations_of(template)
        ns, name = annotations.get(PP_NAMESPACE_ANNOTATION), annotations.get(PP_NAME_ANNOTATION)
        if ns and name and labels.get(PP_ID_LABEL):
            return (PP_KIND, ns, name), labels[PP_ID_LABEL]
        name = annotations.get(CPP_NAME_ANNOTATION)
        if name and labels.get(CPP_ID_LABEL):
            return (CPP_KIND, "", name), labels[CPP_ID_LABEL]
        return None

    def _selectors(self, policy: Obj) -> list[dict[str, Any]]:
        selectors = list((policy.get("spec") or {}).get("resourceSelectors") or [])
        if policy.get("kind") == PP_KIND:  # the webhook defaults a PP selector's namespace
            ns = policy["metadata"].get("namespace", "")
            selectors = [s if s.get("namespace") else {**s, "namespace": ns} for s in selectors]
        return selectors

    def _matches(self, template: Obj, policy: Obj) -> int:
        if policy.get("kind") == PP_KIND and template["metadata"].get("namespace", "") != policy[
            "metadata"
        ].get("namespace"):
            return MISMATCH
        return selectors_priority(template, self._selectors(policy))

    def _lazy(self, policy: Obj | None) -> bool:
        if policy is None:
            return False
        return (policy.get("spec") or {}).get("activationPreference") == "Lazy"

    # -- events ------------------------------------------------------------------------
    def on_template(
        self, etype: str, rtype: ResourceType, key: ObjKey, obj: Obj, old: Obj | None
    ) -> None:
        if is_reserved_namespace(key[2]):
            return
        self._index_claims(key, obj if etype == "DELETED" else old, remove=True)
        if etype == "DELETED":
            self.templates.pop(key, None)
            self.template_types.pop(key, None)
            self.waiting.discard(key)
            self._collect_binding(key, obj)
            return
        self.templates[key] = obj
        self.template_types[key] = rtype
        self._index_claims(key, obj, remove=False)
        if etype == "ADDED" or old is None:
            self.enqueue(key, False)
            return
        if not specification_changed(old, obj):
            return
        if key in self._deferred and change_by_karmada(old, obj):
            return  # our own cleanup of a deleted policy's claim: rematch() follows
        claim = self._claim(obj)
        lazy = claim is not None and self._lazy(self.policies.get(claim[0]))
        self.enqueue(key, change_by_karmada(old, obj) if lazy else False)

    def on_customization(self, customization: Obj, old: Obj | None) -> None:
        """A ResourceInterpreterCustomization changed: its kind's templates are interpreted
        again (upstream retries a template whose interpretation failed; the emulator's scripts
        are deterministic, so only a changed customization can change the answer)."""
        targets = {
            (str(t.get("apiVersion", "")), str(t.get("kind", "")))
            for t in (
                ((o or {}).get("spec") or {}).get("target") or {} for o in (customization, old)
            )
        }
        for key in sorted(self.templates):
            if key[:2] in targets:
                self.enqueue(key, False)

    def on_policy(self, etype: str, policy: Obj, old: Obj | None) -> None:
        meta = policy["metadata"]
        ref: PolicyRef = (
            policy["kind"],
            meta.get("namespace", "") if policy["kind"] == PP_KIND else "",
            meta["name"],
        )
        if etype == "DELETED":
            self.policies.pop(ref, None)
            if ref[0] == PP_KIND:
                self.pps_by_namespace.get(ref[1], set()).discard(ref[2])
            handle_policy_deletion(self, policy)
            return
        self.policies[ref] = policy
        if ref[0] == PP_KIND:
            self.pps_by_namespace.setdefault(ref[1], set()).add(ref[2])
        if (
            etype == "MODIFIED"
            and old is not None
            and old["metadata"].get("generation") == meta.get("generation")
        ):
            return
        handle_policy_change(self, policy)

    def on_binding(self, etype: str, bkey: tuple[str, str, str], obj: Obj, old: Obj | None) -> None:
        for source, remove in ((old, True), (obj, etype == "DELETED")):
            _index_by_policy(self.bound, bkey, source, remove=remove)

    def _index_claims(self, key: ObjKey, obj: Obj | None, *, remove: bool) -> None:
        _index_by_policy(self.claimed, key, obj, remove=remove)

    # -- the work queue ----------------------------------------------------------------
    def enqueue(self, key: ObjKey, by_karmada: bool) -> None:
        item = (key, by_karmada)
        if item not in self._queued:
            self._queued.add(item)
            self.queue.append(item)

    def enqueue_for_policy_change(self, key: ObjKey, by_karmada: bool) -> None:
        """A policy change's template: queued `policy_change_lag` later (upstream's low-priority
        lane), flagged by the policy's Lazy-ness now, reconciled with the policy as it is then."""
        lag = self.mgr.policy_change_lag
        if lag <= 0:
            self.enqueue(key, by_karmada)
            return
        self.mgr.after(lag, lambda: self.enqueue(key, by_karmada))

    def run_one(self) -> bool:
        if not self.queue:
            return False
        item = self.queue.popleft()
        self._queued.discard(item)
        self.reconcile(*item)
        return True

    def reconcile(self, key: ObjKey, by_karmada: bool) -> None:
        template = self.templates.get(key)
        if template is None:
            self.waiting.discard(key)
            return
        claim = self._claim(template)
        if claim is not None:
            ref, pid = claim
            policy = self.policies.get(ref)
            if policy is None:
                cleanup_claim(self, key, ref[0], pid)
                return
            if self._matches(template, policy) == MISMATCH:
                return
            self._apply(key, policy, by_karmada)
            return
        policy = self._best_policy(template)
        if policy is None:
            self.waiting.add(key)
            return
        self.waiting.discard(key)
        self._apply(key, policy, by_karmada)

    def _best_policy(self, template: Obj) -> Obj | None:
        namespace = template["metadata"].get("namespace", "")
        for kind, names in (
            (PP_KIND, sorted(self.pps_by_namespace.get(namespace, ()))),
            (CPP_KIND, None),
        ):
            if kind == PP_KIND and not namespace:
                continue
            candidates = (
                [self.policies[(PP_KIND, namespace, n)] for n in names or ()]
                if kind == PP_KIND
                else [p for r, p in self.policies.items() if r[0] == CPP_KIND]
            )
            chosen = self._highest(template, candidates)
            if chosen is not None:
                return chosen
        return None

    def _highest(self, template: Obj, candidates: list[Obj]) -> Obj | None:
        """The matching policy of highest priority, then most explicit match, then name."""
        best: tuple[int, int, str] | None = None
        chosen: Obj | None = None
        for policy in candidates:
            implicit = self._matches(template, policy)
            if implicit == MISMATCH:
                continue
            rank = (
                -int((policy.get("spec") or {}).get("priority") or 0),
                -implicit,
                policy["metadata"]["name"],
            )
            if best is None or rank < best:
                best, chosen = rank, policy
        return chosen

    # -- applying a policy -------------------------------------------------------------
    def _apply(self, key: ObjKey, policy: Obj, by_karmada: bool) -> None:
        template = self._claim_for(key, policy)
        if template is None:
            return
        if by_karmada and self._lazy(policy):
            return
        self._ensure_binding(key, template, policy)

    def _claim_for(self, key: ObjKey, policy: Obj) -> Obj | None:
        template = self.templates[key]
        pid = policy_id(policy)
        labels, annotations = labels_of(template), annotations_of(template)
        is_pp = policy["kind"] == PP_KIND
        if is_pp:
            claimed = labels.get(PP_ID_LABEL) == pid and CPP_ID_LABEL not in labels
        else:
            claimed = labels.get(CPP_ID_LABEL) == pid
        if claimed and (
            (is_pp and annotations.get(PP_NAME_ANNOTATION) == policy["metadata"]["name"])
            or (not is_pp and annotations.get(CPP_NAME_ANNOTATION) == policy["metadata"]["name"])
        ):
            return template

        def claim(obj: Obj) -> None:
            add_claim(obj, policy, pid)

        rtype = self.template_types[key]
        try:
            updated = self.mgr.write(rtype, key[2] or None, key[3], claim)
        except NotFound:
            return None
        return updated

    def _ensure_binding(self, key: ObjKey, template: Obj, policy: Obj) -> None:
        rtype = self.template_types[key]
        bkind = RB_KIND if rtype.namespaced else CRB_KIND
        btype = self.mgr.binding_type(bkind)
        namespace = key[2] or None
        name = binding_name(key[1], key[3])
        try:
            desired = self._desired_spec(template, policy)
        except InterpreterError as exc:
            # detector.go BuildResourceBinding: GetReplicas failed, the binding is neither
            # created nor updated (a GetReplicasFailed event upstream)
            log.info("sim detector: %s", exc)
            return
        pid = policy_id(policy)
        try:
            current = self.mgr.store.get(btype, namespace, name, copy_=False)
        except NotFound:
            current = None
        if current is None:
            binding: Obj = {
                "metadata": {"name": name, "ownerReferences": [owner_reference(template)]},
                "spec": desired,
            }
            if namespace:
                binding["metadata"]["namespace"] = namespace
            add_claim(binding, policy, pid)
            self.mgr.store.create(btype, binding)
            return
        if binding_current(current, desired, template, policy, pid):
            return
        self.mgr.write(
            btype, namespace, name, lambda obj: merge_binding(obj, desired, template, policy, pid)
        )

    def _desired_spec(self, template: Obj, policy: Obj) -> Obj:
        meta = template["metadata"]
        policy_spec = policy.get("spec") or {}
        resource = {"apiVersion": template["apiVersion"], "kind": template["kind"]}
        if meta.get("namespace"):
            resource["namespace"] = meta["namespace"]
        resource.update(
            {
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            }
        )
        spec: Obj = {
            "resource": resource,
            "placement": policy_spec.get("placement") or {},
        }
        for field in (
            "propagateDeps",
            "schedulerName",
            "failover",
            "conflictResolution",
            "preserveResourcesOnDeletion",
        ):
            if policy_spec.get(field) is not None:
                spec[field] = policy_spec[field]
        if policy_spec.get("suspension") is not None:
            spec["suspension"] = policy_spec["suspension"]
        custom = self.mgr.customizations
        if custom.enabled(template["apiVersion"], template["kind"], Operation.INTERPRET_REPLICA):
            interpreted = custom.get_replicas(template)
            if interpreted.count:
                spec["replicas"] = interpreted.count
            if interpreted.requirements is not None:
                # detector.go sets the requirements' namespace to the template's
                requirements = dict(interpreted.requirements)
                if meta.get("namespace") and not requirements.get("namespace"):
                    requirements["namespace"] = meta["namespace"]
                spec["replicaRequirements"] = requirements
            return spec
        replicas, requests = interpret_replicas(template)
        if replicas:
            spec["replicas"] = replicas
        if requests:
            spec["replicaRequirements"] = {"resourceRequest": requests}
        return spec

    def _collect_binding(self, key: ObjKey, template: Obj) -> None:
        """Garbage collection: a binding goes with the template that owns it."""
        rtype = self.mgr.store.kinds.by_kind(key[0], key[1])
        if rtype is None:
            return
        btype = self.mgr.binding_type(RB_KIND if rtype.namespaced else CRB_KIND)
        name = binding_name(key[1], key[3])
        try:
            binding = self.mgr.store.get(btype, key[2] or None, name, copy_=False)
        except NotFound:
            return
        owners = binding["metadata"].get("ownerReferences") or []
        uid = template["metadata"].get("uid")
        if any(o.get("uid") == uid for o in owners):
            self.mgr.store.delete(btype, key[2] or None, name)


K = TypeVar("K")


def _index_by_policy(index: dict[str, set[K]], key: K, obj: Obj | None, *, remove: bool) -> None:
    """File `key` under (or take it out of) each policy id the object's labels carry."""
    if obj is None:
        return
    labels = labels_of(obj)
    for label in (PP_ID_LABEL, CPP_ID_LABEL):
        pid = labels.get(label)
        if not pid:
            continue
        if remove:
            index.get(pid, set()).discard(key)
        else:
            index.setdefault(pid, set()).add(key)
