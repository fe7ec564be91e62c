"""Load the emulator's demo topology (namespaces, team policies, Deployments; not its Clusters,
which the real plane has as members) into a real plane, for `tidal plan/switch` by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tools.realkarmada.plane import _apply

EMULATOR_ONLY = ("EmulatorSettings", "Cluster")


def demo_objects() -> list[dict[str, Any]]:
    from tidal_sim.emulator import DEFAULT_TOPOLOGY

    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    return [d for d in docs if d["kind"] not in EMULATOR_ONLY]


def load_demo(kubeconfig: Path) -> int:
    objs = demo_objects()
    _apply(kubeconfig, objs)
    return len(objs)
