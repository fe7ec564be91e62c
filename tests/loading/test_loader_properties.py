"""Property: any document, random or a mutated example, gives a model or located errors."""

from __future__ import annotations

import copy
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from tidal.loading import LoadedSchedule, LocatedError, load_schedule_file
from tidal.loading.yamlfile import parse_yaml_bytes

REPO = Path(__file__).parents[2]
EXAMPLES = sorted((REPO / "schedules").glob("*.yaml"))
KNOWN_KEYS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "spec",
    "timeZone",
    "suspend",
    "catchUpWindow",
    "skipDates",
    "workloads",
    "windows",
    "start",
    "policies",
    "patch",
    "swap",
    "from",
    "to",
    "trigger",
    "rollout",
    "waveSize",
    "floors",
    "clusters",
    "minReadyReplicas",
    "minAvailablePercent",
    "onFailure",
    "namespace",
    "labelSelector",
    "matchLabels",
    "pauseBetweenWaves",
    "waveTimeout",
    "order",
]
# TIDAL_FUZZ_EXAMPLES=2000 for a longer hunt; the default keeps the suite fast.
PROFILE = settings(
    max_examples=int(os.environ.get("TIDAL_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "23:00",
            "0 7 * * 1-5",
            "25%",
            "0%",
            "30s",
            "-1m",
            "Asia/Shanghai",
            "Mars/Olympus",
            "ClusterPropagationPolicy",
            "PropagationPolicy",
            "tidal.io/v1alpha1",
            "TidalSchedule",
            "../../x.yaml",
            "/etc/passwd",
            "policies/team-2001-cpp-day.yaml",
            "*",
            "rollback",
            "touch",
        ]
    ),
)
keys = st.one_of(st.sampled_from(KNOWN_KEYS), st.text(min_size=1, max_size=8))
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=5)
    ),
    max_leaves=30,
)


def _dump(data: Any) -> str:
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return stream.getvalue()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(REPO / "schedules" / "policies", root / "policies")
    return root


def _check(path: Path, text: str | bytes) -> tuple[LoadedSchedule | None, list[LocatedError]]:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    loaded, errors = load_schedule_file(path)
    assert (loaded is None) == bool(errors) or (loaded is None and errors == [])
    for error in errors:
        assert error.line >= 1 and error.col >= 1
        assert "\n" not in error.message and error.message
        assert "internal error" not in error.message, error
    return loaded, errors


@PROFILE
@given(documents)
def test_random_documents(workdir: Path, document: Any) -> None:
    """Random YAML documents never raise: a model or located errors."""
    _check(workdir / "random.yaml", _dump(document))


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(data: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value if action == "replace" else data
    result = copy.deepcopy(data)
    parent = result
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = value
    elif action == "wrap":
        parent[last] = [parent[last]]
    elif action == "insert" and isinstance(parent[last], dict):
        parent[last]["unexpected" if value is None else str(value)[:8] or "k"] = value
    return result


@st.composite
def mutated_examples(draw: st.DrawFn) -> Any:
    example = draw(st.sampled_from(EXAMPLES))
    data = parse_yaml_bytes(example.read_bytes()).data
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)))
        action = draw(st.sampled_from(["delete", "replace", "wrap", "insert"]))
        data = _mutate(data, path, action, draw(scalars | documents))
    return data


@PROFILE
@given(mutated_examples())
def test_mutated_examples(workdir: Path, document: Any) -> None:
    """Structurally mutated examples give a model or located errors, never an exception."""
    _check(workdir / "mutated.yaml", _dump(document))


@PROFILE
@given(
    st.sampled_from(EXAMPLES),
    st.lists(
        st.tuples(
            st.integers(0, 4000),
            st.sampled_from(
                [
                    ":",
                    "-",
                    " ",
                    "\t",
                    "[",
                    "{",
                    "&a",
                    "*a",
                    "\n",
                    '"',
                    "'",
                    "#",
                    "%",
                    "!",
                    "\x00",
                    "é",
                    "\xff",
                    "}",
                    "]",
                    "  ",
                    "? ",
                ]
            ),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_text_mutations(workdir: Path, example: Path, edits: list[tuple[int, str]]) -> None:
    """Character-level edits of examples (syntax damage) give located errors, never a crash."""
    text = example.read_text(encoding="utf-8")
    for offset, fragment in edits:
        at = offset % (len(text) + 1)
        text = text[:at] + fragment + text[at + 1 :]
    raw = text.encode("utf-8", errors="surrogateescape")
    _check(workdir / "edited.yaml", raw)


def test_unmutated_examples_load(workdir: Path) -> None:
    """The examples themselves load in the fuzz directory (the properties start from valid)."""
    for example in EXAMPLES:
        loaded, errors = _check(workdir / example.name, example.read_text())
        assert errors == [] and loaded is not None
