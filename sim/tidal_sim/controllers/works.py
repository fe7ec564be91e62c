"""The binding controller's Works: what each member cluster is told to run.

pkg/controllers/binding (ensureWork): for every cluster in a binding's spec.clusters, copy the
template, revise its replicas to the cluster's assigned count, then apply override policies
last, and write the result as a Work in the cluster's execution namespace `karmada-es-<name>`,
annotated with the overrides applied (annotations are only ever added: a deleted override's
entry stays). The member runs the Work's replicas, so an override of
`/spec/replicas` sets the member's count whatever the division assigned (spec.clusters is not
touched). A create, change or delete of an (Cluster)OverridePolicy re-syncs every binding whose
template the old or the new policy selects (binding_controller.go newOverridePolicyFunc).
Clusters no longer in spec.clusters lose their Work. A Work's status only says Applied
(members here always accept what they are sent); manifestStatuses are not written.
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tidal_sim.controllers.common import (
    CLUSTER_KIND,
    COP_KIND,
    CRB_KIND,
    OP_KIND,
    RB_KIND,
    WORK_KIND,
    WORKLOAD_KINDS,
    Obj,
    clone,
    reference_key,
)
from tidal_sim.controllers.customizations import InterpreterError, Operation
from tidal_sim.controllers.matching import MISMATCH
from tidal_sim.controllers.overrides import (
    APPLIED_CLUSTER_OVERRIDES,
    APPLIED_OVERRIDES,
    OverrideFailed,
    applied_annotation,
    apply_overrides,
    selects,
)
from tidal_sim.store import NotFound

if TYPE_CHECKING:
    from tidal_sim.controllers.host import ControllerHost
    from tidal_sim.controllers.members import BKey

log = logging.getLogger(__name__)

EXECUTION_SPACE_PREFIX = "karmada-es-"
RB_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
RB_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
CRB_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"
_DROPPED_META = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
    "selfLink",
)


@dataclass
class Synced:
    """What a binding's Works were last built from, and the replicas each member runs."""

    key: tuple[Any, ...]
    replicas: dict[str, int] = field(default_factory=dict)
    works: dict[str, str] = field(default_factory=dict)  # cluster -> Work name
    manifests: dict[str, Obj] = field(default_factory=dict)  # cluster -> what it runs


def _selected_names(policy: Obj) -> set[str] | None:
    """The template names a policy's selectors name, or None when one selects otherwise (by
    labels, all of a kind, or no selector: everything)."""
    selectors = (policy.get("spec") or {}).get("resourceSelectors") or []
    if not selectors or not all(rs.get("name") for rs in selectors):
        return None
    return {str(rs["name"]) for rs in selectors}


def work_name(kind: str, name: str, namespace: str) -> str:
    """`<name>-<hash>`, one per template and cluster namespace (the hash is the emulator's own,
    not upstream's: find Works by their resourcebinding annotations, not by name)."""
    base = name.replace(":", ".").lower()
    key = f"{namespace}-{base}-{kind}" if namespace else f"{base}-{kind}"
    return f"{base}-{zlib.crc32(key.lower().encode()):x}"


def _keep_last(
    previous: Synced, cluster: str, works: dict[str, str], manifests: dict[str, Obj]
) -> int:
    """A member whose Work could not be built keeps its last one (none: nothing runs there);
    the replicas it runs."""
    if cluster not in previous.works:
        return 0
    works[cluster] = previous.works[cluster]
    if cluster in previous.manifests:
        manifests[cluster] = previous.manifests[cluster]
    return previous.replicas.get(cluster, 0)


class Works:
    """Builds and writes Works; tells members how many replicas each cluster runs."""

    def __init__(self, mgr: ControllerHost) -> None:
        self.mgr = mgr
        self.cluster_policies: dict[str, Obj] = {}
        self.policies: dict[tuple[str, str], Obj] = {}
        # OverridePolicies by the template names their selectors name (ns, name) -> keys, and
        # per namespace those that select more broadly: a Work is built from these only
        self._named: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._broad: dict[str, set[tuple[str, str]]] = {}
        self._synced: dict[BKey, Synced] = {}  # dropped to force a re-sync
        self._last: dict[BKey, Synced] = {}  # kept: failures keep these replicas and Works
        self._namespaces: set[str] = set()

    # -- override policy events ---------------------------------------------------------
    def on_override(self, etype: str, policy: Obj, old: Obj | None) -> list[BKey]:
        """Remember the policy; return the bindings to re-sync (selected before or after)."""
        meta = policy["metadata"]
        if policy.get("kind") == COP_KIND:
            if etype == "DELETED":
                self.cluster_policies.pop(meta["name"], None)
            else:
                self.cluster_policies[meta["name"]] = policy
        else:
            key = (meta.get("namespace", ""), meta["name"])
            self._unindex(key)
            if etype == "DELETED":
                self.policies.pop(key, None)
            else:
                self.policies[key] = policy
                self._index(key, policy)
        touched: list[BKey] = []
        sources = [p for p in (policy, old) if p is not None]
        for bkey in self._candidates(sources):
            template = self._template_of(bkey)
            if template is None:
                continue
            if any(self._selects(p, bkey, template) for p in sources):
                self._synced.pop(bkey, None)
                touched.append(bkey)
        return touched

    def _index(self, key: tuple[str, str], policy: Obj) -> None:
        names = _selected_names(policy)
        if names is None:
            self._broad.setdefault(key[0], set()).add(key)
        for name in names or ():
            self._named.setdefault((key[0], name), set()).add(key)

    def _unindex(self, key: tuple[str, str]) -> None:
        old = self.policies.get(key)
        if old is None:
            return
        self._broad.get(key[0], set()).discard(key)
        for name in _selected_names(old) or ():
            self._named.get((key[0], name), set()).discard(key)

    def _namespace_policies(self, namespace: str, template_name: str) -> list[Obj]:
        keys = self._broad.get(namespace, set()) | self._named.get(
            (namespace, template_name), set()
        )
        return [self.policies[k] for k in sorted(keys)]

    def _candidates(self, sources: list[Obj]) -> list[BKey]:
        """The bindings the policies may select: when every selector names its resource, only
        those of templates of these names (not every binding, once per override event)."""
        names: set[str] = set()
        for p in sources:
            if _selected_names(p) is None:
                return list(self.mgr.members.bindings)
            names.update(_selected_names(p) or ())
        index = self.mgr.members.by_template_name
        return sorted({bkey for name in names for bkey in index.get(name, ())})

    def _selects(self, policy: Obj, bkey: BKey, template: Obj) -> bool:
        if policy.get("kind") == OP_KIND and bkey[0] != RB_KIND:
            return False
        return selects(policy, template) > MISMATCH

    # -- building ---------------------------------------------------------------------
    def replicas(
        self, bkey: BKey, binding: Obj, targets: dict[str, int], is_workload: bool
    ) -> dict[str, int]:
        """Write the binding's Works if their inputs changed; the replicas each member runs."""
        resource = (binding.get("spec") or {}).get("resource") or {}
        key = (
            tuple(sorted(targets.items())),
            str(resource.get("resourceVersion", "")),
            is_workload,
        )
        synced = self._synced.get(bkey)
        if synced is not None and synced.key == key:
            return dict(synced.replicas)
        previous = synced or self._last.get(bkey) or Synced(key)
        template = self._template(resource)
        replicas: dict[str, int] = {}
        works: dict[str, str] = {}
        manifests: dict[str, Obj] = {}
        for cluster, assigned in sorted(targets.items()):
            replicas[cluster] = assigned if is_workload else 0
            if template is None:
                continue
            built = self._build(bkey, template, cluster, assigned, is_workload)
            if built is None:  # an override failed: the member keeps its last Work, if any
                replicas[cluster] = _keep_last(previous, cluster, works, manifests)
                continue
            works[cluster], count, manifests[cluster] = built
            if is_workload and count is not None:
                replicas[cluster] = count
        for cluster, name in previous.works.items():
            if cluster not in targets:
                self._delete_work(cluster, name)
        self._synced[bkey] = self._last[bkey] = Synced(key, replicas, works, manifests)
        return dict(replicas)

    def manifest(self, bkey: BKey, cluster: str) -> Obj | None:
        """The object the binding's Work tells `cluster` to run (read it, never mutate it)."""
        synced = self._last.get(bkey)
        return synced.manifests.get(cluster) if synced is not None else None

    def forget(self, bkey: BKey) -> None:
        """The binding is gone: remove its Works."""
        synced = self._last.pop(bkey, None)
        self._synced.pop(bkey, None)
        for cluster, name in (synced.works if synced else {}).items():
            self._delete_work(cluster, name)

    def _build(
        self, bkey: BKey, template: Obj, cluster: str, assigned: int, is_workload: bool
    ) -> tuple[str, int | None, Obj] | None:
        manifest = _member_copy(template)
        custom = self.mgr.customizations
        kind = (str(template.get("apiVersion", "")), str(template.get("kind", "")))
        if is_workload and kind[1] in WORKLOAD_KINDS:
            manifest.setdefault("spec", {})["replicas"] = assigned
        elif is_workload and custom.enabled(*kind, Operation.REVISE_REPLICA):
            try:  # binding/common.go ensureWork: a failed revision skips this cluster's Work
                manifest = custom.revise_replica(manifest, assigned)
            except InterpreterError as exc:
                log.info("sim binding controller: %s", exc)
                return None
        cluster_obj = self._cluster(cluster)
        if cluster_obj is None:
            return None
        try:
            manifest, cops, ops = apply_overrides(
                manifest,
                cluster_obj,
                self.cluster_policies.values(),
                self._namespace_policies(bkey[1], str(template["metadata"]["name"])),
            )
        except OverrideFailed as exc:
            log.info("sim binding controller: %s", exc)
            return None
        annotations = _binding_annotations(bkey)
        for key, items in ((APPLIED_CLUSTER_OVERRIDES, cops), (APPLIED_OVERRIDES, ops)):
            value = applied_annotation(items)
            if value is not None:
                annotations[key] = value
        meta = template["metadata"]
        name = work_name(str(template.get("kind")), meta["name"], meta.get("namespace", ""))
        self._write_work(cluster, name, annotations, manifest)
        return name, self._member_count(manifest, kind), manifest

    def _member_count(self, manifest: Obj, kind: tuple[str, str]) -> int | None:
        """The replicas a member runs for the manifest: spec.replicas of a built-in kind; for
        a customized kind what its replica script reads from the member's object (the
        operator reads the field the revision and any override wrote)."""
        custom = self.mgr.customizations
        if kind[1] not in WORKLOAD_KINDS and custom.enabled(*kind, Operation.INTERPRET_REPLICA):
            try:
                return max(0, custom.get_replicas(manifest).count)
            except InterpreterError as exc:
                log.info("sim member operator: %s", exc)
                return None
        count = (manifest.get("spec") or {}).get("replicas")
        return count if isinstance(count, int) and count >= 0 else None

    # -- store ------------------------------------------------------------------------
    def _template_of(self, bkey: BKey) -> Obj | None:
        binding = self._binding(bkey)
        return self._template(((binding or {}).get("spec") or {}).get("resource") or {})

    def _template(self, resource: Obj) -> Obj | None:
        return self.mgr.detector.templates.get(reference_key(resource))

    def _binding(self, bkey: BKey) -> Obj | None:
        try:
            return self.mgr.store.get(
                self.mgr.binding_type(bkey[0]), bkey[1] or None, bkey[2], copy_=False
            )
        except NotFound:
            return None

    def _cluster(self, name: str) -> Obj | None:
        rtype = self.mgr.store.kinds.by_kind("cluster.karmada.io/v1alpha1", CLUSTER_KIND)
        if rtype is None:
            return None
        try:
            return self.mgr.store.get(rtype, None, name, copy_=False)
        except NotFound:
            return None

    def _work_type(self) -> Any:
        rtype = self.mgr.store.kinds.by_kind("work.karmada.io/v1alpha1", WORK_KIND)
        assert rtype is not None
        return rtype

    def _write_work(
        self, cluster: str, name: str, annotations: dict[str, str], manifest: Obj
    ) -> None:
        namespace = EXECUTION_SPACE_PREFIX + cluster
        self._ensure_namespace(namespace)
        rtype = self._work_type()
        spec = {"workload": {"manifests": [manifest]}}
        try:
            current = self.mgr.store.get(rtype, namespace, name, copy_=False)
        except NotFound:
            current = None
        if current is None:
            now = self.mgr.clock.rfc3339()
            self.mgr.store.create(
                rtype,
                {
                    "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
                    "spec": spec,
                    "status": {
                        "conditions": [
                            {
                                "type": "Applied",
                                "status": "True",
                                "reason": "AppliedSuccessful",
                                "message": "Manifest has been successfully applied",
                                "lastTransitionTime": now,
                            }
                        ]
                    },
                },
            )
            return
        # ctrlutil.CreateOrUpdateWork merges annotations into the existing ones and never
        # removes a key: once an override is deleted, its applied-overrides entry stays on the
        # Work (stale) while the manifest goes back to the assigned replicas.
        merged = {**(current["metadata"].get("annotations") or {}), **annotations}
        if current.get("spec") == spec and current["metadata"].get("annotations") == merged:
            return

        def change(obj: Obj) -> None:
            obj["metadata"]["annotations"] = merged
            obj["spec"] = spec

        self.mgr.write(rtype, namespace, name, change)

    def _delete_work(self, cluster: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.mgr.store.delete(self._work_type(), EXECUTION_SPACE_PREFIX + cluster, name)

    def _ensure_namespace(self, name: str) -> None:
        if name in self._namespaces:
            return
        rtype = self.mgr.store.kinds.by_kind("v1", "Namespace")
        assert rtype is not None
        try:
            self.mgr.store.get(rtype, None, name, copy_=False)
        except NotFound:
            self.mgr.store.create(rtype, {"metadata": {"name": name}})
        self._namespaces.add(name)


def _member_copy(template: Obj) -> Obj:
    manifest = {k: clone(v) for k, v in template.items() if k != "status"}
    meta = manifest.setdefault("metadata", {})
    for key in _DROPPED_META:
        meta.pop(key, None)
    return manifest


def _binding_annotations(bkey: BKey) -> dict[str, str]:
    kind, namespace, name = bkey
    if kind == CRB_KIND:
        return {CRB_NAME_ANNOTATION: name}
    return {RB_NAMESPACE_ANNOTATION: namespace, RB_NAME_ANNOTATION: name}
