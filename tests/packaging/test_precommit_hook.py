"""The pre-commit hook that schedules repositories use to run `tidal validate`."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tidal.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def hook() -> dict[str, object]:
    """The tidal-validate hook definition."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return next(h for h in hooks if h["id"] == "tidal-validate")


def run_hook(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """Run the hook's entry and args the way pre-commit does, from the repository root."""
    definition = hook()
    args = definition["args"]
    assert isinstance(args, list)
    argv = shlex.split(str(definition["entry"])) + [str(a) for a in args]
    assert argv[0] == "tidal"
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(cli, argv[1:], catch_exceptions=False)
    return result.exit_code, result.stderr


def test_hook_definition() -> None:
    """A python-language hook on YAML files, run once over the whole tree (cross-file checks)."""
    definition = hook()
    assert definition["entry"] == "tidal validate"
    assert definition["language"] == "python"
    assert definition["types"] == ["yaml"]
    assert definition["pass_filenames"] is False and definition["require_serial"] is True


def test_hook_passes_a_good_schedules_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a repository holding the examples (and its own hidden config) the hook exits 0."""
    repo = tmp_path / "schedules-repo"
    shutil.copytree(ROOT / "schedules", repo / "schedules")
    (repo / ".pre-commit-config.yaml").write_text("repos: []\n")
    code, errors = run_hook(repo, monkeypatch)
    assert code == 0, errors


def test_hook_fails_on_a_broken_schedule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A schedule with an unknown time zone fails the hook with a located error."""
    repo = tmp_path / "schedules-repo"
    shutil.copytree(ROOT / "schedules", repo / "schedules")
    broken = repo / "schedules" / "team-1005.yaml"
    broken.write_text(broken.read_text().replace("Asia/Shanghai", "Asia/Atlantis"))
    code, errors = run_hook(repo, monkeypatch)
    assert code == 1
    assert "schedules/team-1005.yaml:" in errors
