"""Override policies: applied last when each member's Work is built (FACTS.md, OverridePolicy)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.sim.karmada_harness import TWO, Harness, static_weights
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Invalid
from tidal_sim.validation import SchemaValidator

Obj = dict[str, Any]
DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment"}


def replicas_rule(replicas: int, target: Obj | None) -> Obj:
    """One override rule replacing /spec/replicas for the target clusters (None: all)."""
    rule: Obj = {
        "overriders": {
            "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": replicas}]
        }
    }
    if target is not None:
        rule["targetCluster"] = target
    return rule


def op(
    h: Harness,
    name: str,
    rules: list[Obj],
    *,
    selectors: list[Obj] | None = None,
    namespace: str = "team",
) -> Obj:
    body: Obj = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"overrideRules": rules},
    }
    if selectors is not None:
        body["spec"]["resourceSelectors"] = selectors
    return h.store.create(h.t("OverridePolicy"), body)


def cop(h: Harness, name: str, rules: list[Obj], *, selectors: list[Obj] | None = None) -> Obj:
    body: Obj = {"metadata": {"name": name}, "spec": {"overrideRules": rules}}
    if selectors is not None:
        body["spec"]["resourceSelectors"] = selectors
    return h.store.create(h.t("ClusterOverridePolicy"), body)


def eighty_twenty(labels: dict[str, dict[str, str]] | None = None) -> Harness:
    """web (10 replicas) placed 8 in a, 2 in b by static weights 4:1, all ready."""
    h = Harness()
    h.cluster("a", labels=(labels or {}).get("a"))
    h.cluster("b", labels=(labels or {}).get("b"))
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(a=4, b=1)})
    h.deployment("web", 10)
    h.settle()
    h.advance(2.0)
    assert h.clusters_of("web") == {"a": 8, "b": 2}
    return h


def work(h: Harness, cluster: str, name: str = "web", namespace: str = "team") -> Obj:
    """The Work of a template in a cluster's execution namespace, found by its binding."""
    items, _ = h.store.list(h.t("Work"), f"karmada-es-{cluster}")
    for item in items:
        manifest = item["spec"]["workload"]["manifests"][0]
        meta = manifest["metadata"]
        if meta["name"] == name and meta.get("namespace", "") == namespace:
            return item
    raise AssertionError(f"no Work of {namespace}/{name} in {cluster}")


def member_replicas(h: Harness, cluster: str, name: str = "web") -> int:
    return int(work(h, cluster, name)["spec"]["workload"]["manifests"][0]["spec"]["replicas"])


def desired_in(h: Harness, name: str, cluster: str) -> int:
    return h.mgr.timeline.current().get((f"team/Deployment/{name}", cluster), (0, 0))[0]


def test_surge_raises_one_member_and_delete_brings_it_back() -> None:
    """80/20 of 10; replace /spec/replicas=10 for b: b runs 10, a keeps 8; deleted: b back to 2."""
    h = eighty_twenty()
    op(
        h,
        "surge",
        [replicas_rule(10, {"clusterNames": ["b"]})],
        selectors=[{**DEPLOY, "name": "web"}],
    )
    h.settle()
    assert h.clusters_of("web") == {"a": 8, "b": 2}  # the division is untouched
    assert (member_replicas(h, "a"), member_replicas(h, "b")) == (8, 10)
    assert (desired_in(h, "web", "a"), desired_in(h, "web", "b")) == (8, 10)
    h.advance(2.0)
    assert h.ready_in("web", "b") == 10 and h.ready_in("web", "a") == 8
    h.store.delete(h.t("OverridePolicy"), "team", "surge")
    h.settle()
    assert member_replicas(h, "b") == 2 and desired_in(h, "web", "b") == 2
    assert h.ready_in("web", "b") == 2 and h.ready_in("web", "a") == 8


def test_a_deleted_overrides_annotation_stays_on_the_work() -> None:
    """Work annotations are merged, never pruned (ctrlutil.CreateOrUpdateWork): after the
    override is deleted its applied-overrides entry is still there, stale, beside 2 replicas."""
    h = eighty_twenty()
    op(h, "surge", [replicas_rule(10, {"clusterNames": ["b"]})])
    h.settle()
    h.store.delete(h.t("OverridePolicy"), "team", "surge")
    h.settle()
    stale = json.loads(
        work(h, "b")["metadata"]["annotations"]["policy.karmada.io/applied-overrides"]
    )
    assert [a["policyName"] for a in stale] == ["surge"] and member_replicas(h, "b") == 2


def test_ready_replicas_reaching_the_binding_count_the_overridden_member() -> None:
    """aggregatedStatus and the template's status report b's 10 ready, not its assigned 2."""
    h = eighty_twenty()
    op(h, "surge", [replicas_rule(10, {"clusterNames": ["b"]})])
    h.settle()
    h.advance(2.0)
    items = {i["clusterName"]: i for i in h.binding("web")["status"]["aggregatedStatus"]}
    assert items["b"]["status"]["readyReplicas"] == 10 and items["b"]["health"] == "Healthy"
    assert items["a"]["status"]["readyReplicas"] == 8
    assert h.get("Deployment", "web", "team")["status"]["readyReplicas"] == 18


def test_changing_an_override_resyncs_the_selected_bindings_only() -> None:
    """Editing the policy's value moves the member; a template it does not select is untouched."""
    h = eighty_twenty()
    h.deployment("other", 5)
    h.settle()
    before = member_replicas(h, "b", "other")
    op(
        h,
        "surge",
        [replicas_rule(6, {"clusterNames": ["b"]})],
        selectors=[{**DEPLOY, "name": "web"}],
    )
    h.settle()
    assert member_replicas(h, "b") == 6

    def raise_to_nine(obj: Obj) -> None:
        obj["spec"]["overrideRules"] = [replicas_rule(9, {"clusterNames": ["b"]})]

    h.patch("OverridePolicy", "surge", raise_to_nine, "team")
    h.settle()
    assert member_replicas(h, "b") == 9 and member_replicas(h, "a") == 8
    assert member_replicas(h, "b", "other") == before


def test_changing_selectors_resyncs_the_template_it_no_longer_selects() -> None:
    """A policy narrowed away from web re-syncs web too (old and new selectors count)."""
    h = eighty_twenty()
    h.deployment("other", 5)
    op(
        h,
        "surge",
        [replicas_rule(7, {"clusterNames": ["b"]})],
        selectors=[{**DEPLOY, "name": "web"}],
    )
    h.settle()
    assert member_replicas(h, "b") == 7

    def retarget(obj: Obj) -> None:
        obj["spec"]["resourceSelectors"] = [{**DEPLOY, "name": "other", "namespace": "team"}]

    h.patch("OverridePolicy", "surge", retarget, "team")
    h.settle()
    assert member_replicas(h, "b") == 2
    assert member_replicas(h, "b", "other") == 7


def test_exclude_leaves_that_cluster_alone() -> None:
    """targetCluster.exclude [b] with no names: every cluster but b is overridden."""
    h = eighty_twenty()
    op(h, "all-but-b", [replicas_rule(3, {"exclude": ["b"]})])
    h.settle()
    assert (member_replicas(h, "a"), member_replicas(h, "b")) == (3, 2)


def test_label_selector_target_cluster() -> None:
    """targetCluster.labelSelector picks clusters by their labels."""
    h = eighty_twenty({"a": {"zone": "east"}, "b": {"zone": "west"}})
    op(h, "west", [replicas_rule(4, {"labelSelector": {"matchLabels": {"zone": "west"}}})])
    h.settle()
    assert (member_replicas(h, "a"), member_replicas(h, "b")) == (8, 4)


def test_no_target_cluster_means_every_cluster() -> None:
    """A rule without targetCluster (or an empty one) applies to all clusters."""
    h = eighty_twenty()
    op(h, "everywhere", [replicas_rule(1, None)])
    h.settle()
    assert (member_replicas(h, "a"), member_replicas(h, "b")) == (1, 1)
    h.store.delete(h.t("OverridePolicy"), "team", "everywhere")
    op(h, "empty-target", [replicas_rule(2, {})])
    h.settle()
    assert (member_replicas(h, "a"), member_replicas(h, "b")) == (2, 2)


def test_cluster_policies_first_then_namespaced_then_by_specificity_and_name() -> None:
    """COP applies before OP; within a kind match-all before name match, ties by name: the
    last applied wins, and both annotations list what was applied."""
    h = eighty_twenty()
    cop(h, "zz-cluster", [replicas_rule(5, {"clusterNames": ["b"]})])
    op(h, "b-second", [replicas_rule(4, {"clusterNames": ["b"]})])
    op(h, "a-first", [replicas_rule(3, {"clusterNames": ["b"]})])
    h.settle()
    assert member_replicas(h, "b") == 4  # COP 5, then OP a-first 3, then OP b-second 4
    op(
        h,
        "0-by-name",
        [replicas_rule(6, {"clusterNames": ["b"]})],
        selectors=[{**DEPLOY, "name": "web"}],
    )
    h.settle()
    assert member_replicas(h, "b") == 6  # a name match outranks match-all, whatever its name
    annotations = work(h, "b")["metadata"]["annotations"]
    applied = json.loads(annotations["policy.karmada.io/applied-overrides"])
    assert [a["policyName"] for a in applied] == ["0-by-name", "a-first", "b-second"]
    assert applied[0]["overriders"]["plaintext"][0]["value"] == 6
    cluster_applied = json.loads(annotations["policy.karmada.io/applied-cluster-overrides"])
    assert [a["policyName"] for a in cluster_applied] == ["zz-cluster"]
    assert "policy.karmada.io/applied-overrides" not in work(h, "a")["metadata"]["annotations"]


def test_op_reaches_only_its_own_namespace() -> None:
    """An OverridePolicy in another namespace does not touch team's templates."""
    h = eighty_twenty()
    h.namespace("elsewhere")
    op(h, "foreign", [replicas_rule(9, None)], namespace="elsewhere")
    h.settle()
    assert member_replicas(h, "b") == 2


def test_add_and_remove_plaintext_and_other_overriders_are_stored_no_ops() -> None:
    """add/remove edit the member copy; an imageOverrider is accepted but changes nothing."""
    h = eighty_twenty()
    op(
        h,
        "edit",
        [
            {
                "targetCluster": {"clusterNames": ["a"]},
                "overriders": {
                    "plaintext": [
                        {"path": "/metadata/labels/surge", "operator": "add", "value": "yes"},
                        {"path": "/metadata/labels/app", "operator": "remove"},
                    ],
                    "imageOverrider": [
                        {"component": "Registry", "operator": "replace", "value": "mirror.example"}
                    ],
                },
            }
        ],
    )
    h.settle()
    manifest = work(h, "a")["spec"]["workload"]["manifests"][0]
    labels = manifest["metadata"]["labels"]
    assert labels["surge"] == "yes" and "app" not in labels
    assert manifest["spec"]["template"] == h.get("Deployment", "web", "team")["spec"]["template"]
    labels_b = work(h, "b")["spec"]["workload"]["manifests"][0]["metadata"]["labels"]
    assert labels_b["app"] == "web" and "surge" not in labels_b


def test_a_patch_that_cannot_apply_keeps_the_members_last_work() -> None:
    """replace of a missing path fails the member copy: b keeps the Work it had."""
    h = eighty_twenty()
    op(h, "surge", [replicas_rule(10, {"clusterNames": ["b"]})])
    h.settle()
    assert member_replicas(h, "b") == 10
    op(
        h,
        "broken",
        [
            {
                "targetCluster": {"clusterNames": ["b"]},
                "overriders": {
                    "plaintext": [{"path": "/spec/nothing/here", "operator": "replace", "value": 1}]
                },
            }
        ],
    )
    h.settle()
    assert member_replicas(h, "b") == 10 and desired_in(h, "web", "b") == 10
    h.store.delete(h.t("OverridePolicy"), "team", "surge")
    h.settle()
    assert member_replicas(h, "b") == 10  # still failing: nothing changes in b
    h.store.delete(h.t("OverridePolicy"), "team", "broken")
    h.settle()
    assert member_replicas(h, "b") == 2


def test_a_failing_override_on_a_new_member_leaves_it_without_work() -> None:
    """A cluster entering the division while an override for it cannot apply gets no Work and
    runs nothing (the binding controller retries; nothing reaches the member)."""
    h = Harness()
    h.cluster("a")
    h.cluster("b")
    op(
        h,
        "broken",
        [
            {
                "targetCluster": {"clusterNames": ["b"]},
                "overriders": {
                    "plaintext": [{"path": "/spec/nothing/here", "operator": "replace", "value": 1}]
                },
            }
        ],
    )
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(a=4, b=1)})
    h.deployment("web", 10)
    h.settle()
    h.advance(2.0)
    assert h.clusters_of("web") == {"a": 8, "b": 2}
    with pytest.raises(AssertionError):
        work(h, "b")
    assert desired_in(h, "web", "b") == 0 and member_replicas(h, "a") == 8


def test_a_cluster_dropped_from_the_division_loses_its_work_despite_an_override() -> None:
    """Overrides apply only to clusters in spec.clusters: 0/100 removes a's Work."""
    h = eighty_twenty()
    op(h, "keep-a", [replicas_rule(8, {"clusterNames": ["a"]})])
    h.settle()

    def all_to_b(obj: Obj) -> None:
        obj["spec"]["placement"]["replicaScheduling"] = static_weights(b=1)
        obj["spec"]["placement"]["clusterAffinity"] = {"clusterNames": ["b"]}

    h.patch("ClusterPropagationPolicy", "p", all_to_b)
    h.settle()
    assert h.clusters_of("web") == {"b": 10}
    with pytest.raises(AssertionError):
        work(h, "a")
    assert desired_in(h, "web", "a") == 0


def test_cluster_scoped_template_with_a_cluster_override_policy() -> None:
    """A cluster-scoped custom kind gets a ClusterOverridePolicy's patch in its Work."""
    h = Harness()
    widget = ResourceType("example.io", "v1", "Widget", "widgets", False, custom=True)
    h.kinds.register(widget)
    h.cluster("a")
    h.cluster("b")
    h.cpp("p", TWO, selectors=[{"apiVersion": "example.io/v1", "kind": "Widget"}])
    h.store.create(
        widget,
        {
            "apiVersion": "example.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"size": 1},
        },
    )
    h.settle()
    cop(
        h,
        "bigger-in-b",
        [
            {
                "targetCluster": {"clusterNames": ["b"]},
                "overriders": {
                    "plaintext": [{"path": "/spec/size", "operator": "replace", "value": 3}]
                },
            }
        ],
        selectors=[{"apiVersion": "example.io/v1", "kind": "Widget", "name": "w1"}],
    )
    h.settle()
    sizes = {
        c: work(h, c, "w1", "")["spec"]["workload"]["manifests"][0]["spec"]["size"]
        for c in ("a", "b")
    }
    assert sizes == {"a": 1, "b": 3}
    annotations = work(h, "b", "w1", "")["metadata"]["annotations"]
    assert annotations["clusterresourcebinding.karmada.io/name"] == "w1-widget"
    assert "bigger-in-b" in annotations["policy.karmada.io/applied-cluster-overrides"]


def test_override_schemas_are_the_upstream_crds() -> None:
    """An operator outside add/remove/replace, or a rule without overriders, is refused 422."""
    validator = SchemaValidator.discover()
    if not validator.upstream:
        pytest.skip("upstream CRDs not found")
    h = Harness()
    bad = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": "bad", "namespace": "team"},
        "spec": {
            "overrideRules": [
                {
                    "overriders": {
                        "plaintext": [{"path": "/spec/replicas", "operator": "set", "value": 1}]
                    }
                }
            ]
        },
    }
    with pytest.raises(Invalid) as caught:
        validator.admit(h.t("OverridePolicy"), bad, "Strict")
    assert "spec.overrideRules[0].overriders.plaintext[0].operator" in str(caught.value)
    missing = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterOverridePolicy",
        "metadata": {"name": "bad"},
        "spec": {"overrideRules": [{}]},
    }
    with pytest.raises(Invalid) as caught:
        validator.admit(h.t("ClusterOverridePolicy"), missing, "Strict")
    assert "spec.overrideRules[0].overriders" in str(caught.value)


def test_holding_the_source_lets_the_destination_start_before_the_source_shrinks() -> None:
    """0/100 -> 80/20 of 10 with b held at 10: a starts 8 while b keeps 10 ready; released, b
    drops to its assigned 2 (the destination had no Work before, so only the source can be
    held)."""
    h = Harness()
    h.cluster("a")
    h.cluster("b")
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(b=1)})
    h.deployment("web", 10)
    h.settle()
    h.advance(2.0)
    assert h.clusters_of("web") == {"b": 10}
    op(h, "hold-b", [replicas_rule(10, {"clusterNames": ["b"]})])

    def day(obj: Obj) -> None:
        obj["spec"]["placement"]["replicaScheduling"] = static_weights(a=4, b=1)

    h.patch("ClusterPropagationPolicy", "p", day)
    h.settle()
    assert h.clusters_of("web") == {"a": 8, "b": 2}
    assert (desired_in(h, "web", "a"), desired_in(h, "web", "b")) == (8, 10)
    assert h.ready_in("web", "b") == 10 and h.ready_in("web", "a") == 0
    h.advance(2.0)
    assert h.ready_in("web", "a") == 8 and h.ready_in("web", "b") == 10
    h.store.delete(h.t("OverridePolicy"), "team", "hold-b")
    h.settle()
    assert h.ready_in("web", "b") == 2 and h.ready_in("web", "a") == 8


def test_with_empty_workload_propagation_a_cluster_assigned_none_keeps_a_work_to_raise() -> None:
    """karmada-scheduler --enable-empty-workload-propagation: 2 replicas at 4:1 list cluster-b
    with no replicas, its Work runs 0, and an override raising it to 2 starts 2 there."""
    h = Harness(empty_workload_propagation=True)
    h.cluster("a")
    h.cluster("b")
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(a=4, b=1)})
    h.deployment("web", 2)
    h.settle()
    h.advance(2.0)
    assert h.binding("web")["spec"]["clusters"] == [{"name": "a", "replicas": 2}, {"name": "b"}]
    assert member_replicas(h, "b") == 0
    op(h, "surge", [replicas_rule(2, {"clusterNames": ["b"]})])
    h.settle()
    h.advance(2.0)
    assert h.ready_in("web", "b") == 2 and h.ready_in("web", "a") == 2


def test_empty_workload_propagation_setting_must_be_a_boolean() -> None:
    """EmulatorSettings emptyWorkloadPropagation: a non-boolean is one located error."""
    from tidal_sim.topology import TopologyError, load_topology

    doc = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"emptyWorkloadPropagation": "yes"},
    }
    with pytest.raises(TopologyError, match="emptyWorkloadPropagation must be true or false"):
        load_topology([doc])
    assert load_topology(
        [{**doc, "spec": {"emptyWorkloadPropagation": True}}]
    ).settings.empty_workload_propagation
