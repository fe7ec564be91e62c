"""A swap whose `to` policy selects more than `from` did is refused before any write (the plan
says what it adds), unless allowFields lists spec.resourceSelectors; a patch's allowFields are
named in the plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import (
    DAY,
    MakeEmulator,
    cpp,
    policy_file,
    schedule_text,
    static_placement,
    swap_window,
    write_schedule,
)
from tidal.cli.main import cli

pytestmark = pytest.mark.e2e
ROLLOUT = "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 20s\n"


def _every_deployment_policy() -> str:
    night = cpp("night-cpp", "t1", static_placement({"cluster-b": 1}))
    night["spec"]["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "Deployment"}]
    return policy_file(night)


def _plan(emu: object, tmp_path: Path, path: Path) -> tuple[int, dict[str, object]]:
    kubeconfig = emu.write_kubeconfig(tmp_path / "kc")  # type: ignore[attr-defined]
    result = CliRunner().invoke(
        cli, ["plan", str(path), "--window", "night", "--kubeconfig", str(kubeconfig), "-o", "json"]
    )
    assert result.stdout, result.output
    return result.exit_code, json.loads(result.stdout)


def test_swap_that_selects_more_is_refused_and_says_what_it_adds(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`to` selecting every Deployment: plan exit 3, the problem names the added selector;
    `tidal switch` writes nothing."""
    emu = make_switch_emulator(policy="day-cpp")
    path = write_schedule(
        tmp_path,
        schedule_text(
            "team-swap",
            ROLLOUT,
            windows=swap_window("night", "23:00", swap_from="day-cpp", swap_to="night.yaml"),
        ),
        {"night.yaml": _every_deployment_policy()},
    )
    code, plan = _plan(emu, tmp_path, path)
    assert code == 3 and not plan["safe"]
    assert any(
        "selects what day-cpp did not: Deployment (apps/v1) any labels" in p
        for p in plan["problems"]  # type: ignore[attr-defined]
    ), plan["problems"]
    emu.reset_requests()
    result = CliRunner().invoke(
        cli,
        ["switch", str(path), "--window", "night", "--kubeconfig", str(tmp_path / "kc"), "--yes"],
    )
    assert result.exit_code == 3, result.output
    assert [
        r for r in emu.request_log() if r.verb not in ("get", "list", "watch") and not r.dry_run
    ] == []


def test_allow_fields_turn_the_refusal_into_a_warning(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """allowFields: [spec.resourceSelectors] on the swap: the plan is carried out and warns."""
    emu = make_switch_emulator(policy="day-cpp")
    windows = swap_window("night", "23:00", swap_from="day-cpp", swap_to="night.yaml")
    windows = windows.rstrip("\n") + "\n      allowFields: [spec.resourceSelectors]\n"
    path = write_schedule(
        tmp_path,
        schedule_text("team-swap", ROLLOUT, windows=windows),
        {"night.yaml": _every_deployment_policy()},
    )
    code, plan = _plan(emu, tmp_path, path)
    assert plan["problems"] == [] and code == 0
    assert any("allowFields: spec.resourceSelectors" in w for w in plan["warnings"])  # type: ignore[attr-defined]


def test_patch_allow_fields_are_named_in_the_plan(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A patch that also sets spec.priority under allowFields: the plan says so."""
    emu = make_switch_emulator()
    windows = f"""
    - name: night
      start: "23:00"
      policies:
        - kind: ClusterPropagationPolicy
          name: team-cpp
          allowFields: [spec.priority]
          patch:
            spec:
              priority: 3
              placement: {json.dumps(DAY)}
"""
    path = write_schedule(tmp_path, schedule_text("team-p", ROLLOUT, windows=windows))
    _, plan = _plan(emu, tmp_path, path)
    assert (
        "ClusterPropagationPolicy/team-cpp: the patch also changes spec.priority "
        "(allowFields)" in plan["warnings"]  # type: ignore[operator]
    )
