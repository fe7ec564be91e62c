"""The chart's team estimator: its Deployment, the Services karmada-scheduler resolves, and the
TeamCapacity file it mounts, accepted by the estimator's own loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python
import pytest

from tests.packaging.test_chart import VARIANTS, Render
from tidal.loading.teams import load_teams
from tidal.settings import load_settings

TEAMS = """\
apiVersion: tidal.io/v1alpha1
kind: TeamCapacity
metadata: {name: platform}
spec:
  teams:
    - name: team-2001
      namespaces: [team-2001]
      clusters: {"*": {quota: true}}
"""


def _objects(render: Render, **extra: Any) -> list[dict[str, Any]]:
    values = {"estimator": {**VARIANTS["estimator"]["estimator"], "teams": TEAMS, **extra}}
    return render(values)


def _pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(
        o
        for o in objects
        if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-estimator")
    )
    pod: dict[str, Any] = deployment["spec"]["template"]
    return pod


def test_one_service_per_member_aliases_the_estimator(render: Render) -> None:
    """karmada-scheduler-estimator-<cluster> in karmada-system for each member, each an alias of
    the estimator's Service on the scheduler's port, which selects the estimator pods only."""
    objects = _objects(render)
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    estimator = services["tidal-estimator"]
    for member in ("cluster-a", "cluster-b"):
        alias = services[f"karmada-scheduler-estimator-{member}"]
        assert alias["metadata"]["namespace"] == "karmada-system"
        assert alias["spec"]["type"] == "ExternalName"
        assert alias["spec"]["externalName"] == "tidal-estimator.tidal-system.svc.cluster.local"
        assert alias["spec"]["ports"][0]["port"] == 10352
    assert {"port": 10352, "targetPort": "grpc", "name": "grpc", "protocol": "TCP"} in estimator[
        "spec"
    ]["ports"]
    labels = _pod(objects)["metadata"]["labels"]
    assert estimator["spec"]["selector"] == labels
    daemon = next(
        o
        for o in objects
        if o["kind"] == "Deployment" and not o["metadata"]["name"].endswith("-estimator")
    )
    selector = daemon["spec"]["selector"]["matchLabels"]
    assert not selector.items() <= labels.items()  # the daemon's selectors miss estimator pods


def test_pod_runs_the_estimator_with_probes_and_the_teams_file(
    render: Render, tmp_path: Path
) -> None:
    """args [estimator]; /healthz and /readyz probes; the mounted teams file loads, and the env
    is accepted by the settings model."""
    objects = _objects(render)
    pod = _pod(objects)["spec"]
    container = pod["containers"][0]
    assert container["args"] == ["estimator"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    config = next(
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-estimator")
    )
    path = tmp_path / "teams.yaml"
    path.write_text(config["data"]["teams.yaml"])
    assert load_teams(path).of_namespace("team-2001") is not None
    env["TIDAL_ESTIMATOR__TEAMS"] = str(path)
    settings = load_settings(**{"kubeconfig": env.pop("TIDAL_KUBECONFIG")})
    assert settings.estimator.grpc_port == 10352
    assert env["TIDAL_ESTIMATOR__GRPC_PORT"] == "10352"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"teams": {}}, "estimator.teams is required"),
        ({"clusters": []}, "estimator.clusters is required"),
    ],
)
def test_missing_values_are_clear_errors(
    render: Render, extra: dict[str, Any], message: str
) -> None:
    """Without teams or clusters the chart refuses with one line naming the value."""
    with pytest.raises(helm_python.HelmError, match=message):
        _objects(render, **extra)
