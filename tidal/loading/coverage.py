"""Problems of spec.workloads found against a control plane (`tidal validate --kubeconfig`),
located in the schedule file: templates a window's policy claims that the selector misses,
or a selector that matches nothing (tidal.engine.planning.coverage_refusals words them)."""

from __future__ import annotations

from collections.abc import Iterable

from tidal.loading.errors import LocatedError, YamlProblem
from tidal.loading.loader import LoadedSchedule
from tidal.loading.locate import dotted, locate
from tidal.loading.yamlfile import read_yaml_file

PREFIX = "spec.workloads: "


def workloads_errors(
    loaded: LoadedSchedule, window: str, problems: Iterable[str]
) -> list[LocatedError]:
    """One located error per problem, at spec.workloads, naming the window."""
    try:
        tree = read_yaml_file(loaded.path).tree
    except YamlProblem:
        tree = None
    place: tuple[str | int, ...] = ("spec", "workloads")
    (line, col), found = locate(tree, place) if tree is not None else ((1, 1), place)
    return [
        LocatedError(
            str(loaded.path),
            line,
            col,
            f"{dotted(found)}: window {window}: {p.removeprefix(PREFIX)}",
        )
        for p in problems
    ]
