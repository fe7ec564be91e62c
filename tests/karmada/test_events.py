"""Kubernetes Events about a switch, written over HTTP to the emulator; best-effort always."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from tests.e2e import alert_scenario
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.karmada.events import EventRecorder, ObjectRef, configmap_ref, policy_ref

FIXED = datetime(2026, 12, 2, 23, 0, 5, tzinfo=UTC)


def _client(emulator: Any, tmp_path: Path) -> KarmadaClient:
    return KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))


def _list_events(client: KarmadaClient, namespace: str) -> list[dict[str, Any]]:
    events = client.resource_for("v1", "Event")
    return list(client.request("list", events, "GET", events.path(namespace)).get("items", []))


def test_events_land_on_the_state_configmap_and_on_a_cluster_policy(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Events name the object (with its uid, for kubectl describe), reason, type and message."""
    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    client = _client(emulator, tmp_path)
    configmaps = client.resource_for("v1", "ConfigMap")
    client.request(
        "create",
        configmaps,
        "POST",
        configmaps.path("tidal-system"),
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "tidal-run-team-42", "namespace": "tidal-system"},
        },
    )
    recorder = EventRecorder(client, instance="tidal-0", now=lambda: FIXED)

    assert recorder.record(
        configmap_ref("tidal-run-team-42", "tidal-system"),
        "WaveFailed",
        "Wave 1 failed (timeout)",
        "Warning",
    )
    assert recorder.record(
        policy_ref("ClusterPropagationPolicy", "team-42"),
        "SwitchStarted",
        "Policy changed (patch) for window night",
    )

    (state_event,) = _list_events(client, "tidal-system")
    assert state_event["reason"] == "WaveFailed"
    assert state_event["type"] == "Warning"
    assert state_event["message"] == "Wave 1 failed (timeout)"
    assert state_event["involvedObject"]["kind"] == "ConfigMap"
    assert state_event["involvedObject"]["name"] == "tidal-run-team-42"
    assert state_event["involvedObject"]["uid"]
    assert state_event["source"] == {"component": "tidal", "host": "tidal-0"}
    assert state_event["firstTimestamp"] == "2026-12-02T23:00:05Z"
    (policy_event,) = _list_events(client, "default")
    assert policy_event["involvedObject"]["kind"] == "ClusterPropagationPolicy"
    assert policy_event["involvedObject"]["uid"]
    assert "namespace" not in policy_event["involvedObject"]
    assert policy_event["type"] == "Normal"


def test_an_event_about_a_missing_object_is_still_written(
    make_emulator: Any, tmp_path: Path
) -> None:
    """No uid to be found (object not created yet): the Event is written without one."""
    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    client = _client(emulator, tmp_path)
    recorder = EventRecorder(client)
    assert recorder.record(
        configmap_ref("tidal-run-nobody", "tidal-system"), "SwitchStarted", "x" * 5000
    )
    (event,) = _list_events(client, "tidal-system")
    assert "uid" not in event["involvedObject"]
    assert len(event["message"]) == 1024


def test_a_failing_apiserver_never_fails_the_caller(make_emulator: Any, tmp_path: Path) -> None:
    """500s on Event creation: one attempt, False returned, kube_event_failed logged, no raise."""
    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    client = KarmadaClient.from_kubeconfig(
        emulator.write_kubeconfig(tmp_path / "kubeconfig"),
        retry=RetryPolicy(attempts=6, base_delay=0.5),
    )
    fault = emulator.faults.inject(type="error", verb="create", resource="events")
    recorder = EventRecorder(client)
    started = time.monotonic()
    with capture_logs() as logs:
        ok = recorder.record(policy_ref("PropagationPolicy", "pp", "apps"), "WaveFailed", "m")
    assert ok is False
    assert time.monotonic() - started < 0.5  # no retries with back-off
    assert fault.fired == 1
    assert [entry["event"] for entry in logs] == ["kube_event_failed"]


def test_an_unreachable_apiserver_never_fails_the_caller(tmp_path: Path) -> None:
    """Nothing listening at all: record returns False."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
    )
    recorder = EventRecorder(KarmadaClient.from_kubeconfig(kubeconfig), timeout_seconds=1)
    assert recorder.record(ObjectRef("v1", "ConfigMap", "x", "ns"), "SwitchStarted", "m") is False


def test_kubectl_describe_shows_the_event(make_emulator: Any, tmp_path: Path) -> None:
    """`kubectl describe clusterpropagationpolicy` lists the Event (skipped without kubectl)."""
    import shutil
    import subprocess

    import pytest

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed")
    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    recorder = EventRecorder(KarmadaClient.from_kubeconfig(kubeconfig))
    assert recorder.record(
        policy_ref("ClusterPropagationPolicy", "team-42"),
        "WaveFailed",
        "Wave 1 failed (timeout)",
        "Warning",
    )
    described = subprocess.run(
        [
            kubectl,
            "--kubeconfig",
            str(kubeconfig),
            "describe",
            "clusterpropagationpolicy",
            "team-42",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    events = described.split("Events:", 1)[1]
    assert "WaveFailed" in events and "Wave 1 failed (timeout)" in events


def test_a_replica_that_may_not_write_records_nothing(make_emulator: Any, tmp_path: Path) -> None:
    """A fenced (non-leading) replica's recorder skips the write: a single writer, Events too."""
    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    client = _client(emulator, tmp_path)
    recorder = EventRecorder(client, may_write=lambda: False)
    assert not recorder.record(configmap_ref("tidal-run-x", "tidal-system"), "WaveFailed", "x")
    assert _list_events(client, "tidal-system") == []


def test_leadership_lost_during_the_uid_lookup_writes_nothing(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Leadership is asked again right before the POST, after the uid lookup's round trip."""
    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    client = _client(emulator, tmp_path)
    answers = iter([True, False])
    recorder = EventRecorder(client, may_write=lambda: next(answers))
    assert not recorder.record(policy_ref("ClusterPropagationPolicy", "team-42"), "WaveFailed", "x")
    assert _list_events(client, "default") == []
