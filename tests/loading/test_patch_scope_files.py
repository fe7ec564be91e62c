"""`tidal validate` on patches that reach beyond the placement: one located line each."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tidal.cli.main import cli

HEAD = """apiVersion: tidal.io/v1alpha1
kind: TidalSchedule
metadata: {name: team-x}
spec:
  timeZone: UTC
  windows:
    - name: night
      start: "23:00"
      policies:
        - kind: ClusterPropagationPolicy
          name: team-cpp
"""


def _validate(tmp_path: Path, change: str) -> tuple[int, list[str]]:
    path = tmp_path / "team-x.yaml"
    path.write_text(HEAD + change)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    return result.exit_code, result.stderr.splitlines()[:-1]


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (
            "          patch:\n            spec:\n              resourceSelectors:\n"
            "                - {apiVersion: apps/v1, kind: Deployment}\n",
            "14:15",
            "spec.resourceSelectors may not be patched",
        ),
        ("          patch: {spec: null}\n", "12:19", "spec must be a mapping"),
        ("          patch: {spec: {placement: null}}\n", "12:26", "not null"),
        ("          patch: {metadata: {labels: {x: y}}}\n", "12:19", "metadata is never patched"),
        (
            "          allowFields: [metadata.labels]\n"
            "          patch: {spec: {placement: {clusterAffinity: {clusterNames: [b]}}}}\n",
            "12:25",
            "metadata is never patched",
        ),
    ],
)
def test_out_of_scope_patch_is_one_located_error(
    tmp_path: Path, change: str, where: str, words: str
) -> None:
    """The error names FILE:LINE:COL of the offending key and what to do; exit 1."""
    code, lines = _validate(tmp_path, change)
    assert code == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{tmp_path / 'team-x.yaml'}:{where}: "), lines
    assert words in lines[0]


def test_allow_fields_lets_a_patch_change_a_listed_field(tmp_path: Path) -> None:
    """allowFields: [spec.priority] makes a priority patch valid."""
    code, lines = _validate(
        tmp_path, "          allowFields: [spec.priority]\n          patch: {spec: {priority: 3}}\n"
    )
    assert (code, lines) == (0, [])


def test_switch_refuses_a_null_spec_patch_before_touching_anything(tmp_path: Path) -> None:
    """`tidal switch` on `patch: {spec: null}`: exit 1 with the located line, no traceback,
    no API request (the kubeconfig does not even exist)."""
    path = tmp_path / "team-x.yaml"
    path.write_text(HEAD + "          patch: {spec: null}\n")
    result = CliRunner().invoke(
        cli,
        [
            "switch",
            str(path),
            "--window",
            "night",
            "--yes",
            "--kubeconfig",
            str(tmp_path / "missing"),
        ],
    )
    assert result.exit_code == 1
    assert f"{path}:12:19: " in result.stderr and "Traceback" not in result.output
    assert not isinstance(result.exception, TypeError)


def test_schedule_level_allow_fields_apply_to_every_change(tmp_path: Path) -> None:
    """spec.allowFields lets every policy change of the schedule set the fields listed; a bad
    entry there is reported where it is written."""
    head = HEAD.replace("  timeZone: UTC\n", "  timeZone: UTC\n  allowFields: [spec.priority]\n")
    path = tmp_path / "team-x.yaml"
    path.write_text(head + "          patch: {spec: {priority: 3}}\n")
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    path.write_text(
        head.replace("[spec.priority]", "[spec.priority, metadata.labels]")
        + "          patch: {spec: {priority: 3}}\n"
    )
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()[:-1]
    assert line.startswith(f"{path}:6:") and "spec.allowFields[1]" in line
