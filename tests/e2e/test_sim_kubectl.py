"""Real kubectl (subprocess) against the emulator: get, apply, patch, describe, watch, errors."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tidal_sim.emulator import Emulator

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

CPP_YAML = """\
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: team-9-cpp
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      namespace: ai-app
  placement:
    clusterAffinity: {clusterNames: [cluster-a, cluster-b]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster: {clusterNames: [cluster-a]}
            weight: WEIGHT
"""


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


@pytest.fixture
def demo(demo_emulator: Emulator, tmp_path: Path) -> tuple[Emulator, Path]:
    return demo_emulator, demo_emulator.write_kubeconfig(tmp_path / "kubeconfig")


def test_get_by_short_name_and_full_name(demo: tuple[Emulator, Path]) -> None:
    """`kubectl get cpp` and the full plural list the demo topology's policies."""
    _, kc = demo
    short = kubectl(kc, "get", "cpp", "-o", "name").stdout.split()
    full = kubectl(kc, "get", "clusterpropagationpolicies", "-o", "name").stdout.split()
    assert short == full
    assert "clusterpropagationpolicy.policy.karmada.io/team-1005-cpp" in short
    table = kubectl(kc, "get", "clusters").stdout
    assert "cluster-a" in table and "cluster-b" in table


def test_tables_carry_upstream_printer_columns(demo: tuple[Emulator, Path]) -> None:
    """kubectl prints the columns upstream defines (CRD printer columns, built-in printers)."""
    _, kc = demo
    assert kubectl(kc, "get", "cpp").stdout.split("\n")[0].split() == [
        "NAME",
        "CONFLICT-RESOLUTION",
        "PRIORITY",
        "AGE",
    ]
    assert kubectl(kc, "get", "clusters").stdout.split("\n")[0].split() == [
        "NAME",
        "VERSION",
        "MODE",
        "READY",
        "AGE",
    ]
    header = kubectl(kc, "get", "deploy", "-n", "ai-app").stdout.split("\n")[0].split()
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]


def test_label_selector_and_paging(demo: tuple[Emulator, Path]) -> None:
    """`-l` with a set-based selector and `--chunk-size` paging both list the right objects."""
    _, kc = demo
    names = kubectl(
        kc, "get", "deploy", "-n", "ai-app", "-l", "atms-app/teamid in (3007)", "-o", "name"
    ).stdout.split()
    assert names == [f"deployment.apps/asr-3007-{i:02d}" for i in range(5)]
    paged = kubectl(
        kc, "get", "deploy", "-n", "ai-app", "--chunk-size=7", "-o", "name"
    ).stdout.split()
    assert len(paged) == 46


def test_apply_then_merge_patch(demo: tuple[Emulator, Path], tmp_path: Path) -> None:
    """`kubectl apply` creates and re-applies a CPP; `kubectl patch --type merge` changes it."""
    emu, kc = demo
    manifest = tmp_path / "cpp.yaml"
    manifest.write_text(CPP_YAML.replace("WEIGHT", "2"))
    assert "created" in kubectl(kc, "apply", "-f", str(manifest)).stdout
    manifest.write_text(CPP_YAML.replace("WEIGHT", "3"))
    assert "configured" in kubectl(kc, "apply", "-f", str(manifest)).stdout
    kubectl(kc, "patch", "cpp", "team-9-cpp", "--type", "merge", "-p", '{"spec":{"priority":4}}')
    rtype = emu.kinds.by_kind("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")
    assert rtype is not None
    stored = emu.store.get(rtype, None, "team-9-cpp")
    weights = stored["spec"]["placement"]["replicaScheduling"]["weightPreference"][
        "staticWeightList"
    ]
    assert weights[0]["weight"] == 3 and stored["spec"]["priority"] == 4
    assert stored["metadata"]["generation"] == 3


def test_strategic_patch_on_cpp_is_refused(demo: tuple[Emulator, Path]) -> None:
    """kubectl's default strategic-merge patch on a custom kind fails with 415, as upstream."""
    _, kc = demo
    result = kubectl(
        kc, "patch", "cpp", "team-1005-cpp", "-p", '{"spec":{"priority":1}}', check=False
    )
    assert result.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in result.stderr


def test_invalid_weight_is_rejected_with_field_path(
    demo: tuple[Emulator, Path], tmp_path: Path
) -> None:
    """Applying a CPP with weight 0 fails and kubectl shows the schema field path."""
    _, kc = demo
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(CPP_YAML.replace("WEIGHT", "0"))
    result = kubectl(kc, "apply", "-f", str(manifest), check=False)
    assert result.returncode != 0
    assert "staticWeightList[0].weight" in result.stderr


def test_describe_shows_spec(demo: tuple[Emulator, Path]) -> None:
    """`kubectl describe cpp` renders the object."""
    _, kc = demo
    out = kubectl(kc, "describe", "cpp", "team-1005-cpp").stdout
    assert "Name:         team-1005-cpp" in out and "Static Weight List" in out


def test_get_watch_streams_changes(demo: tuple[Emulator, Path]) -> None:
    """`kubectl get rb -A -w` prints bindings as they appear."""
    emu, kc = demo
    proc = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(kc), "get", "rb", "-A", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 10
        while emu.server.watches.count() == 0 and time.time() < deadline:
            time.sleep(0.05)
        rtype = emu.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
        assert rtype is not None
        emu.store.create(
            rtype,
            {
                "metadata": {"name": "watched-deployment", "namespace": "ai-app"},
                "spec": {
                    "resource": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "watched",
                        "namespace": "ai-app",
                    }
                },
            },
        )
        line = ""
        assert proc.stdout is not None
        while "watched-deployment" not in line and time.time() < deadline:
            line = proc.stdout.readline()
        assert line.split()[:2] == ["ai-app", "watched-deployment"]
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_tidal_sim_command_serves_until_sigterm(tmp_path: Path) -> None:
    """`tidal sim` prints its URL, writes a kubeconfig kubectl accepts, and exits 0 on SIGTERM."""
    kc = tmp_path / "kc"
    env: dict[str, Any] = {**os.environ}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidal", "sim", "--kubeconfig-out", str(kc)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("tidal sim serving http://127.0.0.1:")
        out = kubectl(kc, "get", "clusters", "-o", "name").stdout.split()
        assert out == [
            "cluster.cluster.karmada.io/cluster-a",
            "cluster.cluster.karmada.io/cluster-b",
            "cluster.cluster.karmada.io/cluster-c",
        ]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
    assert code == 0


@pytest.mark.parametrize("online", [True, False])
def test_tidal_sim_says_where_its_schemas_come_from(tmp_path: Path, online: bool) -> None:
    """With CRDs (the tests' setting) `tidal sim` names their folder and `kubectl explain`
    reads them; with no source at all (offline, empty cache) it says so in one stderr line
    and kubectl explain has nothing to show."""
    from tests.upstream import CRDS

    if online and CRDS is None:
        pytest.skip("no upstream CRDs reachable here")
    kc = tmp_path / "kc"
    env: dict[str, Any] = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    if not online:
        env.pop("TIDAL_KARMADA_CRDS", None)
        env["GOPROXY"] = "off"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidal", "sim", "--kubeconfig-out", str(kc)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        explained = kubectl(kc, "explain", "clusterpropagationpolicy.spec.placement", check=False)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    errors = proc.stderr.read().splitlines()
    if online:
        assert lines[2].startswith("Karmada CRD schemas: ")
        assert explained.returncode == 0 and "replicaScheduling" in explained.stdout
    else:
        (notice,) = [e for e in errors if e.startswith("tidal sim: ")]
        assert "minimal built-in check" in notice
        assert explained.returncode != 0


def test_scale_json_patch_status_and_delete(demo: tuple[Emulator, Path]) -> None:
    """`kubectl scale`, `patch --type json`, `patch --subresource=status` and `delete` work."""
    emu, kc = demo
    kubectl(kc, "scale", "deploy", "llm-1005-00", "-n", "ai-app", "--replicas=6")
    replicas = kubectl(
        kc, "get", "deploy", "llm-1005-00", "-n", "ai-app", "-o", "jsonpath={.spec.replicas}"
    ).stdout
    assert replicas == "6"
    kubectl(
        kc,
        "patch",
        "cpp",
        "team-1005-cpp",
        "--type",
        "json",
        "-p",
        '[{"op": "replace", "path": "/spec/priority", "value": 2}]',
    )
    kubectl(
        kc,
        "patch",
        "cluster",
        "cluster-b",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        '{"status": {"kubernetesVersion": "v1.32.9"}}',
    )
    version = kubectl(
        kc, "get", "cluster", "cluster-b", "-o", "jsonpath={.status.kubernetesVersion}"
    ).stdout
    assert version == "v1.32.9"
    kubectl(kc, "delete", "cpp", "team-1005-cpp")
    gone = kubectl(kc, "get", "cpp", "team-1005-cpp", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    assert emu.requests()["by"].get("patch deployments/scale") == 1
