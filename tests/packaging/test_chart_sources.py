"""The chart's schedule sources (git-sync, a ConfigMap of nested folders), extra containers and
volumes, the alert rules it carries, and the ports its NetworkPolicy opens."""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests.packaging.test_chart import CHART, VARIANTS, Render, env_of, one
from tidal.loading import load_schedules

RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What breaks the Pod Security Standard `restricted` (baseline included) in a pod spec."""
    out = []
    pod_sc = pod.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            out.append(f"pod {key}")
    for volume in pod.get("volumes") or []:
        if not set(volume) - {"name"} <= RESTRICTED_VOLUMES:
            out.append(f"volume {volume['name']}: {sorted(set(volume) - {'name'})}")
    for c in (pod.get("initContainers") or []) + pod["containers"]:
        sc, name = c.get("securityContext") or {}, c["name"]

        def value(key: str, sc: dict[str, Any] = sc) -> Any:
            return sc.get(key, pod_sc.get(key))

        if sc.get("privileged"):
            out.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation not false")
        if value("runAsNonRoot") is not True:
            out.append(f"{name}: runAsNonRoot not true")
        if value("runAsUser") == 0:
            out.append(f"{name}: runAsUser 0")
        if (value("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: seccompProfile")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {
            "NET_BIND_SERVICE"
        }:
            out.append(f"{name}: capabilities")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            out.append(f"{name}: hostPort")
    return out


@pytest.mark.parametrize("variant", ["default", "git-sync", "git-sync-ssh", "extras"])
def test_every_pod_passes_the_restricted_pod_security_standard(
    render: Render, variant: str
) -> None:
    """Default values, git-sync on (https or ssh credentials) and extra containers: the pod
    passes the restricted Pod Security Standard, every container read-only at its root."""
    pod = one(render(VARIANTS[variant]), "Deployment")["spec"]["template"]["spec"]
    assert restricted_violations(pod) == []
    assert all(c["securityContext"]["readOnlyRootFilesystem"] for c in pod["containers"])


def test_git_sync_pulls_the_repository_the_daemon_reads(render: Render) -> None:
    """git-sync clones repo at ref every period into an emptyDir; tidal reads the link's
    subPath from it read-only; the credentials come from the Secret; no ConfigMap."""
    objects = render(VARIANTS["git-sync"])
    assert not [o for o in objects if o["kind"] == "ConfigMap"]
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    tidal, sync = pod["containers"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in sync["env"]}
    assert (env["GITSYNC_REPO"], env["GITSYNC_REF"], env["GITSYNC_PERIOD"]) == (
        "https://git.example.com/ops/sched",
        "main",
        "30s",
    )
    assert env["GITSYNC_USERNAME"] == {"secretKeyRef": {"name": "git-creds", "key": "username"}}
    assert env["GITSYNC_PASSWORD_FILE"] == "/etc/git-secret/password"
    root = next(m for m in sync["volumeMounts"] if m["mountPath"] == env["GITSYNC_ROOT"])
    mount = next(m for m in tidal["volumeMounts"] if m["name"] == root["name"])
    assert mount["readOnly"] is True
    assert (
        env_of(deployment)["TIDAL_SCHEDULES"] == f"{mount['mountPath']}/{env['GITSYNC_LINK']}/teams"
    )
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[root["name"]]
    assert volumes["git-secret"]["secret"]["secretName"] == "git-creds"
    policy = one(objects, "NetworkPolicy")
    assert {p["port"] for r in policy["spec"]["egress"] for p in r["ports"]} >= {443, 22}


def test_git_sync_ssh_reads_the_key_and_known_hosts(render: Render) -> None:
    """auth.type ssh: the key and known_hosts files of the Secret, host keys checked."""
    pod = one(render(VARIANTS["git-sync-ssh"]), "Deployment")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][1]["env"]}
    assert env["GITSYNC_SSH_KEY_FILE"] == "/etc/git-secret/ssh"
    assert env["GITSYNC_SSH_KNOWN_HOSTS"] == "true"
    assert env["GITSYNC_SSH_KNOWN_HOSTS_FILE"] == "/etc/git-secret/known_hosts"


def test_git_sync_without_a_repository_is_refused(render: Render) -> None:
    """gitSync.enabled without repo fails the render naming the key."""
    with pytest.raises(helm_python.HelmError, match=r"schedules\.gitSync\.repo is required"):
        render({"schedules": {"gitSync": {"enabled": True}}})


def test_extra_containers_and_volumes_join_the_pod(render: Render) -> None:
    """extraContainers, extraVolumes and extraVolumeMounts land in the pod as given."""
    pod = one(render(VARIANTS["extras"]), "Deployment")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["tidal", "shipper"]
    assert {"name": "spool", "emptyDir": {}} in pod["volumes"]
    assert {"name": "spool", "mountPath": "/spool", "readOnly": True} in pod["containers"][0][
        "volumeMounts"
    ]


def test_network_policy_admits_every_port_the_daemon_serves_and_karmadactl_init(
    render: Render,
) -> None:
    """Ingress admits each container port of tidal (by name or number); egress reaches the
    apiserver on 32443, the NodePort `karmadactl init` exposes it on."""
    objects = render()
    policy = one(objects, "NetworkPolicy")
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    admitted = {p["port"] for r in policy["spec"]["ingress"] for p in r["ports"]}
    for port in container["ports"]:
        assert port["name"] in admitted or port["containerPort"] in admitted
    assert 32443 in {p["port"] for r in policy["spec"]["egress"] for p in r["ports"]}


@pytest.mark.parametrize("base", ["", "docs/", "git.example.com/tidal/"])
def test_runbook_urls_must_be_absolute(render: Render, base: str) -> None:
    """The PrometheusRule with a runbookBaseUrl that is not an absolute URL (or none) fails
    the render naming the value and the fix."""
    with pytest.raises(helm_python.HelmError, match=r"runbookBaseUrl(.*absolute URL|.*pattern)"):
        render({"metrics": {"prometheusRule": {"enabled": True, "runbookBaseUrl": base}}})


def test_runbook_base_without_a_trailing_slash_still_makes_whole_urls(render: Render) -> None:
    """https://git.example.com/tidal/blob/main (no /) gives .../main/docs/runbooks.md#..."""
    rule = one(
        render(
            {
                "metrics": {
                    "prometheusRule": {
                        "enabled": True,
                        "runbookBaseUrl": "https://git.example.com/tidal/blob/main",
                    }
                }
            }
        ),
        "PrometheusRule",
    )
    urls = {
        r["annotations"]["runbook_url"]
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    assert urls and all(
        u.startswith("https://git.example.com/tidal/blob/main/docs/runbooks.md#") for u in urls
    )


def test_the_chart_packages_alone_with_its_alert_rules(tmp_path: Path) -> None:
    """The chart directory on its own (as a clean clone's charts/tidal, links kept as links)
    packages with `helm package`, the alert rules inside."""
    alone = tmp_path / "tidal"
    shutil.copytree(CHART, alone, symlinks=True)
    archive = helm_python.package(alone, destination=tmp_path / "out")
    with tarfile.open(archive) as tar:
        packed = tar.extractfile("tidal/files/tidal-alerts.yaml")
        assert packed is not None
        assert yaml.safe_load(packed.read())["groups"]


def test_nested_schedule_folders_survive_an_existing_configmap(
    tmp_path: Path, render: Render
) -> None:
    """A ConfigMap cannot hold policies/day.yaml: mounted without items, its key
    policies__day.yaml is found by the swap's `to: policies/day.yaml`."""
    volume = next(
        v
        for v in one(
            render({"schedules": {"existingConfigMap": {"name": "team-schedules"}}}), "Deployment"
        )["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "schedules"
    )
    assert volume["configMap"] == {"name": "team-schedules"}  # every key a flat file
    repo = Path(__file__).parents[2] / "schedules"
    shutil.copy(repo / "team-2001.yaml", tmp_path)
    for manifest in (repo / "policies").iterdir():
        shutil.copy(manifest, tmp_path / f"policies__{manifest.name}")
    result = load_schedules([tmp_path])
    assert [str(e) for e in result.errors] == []
    assert [s.schedule.name for s in result.schedules] == ["team-2001"]


def test_nothing_in_the_chart_points_outside_it() -> None:
    """No symlink under charts/tidal (a link leaving the chart breaks `helm package` of a clean
    clone's chart directory, and a link inside it is copied as what it points to anyway)."""
    assert [str(p.relative_to(CHART)) for p in CHART.rglob("*") if p.is_symlink()] == []
    for template in (CHART / "templates").iterdir():
        text = template.read_text()
        for path in re.findall(r'\.Files\.Get\s+"([^"]+)"', text):
            assert (CHART / path).resolve().is_relative_to(CHART.resolve()), (template, path)
            assert (CHART / path).is_file(), (template.name, path)


def test_the_packaged_chart_holds_only_files_a_clean_clone_has(tmp_path: Path) -> None:
    """Every file `helm package` puts in the archive is tracked by git, so a clean clone
    packages the same chart."""
    tracked = subprocess.run(
        ["git", "ls-files", "charts/tidal"],
        cwd=CHART.parents[1],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    archive = helm_python.package(CHART, destination=tmp_path)
    with tarfile.open(archive) as tar:
        packed = {f"charts/{m.name}" for m in tar.getmembers() if m.isfile()}
    assert packed - set(tracked) == set()
    assert "charts/tidal/files/tidal-alerts.yaml" in packed
