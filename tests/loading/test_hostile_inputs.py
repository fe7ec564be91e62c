"""Hostile schedule files: each gets one located error, none a traceback or a hang."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.upstream import CRDS, needs_upstream_crds
from tidal.loading import load_schedule_file, load_schedules
from tidal.loading.policies import PolicySchemas
from tidal.loading.yamlfile import MAX_DEPTH, MAX_FILE_BYTES

needs_crds = needs_upstream_crds

REPO = Path(__file__).parents[2]
GOOD = (REPO / "schedules" / "team-3007.yaml").read_text()
MANIFEST = (REPO / "schedules" / "policies" / "team-2001-cpp-day.yaml").read_text()
# the fields of a policy spec (v1.18.2 CRD), as an unknown field in it lists them
ALLOWED_SPEC = (
    "activationPreference, association, conflictResolution, dependentOverrides, "
    "failover, placement, preemption, preserveResourcesOnDeletion, priority, "
    "propagateDeps, resourceSelectors, schedulePriority, schedulerName, suspension"
)
SWAP_SCHEDULE = """\
apiVersion: tidal.io/v1alpha1
kind: TidalSchedule
metadata:
  name: swapper
spec:
  timeZone: UTC
  windows:
    - name: day
      start: "07:00"
      policies:
        - kind: ClusterPropagationPolicy
          swap:
            from: team-2001-cpp-night
            to: policies/day.yaml
"""


def only_error(path: Path) -> str:
    loaded, errors = load_schedule_file(path)
    assert loaded is None and len(errors) == 1, errors
    assert "internal error" not in errors[0].message
    return str(errors[0])


def write(tmp_path: Path, text: str | bytes, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_yaml_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """Nine levels of nine-fold aliases (a billion laughs) stop at the expansion budget."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    path = write(tmp_path, "\n".join(lines) + "\n")
    started = time.monotonic()
    error = only_error(path)
    assert time.monotonic() - started < 5
    assert "expands to more than" in error and "aliases" in error


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    """An alias inside its own anchor cannot loop forever."""
    assert "recursive alias" in only_error(write(tmp_path, "&x [1, *x]\n"))


def test_ten_megabyte_file_is_refused_unread(tmp_path: Path) -> None:
    """A 10 MB file is refused by size at 1:1."""
    path = write(tmp_path, "# " + "x" * (10 * 1024 * 1024) + "\n")
    error = only_error(path)
    assert error == (
        f"{path}:1:1: file is {path.stat().st_size} bytes, more than the limit "
        f"of {MAX_FILE_BYTES}; split it or remove what is not a schedule"
    )


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    """Ten thousand nested lists stop at the depth limit, where it is passed."""
    path = write(tmp_path, "a: " + "[" * 10_000 + "]" * 10_000 + "\n")
    assert only_error(path) == (
        f"{path}:1:{3 + MAX_DEPTH}: nesting deeper than {MAX_DEPTH} levels; flatten the file"
    )


def test_non_utf8_bytes_are_located(tmp_path: Path) -> None:
    """A Latin-1 byte is reported at its line and column."""
    path = write(tmp_path, b"apiVersion: tidal.io/v1alpha1\nkind: Tidal\xe9Schedule\n")
    assert only_error(path) == f"{path}:2:12: byte 0xe9 is not UTF-8; save the file as UTF-8"


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    """The second occurrence of a key is reported."""
    path = write(tmp_path, GOOD.replace("  suspend: true\n", "  suspend: true\n  suspend: false\n"))
    error = only_error(path)
    assert error.startswith(f'{path}:10:3: invalid YAML: found duplicate key "suspend"')


def test_tabs_in_indentation_are_refused(tmp_path: Path) -> None:
    """A tab where YAML needs spaces gets a message saying so."""
    path = write(tmp_path, GOOD.replace("  suspend: true", "\tsuspend: true"))
    assert only_error(path) == (
        f"{path}:9:1: a tab character where YAML needs spaces; indent with spaces only"
    )


def test_custom_tags_are_not_constructed(tmp_path: Path) -> None:
    """A python/object tag is refused, never executed."""
    path = write(tmp_path, GOOD.replace("suspend: true", "suspend: !!python/object:os.system x"))
    assert "custom tag" in only_error(path) or "invalid YAML" in only_error(path)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the file is empty"),
        ("# just a comment\n", "the file is empty"),
        ("- a\n- b\n", "not a TidalSchedule mapping"),
        ("just text\n", "not a TidalSchedule mapping"),
        ("a: 1\n---\nb: 2\n", "a second YAML document"),
        ("\x00\x01", "invalid YAML"),
    ],
)
def test_not_one_schedule_mapping(tmp_path: Path, text: str, fragment: str) -> None:
    """Empty files, lists, bare text and multi-document streams are refused."""
    assert fragment in only_error(write(tmp_path, text))


def _swap_tree(tmp_path: Path) -> Path:
    (tmp_path / "tree" / "policies").mkdir(parents=True)
    return write(tmp_path / "tree", SWAP_SCHEDULE)


def test_swap_manifest_symlinked_out_of_the_tree(tmp_path: Path) -> None:
    """A manifest that is a symlink to a file outside the schedule's directory is refused."""
    schedule = _swap_tree(tmp_path)
    outside = write(tmp_path, MANIFEST, "outside.yaml")
    (tmp_path / "tree" / "policies" / "day.yaml").symlink_to(outside)
    assert only_error(schedule) == (
        f"{schedule}:14:13: spec.windows[0].policies[0].swap.to: swap manifest "
        "'policies/day.yaml' resolves outside the schedule's directory (a symlink?); "
        "keep the real file inside it"
    )


def test_symlinked_directory_out_of_the_tree(tmp_path: Path) -> None:
    """A symlinked directory leading outside is refused just the same."""
    (tmp_path / "tree").mkdir()
    schedule = write(tmp_path / "tree", SWAP_SCHEDULE)
    (tmp_path / "elsewhere").mkdir()
    write(tmp_path / "elsewhere", MANIFEST, "day.yaml")
    (tmp_path / "tree" / "policies").symlink_to(tmp_path / "elsewhere")
    assert "resolves outside" in only_error(schedule)


def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    """A manifest symlink that points at itself is an error, not a crash."""
    schedule = _swap_tree(tmp_path)
    loop = tmp_path / "tree" / "policies" / "day.yaml"
    loop.symlink_to(loop)
    assert "policies/day.yaml" in only_error(schedule)


def test_symlink_inside_the_tree_is_fine(tmp_path: Path) -> None:
    """A symlink that stays inside (a ConfigMap volume's ..data) is accepted."""
    schedule = _swap_tree(tmp_path)
    (tmp_path / "tree" / "..data").mkdir()
    real = write(tmp_path / "tree" / "..data", MANIFEST, "day.yaml")
    (tmp_path / "tree" / "policies" / "day.yaml").symlink_to(real)
    loaded, errors = load_schedule_file(schedule)
    assert errors == [] and loaded is not None
    assert loaded.schedule.window("day").policies[0].policy_name == "team-2001-cpp-day"


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            MANIFEST.replace("kind: ClusterPropagationPolicy", "kind: PropagationPolicy"),
            [
                "4:1: kind: kind PropagationPolicy does not match the schedule's policy kind "
                "ClusterPropagationPolicy; make them the same (swapped in by s.yaml)"
            ],
        ),
        (
            MANIFEST.replace(
                "apiVersion: policy.karmada.io/v1alpha1", "apiVersion: apps/v1"
            ).replace("kind: ClusterPropagationPolicy", "kind: Deployment"),
            [
                "3:1: apiVersion: apiVersion must be policy.karmada.io/v1alpha1; "
                "this file is not a "
                "Karmada policy (swapped in by s.yaml)",
                "4:1: kind: kind 'Deployment' is not a Karmada policy; the schedule swaps in a "
                "ClusterPropagationPolicy (swapped in by s.yaml)",
            ],
        ),
        pytest.param(
            MANIFEST.replace("replicaSchedulingType: Divided", "replicaSchedulingType: Split"),
            [
                "20:7: spec.placement.replicaScheduling.replicaSchedulingType: "
                "'Split' is not one of ['Duplicated', 'Divided'] (Karmada CRD schema); "
                "fix the value (swapped in by s.yaml)"
            ],
            marks=needs_crds,
        ),
        pytest.param(
            MANIFEST.replace("  placement:", "  placment:"),
            [
                "16:3: spec.placment: unknown field `placment` (did you mean `placement`?) for a "
                "Karmada policy (Karmada would drop it); allowed: " + ALLOWED_SPEC + "; fix the "
                "spelling or remove it (swapped in by s.yaml)"
            ],
            marks=needs_crds,
        ),
    ],
)
def test_manifest_that_is_not_a_valid_policy(
    tmp_path: Path, manifest: str, expected: list[str]
) -> None:
    """Manifests of the wrong kind, another API, or against the CRD schema are located."""
    schedule = _swap_tree(tmp_path)
    target = write(tmp_path / "tree" / "policies", manifest, "day.yaml")
    errors = load_schedule_file(schedule, schemas=PolicySchemas.from_crd_dir(CRDS))[1]
    assert [str(e) for e in errors] == [f"{target}:{line}" for line in expected]


def test_a_broken_file_never_takes_the_others_down(tmp_path: Path) -> None:
    """With a bomb and a good file side by side, the good schedule still loads."""
    write(tmp_path, GOOD, "good.yaml")
    write(tmp_path, "&x [1, *x]\n", "bad.yaml")
    result = load_schedules([tmp_path])
    assert [s.schedule.name for s in result.schedules] == ["team-3007"]
    assert [Path(e.file).name for e in result.errors] == ["bad.yaml"]


def test_impossible_dates_are_located(tmp_path: Path) -> None:
    """An unquoted impossible date is a located model error, not a YAML crash."""
    path = write(
        tmp_path, GOOD.replace("  suspend: true\n", "  suspend: true\n  skipDates: [2026-13-45]\n")
    )
    assert only_error(path) == (
        f"{path}:10:15: spec.skipDates[0]: expected a date (YYYY-MM-DD), got '2026-13-45'"
    )


def _many_windows(count: int, policies_each: int = 1) -> str:
    """A schedule with `count` small flow-style windows (about 60 bytes each)."""
    policy = "{kind: ClusterPropagationPolicy, name: p, patch: {spec: {priority: 1}}}"
    items = "\n".join(
        f'    - {{name: w{i}, start: "{i % 24:02d}:{i % 60:02d}", policies: '
        f"[{', '.join([policy] * policies_each)}]}}"
        for i in range(count)
    )
    return (
        "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\nmetadata: {name: big}\n"
        f"spec:\n  timeZone: UTC\n  windows:\n{items}\n"
    )


def test_five_thousand_windows_are_refused_before_parsing(tmp_path: Path) -> None:
    """5,000 windows under the size limit: one located error at `windows`, in under a second."""
    from tidal.domain.schedule import MAX_WINDOWS

    text = _many_windows(5000, 0).replace("policies: []", "policies: [{}]")
    path = write(tmp_path, text)
    assert path.stat().st_size < MAX_FILE_BYTES
    started = time.monotonic()
    error = only_error(path)
    assert time.monotonic() - started < 1.0
    assert error.startswith(f"{path}:6:3: spec.windows: ")
    assert f"more than {MAX_WINDOWS} windows" in error


def test_too_many_policy_changes_are_refused_before_parsing(tmp_path: Path) -> None:
    """A window listing more policy changes than the limit is one located error, fast."""
    from tidal.domain.schedule import MAX_POLICIES_PER_WINDOW

    path = write(tmp_path, _many_windows(2, MAX_POLICIES_PER_WINDOW + 1))
    started = time.monotonic()
    error = only_error(path)
    assert time.monotonic() - started < 1.0
    assert f"{path}:7:" in error and "spec.windows[0].policies" in error
    assert f"more than {MAX_POLICIES_PER_WINDOW} policy changes" in error


def test_half_megabyte_schedule_is_refused_by_size(tmp_path: Path) -> None:
    """The 566 KB file of the issue (5,000 block-style windows) is refused by its size."""
    block = "".join(
        f'    - name: w{i}\n      start: "{i % 24:02d}:{i % 60:02d}"\n      policies:\n'
        "        - kind: ClusterPropagationPolicy\n          name: p\n"
        "          patch: {spec: {priority: 1}}\n"
        for i in range(5000)
    )
    path = write(
        tmp_path,
        "apiVersion: tidal.io/v1alpha1\nkind: TidalSchedule\n"
        f"metadata: {{name: big}}\nspec:\n  timeZone: UTC\n  windows:\n{block}",
    )
    started = time.monotonic()
    error = only_error(path)
    assert time.monotonic() - started < 1.0
    assert "more than the limit" in error
