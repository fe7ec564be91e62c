"""Errors a new user meets: each one line that names the actual place and the fix."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.cli.test_status import _hold, _schedules, _status
from tests.upstream import needs_upstream_crds
from tidal.cli.main import cli
from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator
from tidal_sim.testing.plugin import MakeEmulator

REPO = Path(__file__).parents[2]


def test_a_kubeconfig_variable_naming_no_file_is_the_error_not_the_home_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBECONFIG=/nonexistent: the error names /nonexistent, and ~/.kube/config (present) is
    not used behind the user's back, as kubectl does."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    for var in ("TIDAL_KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    result = CliRunner().invoke(
        cli, ["plan", str(REPO / "schedules" / "team-1005.yaml"), "--window", "night"]
    )
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert "KUBECONFIG=/nonexistent" in line
    assert ".kube" not in line


def _typo(tmp_path: Path) -> Path:
    path = tmp_path / "team-1005.yaml"
    text = (REPO / "schedules" / "team-1005.yaml").read_text()
    path.write_text(text.replace("weight: 4", "wieght: 4"))
    return path


@needs_upstream_crds
def test_a_misspelt_patch_field_is_named_with_the_allowed_names(tmp_path: Path) -> None:
    """`wieght` in a patch: one located line saying unknown field `wieght`, the closest name
    and every name the CRD allows there; never Python's None."""
    result = CliRunner().invoke(cli, ["validate", str(_typo(tmp_path))])
    assert result.exit_code == 1
    line = result.stderr.splitlines()[0]
    assert "staticWeightList[0].wieght: unknown field `wieght` (did you mean `weight`?)" in line
    assert "allowed: targetCluster, weight;" in line and "None" not in line


def test_without_the_crds_the_server_refusal_names_the_misspelt_field(
    make_emulator: MakeEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No schema anywhere (offline, no CRDs), the check waived: the plan's dry run on the
    emulator is refused for unknown field `wieght`, located in the file; no `None`."""
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("GOPROXY", "off")
    emulator = make_emulator(DEFAULT_TOPOLOGY)
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    result = CliRunner().invoke(
        cli,
        [
            "plan",
            str(_typo(tmp_path)),
            "--window",
            "day",
            "--kubeconfig",
            str(kubeconfig),
            "--allow-unchecked-fields",
        ],
    )
    assert result.exit_code == 1, result.output
    line = result.stderr.splitlines()[-1]  # after the one-line warning of the waived check
    assert "staticWeightList[0].wieght: " in line and "unknown field `wieght`" in line
    assert "None" not in result.stderr


def test_a_floor_above_the_workloads_replicas_is_one_line_with_a_count(
    make_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """minReadyReplicas 100 on team-2001 (20 workloads of 2 to 4 replicas): the plan's one
    problem names the schedule, the floor and the count, not one line per workload."""
    shutil.copytree(REPO / "schedules" / "policies", tmp_path / "policies")
    path = tmp_path / "team-2001.yaml"
    path.write_text(
        (REPO / "schedules" / "team-2001.yaml")
        .read_text()
        .replace("minReadyReplicas: 1\n", "minReadyReplicas: 100\n")
    )
    kubeconfig = make_emulator(DEFAULT_TOPOLOGY).write_kubeconfig(tmp_path / "kubeconfig")
    result = CliRunner().invoke(
        cli, ["plan", str(path), "--window", "night", "-o", "json", "--kubeconfig", str(kubeconfig)]
    )
    assert result.exit_code == 3, result.output
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem.startswith(
        "team-2001: floor minReadyReplicas 100 in [*] is above the "
        "replicas of 20 workload(s) (largest: 4)"
    )


def test_every_kubeconfig_and_context_option_has_help() -> None:
    """`--kubeconfig` and `--context` of every command say what they are in --help."""
    bare = [
        f"{name} {param.opts[0]}"
        for name, command in cli.commands.items()
        for param in command.params
        if isinstance(param, click.Option)
        and param.name in ("kubeconfig", "context")
        and not param.help
    ]
    assert bare == []


def test_tables_honour_columns(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COLUMNS=70: the status table fits in 70 columns, piped or not."""
    folder = _schedules(tmp_path)
    _hold(emulator, kubeconfig, datetime.now(UTC) + timedelta(hours=2))
    monkeypatch.setenv("COLUMNS", "70")
    lines = _status(folder, kubeconfig).splitlines()
    assert lines and max(len(line) for line in lines) <= 70
