"""The scheduler-estimator wire format: messages from our .proto files, and requests decoded.

The Python message classes are generated from `protos/*.proto` when first needed, in memory,
by grpcio-tools (`grpc.protos`): no generated code is kept in the repository or the wheel.

What a request carries (karmada v1.18.2 pkg/estimator/client/accurate.go):
- the replica's requests in `resourceRequestBytes` (serialized resource.Quantity); older
  schedulers only fill the deprecated `resourceRequest` map, read when the bytes are absent;
- the node claim: `nodeSelector`, `nodeAffinityBytes` (or `nodeAffinity`), `tolerationsBytes`
  (or `tolerations`);
- the namespace in `replicaRequirements.namespace` only when the ResourceQuotaEstimate gate is
  on (pkg/util/helper/binding.go); always in the gRPC metadata `object`, written
  "kind=<Kind>, name=<namespace>/<name>" (pkg/scheduler/core/util.go calAvailableReplicas).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tidal.domain.prediction import parse_quantity
from tidal.domain.team_capacity import NodeTerm, ReplicaClaim, Toleration

SERVICE = "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"
OBJECT_KEY = "object"  # pkg/util/constants.go ContextKeyObject
PROTOS = Path(__file__).parent / "protos"
_OBJECT = re.compile(r"kind=(?P<kind>[^,]*),\s*name=(?:(?P<ns>[^/]*)/)?(?P<name>.*)$")
_lock = threading.Lock()
_loaded: list[ModuleType] = []


class WireError(ValueError):
    """A request tidal cannot read (a malformed quantity, node affinity or toleration)."""


def messages() -> Any:
    """The module of the estimator's message classes (generated on first use)."""
    with _lock:
        if not _loaded:
            import grpc  # grpc.protos needs grpcio-tools; imported late: the CLI starts fast

            if str(PROTOS) not in sys.path:
                sys.path.append(str(PROTOS))
            _loaded.append(grpc.protos("karmada_estimator_pb.proto"))
        return _loaded[0]


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str


def workload_of(metadata: Iterable[tuple[str, str | bytes]]) -> Workload | None:
    """The workload named by the `object` metadata, if the scheduler sent it."""
    for key, value in metadata:
        if key == OBJECT_KEY:
            text = value.decode() if isinstance(value, bytes) else value
            match = _OBJECT.match(text.strip())
            if match:
                return Workload(match["kind"].strip(), match["ns"] or "", match["name"])
    return None


def namespace_of(requirements: Any, workload: Workload | None) -> str:
    """The request field when set (ResourceQuotaEstimate on), else the metadata's; "" if none."""
    return str(requirements.namespace or "") or (workload.namespace if workload else "")


def _quantities(raw_bytes: Mapping[str, bytes], raw_old: Mapping[str, Any]) -> dict[str, float]:
    pb = messages()
    out: dict[str, float] = {}
    try:
        if raw_bytes:
            for name, blob in raw_bytes.items():
                out[name] = parse_quantity(pb.Quantity.FromString(blob).string)
        else:
            for name, qty in raw_old.items():
                out[name] = parse_quantity(qty.string)
    except Exception as exc:  # a DecodeError or a quantity that does not parse
        raise WireError(f"resource request: {exc}") from None
    return out


def _terms(selector: Any) -> tuple[NodeTerm, ...]:
    def reqs(items: Any) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        return tuple((r.key, r.operator, tuple(r.values)) for r in items)

    return tuple(
        NodeTerm(reqs(t.matchExpressions), reqs(t.matchFields)) for t in selector.nodeSelectorTerms
    )


def _claim_parts(claim: Any) -> tuple[dict[str, str], tuple[NodeTerm, ...], tuple[Toleration, ...]]:
    pb = messages()
    try:
        if claim.nodeAffinityBytes:
            affinity = _terms(pb.NodeSelector.FromString(claim.nodeAffinityBytes))
        else:
            affinity = _terms(claim.nodeAffinity) if claim.HasField("nodeAffinity") else ()
        raw = (
            [pb.Toleration.FromString(b) for b in claim.tolerationsBytes]
            if claim.tolerationsBytes
            else list(claim.tolerations)
        )
    except Exception as exc:  # DecodeError
        raise WireError(f"node claim: {exc}") from None
    tolerations = tuple(Toleration(t.key, t.operator or "Equal", t.value, t.effect) for t in raw)
    return dict(claim.nodeSelector), affinity, tolerations


def claim_of(requirements: Any) -> ReplicaClaim:
    """The replica's requirements as the domain core takes them; WireError on bad bytes."""
    request = _quantities(requirements.resourceRequestBytes, requirements.resourceRequest)
    if not requirements.HasField("nodeClaim"):
        return ReplicaClaim(request)
    selector, affinity, tolerations = _claim_parts(requirements.nodeClaim)
    return ReplicaClaim(request, selector, affinity, tolerations)
