"""No workload moves outside the waves (issue 25, defect 6): templates the window's policy
claims that spec.workloads misses (a narrowed or typo'd selector), or a selector matching
nothing, make `tidal plan`, `tidal validate --kubeconfig` and `tidal switch` refuse before any
write, naming them. Rule: refused, never brought into the waves silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.outside import tidal
from tests.e2e.switch_helpers import (
    DAY,
    MakeEmulator,
    cluster,
    cpp,
    deployment,
    deployment_workloads,
    namespace,
    schedule_text,
    write_schedule,
    writes,
)
from tidal.cli.exitcodes import INVALID_INPUT, UNSAFE_PLAN

pytestmark = pytest.mark.e2e
ROLLOUT = """
    waveSize: 1
    pauseBetweenWaves: 0s
    waveTimeout: 30s
    floors:
      - minAvailablePercent: 50
"""


def _topology() -> list[dict[str, Any]]:
    """Team t1 (policy team-cpp, 4:1) with four Deployments; web-0 and web-1 are tier gold."""
    topo = [
        cluster("cluster-a", startup=0.5),
        cluster("cluster-b", startup=0.5),
        namespace(),
        cpp("team-cpp", "t1", DAY),
    ]
    for i in range(4):
        d = deployment(f"web-{i}", "t1", 5)
        if i < 2:
            d["metadata"]["labels"]["tier"] = "gold"
        topo.append(d)
    return topo


def _schedule(tmp: Path, selector: str) -> Path:
    return write_schedule(
        tmp, schedule_text("team-c", ROLLOUT, workloads=deployment_workloads(selector))
    )


def _acting_writes(emu: Any) -> list[Any]:
    return [r for r in writes(emu) if r.resource not in ("leases", "events", "configmaps")]


@pytest.mark.parametrize("command", ["plan", "switch"])
def test_claimed_templates_the_selector_misses_refuse_the_switch(
    make_switch_emulator: MakeEmulator, tmp_path: Path, command: str
) -> None:
    """spec.workloads selects the gold tier only: plan and switch refuse (exit 3), naming
    web-2 and web-3, and nothing is written."""
    emu = make_switch_emulator(_topology())
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
    path = _schedule(tmp_path, "{matchLabels: {team: t1, tier: gold}}")
    emu.reset_requests()
    extra = ["--yes"] if command == "switch" else []
    done = tidal(command, path, "--window", "night", "--kubeconfig", kubeconfig, *extra)
    assert done.returncode == UNSAFE_PLAN, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "spec.workloads: ClusterPropagationPolicy/team-cpp claims 2 template(s)" in said
    assert "ai-app/Deployment/web-2" in said and "ai-app/Deployment/web-3" in said
    assert _acting_writes(emu) == []


def test_a_selector_matching_nothing_is_refused(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A typo'd selector (team t2) selects no template: the switch refuses (exit 3)."""
    emu = make_switch_emulator(_topology())
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
    path = _schedule(tmp_path, "{matchLabels: {team: t2}}")
    emu.reset_requests()
    done = tidal("switch", path, "--window", "night", "--kubeconfig", kubeconfig, "--yes")
    assert done.returncode == UNSAFE_PLAN, done.stdout + done.stderr
    assert "spec.workloads: selects no template at all" in done.stderr
    assert _acting_writes(emu) == []


def test_validate_against_the_cluster_locates_the_missed_templates(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`tidal validate --kubeconfig` fails (exit 1) with FILE:LINE:COL at spec.workloads for
    each window, listing the templates missed."""
    emu = make_switch_emulator(_topology())
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
    path = _schedule(tmp_path, "{matchLabels: {team: t1, tier: gold}}")
    line = next(
        i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip() == "workloads:"
    )
    done = tidal("validate", path, "--kubeconfig", kubeconfig)
    assert done.returncode == INVALID_INPUT, done.stdout + done.stderr
    errors = [e for e in done.stderr.splitlines() if "spec.workloads" in e]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith(f"{path}:{line}:")
    assert "window night" in errors[0] and "ai-app/Deployment/web-3" in errors[0]
