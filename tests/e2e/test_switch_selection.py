"""Selection over HTTP: excluded, foreign and unclaimed templates are reported and left out;
an excluded template claimed by a changed policy keeps the policy Lazy after the switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    NS,
    MakeEmulator,
    client_for,
    cpp,
    deployment,
    deployment_workloads,
    latest,
    load_one,
    schedule_text,
    static_team,
    switch,
    write_schedule,
)
from tidal.engine import events as ev
from tidal.engine.planning import build_plan
from tidal.karmada import policies

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-sel",
    workloads=deployment_workloads(
        "{matchExpressions: [{key: team, operator: In, values: [t1, t2, t3]}]}"
    ),
    rollout="""
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 20s
""",
)


def test_excluded_foreign_and_unclaimed_are_left_out(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Only claimed, bound, not excluded templates move; the policy stays Lazy for web-3."""
    topo = [
        *static_team(workloads=3),
        cpp("other-cpp", "t2", DAY),
        deployment("web-3", "t1", 5, annotations={"tidal.io/exclude": "true"}),
        deployment("foreign-0", "t2", 5),
        deployment("loose-0", "t3", 5),
    ]
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE)

    sp = build_plan(client, load_one(path).schedule, "night")
    assert [w.name for w in sp.pending] == [f"{NS}/Deployment/web-{i}" for i in range(3)]
    reasons = {s.workload: s.reason for s in sp.selection.skipped}
    assert reasons == {
        f"{NS}/Deployment/web-3": "excluded",
        f"{NS}/Deployment/foreign-0": "foreign",
        f"{NS}/Deployment/loose-0": "unbound",
    }
    assert any("give them their own policy" in w for w in sp.warnings)

    events: list[Any] = []
    record = switch(client, path, "night", events=events)
    assert record.result == "succeeded", record.to_json()
    assert sorted(n for w in record.waves for n in w.workloads) == [
        f"{NS}/Deployment/web-{i}" for i in range(3)
    ]
    assert any("stays Lazy" in w for w in record.warnings)
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert policy["spec"]["activationPreference"] == "Lazy"
    assert not [
        e for e in events if isinstance(e, ev.PolicyChanged) and e.action == "lazy_restored"
    ]
    assigned = {key: a for key, (a, _) in latest(emu).items()}
    assert assigned[(f"{NS}/Deployment/web-3", "cluster-a")] == 4  # excluded: not moved
    assert assigned[(f"{NS}/Deployment/foreign-0", "cluster-a")] == 4
    assert assigned[(f"{NS}/Deployment/web-0", "cluster-b")] == 5


def test_a_claimed_template_its_policy_no_longer_selects_is_left_out(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A template relabelled out of its policy's resourceSelectors keeps the policy's claim,
    but Karmada applies the policy to it no more (a touch would never move it and its wave
    would time out): the plan leaves it out as `unmatched` with a warning; the rest switch
    and it stays where it is."""
    emu = make_switch_emulator(static_team(workloads=3))
    client = client_for(emu, tmp_path)
    deployments = client.resource_for("apps/v1", "Deployment")
    client.request(
        "patch",
        deployments,
        "PATCH",
        deployments.path(NS, "web-2"),
        body={"metadata": {"labels": {"team": "t9"}}},
        content_type="application/merge-patch+json",
    )
    path = write_schedule(
        tmp_path,
        schedule_text(
            "team-sel",
            """
        waveSize: 3
        pauseBetweenWaves: 0s
        waveTimeout: 20s
    """,
        ),
    )

    sp = build_plan(client, load_one(path).schedule, "night")
    moved = f"{NS}/Deployment/web-2"
    assert {s.workload: s.reason for s in sp.selection.skipped} == {moved: "unmatched"}
    assert any(moved in w and "resourceSelectors" in w for w in sp.warnings)
    record = switch(client, path, "night")
    assert record.result == "succeeded", record.to_json()
    assert sorted(n for w in record.waves for n in w.workloads) == [
        f"{NS}/Deployment/web-{i}" for i in range(2)
    ]
    assigned = {key: a for key, (a, _) in latest(emu).items()}
    assert assigned[(moved, "cluster-a")] == 4
    assert assigned[(f"{NS}/Deployment/web-0", "cluster-b")] == 5
