"""The emulator's API server over real HTTP with the official kubernetes client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client

from tests.sim import kube
from tests.sim.http_helpers import raw
from tests.sim.kube import ApiException
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e

CPP_GROUP, CPP_VERSION, CPP_PLURAL = "policy.karmada.io", "v1alpha1", "clusterpropagationpolicies"


def cpp(
    name: str, weights: dict[str, int] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    placement: dict[str, Any] = {
        "clusterAffinity": {"clusterNames": sorted(weights or {"cluster-a": 1})}
    }
    if weights:
        placement["replicaScheduling"] = {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [c]}, "weight": w}
                    for c, w in weights.items()
                ]
            },
        }
    return {
        "apiVersion": f"{CPP_GROUP}/{CPP_VERSION}",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": placement,
        },
    }


def configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": {"k": "v"},
    }


def deployment(
    name: str, replicas: int, labels: dict[str, str], containers: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}},
        },
    }


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body or "{}")
    return body


def test_discovery_lists_karmada_groups_and_resources(api_client: client.ApiClient) -> None:
    """/apis names the Karmada groups and /apis/G/V lists resources with short names and verbs."""
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {
        "policy.karmada.io",
        "work.karmada.io",
        "apps.karmada.io",
        "cluster.karmada.io",
        "apps",
        "coordination.k8s.io",
    } <= groups
    resources = kube.custom(api_client).get_api_resources(CPP_GROUP, CPP_VERSION)
    by_name = {r.name: r for r in resources.resources}
    assert by_name["clusterpropagationpolicies"].short_names == ["cpp"]
    assert by_name["clusterpropagationpolicies"].namespaced is False
    assert "watch" in by_name["propagationpolicies"].verbs
    version = client.VersionApi(api_client).get_code()
    assert version.major == "1"


def test_crud_roundtrip_custom_object(api_client: client.ApiClient) -> None:
    """Create, get, update and delete of a CPP keep uid, bump resourceVersion and generation."""
    api = kube.custom(api_client)
    created = api.create_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, cpp("p1"))
    meta = created["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["creationTimestamp"]
    assert created["spec"]["priority"] == 0  # CRD schema default applied
    got = api.get_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p1")
    got["spec"]["priority"] = 7
    updated = api.replace_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p1", got)
    assert updated["metadata"]["generation"] == 2
    assert int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert updated["metadata"]["uid"] == meta["uid"]
    labelled = api.patch_cluster_custom_object(
        CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p1", {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled["metadata"]["generation"] == 2  # metadata-only change
    deleted = api.delete_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p1")
    assert deleted["metadata"]["name"] == "p1"
    with pytest.raises(ApiException) as err:
        api.get_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p1")
    assert err.value.status == 404
    body = status_of(err.value)
    assert body["kind"] == "Status" and body["reason"] == "NotFound"


def test_create_twice_is_already_exists(api_client: client.ApiClient) -> None:
    """A second create of the same name answers 409 AlreadyExists."""
    core = kube.core(api_client)
    core.create_namespaced_config_map("default", configmap("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", configmap("dup"))
    assert err.value.status == 409 and status_of(err.value)["reason"] == "AlreadyExists"


def test_stale_resource_version_is_conflict(api_client: client.ApiClient) -> None:
    """An update carrying an old resourceVersion gets 409 Conflict."""
    api = kube.custom(api_client)
    first = api.create_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, cpp("p2"))
    api.patch_cluster_custom_object(
        CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p2", {"spec": {"priority": 3}}
    )
    first["spec"]["priority"] = 9
    with pytest.raises(ApiException) as err:
        api.replace_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p2", first)
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    stale_patch = {
        "metadata": {"resourceVersion": first["metadata"]["resourceVersion"]},
        "spec": {"priority": 4},
    }
    with pytest.raises(ApiException) as err:
        api.patch_cluster_custom_object(CPP_GROUP, CPP_VERSION, CPP_PLURAL, "p2", stale_patch)
    assert err.value.status == 409


def test_strategic_merge_on_custom_kind_is_415(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """Strategic-merge patch on a CPP is refused 415 UnsupportedMediaType, like a CRD."""
    kube.custom(api_client).create_cluster_custom_object(
        CPP_GROUP, CPP_VERSION, CPP_PLURAL, cpp("p3")
    )
    path = f"/apis/{CPP_GROUP}/{CPP_VERSION}/{CPP_PLURAL}/p3"
    patch = {"spec": {"priority": 1}}
    code, body, _ = raw(emulator, "PATCH", path, patch, "application/strategic-merge-patch+json")
    assert code == 415
    assert body["kind"] == "Status" and body["reason"] == "UnsupportedMediaType"
    code, body, _ = raw(emulator, "PATCH", path, patch, "application/merge-patch+json")
    assert code == 200 and body["spec"]["priority"] == 1


def test_patch_kinds_on_deployment(emulator: Emulator, api_client: client.ApiClient) -> None:
    """Deployments take strategic merge (containers merged by name), merge and JSON patches."""
    apps = kube.apps(api_client)
    containers = [{"name": "a", "image": "img:1"}, {"name": "b", "image": "img:1"}]
    apps.create_namespaced_deployment("default", deployment("web", 2, {"app": "web"}, containers))
    patched = apps.patch_namespaced_deployment(  # the client sends strategic merge for dicts
        "web",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "img:2"}]}}}},
    )
    images = {c.name: c.image for c in patched.spec.template.spec.containers}
    assert images == {"a": "img:1", "b": "img:2"}
    assert patched.metadata.generation == 2
    jp = apps.patch_namespaced_deployment(
        "web", "default", [{"op": "replace", "path": "/spec/replicas", "value": 5}]
    )
    assert jp.spec.replicas == 5
    code, scaled, _ = raw(
        emulator,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web",
        {"spec": {"replicas": 1}},
        "application/merge-patch+json",
    )
    assert code == 200 and scaled["spec"]["replicas"] == 1


def test_status_subresource_is_separate(emulator: Emulator, api_client: client.ApiClient) -> None:
    """Writes to /status change only status; main-resource writes keep the stored status."""
    apps = kube.apps(api_client)
    dep = deployment("s", 1, {"a": "b"}, [{"name": "c", "image": "i"}])
    dep["status"] = {"readyReplicas": 9}
    created = apps.create_namespaced_deployment("default", dep)
    assert created.status is None or created.status.ready_replicas is None  # dropped on create
    after = apps.patch_namespaced_deployment_status(
        "s", "default", {"status": {"readyReplicas": 1}, "spec": {"replicas": 4}}
    )
    assert after.status.ready_replicas == 1 and after.spec.replicas == 1
    assert after.metadata.generation == 1
    spec_write = apps.patch_namespaced_deployment(
        "s", "default", {"spec": {"replicas": 3}, "status": {"readyReplicas": 0}}
    )
    assert spec_write.status.ready_replicas == 1 and spec_write.spec.replicas == 3
    read = apps.read_namespaced_deployment_status("s", "default")
    assert read.status.ready_replicas == 1


def test_label_and_field_selectors(api_client: client.ApiClient) -> None:
    """labelSelector takes set-based expressions; fieldSelector takes metadata.name/namespace."""
    core = kube.core(api_client)
    for name, labels in [
        ("a", {"team": "1", "tier": "x"}),
        ("b", {"team": "2"}),
        ("c", {"tier": "y"}),
    ]:
        core.create_namespaced_config_map("default", configmap(name, labels))

    def names(**kw: Any) -> list[str]:
        return [i.metadata.name for i in core.list_namespaced_config_map("default", **kw).items]

    assert names(label_selector="team in (1,2)") == ["a", "b"]
    assert names(label_selector="team notin (1),tier") == ["c"]
    assert names(label_selector="!team") == ["c"]
    assert names(label_selector="team=1,tier!=y") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b,metadata.namespace=default") == ["a", "c"]
    everywhere = core.list_config_map_for_all_namespaces(
        field_selector="metadata.namespace=default"
    )
    assert len(everywhere.items) == 3
    with pytest.raises(ApiException) as err:
        names(label_selector="team in (1")
    assert err.value.status == 400


def test_paging_with_continue(api_client: client.ApiClient) -> None:
    """limit/continue walks every object exactly once and reports the list resourceVersion."""
    core = kube.core(api_client)
    for i in range(7):
        core.create_namespaced_config_map("default", configmap(f"cm-{i}"))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map("default", limit=3, _continue=token)
        pages += 1
        seen += [i.metadata.name for i in page.items]
        assert page.metadata.resource_version
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(seen)
    assert seen == [f"cm-{i}" for i in range(7)] and pages == 3


def test_continue_token_from_before_compaction_is_410(
    emulator: Emulator, api_client: client.ApiClient
) -> None:
    """A continue token issued before the history was compacted answers 410 Expired."""
    core = kube.core(api_client)
    for i in range(3):
        core.create_namespaced_config_map("default", configmap(f"p-{i}"))
    first = core.list_namespaced_config_map("default", limit=1)
    core.create_namespaced_config_map("default", configmap("later"))
    emulator.store.compact()
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map("default", limit=1, _continue=first.metadata._continue)
    assert err.value.status == 410 and status_of(err.value)["reason"] == "Expired"


def test_namespaced_create_needs_namespace(api_client: client.ApiClient) -> None:
    """Creating in a namespace that does not exist is 404 NotFound."""
    with pytest.raises(ApiException) as err:
        kube.core(api_client).create_namespaced_config_map("nope", configmap("x"))
    assert err.value.status == 404


def test_leases_and_update_conflicts(api_client: client.ApiClient) -> None:
    """Leases work with CoordinationV1Api and replace with a stale version conflicts."""
    coord = kube.coordination(api_client)
    lease = coord.create_namespaced_lease(
        "default",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
        },
    )
    lease.spec.holder_identity = "b"
    coord.replace_namespaced_lease("l", "default", lease)
    lease.spec.holder_identity = "c"
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease("l", "default", lease)
    assert err.value.status == 409


def test_delete_precondition_and_namespace_cascade(api_client: client.ApiClient) -> None:
    """Delete honours a resourceVersion precondition; deleting a namespace deletes its objects."""
    core = kube.core(api_client)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}})
    cm = core.create_namespaced_config_map("tmp", configmap("x"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map(
            "x",
            "tmp",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1")),
        )
    assert err.value.status == 409
    assert cm.metadata.resource_version
    core.delete_namespace("tmp")
    assert (
        core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=tmp").items == []
    )


def test_table_answer_for_as_table_accept(emulator: Emulator) -> None:
    """`Accept: ...;as=Table` gets a meta.k8s.io Table with a Name column and object metadata."""
    raw(emulator, "POST", "/api/v1/namespaces/default/configmaps", configmap("t"))
    req = urllib.request.Request(
        emulator.url + "/api/v1/namespaces/default/configmaps",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
    )
    with urllib.request.urlopen(req) as resp:
        table = json.loads(resp.read())
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["t", 1]
    assert table["rows"][0]["object"]["metadata"]["name"] == "t"


def test_unknown_path_is_404_status(emulator: Emulator) -> None:
    """An unserved resource answers 404 with a Status body."""
    code, body, _ = raw(emulator, "GET", "/apis/policy.karmada.io/v1alpha1/nothings")
    assert code == 404 and body["kind"] == "Status"


def test_ten_thousand_objects_list_fast(make_emulator: Any) -> None:
    """A list of 10,000 bindings is served in well under two seconds of CPU (this process's:
    the server's thread and the client's; the wall clock would count other processes too)."""
    import time

    emulator = make_emulator(controllers=False)
    config = client.Configuration()
    config.host = emulator.url
    api_client = client.ApiClient(config)
    rb_type = emulator.kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    assert rb_type is not None
    for i in range(10_000):
        emulator.store.create(
            rb_type,
            {
                "metadata": {"name": f"rb-{i:05d}", "namespace": "default"},
                "spec": {
                    "resource": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": f"d-{i}",
                        "namespace": "default",
                    },
                    "replicas": 3,
                    "clusters": [{"name": "cluster-a", "replicas": 3}],
                },
            },
        )
    start = time.process_time()
    data = kube.custom(api_client).list_namespaced_custom_object(
        "work.karmada.io", "v1alpha2", "default", "resourcebindings"
    )
    elapsed = time.process_time() - start
    assert len(data["items"]) == 10_000
    assert elapsed < 2.0, elapsed


def test_keep_alive_requests_are_not_stalled(api_client: client.ApiClient) -> None:
    """200 GETs over one keep-alive connection take well under two seconds (no Nagle stalls)."""
    import time

    core = kube.core(api_client)
    core.create_namespaced_config_map("default", configmap("fast"))
    start = time.perf_counter()
    for _ in range(200):
        core.read_namespaced_config_map("fast", "default")
    assert time.perf_counter() - start < 2.0
