"""The emulated Karmada detector: claiming, precedence, bindings, Lazy activation, deletion."""

from __future__ import annotations

from typing import Any

from tests.sim.karmada_harness import TWO, Harness, static_weights

CPP_ID = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_ID = "propagationpolicy.karmada.io/permanent-id"
ONLY_A = {"clusterAffinity": {"clusterNames": ["a"]}}
ONLY_B = {"clusterAffinity": {"clusterNames": ["b"]}}


def setup(**kw: Any) -> Harness:
    h = Harness(**kw)
    h.cluster("a")
    h.cluster("b")
    return h


def test_policy_claims_template_and_creates_its_binding() -> None:
    """A CPP labels the template and creates `<name>-<kind>` with resource, replicas, requests."""
    h = setup()
    policy = h.cpp("team", ONLY_A)
    body = {
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                        {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                    ]
                }
            },
        },
    }
    h.store.create(h.t("Deployment"), body)
    h.settle()
    template = h.get("Deployment", "web", "team")
    pid = policy["metadata"]["labels"][CPP_ID]
    assert template["metadata"]["labels"][CPP_ID] == pid
    assert template["metadata"]["annotations"]["clusterpropagationpolicy.karmada.io/name"] == "team"
    binding = h.binding("web")
    spec = binding["spec"]
    assert spec["resource"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "team",
        "name": "web",
        "uid": template["metadata"]["uid"],
        "resourceVersion": spec["resource"]["resourceVersion"],
    }
    assert spec["replicas"] == 2
    assert spec["replicaRequirements"] == {"resourceRequest": {"cpu": "350m", "memory": "128Mi"}}
    assert spec["placement"] == ONLY_A
    assert binding["metadata"]["labels"][CPP_ID] == pid
    assert h.clusters_of("web") == {"a": 2}


def test_propagation_policy_outranks_cluster_policy() -> None:
    """When a PP and a CPP both match, the PP claims the template."""
    h = setup()
    h.cpp("cluster-wide", ONLY_A, priority=100)
    h.pp("local", ONLY_B)
    h.deployment("web", 1)
    h.settle()
    labels = h.get("Deployment", "web", "team")["metadata"]["labels"]
    assert PP_ID in labels and CPP_ID not in labels
    assert h.clusters_of("web") == {"b": 1}


def test_higher_priority_then_more_specific_selector_then_name_wins() -> None:
    """Among CPPs: explicit priority first, then name selector over label selector, then name."""
    h = setup()
    by_name = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]
    h.cpp("z-by-name", ONLY_B, selectors=by_name)
    h.cpp("a-all", ONLY_A)
    h.deployment("web", 1)
    h.deployment("api", 1)
    h.settle()
    assert h.clusters_of("web") == {"b": 1}  # same priority: the name selector is more specific
    assert h.clusters_of("api") == {"a": 1}
    h2 = setup()
    h2.cpp("low", ONLY_A, selectors=by_name)
    h2.cpp("high", ONLY_B, priority=5)
    h2.deployment("web", 1)
    h2.settle()
    assert h2.clusters_of("web") == {"b": 1}  # explicit priority beats selector specificity


def test_preemption_needs_the_feature_gate() -> None:
    """A later higher-priority policy with preemption=Always takes over only with the gate on."""
    for gates, expected in (
        (frozenset(), {"a": 1}),
        (frozenset({"PropagationPolicyPreemption"}), {"b": 1}),
    ):
        h = setup(feature_gates=gates)
        h.cpp("first", ONLY_A)
        h.deployment("web", 1)
        h.settle()
        named = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "team", "name": "web"}
        ]
        h.cpp("second", ONLY_B, priority=10, preemption="Always", selectors=named)
        h.settle()
        assert h.clusters_of("web") == expected


def test_preemption_reaches_only_templates_named_in_resource_selectors() -> None:
    """pkg/detector/preemption.go handleClusterPropagationPolicyPreemption fetches one template
    per resourceSelector by name: a label-selector policy preempts nothing already claimed,
    even with preemption=Always and the gate on."""
    h = setup(feature_gates=frozenset({"PropagationPolicyPreemption"}))
    h.cpp("first", ONLY_A)
    h.deployment("web", 1)
    h.settle()
    by_label = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    h.cpp("second", ONLY_B, priority=10, preemption="Always", selectors=by_label)
    h.settle()
    assert h.clusters_of("web") == {"a": 1}


def test_non_lazy_policy_change_reaches_every_binding_at_once() -> None:
    """Patching a default (non-lazy) policy's placement moves all its workloads."""
    h = setup()
    h.cpp("team", ONLY_A)
    for name in ("w1", "w2", "w3"):
        h.deployment(name, 2)
    h.settle()
    h.patch("ClusterPropagationPolicy", "team", lambda p: p["spec"].update(placement=ONLY_B))
    h.settle()
    assert [h.clusters_of(n) for n in ("w1", "w2", "w3")] == [{"b": 2}] * 3


def lazy_setup() -> Harness:
    h = setup()
    h.cpp("team", ONLY_A, activationPreference="Lazy")
    for name in ("w1", "w2", "w3"):
        h.deployment(name, 2)
    h.settle()
    assert [h.clusters_of(n) for n in ("w1", "w2", "w3")] == [{"a": 2}] * 3
    h.patch("ClusterPropagationPolicy", "team", lambda p: p["spec"].update(placement=ONLY_B))
    h.settle()
    return h


def test_a_late_policy_change_key_applies_the_policy_as_it_is_then() -> None:
    """A key enqueued while the policy was not Lazy, reached after it became Lazy with a new
    placement, applies that placement (detector.go enqueueResourceTemplateForPolicyChange)."""
    h = setup(policy_change_lag=2.0)
    h.cpp("team", ONLY_A)
    for name in ("w1", "w2"):
        h.deployment(name, 2)
    h.advance(3.0)
    h.patch("ClusterPropagationPolicy", "team", lambda p: p["spec"].update(priority=1))
    h.settle()
    h.advance(0.5)  # keys of that (non-Lazy) change still queued
    h.patch(
        "ClusterPropagationPolicy",
        "team",
        lambda p: p["spec"].update(placement=ONLY_B, activationPreference="Lazy"),
    )
    h.advance(0.5)
    assert [h.clusters_of(n) for n in ("w1", "w2")] == [{"a": 2}] * 2
    h.advance(1.5)  # the first change's keys arrive: the Lazy policy's new placement applies
    assert [h.clusters_of(n) for n in ("w1", "w2")] == [{"b": 2}] * 2
    h.advance(5.0)  # the Lazy change's own keys are Karmada's: they activate nothing more


def test_a_policy_change_is_reconciled_after_the_lag_only() -> None:
    """With a lag, a non-Lazy policy's change reaches its bindings only once the lag passed."""
    h = setup(policy_change_lag=2.0)
    h.cpp("team", ONLY_A)
    h.deployment("w1", 2)
    h.advance(3.0)
    h.patch("ClusterPropagationPolicy", "team", lambda p: p["spec"].update(placement=ONLY_B))
    h.settle()
    h.advance(1.5)
    assert h.clusters_of("w1") == {"a": 2}
    h.advance(1.0)
    assert h.clusters_of("w1") == {"b": 2}


def annotate(h: Harness, name: str, key: str) -> None:
    def change(obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("annotations", {})[key] = "2026-01-01T23:00:00Z"

    h.patch("Deployment", name, change, "team")
    h.settle()


def test_patched_lazy_policy_moves_nothing() -> None:
    """A Lazy policy's placement change leaves every binding as it was."""
    h = lazy_setup()
    assert [h.clusters_of(n) for n in ("w1", "w2", "w3")] == [{"a": 2}] * 3
    assert h.binding("w1")["spec"]["placement"] == ONLY_A


def test_touching_one_template_activates_a_lazy_policy_for_it_alone() -> None:
    """A `tidal.io/...` annotation on one template moves exactly that workload."""
    h = lazy_setup()
    annotate(h, "w2", "tidal.io/touched-at")
    assert [h.clusters_of(n) for n in ("w1", "w2", "w3")] == [{"a": 2}, {"b": 2}, {"a": 2}]


def test_a_karmada_io_key_does_not_count_as_a_user_change() -> None:
    """An annotation whose key contains `.karmada.io` activates nothing."""
    h = lazy_setup()
    annotate(h, "w2", "tidal.karmada.io/touched-at")
    assert [h.clusters_of(n) for n in ("w1", "w2", "w3")] == [{"a": 2}] * 3


def test_policy_deletion_unclaims_but_keeps_bindings_and_members() -> None:
    """Deleting the policy strips claim labels; binding and replicas stay; a new policy reclaims."""
    h = setup()
    h.cpp("old", {**TWO, "replicaScheduling": static_weights(a=1, b=1)})
    h.deployment("web", 2)
    h.settle()
    h.advance(2.0)
    h.store.delete(h.t("ClusterPropagationPolicy"), None, "old")
    h.settle()
    template = h.get("Deployment", "web", "team")
    assert CPP_ID not in (template["metadata"].get("labels") or {})
    binding = h.binding("web")
    assert CPP_ID not in (binding["metadata"].get("labels") or {})
    assert h.clusters_of("web") == {"a": 1, "b": 1}
    assert h.ready_in("web", "a") == 1 and h.ready_in("web", "b") == 1
    new = h.cpp("new", ONLY_B)
    h.advance(2.0)  # the detector matches unclaimed templates again after its latency
    new_id = new["metadata"]["labels"][CPP_ID]
    assert h.get("Deployment", "web", "team")["metadata"]["labels"][CPP_ID] == new_id
    assert h.binding("web")["metadata"]["labels"][CPP_ID] == new_id
    assert h.clusters_of("web") == {"b": 2}


def test_unmatched_template_waits_for_a_policy() -> None:
    """A template no policy matches gets no binding until a matching policy appears."""
    h = setup()
    h.deployment("web", 1)
    h.settle()
    assert h.store.list(h.t("ResourceBinding"))[0] == []
    h.cpp("late", ONLY_A)
    h.settle()
    assert h.clusters_of("web") == {"a": 1}


def test_template_change_refreshes_replicas_and_deletion_removes_binding() -> None:
    """Scaling the template updates spec.replicas; deleting it garbage-collects the binding."""
    h = setup()
    h.cpp("team", ONLY_A)
    h.deployment("web", 1)
    h.settle()
    h.patch("Deployment", "web", lambda d: d["spec"].update(replicas=4), "team")
    h.settle()
    assert h.binding("web")["spec"]["replicas"] == 4
    assert h.clusters_of("web") == {"a": 4}
    h.store.delete(h.t("Deployment"), "team", "web")
    h.settle()
    assert h.store.list(h.t("ResourceBinding"))[0] == []


def test_label_selector_policy_and_policy_selector_change_unclaims() -> None:
    """A labelSelector picks matching templates; narrowing the selector releases the others."""
    h = setup()
    selectors = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "labelSelector": {
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]
            },
        }
    ]
    h.cpp("team", ONLY_A, selectors=selectors)
    h.deployment("web", 1)
    h.deployment("api", 1)
    h.deployment("db", 1)
    h.settle()
    assert h.clusters_of("web") == {"a": 1} and h.clusters_of("api") == {"a": 1}
    assert h.store.list(h.t("ResourceBinding"), "team")[0][0]["metadata"]["name"] != "db-deployment"
    narrow = [{**selectors[0], "labelSelector": {"matchLabels": {"app": "web"}}}]
    h.patch(
        "ClusterPropagationPolicy", "team", lambda p: p["spec"].update(resourceSelectors=narrow)
    )
    h.settle()
    assert CPP_ID not in (h.get("Deployment", "api", "team")["metadata"].get("labels") or {})
    assert CPP_ID in h.get("Deployment", "web", "team")["metadata"]["labels"]


def test_swap_to_a_lazy_policy_right_after_deletion_is_not_lazy() -> None:
    """A Lazy policy that exists when the unclaimed templates are re-matched moves them at once;
    one created after they were re-matched claims them lazily (bindings untouched)."""
    for wait, expected in ((0.0, {"b": 2}), (2.1, {"a": 2})):
        h = setup()
        h.cpp("day", ONLY_A)
        h.deployment("web", 2)
        h.settle()
        h.store.delete(h.t("ClusterPropagationPolicy"), None, "day")
        h.settle()
        h.advance(wait)
        h.cpp("night", ONLY_B, activationPreference="Lazy")
        h.settle()
        h.advance(2.1)
        labels = h.get("Deployment", "web", "team")["metadata"]["labels"]
        assert (
            labels[CPP_ID]
            == h.get("ClusterPropagationPolicy", "night")["metadata"]["labels"][CPP_ID]
        )
        assert h.clusters_of("web") == expected


def _swap_split(seed: int) -> list[str]:
    """Delete the day policy of ten templates, create a Lazy night one 1 s later: the
    templates not yet re-matched by then move at once."""
    h = Harness(seed=seed)
    h.cluster("a")
    h.cluster("b")
    h.cpp("day", ONLY_A)
    names = [f"w{i}" for i in range(10)]
    for name in names:
        h.deployment(name, 2)
    h.settle()
    h.store.delete(h.t("ClusterPropagationPolicy"), None, "day")
    h.settle()
    h.advance(1.0)
    h.cpp("night", ONLY_B, activationPreference="Lazy")
    h.advance(2.1)
    return [n for n in names if h.clusters_of(n) == {"b": 2}]


def test_swap_race_is_per_template_and_reproducible() -> None:
    """FACTS "Swap race" (pkg/detector/detector.go: a deleted policy's templates are cleaned
    up and re-matched one by one): a delete-then-create swap moves some templates at once and
    leaves the others to a later edit; the split is drawn from the seed, so it repeats."""
    moved = _swap_split(seed=7)
    assert 0 < len(moved) < 10
    assert _swap_split(seed=7) == moved
    assert any(_swap_split(seed=s) != moved for s in (1, 2, 3))


def test_cluster_scoped_template_gets_a_cluster_resource_binding() -> None:
    """A cluster-scoped custom kind is bound by a ClusterResourceBinding named <name>-<kind>."""
    from tidal_sim.kinds import ResourceType

    h = setup()
    widget = ResourceType("example.io", "v1", "Widget", "widgets", False, custom=True)
    h.kinds.register(widget)
    h.cpp("widgets", ONLY_B, selectors=[{"apiVersion": "example.io/v1", "kind": "Widget"}])
    h.store.create(widget, {"metadata": {"name": "big:one"}, "spec": {"size": 3}})
    h.settle()
    crb = h.get("ClusterResourceBinding", "big.one-widget")
    assert crb["spec"]["resource"]["name"] == "big:one"
    assert "namespace" not in crb["spec"]["resource"]
    assert crb["spec"]["clusters"] == [{"name": "b"}]
