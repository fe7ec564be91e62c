"""Resolve over HTTP: the templates spec.workloads selects are listed once per window, however
many policies the window changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    NS,
    MakeEmulator,
    client_for,
    cpp,
    deployment,
    deployment_workloads,
    load_one,
    schedule_text,
    static_team,
    write_schedule,
)
from tidal.engine.planning import build_plan

pytestmark = pytest.mark.e2e

TO_B = """
      patch:
        spec:
          placement:
            replicaScheduling:
              weightPreference:
                staticWeightList:
                  - targetCluster: {clusterNames: [cluster-b]}
                    weight: 1
"""
TWO_POLICIES = f"""
- name: night
  start: "23:00"
  policies:
    - kind: ClusterPropagationPolicy
      name: team-cpp{TO_B.rstrip()}
    - kind: ClusterPropagationPolicy
      name: other-cpp{TO_B.rstrip()}
"""


def test_two_policies_share_one_template_list(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A window patching two policies lists the selected Deployments once, and the namespace's
    Deployments once for both policies' claim check (spec.workloads must miss none)."""
    topo = [
        *static_team(workloads=2),
        cpp("other-cpp", "t2", DAY),
        deployment("job-0", "t2", 5),
        deployment("job-1", "t2", 5),
    ]
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    workloads = deployment_workloads(
        "{matchExpressions: [{key: team, operator: In, values: [t1, t2]}]}"
    )
    path = write_schedule(
        tmp_path,
        schedule_text("two", windows=TWO_POLICIES, workloads=workloads, rollout="waveSize: 2"),
    )
    loaded = load_one(path)
    assert len(loaded.schedule.window("night").policies) == 2
    emu.reset_requests()
    sp = build_plan(client, loaded.schedule, "night")
    assert sorted(w.name for w in sp.selection.workloads) == [
        f"{NS}/Deployment/{n}" for n in ("job-0", "job-1", "web-0", "web-1")
    ]
    lists = [r for r in emu.request_log() if r.verb == "list" and r.resource == "deployments"]
    assert len(lists) == 2
