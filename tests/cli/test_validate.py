"""`tidal validate`: exit codes, FILE:LINE:COL lines on stderr, JSON on stdout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.upstream import CRDS
from tidal.cli.main import cli
from tidal.cli.validate import NOT_CHECKED

REPO = Path(__file__).parents[2]
BROKEN = REPO / "tests" / "loading" / "broken"
EXPECTED = (REPO / "tests" / "loading" / "broken.expected").read_text().splitlines()


def test_examples_validate() -> None:
    """`tidal validate schedules/` exits 0 and names the schedules."""
    result = CliRunner().invoke(cli, ["validate", str(REPO / "schedules")])
    assert result.exit_code == 0, result.output
    assert "3 schedule(s) valid" in result.stdout
    assert result.stderr == ("" if CRDS is not None else NOT_CHECKED + "\n")


def test_without_crds_validate_says_what_it_did_not_check(tmp_path: Path, monkeypatch: Any) -> None:
    """No CRD schemas at hand: `ok` on stdout, and one stderr line saying the policy fields
    were not checked and how to check them (--crds, TIDAL_KARMADA_CRDS, tidal plan)."""
    monkeypatch.setenv("TIDAL_KARMADA_CRDS", str(tmp_path / "absent"))
    result = CliRunner().invoke(cli, ["validate", str(REPO / "schedules" / "team-1005.yaml")])
    assert result.exit_code == 0 and result.stdout.startswith("ok: 1 schedule(s) valid")
    (line,) = result.stderr.splitlines()
    assert "not checked against the Karmada CRD schemas" in line
    assert "--crds DIR" in line and "tidal plan" in line
    empty = CliRunner().invoke(
        cli, ["validate", "--crds", str(tmp_path), str(REPO / "schedules" / "team-1005.yaml")]
    )
    assert empty.exit_code == 0 and empty.stderr == line + "\n"


def test_broken_directory_reports_every_error() -> None:
    """All errors of all files, one FILE:LINE:COL line each on stderr, then exit 1."""
    result = CliRunner().invoke(cli, ["validate", str(BROKEN)])
    assert result.exit_code == 1
    *lines, summary = result.stderr.splitlines()
    files = {line.split(":")[0] for line in lines}
    assert summary == f"{len(lines)} error(s) in {len(files)} file(s)"
    assert [line.replace(f"{BROKEN}/", "") for line in lines] == [
        line for line in EXPECTED if CRDS is not None or "Karmada would drop" not in line
    ]


def test_json_output() -> None:
    """-o json prints a list of {file, line, column, message} on stdout."""
    path = BROKEN / "unknown-timezone.yaml"
    result = CliRunner().invoke(cli, ["validate", "-o", "json", str(path)])
    assert result.exit_code == 1
    assert json.loads(result.stdout) == [
        {
            "file": str(path),
            "line": 6,
            "column": 3,
            "message": "spec.timeZone: unknown time zone 'Europe/Berln'; "
            "did you mean Europe/Berlin?",
        }
    ]


def test_json_output_when_valid() -> None:
    """-o json prints [] and exits 0 for valid files."""
    result = CliRunner().invoke(
        cli, ["validate", "-o", "json", str(REPO / "schedules" / "team-1005.yaml")]
    )
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_paths_are_required() -> None:
    """Without a path, click reports the usage error (exit 2) instead of validating nothing."""
    result = CliRunner().invoke(cli, ["validate"])
    assert result.exit_code == 2 and "PATHS" in result.stderr


def test_files_and_directories_mix(tmp_path: Path) -> None:
    """A good file and a missing path: the missing one is reported, exit 1."""
    result = CliRunner().invoke(
        cli,
        ["validate", str(REPO / "schedules" / "team-3007.yaml"), str(tmp_path / "missing.yaml")],
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"{tmp_path / 'missing.yaml'}:1:1: no such file or directory; check the path"
    )


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed `tidal` script validates a directory and exits 1 with located errors."""
    shutil.copy(BROKEN / "bad-cron.yaml", tmp_path / "bad-cron.yaml")
    script = Path(sys.executable).with_name("tidal")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tidal"]
    done = subprocess.run(
        [*command, "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith(f"{tmp_path / 'bad-cron.yaml'}:9:7: ")
    assert "Traceback" not in done.stderr


def test_with_a_kubeconfig_policies_are_checked_against_the_published_schemas(
    emulator: Any, kubeconfig: Path, monkeypatch: Any
) -> None:
    """No CRD directory, but a control plane: `validate --kubeconfig` checks the patch against
    the schema the apiserver publishes and locates a misspelt field."""
    if not emulator.validator.upstream:
        import pytest

        pytest.skip("the emulator found no upstream CRDs to publish (offline, uncached)")
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    source = (REPO / "schedules" / "team-1005.yaml").read_text()
    typo = Path(kubeconfig.parent / "team-1005.yaml")
    typo.write_text(source.replace("weightPreference:", "weightPreferences:", 1))
    result = CliRunner().invoke(cli, ["validate", str(typo), "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 1, result.output
    assert (
        "unknown field `weightPreferences` (did you mean `weightPreference`?)"
        in result.stderr.splitlines()[0]
    )
    plain = CliRunner().invoke(cli, ["validate", str(typo)])
    assert plain.exit_code == 0 and NOT_CHECKED in plain.stderr
