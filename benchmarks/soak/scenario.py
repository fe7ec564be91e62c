"""The soak's world: two teams on two clusters, each with a schedule whose windows alternate
every minute (night on even minutes, day on odd), and the daemon's environment."""

from __future__ import annotations

import textwrap
from typing import Any

NS = "soak"
STATE_NS = "tidal-system"
CLUSTERS = ("cluster-a", "cluster-b")
REPLICAS = 5


class Team:
    """One team: its policy, workloads, trigger and failure mode."""

    def __init__(self, name: str, workloads: int, trigger: str, on_failure: str) -> None:
        self.name, self.workloads = name, workloads
        self.trigger, self.on_failure = trigger, on_failure

    @property
    def schedule(self) -> str:
        return f"soak-{self.name}"

    @property
    def policy(self) -> str:
        return f"{self.name}-cpp"

    def workload_names(self) -> list[str]:
        return [f"{self.name}-web-{i:02d}" for i in range(self.workloads)]

    def workload_keys(self) -> set[str]:
        """As the controllers' timeline names workloads: ns/Kind/name."""
        return {f"{NS}/Deployment/{n}" for n in self.workload_names()}


TEAMS = (Team("alpha", 6, "touch", "halt"), Team("beta", 6, "both", "rollback"))
DAY = {"cluster-a": 4, "cluster-b": 1}
NIGHT = {"cluster-b": 1}
FLOOR_CLUSTER, FLOOR_MIN = "cluster-b", 1
FLOOR_PERCENT = 20  # of spec.replicas ready across clusters: a scale-up past capacity breaks it
CLUSTER_PODS = 100


def _cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "annotations": {
                "sim.tidal.io/pod-startup-seconds": "2",
                "sim.tidal.io/termination-seconds": "1",
            },
        },
        "spec": {"syncMode": "Push"},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ok"}
            ],
            "resourceSummary": {
                "allocatable": {"cpu": "1000", "memory": "4Ti", "pods": str(CLUSTER_PODS)}
            },
        },
    }


def _weights(weights: dict[str, int]) -> list[dict[str, Any]]:
    return [{"targetCluster": {"clusterNames": [c]}, "weight": w} for c, w in weights.items()]


def _policy(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": team.policy},
        "spec": {
            "resourceSelectors": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": NS,
                    "labelSelector": {"matchLabels": {"team": team.name}},
                }
            ],
            "placement": {
                "clusterAffinity": {"clusterNames": list(CLUSTERS)},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": _weights(DAY)},
                },
            },
        },
    }


def _deployment(name: str, team: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"team": team}},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
            },
        },
    }


def topology() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [_cluster(c) for c in CLUSTERS]
    objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for team in TEAMS:
        objs.append(_policy(team))
        objs += [_deployment(n, team.name) for n in team.workload_names()]
    return objs


def _flow(weights: dict[str, int]) -> str:
    items = ", ".join(
        f"{{targetCluster: {{clusterNames: [{c}]}}, weight: {w}}}" for c, w in weights.items()
    )
    return f"[{items}]"


def schedule_text(team: Team, *, wave_size: str = "50%", suspend: bool = False) -> str:
    """Night on even minutes, day on odd ones: a window every minute."""
    windows = ""
    for window, start, weights in (
        ("night", "0-58/2 * * * *", NIGHT),
        ("day", "1-59/2 * * * *", DAY),
    ):
        windows += textwrap.indent(
            textwrap.dedent(f"""\
            - name: {window}
              start: "{start}"
              trigger: {team.trigger}
              policies:
                - kind: ClusterPropagationPolicy
                  name: {team.policy}
                  patch:
                    spec:
                      placement:
                        replicaScheduling:
                          weightPreference:
                            staticWeightList: {_flow(weights)}
            """),
            "    ",
        )
    return (
        textwrap.dedent(f"""\
        apiVersion: tidal.io/v1alpha1
        kind: TidalSchedule
        metadata: {{name: {team.schedule}}}
        spec:
          timeZone: UTC
          suspend: {str(suspend).lower()}
          catchUpWindow: 50s
          workloads:
            - apiVersion: apps/v1
              kind: Deployment
              namespace: {NS}
              labelSelector: {{matchLabels: {{team: {team.name}}}}}
          windows:
        """)
        + windows
        + textwrap.indent(
            textwrap.dedent(f"""\
        rollout:
          waveSize: "{wave_size}"
          pauseBetweenWaves: 1s
          waveTimeout: 12s
          onFailure: {team.on_failure}
          floors:
            - clusters: [{FLOOR_CLUSTER}]
              minReadyReplicas: {FLOOR_MIN}
            - minAvailablePercent: {FLOOR_PERCENT}
        """),
            "  ",
        )
    )


BROKEN_TEXTS = (
    "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\nmetadata: {name: [unclosed\n",
    "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\nmetadata: {name: soak-x}\n"
    "spec: {timeZone: Mars/Olympus, windows: []}\n",
)


def daemon_env(identity: str) -> dict[str, str]:
    return {
        "TIDAL_LOG_FORMAT": "json",
        "TIDAL_LOG_LEVEL": "INFO",
        "TIDAL_STATE_NAMESPACE": STATE_NS,
        "TIDAL_IDENTITY": identity,
        "TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS": "4",
        "TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS": "3",
        "TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS": "0.5",
        "TIDAL_SCHEDULER__RESYNC_SECONDS": "5",
        "TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES": "2",
        "TIDAL_SWEEPER__INTERVAL_SECONDS": "10",
    }
