"""Run-owned replica overrides over real HTTP against the emulator: build, create, replace, find
by owner labels, delete; strict validation, the write gate, and typed-input errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import NS, MakeEmulator, client_for
from tidal.karmada import errors as E
from tidal.karmada.client import KarmadaClient
from tidal.karmada.overrides import (
    COP_KIND,
    OP_KIND,
    OverrideRef,
    Owner,
    ReplicaOverride,
    TemplateRef,
    apply_override,
    create_override,
    delete_override,
    delete_owned,
    get_override,
    list_overrides,
    manifest,
    override_name,
    ref_of,
    replace_override,
)
from tidal_sim.emulator import Emulator

OWNER = Owner("team-1", "r20260601", 1)


def web(i: int) -> TemplateRef:
    return TemplateRef("apps/v1", "Deployment", f"web-{i}", NS)


def surge(
    name: str, replicas: dict[str, int], *templates: TemplateRef, owner: Owner = OWNER
) -> ReplicaOverride:
    return ReplicaOverride(name, owner, templates or (web(0),), replicas)


def assigned(emu: Emulator, workload: str, cluster: str) -> int:
    """What the member runs (the emulator's timeline: desired replicas per member)."""
    for _ in range(200):
        emu.settle()
        samples = [
            s for s in emu.timeline() if s["workload"] == workload and s["cluster"] == cluster
        ]
        if samples:
            return int(samples[-1]["assigned"])
        time.sleep(0.01)
    return 0


@pytest.fixture
def team(make_switch_emulator: MakeEmulator, tmp_path: Path) -> tuple[Emulator, KarmadaClient]:
    """web-0 and web-1 (5 replicas each) placed 4:1 in cluster-a/cluster-b."""
    emu = make_switch_emulator(workloads=2, replicas=5)
    return emu, client_for(emu, tmp_path)


def test_manifest_has_one_rule_per_distinct_count_and_the_owner_labels() -> None:
    """Clusters set to the same count share a rule; templates are selected by name."""
    obj = manifest(surge("s", {"cluster-b": 5, "cluster-c": 5, "cluster-a": 1}, web(1), web(0)))
    assert obj["kind"] == OP_KIND and obj["metadata"]["namespace"] == NS
    assert obj["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "tidal",
        "tidal.io/schedule": "team-1",
        "tidal.io/run": "r20260601",
        "tidal.io/wave": "1",
        "tidal.io/direction": "forward",
    }
    assert [s["name"] for s in obj["spec"]["resourceSelectors"]] == ["web-0", "web-1"]
    rules = obj["spec"]["overrideRules"]
    assert [
        (r["targetCluster"]["clusterNames"], r["overriders"]["plaintext"][0]["value"])
        for r in rules
    ] == [(["cluster-a"], 1), (["cluster-b", "cluster-c"], 5)]
    cluster_scoped = manifest(
        surge("c", {"cluster-b": 2}, TemplateRef("example.io/v1", "Widget", "w"))
    )
    assert cluster_scoped["kind"] == COP_KIND and "namespace" not in cluster_scoped["metadata"]
    assert "namespace" not in cluster_scoped["spec"]["resourceSelectors"][0]


def test_surge_create_replace_find_and_delete(team: tuple[Emulator, KarmadaClient]) -> None:
    """Created: b runs 5 while a keeps 4; replaced: b runs 3; listed by owner; deleted: 1."""
    emu, client = team
    workload = f"{NS}/Deployment/web-0"
    assert assigned(emu, workload, "cluster-b") == 1
    name = override_name(OWNER, 0)
    view = apply_override(client, surge(name, {"cluster-b": 5}))
    assert view.replicas() == {"cluster-b": 5} and view.wave == 1 and view.managed_by_tidal
    assert assigned(emu, workload, "cluster-b") == 5
    assert assigned(emu, workload, "cluster-a") == 4
    assert assigned(emu, f"{NS}/Deployment/web-1", "cluster-b") == 1
    again = apply_override(client, surge(name, {"cluster-b": 3}))  # a resume: replaced
    assert again.replicas() == {"cluster-b": 3}
    assert assigned(emu, workload, "cluster-b") == 3
    other = Owner("team-1", "r20260602", 2)
    apply_override(client, surge(override_name(other, 0), {"cluster-b": 2}, web(1), owner=other))
    found = list_overrides(client, schedule="team-1", run_id="r20260601")
    assert [(v.kind, v.namespace, v.name) for v in found] == [(OP_KIND, NS, name)]
    assert found[0].templates() == [("apps/v1", "Deployment", NS, "web-0")]
    assert len(list_overrides(client, schedule="team-1")) == 2
    assert (
        list_overrides(client, schedule="team-1", wave=2, namespaces=[NS])[0].run_id == "r20260602"
    )
    assert delete_override(client, ref_of(found[0])) is True
    assert delete_override(client, ref_of(found[0])) is False
    assert get_override(client, ref_of(found[0])) is None
    assert assigned(emu, workload, "cluster-b") == 1


def test_create_twice_is_already_exists_and_replace_of_nothing_is_not_found(
    team: tuple[Emulator, KarmadaClient],
) -> None:
    """The separate verbs keep the API's answers: AlreadyExists, NotFound (translated)."""
    _, client = team
    override = surge("s", {"cluster-b": 5})
    create_override(client, override)
    with pytest.raises(E.AlreadyExists):
        create_override(client, override)
    with pytest.raises(E.NotFound):
        replace_override(client, surge("absent", {"cluster-b": 5}))


def test_writes_are_strict_and_dry_run_stores_nothing(team: tuple[Emulator, KarmadaClient]) -> None:
    """Every create/replace is sent with fieldValidation=Strict; a dry run is not stored."""
    emu, client = team
    emu.reset_requests()
    create_override(client, surge("dry", {"cluster-b": 5}), dry_run=True)
    assert get_override(client, OverrideRef(OP_KIND, NS, "dry")) is None
    apply_override(client, surge("s", {"cluster-b": 5}))
    apply_override(client, surge("s", {"cluster-b": 4}))
    writes = [
        r
        for r in emu.request_log()
        if r.resource == "overridepolicies" and r.verb in ("create", "update")
    ]
    assert [(r.verb, r.dry_run, r.code) for r in writes] == [
        ("create", True, 201),
        ("create", False, 201),
        ("create", False, 409),
        ("update", False, 200),
    ]


def test_a_create_whose_answer_is_lost_is_finished_by_a_replace(
    team: tuple[Emulator, KarmadaClient],
) -> None:
    """The server stores the create but the answer is cut: the retried create meets
    AlreadyExists and apply_override replaces, ending with the wanted rules."""
    emu, client = team
    emu.faults.inject(type="truncate", verb="create", resource="overridepolicies", count=1)
    emu.reset_requests()
    view = apply_override(client, surge("s", {"cluster-b": 5}))
    assert view.replicas() == {"cluster-b": 5}
    calls = [(r.verb, r.code) for r in emu.request_log() if r.resource == "overridepolicies"]
    assert calls == [("create", 201), ("create", 409), ("get", 200), ("update", 200)]


def test_a_replace_racing_another_writer_re_reads(team: tuple[Emulator, KarmadaClient]) -> None:
    """Two 409 Conflicts on the update: re-read and replaced again, not given up."""
    emu, client = team
    apply_override(client, surge("s", {"cluster-b": 5}))
    emu.faults.inject(type="conflict", verb="update", resource="overridepolicies", count=2)
    assert replace_override(client, surge("s", {"cluster-b": 3})).replicas() == {"cluster-b": 3}
    (found,) = list_overrides(client)
    assert found.replicas() == {"cluster-b": 3}


class Fenced:
    """A write gate whose Lease is gone."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def seconds_left(self) -> float:
        return 0.0

    def give_up(self, reason: str) -> None:
        self.reasons.append(reason)


def test_a_fenced_replica_sends_no_override_write(team: tuple[Emulator, KarmadaClient]) -> None:
    """Without the Lease every override write raises LeaseLost before any request; reads work."""
    emu, client = team
    client.gate_writes(Fenced())
    emu.reset_requests()
    for write in (
        lambda: apply_override(client, surge("s", {"cluster-b": 5})),
        lambda: delete_override(client, OverrideRef(OP_KIND, NS, "s")),
    ):
        with pytest.raises(E.LeaseLost):
            write()
    assert list_overrides(client) == []
    verbs = {r.verb for r in emu.request_log() if "overridepolicies" in r.resource}
    assert verbs == {"list"}


def test_a_server_refusal_is_translated(team: tuple[Emulator, KarmadaClient]) -> None:
    """An override in a namespace that does not exist is a NotFound naming verb and resource."""
    _, client = team
    missing = ReplicaOverride(
        "s", OWNER, (TemplateRef("apps/v1", "Deployment", "w", "nowhere"),), {"cluster-b": 5}
    )
    with pytest.raises(E.NotFound) as caught:
        create_override(client, missing)
    assert caught.value.resource == "overridepolicies" and caught.value.verb == "create"


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda: ReplicaOverride("Bad_Name", OWNER, (web(0),), {"cluster-b": 1}), "DNS subdomain"),
        (lambda: ReplicaOverride("s", OWNER, (), {"cluster-b": 1}), "at least one template"),
        (
            lambda: ReplicaOverride(
                "s", OWNER, (web(0), TemplateRef("v1", "ConfigMap", "c", "other")), {"cluster-b": 1}
            ),
            "one override per namespace",
        ),
        (lambda: ReplicaOverride("s", OWNER, (web(0),), {}), "at least one cluster"),
        (lambda: ReplicaOverride("s", OWNER, (web(0),), {"cluster-b": -1}), "whole number >= 0"),
        (lambda: Owner("team-1", "", 1), "run id is empty"),
        (lambda: OverrideRef.parse("OverridePolicy//x"), "expected OverridePolicy/<namespace>"),
    ],
)
def test_bad_input_is_one_located_line(build: Any, message: str) -> None:
    """Typed-input mistakes name the override and the fix in one line."""
    with pytest.raises(ValueError) as caught:
        build()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_run_id_too_long_for_a_label_is_still_found(team: tuple[Emulator, KarmadaClient]) -> None:
    """A daemon run id over 63 characters is shortened with a hash in the label, found by the
    same selector, and read back whole from the annotation."""
    _, client = team
    long_run = "team-1-night-20261203-220000-" + "x" * 50
    owner = Owner("team-1", long_run, 3)
    assert len(owner.labels()["tidal.io/run"]) <= 63
    apply_override(client, surge("long", {"cluster-b": 5}, owner=owner))
    (found,) = list_overrides(client, run_id=long_run)
    assert found.run_id == long_run and found.schedule == "team-1" and found.wave == 3
    assert list_overrides(client, run_id=long_run + "y") == []


def test_refs_round_trip_as_text() -> None:
    """`str(ref)` is what journals keep; `parse` reads it back for both kinds."""
    for ref in (OverrideRef(OP_KIND, NS, "a"), OverrideRef(COP_KIND, "", "b")):
        assert OverrideRef.parse(str(ref)) == ref


def test_printed_rbac_allows_every_override_request(
    team: tuple[Emulator, KarmadaClient], tmp_path: Path
) -> None:
    """Under `tidal rbac`'s rules (enforced), every override verb works in the template
    namespace; an OverridePolicy elsewhere is Forbidden."""
    from tests.e2e.test_rbac_enforced import _post_as_admin
    from tidal.rbac import Subject, TemplateKind, derive_rules, rbac_manifests

    emu, _ = team
    rules = derive_rules(
        [], state_namespace="default", extra_templates=[TemplateKind("apps", "deployments", NS)]
    )
    for obj in rbac_manifests(rules, name="tidal", subject=Subject("User", "tidal")):
        _post_as_admin(emu.url, obj)
    emu.enforce_rbac(True)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc", user="tidal"))
    name = override_name(OWNER, 0)
    apply_override(client, surge(name, {"cluster-b": 5}))
    apply_override(client, surge(name, {"cluster-b": 4}))  # create 409, get, update
    (found,) = list_overrides(client, schedule="team-1")
    assert found.replicas() == {"cluster-b": 4}
    assert get_override(client, ref_of(found)) is not None
    assert delete_override(client, ref_of(found))
    apply_override(client, surge(name, {"cluster-b": 4}))
    assert delete_owned(client, OWNER, NS) == [ref_of(found)]  # the wave's, by its labels
    elsewhere = ReplicaOverride(
        "s", OWNER, (TemplateRef("apps/v1", "Deployment", "w", "default"),), {"cluster-b": 1}
    )
    with pytest.raises(E.Forbidden):
        create_override(client, elsewhere)
    refused = [r for r in emu.request_log() if r.identity == "tidal" and r.code == 403]
    assert [(r.verb, r.namespace) for r in refused] == [("create", "default")]
