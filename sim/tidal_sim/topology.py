"""Topologies: multi-document YAML (a file or a directory of them) applied to the emulator in order.

Documents are ordinary manifests (Cluster, Namespace, policies, templates), plus two special kinds:

- `apiextensions.k8s.io/v1 CustomResourceDefinition`: registers a custom template kind (its
  group, served versions, plural, shortNames, scope, status subresource) before later documents
  use it; the CRD object itself is stored too.
- `sim.tidal.io/v1alpha1 EmulatorSettings`: knobs for the emulator itself, e.g.
  `spec: {schedulerLatencySeconds: 0.5, featureGates: [PropagationPolicyPreemption],
  karmadaVersion: "1.18", teamEstimator: {...}, statusDelaySeconds: 1,
  clusterStatusUpdateSeconds: 10, emptyWorkloadPropagation: false,
  policyChangeLagSeconds: 0, memberPods: true}` (team_estimator.py
  describes teamEstimator; statusDelaySeconds and clusterStatusUpdateSeconds are Karmada's
  status latencies, see controllers/status.py; emptyWorkloadPropagation is karmada-scheduler's
  --enable-empty-workload-propagation: clusters assigned 0 replicas stay in spec.clusters;
  policyChangeLagSeconds is how long the detector takes to reach the templates a policy change
  enqueued, which upstream puts in a low-priority lane behind template events; memberPods
  writes each member's Node and Pods behind the cluster proxy, controllers/member_pods.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tidal_sim.controllers.team_estimator import (
    TeamEstimator,
    TeamEstimatorError,
    parse_team_estimator,
)
from tidal_sim.kinds import ResourceType
from tidal_sim.version import LATEST_RELEASE, KarmadaVersion

Obj = dict[str, Any]

SETTINGS_API_VERSION = "sim.tidal.io/v1alpha1"
SETTINGS_KIND = "EmulatorSettings"
CRD_TYPE = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    False,
    True,
    ("crd", "crds"),
)


class TopologyError(ValueError):
    """A topology that cannot be loaded; the message names the file and document."""


@dataclass
class EmulatorSettings:
    scheduler_latency: float = 0.0
    feature_gates: frozenset[str] = frozenset()
    karmada_version: KarmadaVersion = LATEST_RELEASE
    team_estimator: TeamEstimator = field(default_factory=TeamEstimator)
    # member status -> binding aggregatedStatus; Cluster resourceSummary refresh period
    status_delay: float = 1.0
    cluster_status_interval: float = 10.0
    # karmada-scheduler --enable-empty-workload-propagation (off by default upstream)
    empty_workload_propagation: bool = False
    # the detector reaches a policy change's templates this late (upstream: a low-priority
    # queue lane), each with the Lazy-ness the policy had when it changed
    policy_change_lag: float = 0.0
    # the members' Node and Pods behind the cluster proxy (controllers/member_pods.py): on, as
    # a member has them; off where a test writes a member's own Nodes and Pods there
    member_pods: bool = True


@dataclass
class Topology:
    objects: list[tuple[str, Obj]] = field(default_factory=list)  # (where, manifest)
    settings: EmulatorSettings = field(default_factory=EmulatorSettings)


def load_yaml_documents(text: str) -> list[Any]:
    """All documents of a YAML text; libyaml when present (ten times faster), else ruamel.

    Raises ValueError with `LINE:COL: problem` on a syntax error.
    """
    try:
        import yaml as pyyaml
    except ImportError:
        try:
            return list(YAML(typ="safe").load_all(text))
        except YAMLError as exc:
            raise ValueError(_yaml_problem(exc)) from exc
    loader = getattr(pyyaml, "CSafeLoader", pyyaml.SafeLoader)
    try:
        return list(pyyaml.load_all(text, Loader=loader))
    except pyyaml.YAMLError as exc:
        raise ValueError(_yaml_problem(exc)) from exc


def _yaml_problem(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
    return f"{where}invalid YAML: {getattr(exc, 'problem', None) or exc}"


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
    if not path.exists():
        raise TopologyError(f"{path}: topology file not found; pass an existing file or directory")
    return [path]


def load_topology(source: Path | str | list[Obj] | None) -> Topology:
    """Parse a topology (file, directory, or a list of manifests) without applying it."""
    topo = Topology()
    if source is None:
        return topo
    docs: list[tuple[str, Any]] = []
    if isinstance(source, list):
        docs = [(f"object {i + 1}", d) for i, d in enumerate(source)]
    else:
        for path in _files(Path(source)):
            try:
                loaded = load_yaml_documents(path.read_text())
            except ValueError as exc:
                raise TopologyError(f"{path}:{exc}") from exc
            docs += [(f"{path}: document {i + 1}", d) for i, d in enumerate(loaded)]
    for where, doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
            raise TopologyError(f"{where}: not a manifest (needs apiVersion and kind)")
        if doc["apiVersion"] == SETTINGS_API_VERSION and doc["kind"] == SETTINGS_KIND:
            topo.settings = _settings(where, doc.get("spec") or {})
        else:
            topo.objects.append((where, doc))
    return topo


def _settings(where: str, spec: Obj) -> EmulatorSettings:
    unknown = set(spec) - {
        "schedulerLatencySeconds",
        "featureGates",
        "karmadaVersion",
        "teamEstimator",
        "statusDelaySeconds",
        "clusterStatusUpdateSeconds",
        "emptyWorkloadPropagation",
        "policyChangeLagSeconds",
        "memberPods",
    }
    if unknown:
        raise TopologyError(
            f"{where}: unknown EmulatorSettings field(s): {', '.join(sorted(unknown))}"
        )
    try:
        version = spec.get("karmadaVersion")
        return EmulatorSettings(
            float(spec.get("schedulerLatencySeconds", 0.0)),
            frozenset(str(g) for g in spec.get("featureGates") or []),
            KarmadaVersion.parse(str(version)) if version is not None else LATEST_RELEASE,
            parse_team_estimator(spec.get("teamEstimator")),
            _seconds(spec, "statusDelaySeconds", 1.0),
            _seconds(spec, "clusterStatusUpdateSeconds", 10.0),
            _flag(spec, "emptyWorkloadPropagation"),
            _seconds(spec, "policyChangeLagSeconds", 0.0),
            _flag(spec, "memberPods", True),
        )
    except TeamEstimatorError as exc:
        raise TopologyError(f"{where}: spec.{exc}") from exc
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"{where}: bad EmulatorSettings value: {exc}") from exc


def _flag(spec: Obj, name: str, default: bool = False) -> bool:
    value = spec.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, not {value!r}")
    return value


def _seconds(spec: Obj, name: str, default: float) -> float:
    value = float(spec.get(name, default))
    if not value >= 0:
        raise ValueError(f"{name} must be a number of seconds >= 0, not {spec.get(name)!r}")
    return value


def crd_types(crd: Obj) -> list[ResourceType]:
    """The resource types a CustomResourceDefinition declares (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (group and kind and plural):
        raise ValueError("a CustomResourceDefinition needs spec.group, spec.names.kind and .plural")
    types = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        types.append(
            ResourceType(
                group,
                version["name"],
                kind,
                plural,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                has_status="status" in (version.get("subresources") or {}),
                short_names=tuple(names.get("shortNames") or ()),
                custom=True,
            )
        )
    if not types:
        raise ValueError(f"CustomResourceDefinition for {kind} serves no version")
    return types
