"""How the detector reacts to policy changes: refresh, re-match, preempt, and unclaim.

HandleClusterPropagationPolicyCreationOrUpdate / handlePolicyDeletion / preemption.go upstream.
A changed policy re-enqueues the templates of its bindings (as a Karmada change when Lazy at
the time of the change; reconciled with the policy as it is when the detector gets to them),
releases templates its selectors no longer match, and picks up waiting templates; with
preemption=Always and the feature gate it takes over lower-priority claims. A deleted policy's
templates and bindings lose their claim metadata; bindings and member workloads stay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from tidal_sim.controllers.claims import add_claim, policy_id, remove_claim
from tidal_sim.controllers.common import (
    CPP_ID_LABEL,
    CRB_KIND,
    FEATURE_POLICY_PREEMPTION,
    PP_ID_LABEL,
    PP_KIND,
    RB_KIND,
    Obj,
    ObjKey,
    binding_name,
    labels_of,
    reference_key,
)
from tidal_sim.controllers.matching import MISMATCH
from tidal_sim.kinds import ResourceType
from tidal_sim.store import NotFound

if TYPE_CHECKING:
    from tidal_sim.controllers.detector import Detector, PolicyRef

REMATCH_DELAY_SECONDS = 1.0  # mean detector latency between a policy's cleanup and a re-match


def handle_policy_change(det: Detector, policy: Obj) -> None:
    pid = policy_id(policy)
    lazy = det._lazy(policy)
    is_pp = policy["kind"] == PP_KIND
    id_label = PP_ID_LABEL if is_pp else CPP_ID_LABEL
    for bkey in sorted(det.bound.get(pid, set())):
        binding = binding_of(det, bkey)
        if binding is None:
            continue
        resource = (binding.get("spec") or {}).get("resource") or {}
        tkey = reference_key(resource)
        template = det.templates.get(tkey)
        if template is not None and det._matches(template, policy) == MISMATCH:
            if labels_of(template).get(id_label) == pid:
                strip_claim(det, det.template_types[tkey], template, policy["kind"])
                strip_claim(det, det.mgr.binding_type(bkey[0]), binding, policy["kind"])
            continue
        det.enqueue_for_policy_change(tkey, lazy)
    for key in sorted(det.waiting):
        template = det.templates.get(key)
        if template is not None and det._matches(template, policy) != MISMATCH:
            det.waiting.discard(key)
            det.enqueue_for_policy_change(key, lazy)
    spec = policy.get("spec") or {}
    if spec.get("preemption") == "Always" and FEATURE_POLICY_PREEMPTION in det.mgr.feature_gates:
        preempt(det, policy)


def named_templates(policy: Obj) -> list[ObjKey]:
    """pkg/detector/preemption.go handle*PropagationPolicyPreemption: preemption fetches one
    template per resourceSelector by apiVersion/kind/namespace/name, so selectors without a
    name (label selectors) reach nothing."""
    is_pp = policy["kind"] == PP_KIND
    own_ns = policy["metadata"].get("namespace", "") if is_pp else ""
    keys = []
    for selector in (policy.get("spec") or {}).get("resourceSelectors") or []:
        if selector.get("name"):
            namespace = own_ns if is_pp else selector.get("namespace") or ""
            keys.append(
                (
                    selector.get("apiVersion", ""),
                    selector.get("kind", ""),
                    namespace,
                    selector["name"],
                )
            )
    return keys


def _outranks(det: Detector, policy: Obj, holder_ref: PolicyRef) -> bool:
    """Whether `policy` takes a template from the policy that claims it: another policy of
    the same kind with a lower priority, or a ClusterPropagationPolicy (a CPP never preempts
    a PP)."""
    is_pp: bool = policy["kind"] == PP_KIND
    own = (
        policy["kind"],
        policy["metadata"].get("namespace", "") if is_pp else "",
        policy["metadata"]["name"],
    )
    holder = det.policies.get(holder_ref)
    if holder_ref == own or holder is None:
        return False
    if holder_ref[0] == policy["kind"]:
        priority = int((policy.get("spec") or {}).get("priority") or 0)
        return priority > int((holder.get("spec") or {}).get("priority") or 0)
    return is_pp


def preempt(det: Detector, policy: Obj) -> None:
    for key in named_templates(policy):
        template = det.templates.get(key)
        if template is None or template["metadata"].get("deletionTimestamp"):
            continue
        if det._matches(template, policy) == MISMATCH:
            continue
        claim = det._claim(template)
        if claim is not None and _outranks(det, policy, claim[0]):
            reclaim(det, key, policy)


def reclaim(det: Detector, key: ObjKey, policy: Obj) -> None:
    pid = policy_id(policy)

    def claim(obj: Obj) -> None:
        add_claim(obj, policy, pid)

    det.mgr.write(det.template_types[key], key[2] or None, key[3], claim)


def handle_policy_deletion(det: Detector, policy: Obj) -> None:
    """Unclaim the policy's templates now; match each again after its own delay.

    Upstream the cleanup runs asynchronously (finalizer) and each unclaimed template is matched
    again when the detector's queue reaches its update event, one template at a time. A
    replacement policy created right after the delete therefore meets some templates already
    re-matched (still unmatched then, claimed later by the new policy as a Karmada change: a
    Lazy policy leaves their bindings until the next user edit) and others not yet (claimed as
    a user change, their bindings refreshed at once). The delays are drawn per template from
    the emulator's seeded random source, so a run is reproducible.
    """
    pid = policy_id(policy)
    keys = sorted(det.claimed.get(pid, set()))
    for key in keys:
        det._deferred.add(key)
        cleanup_claim(det, key, policy["kind"], pid)
    for key in keys:
        det.mgr.after(det.rng.uniform(0.0, 2 * REMATCH_DELAY_SECONDS), _rematch(det, key))


def _rematch(det: Detector, key: ObjKey) -> Callable[[], None]:
    def rematch() -> None:
        det._deferred.discard(key)
        if key in det.templates:
            det.enqueue(key, False)

    return rematch


def cleanup_claim(det: Detector, key: ObjKey, kind: str, pid: str) -> None:
    id_label = PP_ID_LABEL if kind == PP_KIND else CPP_ID_LABEL
    rtype = det.template_types.get(key)
    if rtype is None:
        return
    btype = det.mgr.binding_type(RB_KIND if rtype.namespaced else CRB_KIND)
    try:
        binding = det.mgr.store.get(
            btype, key[2] or None, binding_name(key[1], key[3]), copy_=False
        )
        if labels_of(binding).get(id_label) == pid:
            strip_claim(det, btype, binding, kind)
    except NotFound:
        pass
    template = det.templates.get(key)
    if template is not None and labels_of(template).get(id_label) == pid:
        strip_claim(det, rtype, template, kind)


def strip_claim(det: Detector, rtype: ResourceType, obj: Obj, kind: str) -> None:
    meta = obj["metadata"]
    with contextlib.suppress(NotFound):
        det.mgr.write(
            rtype, meta.get("namespace") or None, meta["name"], lambda o: remove_claim(o, kind)
        )


def binding_of(det: Detector, bkey: tuple[str, str, str]) -> Obj | None:
    try:
        return det.mgr.store.get(
            det.mgr.binding_type(bkey[0]), bkey[1] or None, bkey[2], copy_=False
        )
    except NotFound:
        return None
