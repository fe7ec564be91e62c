"""`tidal estimator` on the real plane: started before karmada-scheduler, which is started with
its scheduler-estimator flags and finds it through one ExternalName Service per member in the
Karmada apiserver (`karmada-scheduler-estimator-<cluster>` -> localhost:<grpc port>,
pkg/estimator/client/service.go resolveCluster).

The estimator starts with no teams (every answer -1: the scheduler's general estimate alone), so
the plane schedules as without it; a scenario writes its TeamCapacity with `set_teams` (the
estimator reads a changed file within its 2 s refresh), and may `kill` and `start` it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tools.realkarmada.procs import STATE, PlaneError, start_time

REPO = Path(__file__).resolve().parents[2]
SCHEDULER_PORT = 10352  # karmada-scheduler's --scheduler-estimator-port default
PREFIX = "karmada-scheduler-estimator"
NO_TEAMS = (
    "apiVersion: tidal.io/v1alpha1\nkind: TeamCapacity\nmetadata: {name: none}\nspec: {teams: []}\n"
)
NAME = "tidal-estimator"


def scheduler_flags() -> list[str]:
    return [
        "--enable-scheduler-estimator=true",
        f"--scheduler-estimator-port={SCHEDULER_PORT}",
        "--scheduler-estimator-service-namespace=karmada-system",
        f"--scheduler-estimator-service-prefix={PREFIX}",
    ]


def services(clusters: list[str], grpc_port: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{PREFIX}-{c}", "namespace": "karmada-system"},
            "spec": {
                "type": "ExternalName",
                "externalName": "localhost",
                "ports": [
                    {
                        "name": "grpc",
                        "port": SCHEDULER_PORT,
                        "protocol": "TCP",
                        "targetPort": grpc_port,
                    }
                ],
            },
        }
        for c in clusters
    ]


def rbac(user: str) -> list[dict[str, Any]]:
    """The estimator's Karmada-side RBAC, bound to `user` (the plane's admin). Binding
    `clusters/proxy` also makes karmada-controller-manager's unified-auth controller let each
    member's karmada-impersonator impersonate that user
    (pkg/controllers/unifiedauth/unified_auth_controller.go); without it the proxy answers 403
    "cannot impersonate resource users", even for a system:masters user."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": NAME},
            "rules": [
                {
                    "apiGroups": ["cluster.karmada.io"],
                    "resources": ["clusters"],
                    "verbs": ["get", "list"],
                },
                {
                    "apiGroups": ["cluster.karmada.io"],
                    "resources": ["clusters/proxy"],
                    "verbs": ["get"],
                },
                {
                    "apiGroups": ["work.karmada.io"],
                    "resources": ["resourcebindings"],
                    "verbs": ["list"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]


def args(kubeconfig: Path, teams: Path, grpc_port: int, http_port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tidal",
        "estimator",
        "--teams",
        str(teams),
        "--kubeconfig",
        str(kubeconfig),
        "--address",
        "127.0.0.1",
        "--grpc-port",
        str(grpc_port),
        "--port",
        str(http_port),
        "--refresh-seconds",
        "2",
    ]


def env() -> dict[str, str]:
    """This checkout's tidal, logs as JSON lines."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "TIDAL_LOG_FORMAT": "json", "TIDAL_ESTIMATOR__STALE_SECONDS": "20"}


def _state(work: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((work / STATE).read_text())
    return state


def info(work: Path) -> dict[str, Any]:
    """{grpc, http, teams, args} of the plane's estimator; PlaneError when it has none."""
    found = _state(work).get("estimator")
    if not found:
        raise PlaneError(f"the plane in {work} runs no tidal estimator: bring it up again")
    return dict(found)


def status(work: Path) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{info(work)['http']}/status", timeout=3
        ) as reply:
            body: dict[str, Any] = json.loads(reply.read())
            return body
    except (OSError, ValueError):
        return None


def set_teams(work: Path, text: str, timeout: float = 30.0) -> None:
    """Write the estimator's TeamCapacity and wait until it answers with it (loaded after the
    write, and the members read for it)."""
    est = info(work)
    written = datetime.now(UTC)
    Path(est["teams"]).write_text(text)
    names = sorted(t["name"] for t in (_teams_of(text)))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = status(work)
        if (
            seen is not None
            and sorted(seen.get("teams") or []) == names
            and datetime.fromisoformat(seen["teamsLoadedAt"]) >= written
        ):
            return
        time.sleep(0.5)
    raise PlaneError(f"tidal estimator did not take teams {names} within {timeout:.0f}s")


def _teams_of(text: str) -> list[dict[str, Any]]:
    import yaml

    doc = yaml.safe_load(text) or {}
    return list((doc.get("spec") or {}).get("teams") or [])


def kill(work: Path) -> None:
    """SIGKILL the estimator (as a crash would)."""
    state = _state(work)
    pid = state.get("pids", {}).get(NAME)
    if pid and start_time(pid) == state.get("starts", {}).get(NAME):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def start(work: Path, timeout: float = 60.0) -> None:
    """Start the estimator again with the arguments it was brought up with."""
    state = _state(work)
    est = state["estimator"]
    log = work / "logs" / f"{NAME}.log"
    with log.open("ab") as f:
        proc = subprocess.Popen(
            est["args"],
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=work,
            env={**os.environ, **env()},
            start_new_session=True,
        )
    state["pids"][NAME] = proc.pid
    state.setdefault("starts", {})[NAME] = start_time(proc.pid) or 0
    (work / STATE).write_text(json.dumps(state, indent=2))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if status(work) is not None:
            return
        time.sleep(0.5)
    raise PlaneError(f"tidal estimator did not start within {timeout:.0f}s (see {log})")
