"""Load the emulator's demo topology (namespaces, team policies, Deployments; not its Clusters,
which the real plane has as members) into a real plane, for `tidal plan/switch` by hand.

Also, as a platform running the demo would: the Clusters get resource models that grade
nvidia.com/gpu (Karmada's default models grade cpu and memory only, so its general estimator
finds room for no GPU pod and the DynamicWeight teams stay Unschedulable; docs/fidelity.md
#resource-models), and the plane's `tidal estimator` gets the demo's team capacity (team 2001:
40 replicas' worth of cluster-a by day, none from 22:00 to 06:00 Europe/Berlin, as the
emulator's own team estimator)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import yaml

from tools.realkarmada.plane import _apply, _kubectl

EMULATOR_ONLY = ("EmulatorSettings", "Cluster")
DEMO_TEAMS = """\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
metadata: {name: demo}
spec:
  timeZone: Europe/Berlin
  teams:
    - name: team-2001
      namespaces: [ai-app]
      templateSelector: {matchLabels: {atms-app/teamid: "2001"}}
      clusters:
        cluster-a:
          replicas: 40
          windows: [{from: "22:00", to: "06:00", replicas: 0}]
"""
_INF = "9223372036854775807"
# grades at the plane's node shapes (cluster-a: 20 GPUs a node, cluster-b: 32)
_BOUNDS = [
    ("0", "128", "0", "1Ti", "0", "20"),
    ("128", "192", "1Ti", "1536Gi", "20", "32"),
    ("192", _INF, "1536Gi", _INF, "32", _INF),
]


def gpu_models() -> list[dict[str, Any]]:
    return [
        {
            "grade": g,
            "ranges": [
                {"name": "cpu", "min": c0, "max": c1},
                {"name": "memory", "min": m0, "max": m1},
                {"name": "nvidia.com/gpu", "min": g0, "max": g1},
            ],
        }
        for g, (c0, c1, m0, m1, g0, g1) in enumerate(_BOUNDS)
    ]


def demo_objects() -> list[dict[str, Any]]:
    from tidal_sim.emulator import DEFAULT_TOPOLOGY

    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    return [d for d in docs if d["kind"] not in EMULATOR_ONLY]


def load_demo(kubeconfig: Path, work: Path | None = None) -> int:
    """Models, the demo's objects, and (when the plane in `work` runs one) the estimator's
    teams; returns how many objects were applied."""
    from tools.realkarmada import estimator
    from tools.realkarmada.plane import MEMBERS, default_work_dir
    from tools.realkarmada.procs import PlaneError

    for cluster in MEMBERS:
        _kubectl(
            kubeconfig,
            "patch",
            "cluster",
            cluster,
            "--type",
            "merge",
            "-p",
            json.dumps({"spec": {"resourceModels": gpu_models()}}),
        )
    objs = demo_objects()
    _apply(kubeconfig, objs)
    # a plane without tidal estimator: the general estimator alone
    with contextlib.suppress(PlaneError, OSError, ValueError):
        estimator.set_teams(work or default_work_dir(), DEMO_TEAMS)
    return len(objs)
