"""`tidal plan` against the emulator: the dry run shows waves and predictions, exits 3 when a
floor would break, and writes nothing either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import MakeEmulator, invoke_cli, schedule_text, write_schedule, writes
from tests.upstream import needs_upstream_crds
from tidal.cli.main import cli
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-p",
    """
    waveSize: 50%
    floors:
      - clusters: [FLOOR_CLUSTER]
        minReadyReplicas: 1
""",
)


def _setup(
    make_switch_emulator: MakeEmulator, tmp_path: Path, floor_cluster: str
) -> tuple[Emulator, Path, Path]:
    emu = make_switch_emulator()
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = write_schedule(tmp_path, SCHEDULE.replace("FLOOR_CLUSTER", floor_cluster))
    emu.reset_requests()
    return emu, kubeconfig, path


def test_safe_plan_shows_waves_and_exits_0(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A safe plan lists two waves and the predicted 0/100 end state, and writes nothing."""
    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-b")
    result = invoke_cli("plan", path, kubeconfig, "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["safe"] is True and len(data["waves"]) == 2
    assert data["steps"][0]["assigned"] == {"cluster-a": 16, "cluster-b": 4}
    assert data["steps"][-1]["assigned"] == {"cluster-b": 20}
    assert data["trigger"] == "touch"
    assert not writes(emu)
    table = invoke_cli("plan", path, kubeconfig)
    assert table.exit_code == 0 and "wave 2" in table.stdout


def test_unsafe_plan_exits_3_and_switch_writes_nothing(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A floor on cluster-a that the night weights break: plan exits 3, switch writes nothing."""
    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-a")
    result = invoke_cli("plan", path, kubeconfig, "-o", "json")
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["safe"] is False
    switched = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert switched.exit_code == 3, switched.output
    assert not writes(emu)


def test_unknown_window_is_invalid_input(tmp_path: Path) -> None:
    """A window the schedule does not have exits 1 with a one-line error."""
    path = write_schedule(tmp_path, SCHEDULE.replace("FLOOR_CLUSTER", "cluster-b"))
    result = CliRunner().invoke(cli, ["plan", str(path), "--window", "noon"])
    assert result.exit_code == 1
    assert "no window 'noon'" in result.stderr


def _night_with(tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    text = SCHEDULE.replace("FLOOR_CLUSTER", "cluster-b").replace(old, new)
    return write_schedule(tmp_path, text), text


def _position(text: str, key: str) -> str:
    """LINE:COL (1-based) of the first `key:` in the text."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(key + ":") or line.lstrip().startswith("- " + key + ":"):
            return f"{number}:{line.index(key) + 1}"
    raise AssertionError(key)


@needs_upstream_crds
@pytest.mark.parametrize("command", ["plan", "switch"])
def test_a_typo_in_a_patch_is_refused_against_the_published_schema(
    make_switch_emulator: MakeEmulator,
    tmp_path: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`weightPreferences:` (a typo the apiserver would prune), no CRDs at hand for the CLI:
    plan and switch check the patch against the schema the apiserver publishes (OpenAPI v3)
    and refuse it at the key, exit 1, with no write (not even a dry run)."""
    emu, kubeconfig, _ = _setup(make_switch_emulator, tmp_path, "cluster-b")
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    path, text = _night_with(tmp_path, "weightPreference:", "weightPreferences:")
    result = (
        invoke_cli(command, path, kubeconfig, "--yes")
        if command == "switch"
        else invoke_cli(command, path, kubeconfig)
    )
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        f"{path}:{_position(text, 'weightPreferences')}: spec.windows[0]"
        ".policies[0].patch.spec.placement.replicaScheduling"
        ".weightPreferences: "
    )
    assert "unknown field `weightPreferences`" in first
    assert "Traceback" not in result.output
    assert not writes(emu)
    assert not [r for r in emu.request_log() if r.verb == "patch"]


@pytest.mark.parametrize("command", ["plan", "switch"])
def test_without_any_schema_a_patch_is_refused_unless_allowed(
    make_switch_emulator: MakeEmulator,
    tmp_path: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An emulator with no schema source (offline, empty cache) and no CRDs for the CLI: plan
    and switch say so in one line and refuse the patch, exit 1, nothing written; with
    --allow-unchecked-fields they go on after a one-line warning."""
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("GOPROXY", "off")
    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-b")
    assert emu.validator.source.directory is None and emu.validator.source.notice
    extra = ("--yes",) if command == "switch" else ()
    refused = invoke_cli(command, path, kubeconfig, *extra)
    assert refused.exit_code == 1, refused.output
    (line,) = refused.stderr.splitlines()
    assert "no Karmada policy schema" in line and "--allow-unchecked-fields" in line
    assert not writes(emu)
    if command == "plan":
        allowed = invoke_cli(command, path, kubeconfig, "--allow-unchecked-fields")
        assert allowed.exit_code == 0, allowed.output
        assert allowed.stderr.splitlines()[0].startswith("warning: no Karmada policy schema")


@pytest.mark.parametrize("command", ["plan", "switch"])
def test_a_wrong_value_type_is_located_not_a_traceback(
    make_switch_emulator: MakeEmulator,
    tmp_path: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`weight: "high"`, the CRDs not at hand for the CLI: one located line at the weight
    (the server's dry-run answer), exit 1, nothing written."""
    emu, kubeconfig, _ = _setup(make_switch_emulator, tmp_path, "cluster-b")
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    path, text = _night_with(tmp_path, "weight: 1", 'weight: "high"')
    result = (
        invoke_cli(command, path, kubeconfig, "--yes")
        if command == "switch"
        else invoke_cli(command, path, kubeconfig)
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        f"{path}:{_position(text, 'weight')}: spec.windows[0].policies[0]"
        ".patch.spec.placement.replicaScheduling.weightPreference"
        ".staticWeightList[0].weight: "
    )
    assert not writes(emu)


@pytest.mark.parametrize("command", ["plan", "switch"])
def test_a_floor_on_a_cluster_that_does_not_exist_is_the_first_problem(
    make_switch_emulator: MakeEmulator, tmp_path: Path, command: str
) -> None:
    """A floor naming cluster-c (no such Cluster): plan and switch name that root cause first,
    with the Clusters that exist, and fold the breaches it explains instead of listing them."""
    emu, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-c")
    options = ("--yes", "-o", "json") if command == "switch" else ("-o", "json")
    result = invoke_cli(command, path, kubeconfig, *options)
    assert result.exit_code == 3, result.output
    lines = [
        line.strip()
        for line in (result.stderr if command == "switch" else "").splitlines()
        if line.startswith("  ")
    ]
    problems = json.loads(result.stdout)["problems"] if command == "plan" else lines
    assert problems[0].startswith(
        "floor cluster cluster-c does not exist (Clusters: "
        "cluster-a, cluster-b); fix the floor's clusters"
    )
    assert "explains" in problems[0]
    assert not any("in cluster-c" in p for p in problems[1:]), problems
    assert not writes(emu)


def test_validate_with_a_kubeconfig_checks_floor_clusters(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`tidal validate --kubeconfig` names a floor cluster that is not a Cluster, located at
    the floor's entry, exit 1; without --kubeconfig the file alone is valid."""
    _, kubeconfig, path = _setup(make_switch_emulator, tmp_path, "cluster-c")
    offline = CliRunner().invoke(cli, ["validate", str(path)])
    assert offline.exit_code == 0, offline.output
    result = CliRunner().invoke(cli, ["validate", str(path), "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 1, result.output
    text = path.read_text().splitlines()
    line = next(i for i, t in enumerate(text, start=1) if "cluster-c" in t)
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{path}:{line}:")
    assert first.endswith(
        "spec.rollout.floors[0].clusters[0]: cluster 'cluster-c' does not "
        "exist (Clusters: cluster-a, cluster-b); fix the floor's clusters"
    )


def test_capacity_starved_static_switch_is_warned_or_refused_naming_workloads(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Static weights ignore free capacity (pkg/scheduler/core/assignment.go: assignByStatic
    WeightStrategy uses no estimator), so moving 4x5 one-cpu replicas into a 6-cpu cluster-b
    would leave pods Pending until waveTimeout: `tidal plan` names the workloads and the
    missing resources, as a warning while the floors hold and a refusal (exit 3) when the
    Pending replicas break one (here: 60% of each workload ready), before any write."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="6")
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    emu.reset_requests()
    (tmp_path / "plain").mkdir()
    (tmp_path / "guarded").mkdir()
    plain = write_schedule(tmp_path / "plain", schedule_text("team-p", "waveSize: 50%\n"))
    warned = invoke_cli("plan", plain, kubeconfig, "-o", "json")
    assert warned.exit_code == 0, warned.output
    notes = [w for w in json.loads(warned.stdout)["warnings"] if "do not fit" in w]
    assert notes and "cluster-b" in notes[0] and "cpu" in notes[0]
    assert "ai-app/Deployment/web-" in notes[0]
    guarded = write_schedule(
        tmp_path / "guarded",
        schedule_text("team-p", "waveSize: 50%\nfloors:\n  - minAvailablePercent: 60\n"),
    )
    refused = invoke_cli("plan", guarded, kubeconfig, "-o", "json")
    assert refused.exit_code == 3, refused.output
    problems = json.loads(refused.stdout)["problems"]
    assert any("do not fit" in p and "ai-app/Deployment/web-" in p for p in problems)
    assert not writes(emu)
