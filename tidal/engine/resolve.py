"""Resolve a window: its policies as they are now and will be, and the selected workloads.

The selected workloads are the templates claimed by the window's policies (their permanent-id
claim label, listed by label selector on the server, paged), narrowed by spec.workloads when
given; with their bindings (listed per namespace, never fetched one by one). Excluded,
unbound and foreign templates are reported and left out.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import json_merge_patch

from tidal.domain.resource_selectors import selects
from tidal.domain.schedule import (
    PolicyChange,
    PolicyRef,
    TidalSchedule,
    Window,
    WorkloadSelector,
)
from tidal.domain.selectors import selector_to_query
from tidal.domain.waves import WorkloadKey
from tidal.karmada import bindings as bindings_api
from tidal.karmada import policies as policies_api
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.names import EXCLUDE, binding_name, claim_labels
from tidal.karmada.objects import RebalancerWorkload
from tidal.karmada.policies import PolicyLookup
from tidal.karmada.templates import list_templates
from tidal.karmada.views import BindingView, ObjectView

# (namespace or None for all, cluster_scoped) -> the bindings there (e.g. from a shared cache)
ListBindings: TypeAlias = Callable[[str | None, bool], list[Obj]]

SERVER_FIELDS = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
)


class ResolveError(Exception):
    """The window cannot be resolved as written (missing policy, ...): invalid input."""


@dataclass
class PolicyTarget:
    """One PolicyChange of the window: what exists now and what will be in force after."""

    change: PolicyChange
    kind: str
    name: str  # in force after
    namespace: str | None
    current: Obj | None  # the policy in force now (patch: it; swap: `from`, or `to` if done)
    target_spec: dict[str, Any]
    swap_from: str | None = None
    from_obj: Obj | None = None
    to_obj: Obj | None = None

    @property
    def key(self) -> str:
        return PolicyRef(self.kind, self.namespace, self.name).key

    @property
    def target_placement(self) -> dict[str, Any]:
        return dict(self.target_spec.get("placement") or {})


@dataclass
class Workload:
    key: WorkloadKey
    template: Obj
    binding: Obj | None
    policy: str  # PolicyTarget.key
    # a custom kind's replica fields, found for a surge (tidal.engine.custom_kinds); empty:
    # a built-in kind's /spec/replicas
    replica_paths: tuple[str, ...] = ()

    # name and binding_key are read in every pass of every wait: worked out once (`key`
    # never changes)
    @functools.cached_property
    def name(self) -> str:
        return str(self.key)

    @property
    def uid(self) -> str:
        return str(ObjectView(self.template).metadata.get("uid") or "")

    @functools.cached_property
    def binding_key(self) -> str:
        return f"{self.key.namespace}/{binding_name(self.key.name, self.key.kind)}"

    @property
    def replicas(self) -> int | None:
        binding = BindingView.of(self.binding)
        if binding.has_replicas_field:
            value = binding.replicas
            if value is not None and value > 0:
                return value
        spec = self.template.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("replicas"), int):
            return int(spec["replicas"])
        return None

    @property
    def current(self) -> dict[str, int]:
        return assignment(self.binding)

    @property
    def request(self) -> dict[str, float]:
        from tidal.domain.prediction import parse_quantity

        requests = BindingView.of(self.binding).replica_requests()
        return {k: parse_quantity(v) for k, v in requests.items()}

    def ref(self) -> RebalancerWorkload:
        out = RebalancerWorkload(
            apiVersion=self.key.api_version, kind=self.key.kind, name=self.key.name
        )
        if self.key.namespace:
            out["namespace"] = self.key.namespace
        return out


@dataclass
class Skipped:
    workload: str
    reason: str  # excluded | unbound | foreign | unmatched
    detail: str = ""


@dataclass
class Selection:
    policies: list[PolicyTarget]
    workloads: list[Workload]
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    excluded_claimed: dict[str, list[str]] = field(default_factory=dict)  # policy key -> names
    # templates a window's policy claims (and selects) that spec.workloads misses: policy key
    # -> names (they would move all at once when the Lazy is lifted: the plan refuses them)
    outside_selector: dict[str, list[str]] = field(default_factory=dict)
    selector_empty: bool = False  # spec.workloads is given and selects no template at all


def assignment(binding: Mapping[str, Any] | None) -> dict[str, int]:
    return BindingView.of(binding).assignment()


def strip_server_fields(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    out.pop("status", None)
    return out


def _target(
    client: KarmadaClient, change: PolicyChange, find: PolicyLookup | None = None
) -> PolicyTarget:
    """What the change acts on; the policies read through `find` (a run's informer) or
    afresh."""
    kind, namespace = change.kind, change.policy_namespace
    look = find or functools.partial(policies_api.find_policy, client)
    if change.swap is None:
        name = change.policy_name
        current = look(kind, name, namespace)
        if current is None:
            where = f"{namespace}/{name}" if namespace else name
            raise ResolveError(f"{kind} {where} does not exist; create it or fix the schedule")
        merged = json_merge_patch.merge(copy.deepcopy(current), change.patch or {})
        return PolicyTarget(change, kind, name, namespace, current, dict(merged.get("spec") or {}))
    manifest = change.swap.manifest or {}
    to_name = change.policy_name
    from_obj = look(kind, change.swap.from_, namespace)
    to_obj = look(kind, to_name, namespace)
    if from_obj is None and to_obj is None:
        raise ResolveError(
            f"swap {change.swap.from_} -> {to_name}: neither {kind} exists; "
            f"create {change.swap.from_} first"
        )
    return PolicyTarget(
        change,
        kind,
        to_name,
        namespace,
        from_obj or to_obj,
        dict(manifest.get("spec") or {}),
        swap_from=change.swap.from_,
        from_obj=from_obj,
        to_obj=to_obj,
    )


def _kinds_of(policy: Obj) -> list[tuple[str, str, str | None]]:
    """(apiVersion, kind, namespace) listed by the policy's resourceSelectors."""
    out: list[tuple[str, str, str | None]] = []
    spec = policy.get("spec") or {}
    ns_default = (policy.get("metadata") or {}).get("namespace")
    for sel in spec.get("resourceSelectors") or []:
        entry = (
            str(sel.get("apiVersion")),
            str(sel.get("kind")),
            sel.get("namespace") or ns_default,
        )
        if entry not in out:
            out.append(entry)
    return out


def _claimed_by(template: Obj, policy: Obj) -> bool:
    labels = ObjectView(template).labels
    selector = policies_api.claim_selector(policy)
    if selector is None:
        return False
    key, _, value = selector.partition("=")
    return labels.get(key) == value


def selected_by(template: Obj, selectors: Any) -> bool:
    """Karmada applies a policy with these resourceSelectors to the template."""
    view = ObjectView(template)
    return selects(
        selectors,
        api_version=str(template.get("apiVersion")),
        kind=str(template.get("kind")),
        namespace=str(view.metadata.get("namespace") or ""),
        name=view.name,
        labels=view.labels,
    )


def _claimed_by_other(template: Obj) -> bool:
    labels = ObjectView(template).labels
    return any(k in labels for k in claim_labels())


def _select_templates(client: KarmadaClient, selectors: list[WorkloadSelector]) -> list[Obj]:
    """The templates spec.workloads selects (label selectors applied by the server)."""
    out: list[Obj] = []
    for sel in selectors:
        query = None
        if sel.label_selector is not None:
            query = (
                selector_to_query(
                    sel.label_selector.match_labels, sel.label_selector.match_expressions
                )
                or None
            )
        out += list_templates(client, sel.api_version, sel.kind, sel.namespace, query)
    return out


def resolve(
    client: KarmadaClient,
    schedule: TidalSchedule,
    window: Window,
    *,
    bindings: ListBindings | None = None,
    policies: PolicyLookup | None = None,
) -> Selection:
    """Read the window's policies, the templates they claim and their bindings (listed, or
    from `bindings`: a shared cache's (namespace, cluster_scoped) -> objects; the policies
    from `policies`, a shared cache's lookup, or afresh)."""
    targets = [_target(client, change, policies) for change in window.policies]
    selection = Selection(policies=targets, workloads=[])
    seen: set[str] = set()
    selectors = schedule.spec.workloads
    listed: list[Obj] | None = None  # what spec.workloads selects, listed once
    every = _every_template(client)
    for target in targets:
        policy = target.current
        assert policy is not None
        claim = policies_api.claim_selector(policy)
        if claim is None:
            selection.warnings.append(
                f"{target.key} has no claim label yet (Karmada has not processed it): "
                "it claims no templates"
            )
            continue
        if selectors:
            if listed is None:
                listed = _select_templates(client, selectors)
                selection.selector_empty = not listed
            _claimed_outside(selection, target, listed, every)
            found = _claimed_of_listed(selection, policy, listed, alone=len(targets) == 1)
        else:
            found = [
                tpl
                for api_version, kind, namespace in _kinds_of(policy)
                for tpl in list_templates(client, api_version, kind, namespace, claim)
            ]
        for tpl in found:
            name = _key_text(tpl)
            if name not in seen:
                seen.add(name)
                _take(selection, target, tpl, name)
    _attach_bindings(client, selection, bindings)
    for policy_key, names in selection.excluded_claimed.items():
        selection.warnings.append(
            f"{policy_key} claims excluded templates ({', '.join(sorted(names))}); they pick "
            "up the change at their next edit: give them their own policy"
        )
    return selection


def _claimed_of_listed(
    selection: Selection, policy: Obj, listed: list[Obj], *, alone: bool
) -> list[Obj]:
    """The templates spec.workloads selects that `policy` claims; the others are left out
    (claimed by another policy; or by none, when the window changes this policy alone)."""
    found: list[Obj] = []
    for tpl in listed:
        if _claimed_by(tpl, policy):
            found.append(tpl)
        elif _claimed_by_other(tpl):
            selection.skipped.append(
                Skipped(_key_text(tpl), "foreign", "claimed by another policy")
            )
        elif alone:
            selection.skipped.append(Skipped(_key_text(tpl), "unbound", "claimed by no policy"))
    return found


def _take(selection: Selection, target: PolicyTarget, tpl: Obj, name: str) -> None:
    """A claimed template joins the workloads, unless excluded by its annotation or matched
    by none of the policy's resourceSelectors (left out, with a warning)."""
    annotations = (tpl.get("metadata") or {}).get("annotations") or {}
    if annotations.get(EXCLUDE) == "true":
        selection.skipped.append(Skipped(name, "excluded", f'{EXCLUDE}: "true"'))
        selection.excluded_claimed.setdefault(target.key, []).append(name)
        return
    if not selected_by(tpl, target.target_spec.get("resourceSelectors")):
        why = f"claimed by {target.key}, matched by none of its resourceSelectors"
        selection.skipped.append(Skipped(name, "unmatched", why))
        selection.warnings.append(
            f"{name}: {why} (labels changed?): Karmada applies that policy to it no "
            "more, so it stays where it is; fix its labels or the selectors"
        )
        return
    selection.workloads.append(Workload(_key(tpl), tpl, None, target.key))


def _every_template(client: KarmadaClient) -> Callable[[str, str, str | None], list[Obj]]:
    """Every template of (apiVersion, kind, namespace), each listed once."""
    cache: dict[tuple[str, str, str | None], list[Obj]] = {}

    def templates(api_version: str, kind: str, namespace: str | None) -> list[Obj]:
        key = (api_version, kind, namespace)
        if key not in cache:
            cache[key] = list_templates(client, api_version, kind, namespace, None)
        return cache[key]

    return templates


def _claimed_outside(
    selection: Selection,
    target: PolicyTarget,
    listed: list[Obj],
    templates: Callable[[str, str, str | None], list[Obj]],
) -> None:
    """The templates `target`'s policy claims and selects that spec.workloads did not list:
    outside the waves (excluded ones: kept Lazy, as those the selector lists). `templates`:
    every template of (apiVersion, kind, namespace), listed once for all policies."""
    policy = target.current
    assert policy is not None
    chosen = {_key_text(t) for t in listed}
    for api_version, kind, namespace in _kinds_of(policy):
        for tpl in templates(api_version, kind, namespace):
            name = _key_text(tpl)
            if (
                name in chosen
                or not _claimed_by(tpl, policy)
                or not selected_by(tpl, target.target_spec.get("resourceSelectors"))
            ):
                continue
            annotations = (tpl.get("metadata") or {}).get("annotations") or {}
            into = (
                selection.excluded_claimed
                if annotations.get(EXCLUDE) == "true"
                else selection.outside_selector
            )
            names = into.setdefault(target.key, [])
            if name not in names:
                names.append(name)


def _key(tpl: Obj) -> WorkloadKey:
    meta = tpl.get("metadata") or {}
    return WorkloadKey(
        str(meta.get("namespace") or ""),
        str(meta.get("name")),
        str(tpl.get("kind")),
        str(tpl.get("apiVersion")),
    )


def _key_text(tpl: Obj) -> str:
    return str(_key(tpl))


def _attach_bindings(
    client: KarmadaClient, selection: Selection, bindings: ListBindings | None = None
) -> None:
    namespaces = sorted({w.key.namespace for w in selection.workloads})
    cache: dict[str, Obj] = {}

    def add(namespace: str | None, *, cluster_scoped: bool = False) -> None:
        if bindings is not None:
            items = bindings(namespace, cluster_scoped)
        else:
            items, _ = bindings_api.list_bindings(client, namespace, cluster_scoped=cluster_scoped)
        cache.update({bindings_api.key_of(b): b for b in items})

    if "" in namespaces:
        add(None, cluster_scoped=True)
    named = [ns for ns in namespaces if ns]
    for ns in [None] if len(named) > 3 else named:  # many namespaces: one list of them all
        add(ns)
    kept: list[Workload] = []
    for w in selection.workloads:
        w.binding = cache.get(w.binding_key)
        if w.binding is None:
            selection.skipped.append(Skipped(w.name, "unbound", "no ResourceBinding yet"))
            continue
        kept.append(w)
    selection.workloads = kept
