"""The loader: examples load with their manifests; each broken file gives its exact lines."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tests.upstream import CRDS
from tidal.domain.schedule import PolicyRef
from tidal.loading import LocatedError, load_schedule_file, load_schedules

HERE = Path(__file__).parent
REPO = HERE.parents[1]
BROKEN = HERE / "broken"
EXPECTED_FILE = HERE / "broken.expected"  # one `FILE:LINE:COL: message` per line, FILE relative


def _expected() -> dict[str, list[str]]:
    by_file: dict[str, list[str]] = defaultdict(list)
    for line in EXPECTED_FILE.read_text(encoding="utf-8").splitlines():
        by_file[line.split(":", 1)[0]].append(line)
    return by_file


EXPECTED = _expected()


@pytest.fixture(scope="module")
def broken_lines() -> dict[str, list[str]]:
    result = load_schedules([BROKEN], crd_dir=CRDS)
    by_file: dict[str, list[str]] = defaultdict(list)
    for error in result.errors:
        relative = str(Path(error.file).relative_to(BROKEN))
        by_file[relative].append(str(error).replace(f"{BROKEN}/", ""))
    return by_file


def test_examples_are_valid() -> None:
    """`schedules/` loads without errors: three schedules with their swap manifests read."""
    result = load_schedules([REPO / "schedules"])
    assert result.errors == []
    names = sorted(s.schedule.name for s in result.schedules)
    assert names == ["team-1005", "team-2001", "team-3007"]
    team_2001 = result.by_name("team-2001")
    assert team_2001 is not None
    day = team_2001.schedule.window("day").policies[0]
    assert day.policy_name == "team-2001-cpp-day"
    assert day.swap is not None and day.swap.manifest is not None
    assert day.swap.manifest["kind"] == "ClusterPropagationPolicy"
    assert (
        PolicyRef("ClusterPropagationPolicy", None, "team-2001-cpp-night")
        in team_2001.schedule.policy_refs()
    )
    suspended = result.by_name("team-3007")
    assert suspended is not None and suspended.schedule.spec.suspend


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_file_gives_exact_lines(name: str, broken_lines: dict[str, list[str]]) -> None:
    """Each broken file reports exactly its expected FILE:LINE:COL: message lines."""
    expected = EXPECTED[name]
    if CRDS is None:  # patches are checked against the CRDs only when present
        expected = [line for line in expected if "Karmada would drop" not in line]
    assert broken_lines[name] == expected


def test_every_broken_file_is_reported() -> None:
    """Every schedule in broken/ except the first owner of a shared policy fails."""
    result = load_schedules([BROKEN])
    assert [s.schedule.name for s in result.schedules] == ["overlap-a"]
    reported = {Path(e.file).name for e in result.errors}
    schedules = {p.name for p in BROKEN.glob("*.yaml")} - {"overlap-a.yaml"}
    assert schedules <= reported | {"not-a-policy.yaml"}


@pytest.mark.parametrize(
    ("name", "position"),
    [
        ("bad-yaml.yaml", (9, 1)),
        ("unknown-timezone.yaml", (6, 3)),
        ("bad-cron.yaml", (9, 7)),
        ("duplicate-window.yaml", (14, 7)),
        ("swap-escape.yaml", (14, 13)),
        ("overlap-b.yaml", (12, 11)),
        ("wrong-types.yaml", (7, 3)),
    ],
)
def test_issue_cases_point_at_the_key(name: str, position: tuple[int, int]) -> None:
    """The issue's broken cases point at the offending key (first error of the file)."""
    first = next(e for e in load_schedules([BROKEN]).errors if Path(e.file).name == name)
    assert (first.line, first.col) == position


def test_located_error_formats() -> None:
    """LocatedError prints FILE:LINE:COL: message and serialises to the JSON shape."""
    error = LocatedError("a.yaml", 3, 5, "spec.timeZone: unknown")
    assert str(error) == "a.yaml:3:5: spec.timeZone: unknown"
    assert error.to_json() == {
        "file": "a.yaml",
        "line": 3,
        "column": 5,
        "message": "spec.timeZone: unknown",
    }


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    """A path that does not exist is reported, not raised."""
    result = load_schedules([tmp_path / "nope.yaml"])
    assert [e.message for e in result.errors] == ["no such file or directory; check the path"]


def test_directory_skips_hidden_and_foreign_documents(tmp_path: Path) -> None:
    """A ConfigMap volume's ..data copies and other API groups' files are not schedules."""
    source = (REPO / "schedules" / "team-3007.yaml").read_text()
    (tmp_path / "..2026_12_02").mkdir()
    (tmp_path / "..2026_12_02" / "team-3007.yaml").write_text(source)
    (tmp_path / "team-3007.yaml").symlink_to(tmp_path / "..2026_12_02" / "team-3007.yaml")
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = load_schedules([tmp_path])
    assert result.errors == [] and len(result.schedules) == 1


def test_explicit_foreign_document_is_an_error(tmp_path: Path) -> None:
    """A file named explicitly must be a schedule."""
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    loaded, errors = load_schedule_file(path)
    assert loaded is None
    assert [str(e) for e in errors] == [
        f"{path}:2:1: kind: a v1 ConfigMap is not a TidalSchedule; pass schedule files "
        "(apiVersion tidal.io/v1alpha1)"
    ]


def test_duplicate_schedule_names_across_files(tmp_path: Path) -> None:
    """Two files with one metadata.name: the later file is reported at its name."""
    source = (REPO / "schedules" / "team-3007.yaml").read_text()
    (tmp_path / "a.yaml").write_text(source)
    (tmp_path / "b.yaml").write_text(source.replace("team-3007-pp", "other-pp"))
    result = load_schedules([tmp_path])
    [error] = result.errors
    assert error.file.endswith("b.yaml") and (error.line, error.col) == (6, 3)
    assert "already used" in error.message
    assert [s.path.name for s in result.schedules] == ["a.yaml"]


def test_digest_follows_the_manifest(tmp_path: Path) -> None:
    """The digest changes when a swap manifest changes, so reload notices it."""
    (tmp_path / "policies").mkdir()
    for path in (REPO / "schedules" / "policies").iterdir():
        (tmp_path / "policies" / path.name).write_text(path.read_text())
    (tmp_path / "t.yaml").write_text((REPO / "schedules" / "team-2001.yaml").read_text())
    first = load_schedules([tmp_path]).schedules[0].digest
    manifest = tmp_path / "policies" / "team-2001-cpp-day.yaml"
    manifest.write_text(manifest.read_text() + "# edited\n")
    assert load_schedules([tmp_path]).schedules[0].digest != first


def test_swap_to_the_same_policy_is_refused(tmp_path: Path) -> None:
    """A swap whose manifest is the `from` policy itself is refused at `to` (use a patch)."""
    (tmp_path / "policies").mkdir()
    manifest = (REPO / "schedules" / "policies" / "team-2001-cpp-day.yaml").read_text()
    (tmp_path / "policies" / "team-2001-cpp-day.yaml").write_text(manifest)
    source = (REPO / "schedules" / "team-2001.yaml").read_text()
    path = tmp_path / "t.yaml"
    path.write_text(
        source.replace("from: team-2001-cpp-night", "from: team-2001-cpp-day").replace(
            "to: policies/team-2001-cpp-night.yaml", "to: policies/team-2001-cpp-day.yaml"
        )
    )
    loaded, errors = load_schedule_file(path)
    assert loaded is None and len(errors) == 2
    assert all("a swap deletes `from` and creates `to`" in e.message for e in errors)
