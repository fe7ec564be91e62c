"""Resource paths of the Kubernetes REST API, parsed into what the handlers need."""

from __future__ import annotations

from dataclasses import dataclass

from tidal_sim.kinds import KindRegistry, ResourceType


@dataclass(frozen=True)
class Route:
    rtype: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None

    @property
    def resource(self) -> str:
        """The accounting label: the plural, plus `/status` for the subresource."""
        return f"{self.rtype.plural}/{self.subresource}" if self.subresource else self.rtype.plural


class UnknownResource(LookupError):
    """The path names a group, version or resource the server does not serve."""


def _group_version(parts: list[str]) -> tuple[str, str, list[str]] | None:
    if len(parts) >= 2 and parts[0] == "api":
        return "", parts[1], parts[2:]
    if len(parts) >= 3 and parts[0] == "apis":
        return parts[1], parts[2], parts[3:]
    return None


def _namespace_of(
    kinds: KindRegistry, group: str, version: str, segs: list[str]
) -> tuple[str | None, list[str]]:
    """(namespace, the segments after it) of `namespaces/NS/PLURAL/...` when PLURAL is a
    namespaced kind; (None, segs) otherwise."""
    if segs[0] == "namespaces" and len(segs) >= 3:
        candidate = kinds.by_plural(group, version, segs[2])
        if candidate is not None and candidate.namespaced:
            return segs[1], segs[2:]
    return None, segs


def _serves(rtype: ResourceType, sub: str) -> bool:
    """Whether the kind serves the subresource (status; scale for Deployments and
    StatefulSets)."""
    scalable = (rtype.group, rtype.plural) in {("apps", "deployments"), ("apps", "statefulsets")}
    return (sub == "status" and rtype.has_status) or (sub == "scale" and scalable)


def parse_route(kinds: KindRegistry, path: str) -> Route | None:
    """The route of a resource path; None when the path is not a resource path at all.

    Raises UnknownResource when it has the shape of one but names nothing served.
    """
    parts = [p for p in path.split("/") if p]
    gv = _group_version(parts)
    if gv is None:
        return None
    group, version, segs = gv
    if not segs:
        return None
    namespace, segs = _namespace_of(kinds, group, version, segs)
    plural, rest = segs[0], segs[1:]
    rtype = kinds.by_plural(group, version, plural)
    if rtype is None or len(rest) > 2:
        raise UnknownResource(path)
    if namespace is None and rtype.namespaced and rest:
        raise UnknownResource(path)  # a namespaced object needs its namespace in the path
    name = rest[0] if rest else None
    sub = rest[1] if len(rest) == 2 else None
    if sub is not None and not _serves(rtype, sub):
        raise UnknownResource(path)
    return Route(rtype, namespace, name, sub)
