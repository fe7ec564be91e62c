"""Injected faults, request accounting and the /sim/v1 admin endpoints, over real HTTP."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client

from tests.sim import kube
from tests.sim.http_helpers import call
from tests.sim.kube import ApiException
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def admin(emu: Emulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return call(emu, method, "/sim/v1/" + path, body)


def test_throttle_fault_answers_429_with_retry_after(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """A throttle fault with count 1 answers one 429 with Retry-After, then lets requests pass."""
    code, fault = admin(
        emulator,
        "POST",
        "faults",
        {
            "type": "throttle",
            "verb": "create",
            "resource": "configmaps",
            "count": 1,
            "retryAfter": 3,
        },
    )
    assert code == 201 and fault["id"]
    core = kube.core(api_client)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", cm("a"))
    assert err.value.status == 429
    assert (err.value.headers or {})["Retry-After"] == "3"
    assert kube.status_of(err.value)["reason"] == "TooManyRequests"
    core.create_namespaced_config_map("default", cm("a"))


def test_error_and_conflict_faults_by_verb_and_resource(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """500 and 409 faults hit only the verb and resource they name."""
    core = kube.core(api_client)
    core.create_namespaced_config_map("default", cm("a"))
    emulator.faults.inject(type="error", verb="get", resource="configmaps")
    emulator.faults.inject(type="conflict", verb="patch", resource="configmaps", name="a")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("a", "default")
    assert err.value.status == 500 and kube.status_of(err.value)["reason"] == "InternalError"
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("a", "default", {"data": {"x": "y"}})
    assert err.value.status == 409
    assert core.list_namespaced_config_map("default").items  # list is not faulted
    assert emulator.faults.clear() == 2
    assert core.read_namespaced_config_map("a", "default").metadata.name == "a"


def test_probability_faults_are_seeded(make_emulator: Any) -> None:
    """With the same seed, the same requests fail: a fault run is repeatable."""

    def outcomes(seed: int) -> list[int]:
        emu = make_emulator(seed=seed)
        emu.faults.inject(type="error", verb="list", resource="configmaps", probability=0.5)
        codes = []
        for _ in range(20):
            try:
                urllib.request.urlopen(emu.url + "/api/v1/namespaces/default/configmaps").close()
                codes.append(200)
            except urllib.error.HTTPError as err:
                codes.append(err.code)
        return codes

    first, again = outcomes(7), outcomes(7)
    assert first == again and 200 in first and 500 in first


def test_latency_fault_delays_requests(emulator: Emulator, api_client: client.ApiClient) -> None:
    """A latency fault holds matching requests for the given seconds."""
    emulator.faults.inject(type="latency", verb="list", resource="configmaps", seconds=0.3, count=1)
    core = kube.core(api_client)
    start = time.perf_counter()
    core.list_namespaced_config_map("default")
    assert time.perf_counter() - start >= 0.3


def test_drop_watch_with_compaction_forces_relist(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """Dropping watches closes open streams; with compaction the resume answers 410."""
    core = kube.core(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    ended = threading.Event()

    def consume() -> None:
        for _ in kube.watcher().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=30
        ):
            pass
        ended.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    deadline = time.time() + 5
    while emulator.server.watches.count() == 0 and time.time() < deadline:
        time.sleep(0.02)
    core.create_namespaced_config_map("default", cm("z"))
    code, _ = admin(
        emulator,
        "POST",
        "faults",
        {"type": "drop-watch", "resource": "configmaps", "compact": True},
    )
    assert code == 201
    assert ended.wait(5)
    with pytest.raises(ApiException) as err:
        list(
            kube.watcher().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
            )
        )
    assert err.value.status == 410


def test_requests_are_counted_by_verb_and_resource(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """/sim/v1/requests counts every API request by verb and resource; reset zeroes it."""
    admin(emulator, "POST", "requests/reset")
    core = kube.core(api_client)
    apps = kube.apps(api_client)
    core.create_namespaced_config_map("default", cm("a"))
    core.list_namespaced_config_map("default")
    core.read_namespaced_config_map("a", "default")
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    with pytest.raises(ApiException):
        apps.read_namespaced_deployment_status("missing", "default")
    code, counts = admin(emulator, "GET", "requests")
    assert code == 200
    assert counts["total"] == 5
    assert counts["by"] == {
        "create configmaps": 1,
        "list configmaps": 1,
        "get configmaps": 1,
        "patch configmaps": 1,
        "get deployments/status": 1,
    }
    assert counts["byCode"] == {"200": 3, "201": 1, "404": 1}
    assert emulator.requests() == counts
    admin(emulator, "POST", "requests/reset")
    assert emulator.requests()["total"] == 0


def test_request_log_records_who_wrote_what(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """The request log keeps verb, resource, namespace, name and the caller's identity in order."""
    emulator.reset_requests()
    kube.core(api_client).create_namespaced_config_map("default", cm("logged"))
    kube.core(api_client).delete_namespaced_config_map("logged", "default")
    code, log = admin(emulator, "GET", "requestlog")
    assert code == 200
    rows = [
        (r["verb"], r["resource"], r["namespace"], r["name"], r["identity"]) for r in log["items"]
    ]
    assert rows == [
        ("create", "configmaps", "default", None, "test"),
        ("delete", "configmaps", "default", "logged", "test"),
    ]
    assert [r.verb for r in emulator.request_log()] == ["create", "delete"]


def test_bad_fault_spec_is_400(emulator: Emulator) -> None:
    """A fault with an unknown type is refused with a message naming the field."""
    code, body = admin(emulator, "POST", "faults", {"type": "meteor"})
    assert code == 400 and "meteor" in body["message"]


def test_timeline_endpoint_serves_json_list(emulator: Emulator) -> None:
    """/sim/v1/timeline answers a JSON list (the controllers' samples)."""
    code, body = admin(emulator, "GET", "timeline")
    assert code == 200 and isinstance(body, list)


def test_fault_counts_and_matching_rules() -> None:
    """A fault fires at most `count` times and only for its verb, resource, namespace and name."""
    from tidal_sim.faults import Fault, FaultError, Faults

    faults = Faults(seed=1)
    fault = faults.inject(
        type="error", verb="patch,update", resource="resourcebindings", namespace="ai-app", count=2
    )
    assert faults.fire("get", "resourcebindings", "ai-app", "x") == []
    assert faults.fire("patch", "resourcebindings/status", "ai-app", "x") == []
    assert faults.fire("patch", "resourcebindings", "other", "x") == []
    assert faults.fire("update", "resourcebindings", "ai-app", "x") == [fault]
    assert faults.fire("patch", "resourcebindings", "ai-app", "y") == [fault]
    assert faults.fire("patch", "resourcebindings", "ai-app", "z") == []
    assert Fault(type="drop-watch").count == 0
    with pytest.raises(FaultError):
        Fault.from_json({"type": "error", "probability": 2})
    with pytest.raises(FaultError):
        Fault.from_json({"type": "error", "colour": "red"})


def test_drop_watch_count_cuts_later_watches(emulator: Emulator) -> None:
    """A drop-watch fault with a count cuts that many later watch requests after `seconds`."""
    emulator.faults.inject(type="drop-watch", resource="configmaps", count=1, seconds=0.1)
    url = emulator.url + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=5"
    start = time.perf_counter()
    urllib.request.urlopen(url).read()
    assert time.perf_counter() - start < 2.0


def test_delete_collection_by_label(api_client: client.ApiClient) -> None:
    """deletecollection removes exactly the objects its labelSelector matches."""
    core = kube.core(api_client)
    for name, team in [("a", "1"), ("b", "1"), ("c", "2")]:
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": name, "labels": {"team": team}}}
        )
    core.delete_collection_namespaced_config_map("default", label_selector="team=1")
    assert [i.metadata.name for i in core.list_namespaced_config_map("default").items] == ["c"]


def test_timeline_filters(make_emulator: Any) -> None:
    """/sim/v1/timeline?workload=...&since=... narrows the samples."""
    from tidal_sim.emulator import DEFAULT_TOPOLOGY

    emu = make_emulator(DEFAULT_TOPOLOGY)
    workload = "ai-app/Deployment/llm-1005-03"
    deadline = time.time() + 5  # its first sample, not just anyone's (they come in batches)
    while not [s for s in emu.timeline() if s["workload"] == workload] and time.time() < deadline:
        time.sleep(0.05)
    code, one = admin(emu, "GET", f"timeline?workload={workload}")
    assert code == 200 and one
    assert {s["workload"] for s in one} == {workload}
    code, none = admin(emu, "GET", f"timeline?since={emu.clock.now() + 3600}")
    assert code == 200 and none == []
    assert admin(emu, "GET", "timeline?since=soon")[0] == 400


def test_stall_watch_holds_events_until_removed(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """A stall-watch fault keeps a watch open but silent (no event, no bookmark); once it is
    removed, the held events come."""
    import json

    core = kube.core(api_client)
    fault = emulator.faults.inject(type="stall-watch", resource="configmaps")
    url = (
        emulator.url + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=5"
        "&allowWatchBookmarks=true&resourceVersion="
        + core.list_namespaced_config_map("default").metadata.resource_version
    )
    lines: list[dict[str, Any]] = []

    def read() -> None:
        with urllib.request.urlopen(url) as stream:
            for raw in stream:
                lines.append(json.loads(raw))
                if lines[-1]["type"] == "ADDED":
                    return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.3)
    core.create_namespaced_config_map("default", cm("held"))
    time.sleep(1.5)  # longer than the bookmark interval
    assert lines == []
    emulator.faults.clear(fault.id)
    reader.join(5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines][-1] == ("ADDED", "held")
