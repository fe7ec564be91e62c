"""The emulator publishes the upstream CRD schemas as OpenAPI v3, as an apiserver does."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.upstream import needs_upstream_crds
from tidal.karmada.client import KarmadaClient
from tidal.karmada.schemas import published_schemas
from tidal.loading.policies import POLICY_KINDS, PolicySchemas, patch_problems
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e


def _get(emulator: Emulator, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(emulator.url + path, timeout=10) as answer:
        data: dict[str, Any] = json.loads(answer.read())
    return data


@needs_upstream_crds
def test_policy_group_document_carries_each_kind_schema(emulator: Emulator) -> None:
    """The group document lists each policy kind's schema under its reversed-group name, with
    x-kubernetes-group-version-kind and metadata referring to ObjectMeta."""
    root = _get(emulator, "/openapi/v3")
    url = root["paths"]["apis/policy.karmada.io/v1alpha1"]["serverRelativeURL"]
    schemas = _get(emulator, url)["components"]["schemas"]
    cpp = schemas["io.karmada.policy.v1alpha1.ClusterPropagationPolicy"]
    assert cpp["x-kubernetes-group-version-kind"] == [
        {"group": "policy.karmada.io", "version": "v1alpha1", "kind": "ClusterPropagationPolicy"}
    ]
    assert "placement" in cpp["properties"]["spec"]["properties"]
    ref = cpp["properties"]["metadata"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
    assert ref in schemas


@needs_upstream_crds
def test_tidal_reads_the_published_schemas_and_finds_a_typo(
    emulator: Emulator, kubeconfig: Path
) -> None:
    """tidal's access layer reads both policy schemas in one request, and the checker built on
    them names an unknown field of a patch."""
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    try:
        emulator.reset_requests()
        schemas = PolicySchemas.from_published(published_schemas(client, POLICY_KINDS))
        assert len(emulator.request_log()) <= 1
    finally:
        client.close()
    assert schemas is not None
    typo: dict[str, Any] = {"weightPreferences": {}}
    patch = {"spec": {"placement": {"replicaScheduling": typo}}}
    ((path, message),) = patch_problems(patch, "ClusterPropagationPolicy", schemas)
    assert path[-1] == "weightPreferences" and "unknown field" in message


def test_a_server_without_schemas_publishes_none(
    make_emulator: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An emulator with no CRD source publishes no policy schema; tidal gets an empty answer,
    not an error."""
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("GOPROXY", "off")
    bare = make_emulator()
    client = KarmadaClient.from_kubeconfig(bare.write_kubeconfig(tmp_path / "bare"))
    try:
        assert published_schemas(client, POLICY_KINDS) == {}
    finally:
        client.close()


@needs_upstream_crds
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
def test_kubectl_explain_reads_the_policy_schema(emulator: Emulator, kubeconfig: Path) -> None:
    """`kubectl explain clusterpropagationpolicy.spec.placement` works against the emulator."""
    done = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(kubeconfig),
            "explain",
            "clusterpropagationpolicy.spec.placement",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "KIND:       ClusterPropagationPolicy" in done.stdout
    assert "replicaScheduling" in done.stdout
