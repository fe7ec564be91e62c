"""Builders for the switch end-to-end tests: topologies, schedule files, clients."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from tidal.domain.clock import SystemClock
from tidal.engine.journal import InMemoryJournal
from tidal.engine.record import RunRecord
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.karmada.informer import SharedReads
from tidal.loading import load_schedules
from tidal_sim.emulator import Emulator

NS = "ai-app"
MakeEmulator = Callable[..., Emulator]  # the type of the conftest emulator factories
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def weights_window(
    name: str,
    start: str,
    weights: dict[str, int],
    *,
    policy: str = "team-cpp",
    trigger: str | None = None,
) -> str:
    """YAML of a window (a list item under spec.windows) that patches the static weights of
    ClusterPropagationPolicy `policy` to `weights` at `start`."""
    lines = [f"- name: {name}", f'  start: "{start}"']
    if trigger is not None:
        lines.append(f"  trigger: {trigger}")
    lines += [
        "  policies:",
        "    - kind: ClusterPropagationPolicy",
        f"      name: {policy}",
        "      patch:",
        "        spec:",
        "          placement:",
        "            replicaScheduling:",
        "              weightPreference:",
        "                staticWeightList:",
    ]
    for target, weight in weights.items():
        lines += [
            f"                  - targetCluster: {{clusterNames: [{target}]}}",
            f"                    weight: {weight}",
        ]
    return "\n".join(lines) + "\n"


def swap_window(
    name: str, start: str, swap_from: str, swap_to: str, *, trigger: str | None = None
) -> str:
    """YAML of a window (a list item under spec.windows) that swaps ClusterPropagationPolicy
    `swap_from` for the policy in file `swap_to` at `start`."""
    lines = [f"- name: {name}", f'  start: "{start}"']
    if trigger is not None:
        lines.append(f"  trigger: {trigger}")
    lines += [
        "  policies:",
        "    - kind: ClusterPropagationPolicy",
        "      swap:",
        f"        from: {swap_from}",
        f"        to: {swap_to}",
    ]
    return "\n".join(lines) + "\n"


# The night window most switch tests run: team-cpp's static weights patched to cluster-b only.
NIGHT_TO_B = weights_window("night", "23:00", {"cluster-b": 1})


def deployment_workloads(label_selector: str) -> str:
    """YAML of spec.workloads: the Deployments of namespace NS matching `label_selector`, a
    flow mapping such as `{matchLabels: {team: t1}}`."""
    return (
        "- apiVersion: apps/v1\n  kind: Deployment\n"
        f"  namespace: {NS}\n  labelSelector: {label_selector}\n"
    )


# The workloads of most switch tests: team t1's Deployments.
TEAM_T1 = deployment_workloads("{matchLabels: {team: t1}}")


def schedule_text(
    name: str,
    rollout: str,
    *,
    windows: str = NIGHT_TO_B,
    workloads: str | None = None,
    catch_up_window: str | None = None,
) -> str:
    """A UTC TidalSchedule `name`; `windows`, `rollout` and `workloads` are the YAML under
    those keys of spec, at any indentation."""

    def block(key: str, body: str) -> str:
        return f"  {key}:\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"

    text = (
        "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\n"
        f"metadata: {{name: {name}}}\nspec:\n  timeZone: UTC\n"
    )
    if catch_up_window is not None:
        text += f"  catchUpWindow: {catch_up_window}\n"
    if workloads is not None:
        text += block("workloads", workloads)
    return text + block("windows", windows) + block("rollout", rollout)


def cluster(
    name: str,
    *,
    cpu: str = "1000",
    pods: str = "1000",
    startup: float = 1.0,
    termination: float = 0.0,
    ready: bool = True,
    fail: bool = False,
) -> dict[str, Any]:
    annotations = {
        "sim.tidal.io/pod-startup-seconds": str(startup),
        "sim.tidal.io/termination-seconds": str(termination),
    }
    if fail:
        annotations["sim.tidal.io/pods-fail"] = "true"
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"syncMode": "Push"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "ClusterReady",
                    "message": "ok",
                }
            ],
            "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "4Ti", "pods": pods}},
        },
    }


def static_placement(weights: dict[str, int]) -> dict[str, Any]:
    return {
        "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [c]}, "weight": w}
                    for c, w in weights.items()
                ]
            },
        },
    }


def dynamic_placement() -> dict[str, Any]:
    return {
        "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"},
        },
    }


DAY = static_placement({"cluster-a": 4, "cluster-b": 1})


def cpp(name: str, team: str, placement: dict[str, Any], *, lazy: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceSelectors": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": NS,
                "labelSelector": {"matchLabels": {"team": team}},
            }
        ],
        "placement": placement,
    }
    if lazy:
        spec["activationPreference"] = "Lazy"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def policy_file(policy: dict[str, Any]) -> str:
    """The text of a policy file (a swap's `to`): `policy` as JSON, which is also YAML."""
    return json.dumps(policy, indent=2) + "\n"


def deployment(
    name: str,
    team: str,
    replicas: int,
    *,
    cpu: str = "100m",
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"team": team},
            "annotations": annotations or {},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                    ]
                },
            },
        },
    }


def namespace(name: str = NS) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def static_team(
    *,
    workloads: int = 4,
    replicas: int = 5,
    cpu: str = "100m",
    b_cpu: str = "1000",
    policy: str = "team-cpp",
) -> list[dict[str, Any]]:
    """cluster-a and cluster-b (pods start in 0.5s), the namespace, `policy` placing team t1
    4:1 (DAY), and `workloads` Deployments web-0.. of team t1."""
    topo = [
        cluster("cluster-a", startup=0.5),
        cluster("cluster-b", startup=0.5, cpu=b_cpu),
        namespace(),
        cpp(policy, "t1", DAY),
    ]
    return topo + [deployment(f"web-{i}", "t1", replicas, cpu=cpu) for i in range(workloads)]


def write_schedule(tmp: Path, body: str, extra: dict[str, str] | None = None) -> Path:
    path = tmp / "schedule.yaml"
    path.write_text(textwrap.dedent(body))
    for rel, text in (extra or {}).items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return path


def load_one(path: Path) -> Any:
    result = load_schedules([path])
    assert not result.errors, [str(e) for e in result.errors]
    (loaded,) = result.schedules
    return loaded


def client_for(emulator: Any, tmp: Path, **kw: Any) -> KarmadaClient:
    kubeconfig = emulator.write_kubeconfig(tmp / "kubeconfig")
    kw.setdefault(
        "retry", RetryPolicy(attempts=8, base_delay=0.01, max_delay=0.1, max_retry_after=0.2)
    )
    return KarmadaClient.from_kubeconfig(kubeconfig, None, **kw)


def switch(
    client: KarmadaClient,
    path: Path,
    window: str,
    *,
    journal: InMemoryJournal | None = None,
    events: list[Any] | None = None,
    on_event: Callable[[Any], None] | None = None,
    policy_settle: float = 0.0,
    reads: SharedReads | None = None,
) -> RunRecord:
    """Run `window` of the schedule at `path` now; engine events go to `events` and/or
    `on_event`; `policy_settle` as the daemon's TIDAL_KARMADA__POLICY_SETTLE_SECONDS;
    `reads`: the run's informers (default: its own, made by run_switch), for a test that
    waits until they see a change it made."""

    def observe(event: Any) -> None:
        if events is not None:
            events.append(event)
        if on_event is not None:
            on_event(event)

    return run_switch(
        client,
        load_one(path),
        window,
        clock=SystemClock(),
        journal=journal or InMemoryJournal(),
        on_event=observe,
        policy_settle=policy_settle,
        reads=reads,
    )


def invoke_cli(command: str, path: Path, kubeconfig: Path, *options: str) -> Result:
    """`tidal COMMAND PATH --window night --kubeconfig KUBECONFIG OPTIONS...` in-process."""
    from tidal.cli.main import cli

    return CliRunner().invoke(
        cli, [command, str(path), "--window", "night", "--kubeconfig", str(kubeconfig), *options]
    )


def writes(emulator: Any) -> list[Any]:
    """The emulator's logged requests that write (since its last reset_requests); dry runs
    store nothing and do not count."""
    return [r for r in emulator.request_log() if r.verb in WRITE_VERBS and not r.dry_run]


def latest(emulator: Any) -> dict[tuple[str, str], tuple[int, int]]:
    """(workload, cluster) -> (assigned, ready) of the emulator timeline's last samples."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for s in emulator.timeline():
        out[(s["workload"], s["cluster"])] = (s["assigned"], s["ready"])
    return out


def assert_back_to_day(emulator: Any, workloads: int = 4, seconds: float = 5.0) -> None:
    """Within `seconds`, every web-i is 4 ready on cluster-a and assigned 1 on cluster-b."""

    def home(now: dict[tuple[str, str], tuple[int, int]]) -> bool:
        return all(
            now[(f"{NS}/Deployment/web-{i}", "cluster-a")] == (4, 4) for i in range(workloads)
        )

    deadline = time.monotonic() + seconds
    now = latest(emulator)
    while not home(now) and time.monotonic() < deadline:
        time.sleep(0.05)
        now = latest(emulator)
    for i in range(workloads):
        assert now[(f"{NS}/Deployment/web-{i}", "cluster-a")] == (4, 4)
        assert now[(f"{NS}/Deployment/web-{i}", "cluster-b")][0] == 1
