"""The replica field a custom kind's replicaRevision script writes, found by running it."""

from __future__ import annotations

from typing import Any

import pytest

from tidal.karmada.interpreters import (
    KindScripts,
    ReplicaFieldError,
    is_custom_kind,
    merge_customizations,
    replica_paths,
)

API, KIND = "inference.tidal.io/v1alpha1", "InferenceService"


def template(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": KIND,
        "metadata": {"name": "llm", "namespace": "ai"},
        "spec": spec,
        "status": {"instances": 3},
    }


def scripts(revision: str) -> KindScripts:
    return KindScripts(API, KIND, {"replicaRevision": revision})


def test_the_field_the_revision_writes_is_found_as_a_json_pointer() -> None:
    """obj.spec.serving.instances = n: /spec/serving/instances (status is not probed)."""
    found = replica_paths(
        template({"serving": {"instances": 3}}),
        scripts("function ReviseReplica(obj, n) obj.spec.serving.instances = n return obj end"),
    )
    assert found == ("/spec/serving/instances",)


def test_fields_inside_lists_and_several_fields_are_all_found() -> None:
    """A script writing two fields (one in a list) gives both pointers, list index 0-based."""
    found = replica_paths(
        template({"groups": [{"size": 1}], "replicas": 1}),
        scripts(
            "function ReviseReplica(obj, n) obj.spec.groups[1].size = n "
            "obj.spec.replicas = n return obj end"
        ),
    )
    assert found == ("/spec/groups/0/size", "/spec/replicas")


def test_a_field_the_template_lacks_is_found_as_written() -> None:
    """The template need not carry the field yet: the revision adds it."""
    found = replica_paths(
        template({}), scripts("function ReviseReplica(obj, n) obj.spec.workers = n return obj end")
    )
    assert found == ("/spec/workers",)


@pytest.mark.parametrize(
    ("revision", "problem"),
    [
        ("function ReviseReplica(obj, n) return obj end", "writes the replica count to no field"),
        ("function ReviseReplica(obj, n) error('boom') end", "fails on ai/llm: .*boom"),
        ("function Other(obj, n) return obj end", "defines no function ReviseReplica"),
        ("function ReviseReplica(obj, n) while true do end end", "timed out"),
        ("function ReviseReplica(obj, n) os.exit(1) end", "fails on ai/llm"),
    ],
)
def test_a_revision_that_cannot_be_read_is_refused_naming_the_kind(
    revision: str, problem: str
) -> None:
    """Failing, endless, sandbox-breaking or field-less scripts raise an error naming the kind."""
    with pytest.raises(ReplicaFieldError, match=f"^InferenceService \\({API}\\): .*{problem}"):
        replica_paths(template({"replicas": 1}), scripts(revision), timeout=0.05)


def test_built_in_kinds_use_spec_replicas_and_others_need_a_revision() -> None:
    """A Deployment without a customization: /spec/replicas; a custom kind: refused."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    assert replica_paths(deployment, None) == ("/spec/replicas",)
    with pytest.raises(ReplicaFieldError, match="no ResourceInterpreterCustomization"):
        replica_paths(template({}), None)


def test_customizations_merge_in_name_order_and_custom_groups_are_told() -> None:
    """The first customization by name that sets a rule wins; apps/v1 is not custom."""
    items = [
        {
            "metadata": {"name": n},
            "spec": {
                "target": {"apiVersion": API, "kind": KIND},
                "customizations": {"replicaRevision": {"luaScript": f"-- {n}"}},
            },
        }
        for n in ("b", "a")
    ]
    assert merge_customizations(items)[(API, KIND)].scripts["replicaRevision"] == "-- a"
    assert is_custom_kind(API) and not is_custom_kind("apps/v1")
    assert not is_custom_kind("networking.k8s.io/v1") and not is_custom_kind("v1")
