"""Run-owned OverridePolicies / ClusterOverridePolicies that set member replicas (surge waves).

Karmada applies override policies last when it builds each member's Work, after dividing the
replicas, so a plaintext `replace /spec/replicas` for one cluster sets that member's count
whatever the binding assigned (upstream pkg/util/overridemanager). One
`ReplicaOverride` selects templates by name, all in one namespace (an OverridePolicy there) or
all cluster-scoped (a ClusterOverridePolicy), and sets the same replicas per cluster for each of
them: one rule per distinct replica count, naming its clusters. Every object carries the labels
of its owner (schedule, run, wave) and is found again by them after a crash.

Writes go through KarmadaClient.request: the leadership write gate and error translation apply
as for every acting write; creates and replaces use fieldValidation=Strict.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tidal.karmada.client import (
    CLUSTER_OVERRIDE_POLICIES,
    OVERRIDE_POLICIES,
    STRICT,
    KarmadaClient,
    Obj,
    Resource,
)
from tidal.karmada.errors import AlreadyExists, Conflict, NotFound
from tidal.karmada.names import (
    LABEL_DIRECTION,
    LABEL_MANAGED_BY,
    LABEL_RUN,
    LABEL_SCHEDULE,
    LABEL_WAVE,
    MANAGER,
    PURPOSE,
)
from tidal.karmada.paging import list_paged
from tidal.karmada.views import OverrideView

OP_KIND = "OverridePolicy"
COP_KIND = "ClusterOverridePolicy"
REPLICAS_PATH = "/spec/replicas"
_REPLACE_ATTEMPTS = 5
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass(frozen=True)
class Owner:
    """The run an override belongs to; its labels find it again (a value too long or odd for
    a label is shortened with a hash, the same way when selecting; the full values are kept
    in annotations)."""

    schedule: str
    run_id: str
    wave: int
    back: bool = False  # a rollback's (the same wave's forward ones are others)

    def __post_init__(self) -> None:
        for what, value in (("schedule", self.schedule), ("run id", self.run_id)):
            if not value:
                raise ValueError(f"override owner {what} is empty: name the run's {what}")
        if self.wave < 0:
            raise ValueError(f"override owner wave {self.wave}: must be 0 or more")

    def labels(self) -> dict[str, str]:
        return {
            LABEL_MANAGED_BY: MANAGER,
            LABEL_SCHEDULE: label_value(self.schedule),
            LABEL_RUN: label_value(self.run_id),
            LABEL_WAVE: str(self.wave),
            LABEL_DIRECTION: "back" if self.back else "forward",
        }

    def annotations(self) -> dict[str, str]:
        return {LABEL_SCHEDULE: self.schedule, LABEL_RUN: self.run_id, PURPOSE: "surge"}


def label_value(value: str) -> str:
    """`value` if it is a valid label value, else a valid one made from it and its hash."""
    if _LABEL_VALUE.match(value) and len(value) <= 63:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "-", value)[:54].strip("-_.")
    return f"{stem}-{digest}" if stem else digest


@dataclass(frozen=True)
class TemplateRef:
    """A resource template selected by name; namespace "" for a cluster-scoped one."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""


@dataclass(frozen=True)
class OverrideRef:
    """Where one override lives; `str()` is `kind/namespace/name` (namespace empty for a
    ClusterOverridePolicy) and `parse()` reads it back (journals keep it as text)."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> OverrideRef:
        parts = text.split("/")
        if (
            len(parts) != 3
            or parts[0] not in (OP_KIND, COP_KIND)
            or not parts[2]
            or bool(parts[1]) != (parts[0] == OP_KIND)
        ):
            raise ValueError(
                f"override reference {text!r}: expected OverridePolicy/<namespace>/"
                "<name> or ClusterOverridePolicy//<name>"
            )
        return cls(parts[0], parts[1], parts[2])

    @property
    def resource(self) -> Resource:
        return OVERRIDE_POLICIES if self.kind == OP_KIND else CLUSTER_OVERRIDE_POLICIES


@dataclass(frozen=True)
class ReplicaOverride:
    """Typed input: set `replicas[cluster]` member replicas of each template in `templates`."""

    name: str
    owner: Owner
    templates: tuple[TemplateRef, ...]
    replicas: Mapping[str, int] = field(default_factory=dict)
    # JSON pointers of the replica field(s): a custom kind's are those its
    # ResourceInterpreterCustomization revises (tidal.karmada.interpreters)
    paths: tuple[str, ...] = (REPLICAS_PATH,)

    def __post_init__(self) -> None:
        where = f"override {self.name!r}"
        if not self.paths or not all(p.startswith("/") and len(p) > 1 for p in self.paths):
            raise ValueError(
                f"{where}: replica paths {list(self.paths)} must be JSON "
                "pointers such as /spec/replicas"
            )
        if not _NAME.match(self.name):
            raise ValueError(
                f"{where}: the name must be a DNS subdomain (lower case letters, "
                "digits, '-', '.'; at most 253)"
            )
        if not self.templates:
            raise ValueError(f"{where}: select at least one template")
        namespaces = {t.namespace for t in self.templates}
        if len(namespaces) != 1:
            raise ValueError(
                f"{where}: templates span namespaces {sorted(namespaces)}; make "
                "one override per namespace (cluster-scoped ones apart)"
            )
        if not self.replicas:
            raise ValueError(f"{where}: set replicas for at least one cluster")
        for cluster, count in self.replicas.items():
            if not cluster or not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(
                    f"{where}: replicas for cluster {cluster!r} must be a whole "
                    f"number >= 0, got {count!r}"
                )

    @property
    def namespace(self) -> str:
        return self.templates[0].namespace

    @property
    def ref(self) -> OverrideRef:
        return OverrideRef(OP_KIND if self.namespace else COP_KIND, self.namespace, self.name)


def override_name(owner: Owner, index: int, *, back: bool = False) -> str:
    """`tidal-<schedule>-<run>-w<wave>[-back]-<index>` (lower case)."""
    suffix = "-back" if back else ""
    return f"tidal-{owner.schedule}-{owner.run_id}-w{owner.wave}{suffix}-{index}".lower()


def manifest(override: ReplicaOverride) -> Obj:
    """The OverridePolicy / ClusterOverridePolicy for `override`."""
    ref = override.ref
    selectors = []
    for t in sorted(override.templates, key=lambda t: (t.api_version, t.kind, t.name)):
        selector = {"apiVersion": t.api_version, "kind": t.kind, "name": t.name}
        if t.namespace:
            selector["namespace"] = t.namespace
        selectors.append(selector)
    by_count: dict[int, list[str]] = {}
    for cluster, count in sorted(override.replicas.items()):
        by_count.setdefault(count, []).append(cluster)
    rules = [
        {
            "targetCluster": {"clusterNames": clusters},
            "overriders": {
                "plaintext": [
                    {"path": path, "operator": "replace", "value": count} for path in override.paths
                ]
            },
        }
        for count, clusters in sorted(by_count.items(), key=lambda kv: kv[1])
    ]
    meta: Obj = {
        "name": ref.name,
        "labels": override.owner.labels(),
        "annotations": override.owner.annotations(),
    }
    if ref.namespace:
        meta["namespace"] = ref.namespace
    return {
        "apiVersion": ref.resource.api_version,
        "kind": ref.kind,
        "metadata": meta,
        "spec": {"resourceSelectors": selectors, "overrideRules": rules},
    }


def create_override(
    client: KarmadaClient, override: ReplicaOverride, *, dry_run: bool = False
) -> OverrideView:
    """Create it (AlreadyExists if it is there); a dry run is validated, never stored."""
    res = override.ref.resource
    query = {**STRICT, "dryRun": "All"} if dry_run else STRICT
    created = client.request(
        "create",
        res,
        "POST",
        res.path(override.namespace or None),
        body=manifest(override),
        query=query,
    )
    return OverrideView.of(created)


def replace_override(
    client: KarmadaClient, override: ReplicaOverride, *, known: Obj | None = None
) -> OverrideView:
    """Replace the spec and owner labels/annotations of the existing one (NotFound if it is
    not there); a concurrent change is re-read and replaced again. `known`: the object as
    this client last wrote it (its create's or replace's answer), replaced without reading
    it first; a change since (Conflict) is read and replaced as above."""
    ref = override.ref
    wanted = manifest(override)
    path = ref.resource.path(ref.namespace or None, ref.name)
    conflicts = 0
    while True:
        if known is not None:
            current, known = known, None
        else:
            current = client.request("get", ref.resource, "GET", path)
        meta = dict(current.get("metadata") or {})
        for part in ("labels", "annotations"):
            meta[part] = {**(meta.get(part) or {}), **wanted["metadata"][part]}
        try:
            replaced = client.request(
                "update", ref.resource, "PUT", path, body={**wanted, "metadata": meta}, query=STRICT
            )
        except Conflict:
            conflicts += 1
            if conflicts >= _REPLACE_ATTEMPTS:
                raise
            continue
        return OverrideView.of(replaced)


def apply_override(client: KarmadaClient, override: ReplicaOverride) -> OverrideView:
    """Create it, or replace the one already there (a retried create, a resume, a refit)."""
    try:
        return create_override(client, override)
    except AlreadyExists:
        return replace_override(client, override)


def get_override(client: KarmadaClient, ref: OverrideRef) -> OverrideView | None:
    """The override, or None when it does not exist."""
    found = client.find(ref.resource, ref.namespace or None, ref.name)
    return OverrideView.of(found) if found is not None else None


def delete_override(client: KarmadaClient, ref: OverrideRef) -> bool:
    """Delete it; False when it was already gone."""
    try:
        client.request(
            "delete", ref.resource, "DELETE", ref.resource.path(ref.namespace or None, ref.name)
        )
    except NotFound:
        return False
    return True


def owner_selector(
    schedule: str | None = None,
    run_id: str | None = None,
    wave: int | None = None,
    back: bool | None = None,
) -> str:
    """The label selector of tidal's overrides, narrowed to a schedule, run, wave and
    direction."""
    parts = [f"{LABEL_MANAGED_BY}={MANAGER}"]
    direction = None if back is None else "back" if back else "forward"
    for label, value in (
        (LABEL_SCHEDULE, schedule),
        (LABEL_RUN, run_id),
        (LABEL_WAVE, None if wave is None else str(wave)),
        (LABEL_DIRECTION, direction),
    ):
        if value is not None:
            parts.append(f"{label}={label_value(value)}")
    return ",".join(parts)


def delete_owned(client: KarmadaClient, owner: Owner, namespace: str | None) -> list[OverrideRef]:
    """Delete every override of `owner` (its wave and direction) in `namespace` (None: the
    ClusterOverridePolicies) in one request (deletecollection by the owner labels, which
    select nothing of another run, wave or direction); the ones deleted. Forbidden where
    the RBAC does not grant deletecollection: delete them one by one then."""
    res = OVERRIDE_POLICIES if namespace else CLUSTER_OVERRIDE_POLICIES
    kind = OP_KIND if namespace else COP_KIND
    selector = owner_selector(owner.schedule, owner.run_id, owner.wave, owner.back)
    answer = client.request(
        "deletecollection", res, "DELETE", res.path(namespace), query={"labelSelector": selector}
    )
    return [
        OverrideRef(kind, namespace or "", str((item.get("metadata") or {}).get("name")))
        for item in answer.get("items") or []
    ]


def list_overrides(
    client: KarmadaClient,
    *,
    schedule: str | None = None,
    run_id: str | None = None,
    wave: int | None = None,
    namespaces: Iterable[str] | None = None,
    cluster_scoped: bool = True,
) -> list[OverrideView]:
    """tidal's overrides found by their owner labels: OverridePolicies in `namespaces` (None:
    every namespace, one cluster-wide list), then ClusterOverridePolicies unless
    `cluster_scoped` is False. Sorted by kind, namespace, name."""
    selector = owner_selector(schedule, run_id, wave)
    found: list[Obj] = []
    spaces: list[str | None] = [None]
    if namespaces is not None:
        spaces = [*sorted(set(namespaces))]
    for namespace in spaces:
        items, _ = list_paged(client, OVERRIDE_POLICIES, namespace, label_selector=selector)
        found += [{**item, "kind": OP_KIND} for item in items]
    if cluster_scoped:
        items, _ = list_paged(client, CLUSTER_OVERRIDE_POLICIES, label_selector=selector)
        found += [{**item, "kind": COP_KIND} for item in items]
    views = [OverrideView.of(item) for item in found]
    return sorted(views, key=lambda v: (v.kind, v.namespace, v.name))


def ref_of(view: OverrideView) -> OverrideRef:
    return OverrideRef(view.kind, view.namespace, view.name)
