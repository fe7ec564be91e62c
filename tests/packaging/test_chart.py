"""The Helm chart, rendered by the real Helm engine, for the default values and variants."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml

import tidal

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tidal"
KUBE_VERSION = "1.30.0"
REQUIRED: dict[str, Any] = {"karmada": {"kubeconfigSecret": {"name": "karmada-kubeconfig"}}}
# Kinds of the Prometheus Operator: no schema in kubernetes-validate, checked structurally below.
OPERATOR_KINDS = {"ServiceMonitor", "PrometheusRule"}

Render = Callable[..., list[dict[str, Any]]]

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "existing-configmap": {
        "schedules": {
            "existingConfigMap": {
                "name": "team-schedules",
                "items": [{"key": "policies__day.yaml", "path": "policies/day.yaml"}],
            }
        }
    },
    "monitoring": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "prometheusRule": {
                "enabled": True,
                "labels": {"release": "prometheus"},
                "runbookBaseUrl": "https://git.example.com/tidal/blob/main/",
            },
        }
    },
    "dashboard": {"dashboard": {"enabled": True, "namespace": "grafana", "folder": "Platform"}},
    "single-replica": {"replicaCount": 1, "leaderElection": {"enabled": False}},
    "every-knob": {
        "fullnameOverride": "karmada-tidal",
        "commonLabels": {"team": "platform"},
        "image": {
            "repository": "registry.example.com/tidal",
            "digest": "sha256:" + "0" * 64,
            "pullPolicy": "Always",
        },
        "imagePullSecrets": [{"name": "regcred"}],
        "karmada": {"context": "karmada-apiserver", "stateNamespace": "tidal-state"},
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"}],
        "serviceAccount": {"create": False, "name": "existing-sa"},
        "service": {"enabled": False},
        "podDisruptionBudget": {"enabled": False},
        "networkPolicy": {"enabled": False},
        "podAnnotations": {"example.com/a": "b"},
        "podLabels": {"example.com/l": "v"},
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                            ]
                        }
                    ]
                }
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "tidal"}},
            }
        ],
    },
    "git-sync": {
        "schedules": {
            "gitSync": {
                "enabled": True,
                "repo": "https://git.example.com/ops/sched",
                "ref": "main",
                "period": "30s",
                "subPath": "teams/",
                "auth": {"secretName": "git-creds"},
            }
        },
    },
    "git-sync-ssh": {
        "schedules": {
            "gitSync": {
                "enabled": True,
                "repo": "git@git.example.com:ops/sched.git",
                "auth": {"secretName": "git-ssh", "type": "ssh"},
            }
        },
    },
    "extras": {
        "extraContainers": [
            {
                "name": "shipper",
                "image": "registry.example.com/shipper:1",
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 10002,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                    "readOnlyRootFilesystem": True,
                },
                "volumeMounts": [{"name": "spool", "mountPath": "/spool"}],
            }
        ],
        "extraVolumes": [{"name": "spool", "emptyDir": {}}],
        "extraVolumeMounts": [{"name": "spool", "mountPath": "/spool", "readOnly": True}],
    },
    "estimator": {
        "estimator": {
            "enabled": True,
            "clusters": ["cluster-a", "cluster-b"],
            "teams": {
                "apiVersion": "tidal.io/v1alpha1",
                "kind": "TeamCapacity",
                "spec": {"teams": []},
            },
        }
    },
    "values-schedules": {
        "schedules": {
            "files": {"team-a.yaml": "kind: TidalSchedule\n", "policies/a.yaml": {"kind": "X"}}
        }
    },
}


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The single object of a kind (and name)."""
    found = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind}, got {[o['metadata']['name'] for o in found]}"
    return found[0]


def env_of(deployment: dict[str, Any]) -> dict[str, Any]:
    """The container's env as name -> value (or the valueFrom mapping)."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def needs_file(path: Path) -> None:
    """Skip when a file another engineer owns has not landed yet."""
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} is not in the repository yet")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_object_is_schema_valid(render: Render, variant: str) -> None:
    """Every rendered object of every variant validates strictly against the Kubernetes schemas."""
    if variant == "monitoring":
        needs_file(ROOT / "tidal" / "rules" / "tidal-alerts.yaml")
    if variant == "dashboard":
        needs_file(CHART / "dashboards" / "tidal.json")
    objects = render(VARIANTS[variant])
    assert objects
    for obj in objects:
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == "tidal"
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        if obj["kind"] in OPERATOR_KINDS:
            continue  # CRD kinds: see test_monitoring_objects_are_well_formed
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_helm_lint_is_clean(variant: str) -> None:
    """`helm lint --strict` finds no error and no warning for any variant."""
    if variant == "monitoring":
        needs_file(ROOT / "tidal" / "rules" / "tidal-alerts.yaml")
    if variant == "dashboard":
        needs_file(CHART / "dashboards" / "tidal.json")
    values = {**REQUIRED, **VARIANTS[variant]}
    report = helm_python.lint(
        CHART, values, strict=True, namespace="tidal-system", kube_version=f"v{KUBE_VERSION}"
    )
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not report["errors"] and not problems, report


def test_default_objects(render: Render) -> None:
    """Default values render exactly the always-on objects, monitoring and dashboard off."""
    kinds = sorted(o["kind"] for o in render())
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
    ]


def test_pod_meets_restricted_pod_security_standard(render: Render) -> None:
    """The pod carries every field the Pod Security Standard `restricted` profile requires."""
    pod = one(render(), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    run_as = pod["securityContext"]["runAsUser"]
    assert isinstance(run_as, int) and run_as > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(key)
    for container in pod["containers"]:
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] > 0
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert sc["readOnlyRootFilesystem"] is True
        assert not sc.get("privileged")
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        tmp = next(v for v in pod["volumes"] if v["name"] == mounts["/tmp"]["name"])
        assert "emptyDir" in tmp
        writable = [p for p, m in mounts.items() if not m.get("readOnly")]
        assert writable == ["/tmp"]
    allowed_volumes = {"configMap", "secret", "emptyDir", "projected", "downwardAPI"}
    for volume in pod["volumes"]:
        assert set(volume) - {"name"} <= allowed_volumes, volume


def test_deployment_wiring(render: Render) -> None:
    """Two replicas, leader election, kubeconfig Secret mounted read-only, probes on port http."""
    deployment = one(render(), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = env_of(deployment)
    assert deployment["spec"]["replicas"] == 2
    assert env["TIDAL_LEADER_ELECTION__ENABLED"] == "true"
    assert env["TIDAL_IDENTITY"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    secret = next(v for v in pod["volumes"] if "secret" in v)
    assert secret["secret"]["secretName"] == "karmada-kubeconfig"
    mount = next(m for m in container["volumeMounts"] if m["name"] == secret["name"])
    assert mount["readOnly"] is True
    assert env["TIDAL_KUBECONFIG"] == f"{mount['mountPath']}/kubeconfig"
    schedules = next(m for m in container["volumeMounts"] if m["name"] == "schedules")
    assert env["TIDAL_SCHEDULES"] == schedules["mountPath"] and schedules["readOnly"] is True
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert env["TIDAL_PORT"] == "8080"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert container["args"] == ["run"]


def test_rendered_env_is_accepted_by_the_settings_model(
    render: Render, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every TIDAL_* variable the chart sets is a real setting and parses to the intended value."""
    from tidal.settings import load_settings

    env = env_of(
        one(render({"karmada": {"context": "karmada-apiserver", "version": "1.17"}}), "Deployment")
    )
    for name, value in env.items():
        assert name.startswith("TIDAL_")
        monkeypatch.setenv(name, value if isinstance(value, str) else "tidal-7d9f-abcde")
    settings = load_settings()
    assert str(settings.kubeconfig) == "/etc/tidal/karmada/kubeconfig"
    assert settings.context == "karmada-apiserver"
    assert str(settings.schedules) == "/etc/tidal/schedules"
    assert settings.port == 8080 and settings.log_format == "json"
    assert settings.leader_election.enabled is True
    assert settings.identity == "tidal-7d9f-abcde"
    assert settings.karmada.version.value == "1.17"


def test_every_knob_reaches_the_pod(render: Render) -> None:
    """Names, image digest, pull secrets, scheduling and extra env all land where they belong."""
    objects = render(VARIANTS["every-knob"])
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "Deployment"]
    deployment = one(objects, "Deployment", "karmada-tidal")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "registry.example.com/tidal@sha256:" + "0" * 64
    assert pod["serviceAccountName"] == "existing-sa"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert "nodeAffinity" in pod["affinity"] and "podAntiAffinity" not in pod["affinity"]
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    env = env_of(deployment)
    assert env["TIDAL_CONTEXT"] == "karmada-apiserver"
    assert env["TIDAL_STATE_NAMESPACE"] == "tidal-state"
    assert env["HTTPS_PROXY"] == "http://proxy.example.com:3128"
    assert deployment["metadata"]["labels"]["team"] == "platform"
    assert deployment["spec"]["template"]["metadata"]["labels"]["example.com/l"] == "v"


def test_no_service_links_to_clash_with_tidal_settings(render: Render) -> None:
    """Service links are off: a Service named tidal would inject TIDAL_PORT=tcp://..."""
    assert one(render(), "Service")["metadata"]["name"] == "tidal"
    pod = one(render(), "Deployment")["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False


def test_single_replica_without_leader_election(render: Render) -> None:
    """replicaCount 1 with leader election off renders one pod told not to elect."""
    deployment = one(render(VARIANTS["single-replica"]), "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert env_of(deployment)["TIDAL_LEADER_ELECTION__ENABLED"] == "false"


def test_several_replicas_without_leader_election_are_refused(render: Render) -> None:
    """Two replicas without leader election would both act: the chart refuses with a clear error."""
    with pytest.raises(helm_python.HelmError, match=r"needs leaderElection\.enabled=true"):
        render({"replicaCount": 2, "leaderElection": {"enabled": False}})


@pytest.mark.parametrize(
    "timings",
    [
        {"renewDeadlineSeconds": 15, "leaseDurationSeconds": 15},
        {"renewDeadlineSeconds": 20},
        {"retryPeriodSeconds": 10},
    ],
)
def test_inconsistent_lease_timings_are_refused(render: Render, timings: dict[str, Any]) -> None:
    """renewDeadline >= leaseDuration (or retryPeriod >= renewDeadline) fails the render."""
    with pytest.raises(
        helm_python.HelmError,
        match=r"retryPeriodSeconds < renewDeadlineSeconds < leaseDurationSeconds",
    ):
        render({"leaderElection": timings})


def test_missing_kubeconfig_secret_is_a_clear_error() -> None:
    """Without karmada.kubeconfigSecret.name the render fails naming the key and the fix."""
    with (
        helm_python.Chart.load(CHART) as chart,
        pytest.raises(helm_python.HelmError, match=r"karmada\.kubeconfigSecret\.name is required"),
    ):
        chart.render(values={}, name="tidal", namespace="tidal-system")


def test_existing_configmap_is_mounted_and_none_rendered(render: Render) -> None:
    """schedules.existingConfigMap is mounted (with its items) and no ConfigMap is rendered."""
    objects = render(VARIANTS["existing-configmap"])
    assert not [o for o in objects if o["kind"] == "ConfigMap"]
    volume = next(
        v
        for v in one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "schedules"
    )
    assert volume["configMap"] == {
        "name": "team-schedules",
        "items": [{"key": "policies__day.yaml", "path": "policies/day.yaml"}],
    }


def test_chart_schedule_files_keep_their_tree(render: Render, chart_copy: Path) -> None:
    """Files under the chart's schedules/ land in the ConfigMap and come back at their paths."""
    schedule = "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\nmetadata: {name: team-a}\n"
    manifest = "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\n"
    (chart_copy / "schedules" / "team-a.yaml").write_text(schedule)
    (chart_copy / "schedules" / "policies").mkdir()
    (chart_copy / "schedules" / "policies" / "team-a-day.yml").write_text(manifest)
    objects = render(chart_dir=chart_copy)
    configmap = one(objects, "ConfigMap")
    assert configmap["data"] == {"team-a.yaml": schedule, "policies__team-a-day.yml": manifest}
    volume = next(
        v
        for v in one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "schedules"
    )
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    assert volume["configMap"]["items"] == [
        {"key": "policies__team-a-day.yml", "path": "policies/team-a-day.yml"},
        {"key": "team-a.yaml", "path": "team-a.yaml"},
    ]


def test_schedules_from_values(render: Render) -> None:
    """schedules.files accepts text or a mapping per path; a mapping is written as YAML."""
    configmap = one(render(VARIANTS["values-schedules"]), "ConfigMap")
    assert configmap["data"]["team-a.yaml"] == "kind: TidalSchedule\n"
    assert yaml.safe_load(configmap["data"]["policies__a.yaml"]) == {"kind": "X"}


def test_unusable_schedule_path_is_a_clear_error(render: Render) -> None:
    """A schedule path that cannot become a ConfigMap key fails the render naming the file."""
    with pytest.raises(helm_python.HelmError, match=r"team a\.yaml"):
        render({"schedules": {"files": {"team a.yaml": "x: 1\n"}}})


def test_service_monitor_and_prometheus_rule(render: Render) -> None:
    """The ServiceMonitor scrapes the Service's http port; the PrometheusRule carries the rules."""
    rules_file = ROOT / "tidal" / "rules" / "tidal-alerts.yaml"
    needs_file(rules_file)
    objects = render(VARIANTS["monitoring"])
    service = one(objects, "Service")
    monitor = one(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert selector == service["spec"]["selector"]
    port_name = service["spec"]["ports"][0]["name"]
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [port_name]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    rule = one(objects, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    base = VARIANTS["monitoring"]["metrics"]["prometheusRule"]["runbookBaseUrl"]
    assert (
        rule["spec"]["groups"]
        == yaml.safe_load(
            rules_file.read_text().replace("runbook_url: docs/", f"runbook_url: {base}docs/")
        )["groups"]
    )
    for group in rule["spec"]["groups"]:
        assert group["name"] and group["rules"]
        for r in group["rules"]:
            assert set(r) <= {
                "alert",
                "record",
                "expr",
                "for",
                "labels",
                "annotations",
                "keep_firing_for",
            }
            assert r["expr"]


def test_chart_alert_rules_are_the_package_rules_file() -> None:
    """The chart holds the rules file itself (files/tidal-alerts.yaml); the package's
    tidal/rules/tidal-alerts.yaml links to it: one source, no copy."""
    rules_file = CHART / "files" / "tidal-alerts.yaml"
    assert rules_file.is_file() and not rules_file.is_symlink()
    link = ROOT / "tidal" / "rules" / "tidal-alerts.yaml"
    assert link.is_symlink()
    assert link.resolve() == rules_file.resolve()


def test_grafana_dashboard_configmap(render: Render) -> None:
    """dashboard.enabled renders the dashboard JSON in a ConfigMap with the sidecar label."""
    dashboard_file = CHART / "dashboards" / "tidal.json"
    needs_file(dashboard_file)
    objects = render(VARIANTS["dashboard"])
    configmap = one(objects, "ConfigMap", "tidal-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "grafana"
    assert configmap["metadata"]["annotations"]["grafana_folder"] == "Platform"
    assert json.loads(configmap["data"]["tidal.json"]) == json.loads(dashboard_file.read_text())


def test_no_host_cluster_rbac(render: Render) -> None:
    """The chart grants nothing on the host cluster: tidal only talks to the Karmada apiserver."""
    for variant in VARIANTS.values():
        if variant in (VARIANTS["monitoring"], VARIANTS["dashboard"]):
            continue
        kinds = {o["kind"] for o in render(variant)}
        assert not kinds & {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    account = one(render(), "ServiceAccount")
    assert account["automountServiceAccountToken"] is False


def test_app_version_follows_the_package_version() -> None:
    """Chart.yaml appVersion equals the version in pyproject.toml and tidal.__version__."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"] == tidal.__version__


def test_values_are_documented_key_by_key() -> None:
    """Every value in values.yaml has a comment right above it, or sits inside a documented one."""
    lines = (CHART / "values.yaml").read_text().splitlines()

    def indent(line: str) -> int:
        return len(line) - len(line.lstrip())

    def documented(i: int) -> bool:
        above = lines[i - 1] if i > 0 else ""
        return above.strip().startswith("#") and indent(above) == indent(lines[i])

    undocumented = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text or text.startswith(("#", "-")) or ":" not in text:
            continue
        below = lines[i + 1] if i + 1 < len(lines) else ""
        is_section = text.endswith(":") and indent(below) > indent(line)
        if is_section or documented(i):
            continue
        ancestors, level = [], indent(line)
        for j in range(i - 1, -1, -1):
            content = lines[j].strip()
            if content and not content.startswith("#") and indent(lines[j]) < level:
                ancestors.append(j)
                level = indent(lines[j])
        if not any(documented(j) for j in ancestors):
            undocumented.append(f"values.yaml:{i + 1}: {text}")
    assert not undocumented, undocumented


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replicaCuont": 3}, "additional properties 'replicaCuont' not allowed"),
        ({"logFormat": "xml"}, "/logFormat"),
        ({"httpPort": 0}, "/httpPort"),
        ({"leaderElection": {"leaseDurationSeconds": 1e9}}, "/leaderElection/leaseDuration"),
    ],
)
def test_values_schema_refuses_typos_and_bad_values(
    render: Render, values: dict[str, Any], message: str
) -> None:
    """values.schema.json rejects unknown keys and out-of-range values, naming the key."""
    with pytest.raises(helm_python.HelmError, match=re.escape(message)):
        render(values)


def documented_values_generator() -> str:
    """The Python snippet of docs/deploying.md that turns a schedules directory into values."""
    text = (ROOT / "docs" / "deploying.md").read_text()
    match = re.search(r"python3 - > schedules-values\.yaml <<'EOF'\n(.*?)\n\s*EOF", text, re.S)
    assert match, "docs/deploying.md lost its schedules-values.yaml snippet"
    return textwrap.dedent(match.group(1))


def mount_like_kubelet(mount: Path, files: dict[str, str]) -> None:
    """Lay files out as the kubelet's atomic writer does for a ConfigMap volume: the data in a
    hidden timestamped directory, `..data` linking to it, and each top-level entry a symlink
    through `..data` (so updates swap one link)."""
    payload = mount / "..2026_12_02_09_00_00.000000001"
    for path, text in files.items():
        target = payload / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (mount / "..data").symlink_to(payload.name)
    for top in {Path(path).parts[0] for path in files}:
        (mount / top).symlink_to(Path("..data") / top)


def test_example_schedules_survive_the_configmap_round_trip(render: Render, tmp_path: Path) -> None:
    """The repository's schedules, through the documented values snippet, the ConfigMap and a
    kubelet-style volume, load back as the same valid schedules (swap manifests at their paths)."""
    generated = subprocess.run(
        [sys.executable, "-c", documented_values_generator()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    objects = render(yaml.safe_load(generated.stdout))
    configmap = one(objects, "ConfigMap")
    volume = next(
        v
        for v in one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "schedules"
    )
    mounted = tmp_path / "etc-tidal-schedules"
    mount_like_kubelet(
        mounted,
        {item["path"]: configmap["data"][item["key"]] for item in volume["configMap"]["items"]},
    )
    from tidal.loading import load_schedules

    original = load_schedules([ROOT / "schedules"])
    loaded = load_schedules([mounted])
    assert loaded.ok, [str(e) for e in loaded.errors]
    assert [s.schedule for s in loaded.schedules] == [s.schedule for s in original.schedules]


def notes(values: dict[str, Any]) -> str:
    """The rendered NOTES.txt."""
    with helm_python.Chart.load(CHART) as chart:
        rendered = chart.render(
            values={**REQUIRED, **values}, name="tidal", namespace="tidal-system"
        )
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def test_notes_warn_when_no_schedule_is_rendered() -> None:
    """NOTES.txt warns that tidal has nothing to do when no schedule file is rendered."""
    assert "WARNING: no schedule files" in notes({})
    with_files = notes({"schedules": {"files": {"a.yaml": "x: 1\n"}}})
    assert "WARNING" not in with_files
    assert "tidal rbac" in with_files and "/etc/tidal/schedules" in with_files


def test_packaged_chart_carries_the_rules_file_content(tmp_path: Path) -> None:
    """`helm package` stores the linked rules file's content, so a published chart needs no link."""
    import tarfile

    archive = helm_python.package(CHART, destination=tmp_path)
    with tarfile.open(archive) as tar:
        member = tar.getmember("tidal/files/tidal-alerts.yaml")
        assert member.isfile()
        packed = tar.extractfile(member)
        assert packed is not None
        assert packed.read() == (ROOT / "tidal" / "rules" / "tidal-alerts.yaml").read_bytes()
        assert "tidal/values.schema.json" in tar.getnames()


def test_network_policy_admits_only_probes_and_reaches_only_dns_and_the_apiserver(
    render: Render,
) -> None:
    """The default NetworkPolicy selects tidal's pods: ingress to the http port only, egress to
    DNS and the apiserver ports only; peers narrow it when given."""
    objects = render()
    policy = one(objects, "NetworkPolicy")
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert [p["port"] for r in policy["spec"]["ingress"] for p in r["ports"]] == ["http"]
    egress_ports = sorted({p["port"] for r in policy["spec"]["egress"] for p in r["ports"]})
    assert egress_ports == [53, 443, 5443, 6443, 32443]
    peer = {"ipBlock": {"cidr": "10.0.0.10/32"}}
    narrowed = one(
        render(
            {
                "networkPolicy": {
                    "apiserverPorts": [5443],
                    "apiserverPeers": [peer],
                    "metricsFrom": [{"podSelector": {}}],
                }
            }
        ),
        "NetworkPolicy",
    )
    assert narrowed["spec"]["egress"][1] == {
        "ports": [{"port": 5443, "protocol": "TCP"}],
        "to": [peer],
    }
    assert narrowed["spec"]["ingress"][0]["from"] == [{"podSelector": {}}]
    assert not [
        o for o in render({"networkPolicy": {"enabled": False}}) if o["kind"] == "NetworkPolicy"
    ]


def test_runbook_urls_take_the_base_url(render: Render) -> None:
    """metrics.prometheusRule.runbookBaseUrl prefixes every alert's runbook_url."""
    base = "https://git.example.com/tidal/blob/main/"
    rule = one(
        render({"metrics": {"prometheusRule": {"enabled": True, "runbookBaseUrl": base}}}),
        "PrometheusRule",
    )
    urls = [
        r["annotations"]["runbook_url"]
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if "alert" in r
    ]
    assert urls and all(u.startswith(base + "docs/runbooks.md#") for u in urls)
