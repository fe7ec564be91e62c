"""Floors checked against the Clusters that exist (`tidal validate --kubeconfig`): a floor on
a cluster the control plane does not have can never hold, so every switch would be refused."""

from __future__ import annotations

from collections.abc import Collection

from tidal.loading.errors import LocatedError, YamlProblem
from tidal.loading.loader import LoadedSchedule
from tidal.loading.locate import dotted, locate
from tidal.loading.yamlfile import read_yaml_file

EVERY_CLUSTER = "*"


def unknown_floor_clusters(loaded: LoadedSchedule, existing: Collection[str]) -> list[LocatedError]:
    """One located error per floor cluster name that is not an existing Cluster."""
    spec = loaded.schedule.spec
    places: list[tuple[tuple[str | int, ...], list[str]]] = [
        (("spec", "rollout", "floors", i), list(f.clusters or []))
        for i, f in enumerate(spec.rollout.floors)
    ]
    for w_index, window in enumerate(spec.windows):
        override = window.rollout
        for i, f in enumerate(getattr(override, "floors", None) or []):
            places.append(
                (("spec", "windows", w_index, "rollout", "floors", i), list(f.clusters or []))
            )
    try:
        tree = read_yaml_file(loaded.path).tree
    except YamlProblem:
        tree = None
    known = ", ".join(sorted(existing)) or "none"
    errors = []
    for at, clusters in places:
        for j, name in enumerate(clusters):
            if name == EVERY_CLUSTER or name in existing:
                continue
            place = (*at, "clusters", j)
            (line, col), found = locate(tree, place) if tree is not None else ((1, 1), place)
            errors.append(
                LocatedError(
                    str(loaded.path),
                    line,
                    col,
                    f"{dotted(found)}: cluster {name!r} does not exist "
                    f"(Clusters: {known}); fix the floor's clusters",
                )
            )
    return errors
