"""The TidalSchedule model: names, defaults, semantic rules and helpers."""

from __future__ import annotations

import copy
from datetime import date, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from tidal.domain.schedule import (
    SEMANTIC_ERROR,
    Floor,
    PolicyChange,
    PolicyRef,
    TidalSchedule,
    WaveSize,
)

PATCH = {"spec": {"placement": {"clusterAffinity": {"clusterNames": ["cluster-b"]}}}}


def base() -> dict[str, Any]:
    return {
        "apiVersion": "tidal.io/v1alpha1",
        "kind": "TidalSchedule",
        "metadata": {"name": "team-1005"},
        "spec": {
            "timeZone": "Asia/Shanghai",
            "windows": [
                {
                    "name": "night",
                    "start": "23:00",
                    "policies": [
                        {
                            "kind": "ClusterPropagationPolicy",
                            "name": "team-1005-cpp",
                            "patch": PATCH,
                        }
                    ],
                },
                {
                    "name": "day",
                    "start": "07:00",
                    "policies": [
                        {
                            "kind": "ClusterPropagationPolicy",
                            "swap": {"from": "team-1005-cpp-night", "to": "policies/day.yaml"},
                        }
                    ],
                    "rollout": {"waveSize": 5, "onFailure": "rollback"},
                },
            ],
        },
    }


def errors_of(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """(full location, message) of every problem, semantic ones expanded."""
    with pytest.raises(ValidationError) as info:
        TidalSchedule.model_validate(data)
    found = []
    for error in info.value.errors(include_url=False):
        if error["type"] == SEMANTIC_ERROR:
            found += [
                (tuple(error["loc"]) + tuple(sub), msg) for sub, msg in error["ctx"]["problems"]
            ]
        else:
            found.append((tuple(error["loc"]), error["msg"]))
    return found


def test_valid_schedule_gets_defaults() -> None:
    """Unset keys get the documented defaults (suspend false, catch-up 30m, 25% waves...)."""
    schedule = TidalSchedule.model_validate(base())
    spec = schedule.spec
    assert spec.suspend is False and spec.catch_up_window == timedelta(minutes=30)
    rollout = spec.rollout
    assert rollout.wave_size == WaveSize(percent=25.0)
    assert rollout.pause_between_waves == timedelta(seconds=30)
    assert rollout.wave_timeout == timedelta(minutes=10)
    assert rollout.on_failure == "halt" and rollout.order == "name" and rollout.floors == []
    assert schedule.window("night").trigger == "auto"


def test_models_are_frozen_and_closed() -> None:
    """Models refuse assignment and unknown keys."""
    schedule = TidalSchedule.model_validate(base())
    with pytest.raises(ValidationError):
        schedule.spec.suspend = True  # type: ignore[misc]
    data = base()
    data["spec"]["timezone"] = "UTC"
    assert any(loc[-1] == "timezone" for loc, _ in errors_of(data))


def test_snake_case_names_also_populate() -> None:
    """Python callers may use field names instead of the YAML camelCase aliases."""
    floor = Floor(clusters=["cluster-b"], min_ready_replicas=1)
    assert floor.model_dump(by_alias=True, exclude_none=True) == {
        "clusters": ["cluster-b"],
        "minReadyReplicas": 1,
    }


def test_rollout_for_merges_the_window_override() -> None:
    """A window's rollout keys replace the defaults; the others stay."""
    schedule = TidalSchedule.model_validate(base())
    day = schedule.rollout_for("day")
    assert day.wave_size.for_total(40) == 5 and day.on_failure == "rollback"
    assert day.pause_between_waves == timedelta(seconds=30)
    assert schedule.rollout_for("night") == schedule.spec.rollout


def test_unknown_window_names_the_known_ones() -> None:
    """window() raises KeyError listing the windows that exist."""
    with pytest.raises(KeyError, match="night, day"):
        TidalSchedule.model_validate(base()).window("noon")


@pytest.mark.parametrize(
    ("given", "total", "per_wave"),
    [
        ("25%", 40, 10),
        ("25%", 3, 1),
        ("33%", 10, 4),
        (5, 3, 3),
        (5, 40, 5),
        ("100%", 7, 7),
        ("12.5%", 8, 1),
    ],
)
def test_wave_size_for_total(given: Any, total: int, per_wave: int) -> None:
    """Counts are capped by the total, percentages round up, and a wave holds at least one."""
    assert WaveSize.model_validate(given).for_total(total) == per_wave


@pytest.mark.parametrize("given", [0, -1, "0%", "101%", "abc", True, 2.5])
def test_wave_size_refuses_non_positive_and_junk(given: Any) -> None:
    """waveSize must be a count >= 1 or a percentage in (0, 100]."""
    with pytest.raises(ValidationError):
        WaveSize.model_validate(given)


def test_wave_size_dumps_as_written() -> None:
    """A wave size dumps back to 5 or "25%", the way users write it."""
    data = base()
    data["spec"]["rollout"] = {"waveSize": "25%"}
    dumped = TidalSchedule.model_validate(data).model_dump(mode="json", by_alias=True)
    assert dumped["spec"]["rollout"]["waveSize"] == "25%"
    assert dumped["spec"]["windows"][1]["rollout"]["waveSize"] == 5


def test_unknown_time_zone_suggests_a_close_one() -> None:
    """An unknown zone is refused with the nearest IANA name as the fix."""
    data = base()
    data["spec"]["timeZone"] = "Asia/Shanghia"
    [(loc, message)] = errors_of(data)
    assert loc == ("spec", "timeZone") and "Asia/Shanghai" in message


def test_duplicate_window_names_point_at_the_second() -> None:
    """Reusing a window name is reported at the later window's name."""
    data = base()
    data["spec"]["windows"][1]["name"] = "night"
    assert ("spec", "windows", 1, "name") in [loc for loc, _ in errors_of(data)]


def test_starts_at_the_same_minute_are_refused() -> None:
    """Two windows that can fire at the same local minute are refused at the later start."""
    data = base()
    data["spec"]["windows"][1]["start"] = "0 23 * * 1-5"
    [(loc, message)] = errors_of(data)
    assert loc == ("spec", "windows", 1, "start") and "same minute" in message


def test_patch_and_swap_are_exclusive() -> None:
    """A change with both patch and swap is refused at swap; with neither at the change."""
    data = base()
    data["spec"]["windows"][0]["policies"][0]["swap"] = {"from": "a", "to": "b.yaml"}
    locs = [loc for loc, _ in errors_of(data)]
    assert ("spec", "windows", 0, "policies", 0, "swap") in locs
    data = base()
    del data["spec"]["windows"][0]["policies"][0]["patch"]
    [(loc, message)] = errors_of(data)
    assert loc == ("spec", "windows", 0, "policies", 0) and "patch or swap" in message


def test_propagation_policy_needs_namespace() -> None:
    """A patched PropagationPolicy without namespace is refused; a CPP with one too."""
    data = base()
    data["spec"]["windows"][0]["policies"][0]["kind"] = "PropagationPolicy"
    assert "namespace" in errors_of(data)[0][1]
    data = base()
    data["spec"]["windows"][0]["policies"][0]["namespace"] = "ai-app"
    assert errors_of(data)[0][0][-1] == "namespace"


@pytest.mark.parametrize("to", ["../x.yaml", "/etc/passwd", "a/../../b.yaml"])
def test_swap_paths_stay_inside(to: str) -> None:
    """Absolute paths and '..' in swap.to are refused at `to`."""
    data = base()
    data["spec"]["windows"][1]["policies"][0]["swap"]["to"] = to
    [(loc, _)] = errors_of(data)
    assert loc[-1] == "to"


def test_users_cannot_write_the_manifest() -> None:
    """swap.manifest is filled by the loader only."""
    data = base()
    data["spec"]["windows"][1]["policies"][0]["swap"]["manifest"] = {"kind": "x"}
    assert errors_of(data)[0][0][-1] == "manifest"


@pytest.mark.parametrize(
    ("floor", "fragment"),
    [
        ({}, "empty floor"),
        ({"clusters": ["a"]}, "minReadyReplicas"),
        ({"minReadyReplicas": 1}, "needs clusters"),
        ({"clusters": ["a"], "minReadyReplicas": 1, "minAvailablePercent": 50}, "either"),
        ({"clusters": ["*", "a"], "minReadyReplicas": 1}, '"*"'),
    ],
)
def test_floor_shapes(floor: dict[str, Any], fragment: str) -> None:
    """A floor is clusters + minReadyReplicas, or minAvailablePercent, never both or neither."""
    data = base()
    data["spec"]["rollout"] = {"floors": [floor]}
    assert fragment in errors_of(data)[0][1]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("waveTimeout", "0s"),
        ("pauseBetweenWaves", "-1s"),
        ("waveTimeout", 10),
    ],
)
def test_durations_must_be_positive_text(key: str, value: Any) -> None:
    """Timeouts must be positive duration text."""
    data = base()
    data["spec"]["rollout"] = {key: value}
    assert errors_of(data)[0][0] == ("spec", "rollout", key)


def test_percentages_in_range() -> None:
    """minAvailablePercent must be in (0, 100]."""
    for bad in (0, 100.5):
        data = base()
        data["spec"]["rollout"] = {"floors": [{"minAvailablePercent": bad}]}
        errors_of(data)


def test_label_selector_operators() -> None:
    """In/NotIn need values; Exists/DoesNotExist take none."""
    data = base()
    data["spec"]["workloads"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In"}]},
        }
    ]
    assert "at least one value" in errors_of(data)[0][1]


def test_policy_names_of_patch_and_swap() -> None:
    """policy_name is the patched name, or the `to` manifest's name once loaded."""
    schedule = TidalSchedule.model_validate(base())
    patch = schedule.window("night").policies[0]
    assert patch.policy_name == "team-1005-cpp" and patch.policy_namespace is None
    swap = schedule.window("day").policies[0]
    with pytest.raises(ValueError, match="not loaded"):
        _ = swap.policy_name
    assert swap.swap is not None
    loaded = swap.model_copy(
        update={
            "swap": swap.swap.model_copy(
                update={"manifest": {"metadata": {"name": "team-1005-cpp-day"}}}
            )
        }
    )
    assert loaded.policy_name == "team-1005-cpp-day"
    assert set(loaded.policy_refs()) == {
        PolicyRef("ClusterPropagationPolicy", None, "team-1005-cpp-night"),
        PolicyRef("ClusterPropagationPolicy", None, "team-1005-cpp-day"),
    }


def test_skip_dates_are_dates() -> None:
    """skipDates parse ISO dates."""
    data = copy.deepcopy(base())
    data["spec"]["skipDates"] = ["2026-12-25"]
    assert TidalSchedule.model_validate(data).spec.skip_dates == [date(2026, 12, 25)]


def test_dns_names() -> None:
    """metadata.name and window names are DNS labels."""
    data = base()
    data["metadata"]["name"] = "Team_1005"
    assert "not a valid name" in errors_of(data)[0][1]


def test_policy_change_from_python() -> None:
    """Engine code can build a PolicyChange with field names."""
    change = PolicyChange(kind="PropagationPolicy", name="pp", namespace="ai-app", patch=PATCH)
    assert change.policy_namespace == "ai-app"


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ({"atms-app/teamid": 1005}, None),
        ({"bad key": "x"}, "label key"),
        ({"Bad_Prefix/x": "y"}, "invalid prefix"),
        ({"team": "not ok!"}, "label value"),
    ],
)
def test_match_labels_follow_kubernetes_syntax(
    labels: dict[str, Any], fragment: str | None
) -> None:
    """Label keys and values in selectors must be valid Kubernetes labels (and text)."""
    data = base()
    data["spec"]["workloads"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": labels}}
    ]
    [(loc, message)] = errors_of(data)
    assert loc[-1] == next(iter(labels))
    if fragment:
        assert fragment in message


def test_one_change_per_policy_in_a_window() -> None:
    """Two changes of one policy in the same window are refused at the second."""
    data = base()
    night = data["spec"]["windows"][0]
    night["policies"].append(copy.deepcopy(night["policies"][0]))
    [(loc, message)] = errors_of(data)
    assert loc == ("spec", "windows", 0, "policies", 1, "name")
    assert "already changed by policies[0]" in message


def test_dst_moved_start_meets_another_window() -> None:
    """In Europe/Berlin, 02:30 moves to 03:00 on spring-forward day: refused at the later window."""
    data = base()
    data["spec"]["timeZone"] = "Europe/Berlin"
    data["spec"]["windows"][0]["start"] = "03:00"
    data["spec"]["windows"][1]["start"] = "02:30"
    [(loc, message)] = errors_of(data)
    assert loc == ("spec", "windows", 1, "start") and "spring forward" in message
    data["spec"]["timeZone"] = "Asia/Shanghai"
    TidalSchedule.model_validate(data)


def test_priority_defaults_to_zero_and_is_bounded() -> None:
    """spec.priority is 0 unless given; outside -1000..1000 it is refused at spec.priority."""
    assert TidalSchedule.model_validate(base()).spec.priority == 0
    data = base()
    data["spec"]["priority"] = 50
    assert TidalSchedule.model_validate(data).spec.priority == 50
    data["spec"]["priority"] = 5000
    assert [loc for loc, _ in errors_of(data)] == [("spec", "priority")]
    data["spec"]["priority"] = "high"
    assert [loc for loc, _ in errors_of(data)] == [("spec", "priority")]
