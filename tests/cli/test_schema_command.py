"""`tidal schema`: a JSON Schema that accepts the examples and rejects schema-broken files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from tidal.cli.main import cli
from tidal.loading.yamlfile import parse_yaml_bytes

REPO = Path(__file__).parents[2]
BROKEN = REPO / "tests" / "loading" / "broken"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _data(path: Path) -> Any:
    return parse_yaml_bytes(path.read_bytes()).data


def test_schema_uses_yaml_names(validator: Draft202012Validator) -> None:
    """The schema speaks camelCase, closes objects and hides the loader-only manifest."""
    text = json.dumps(validator.schema)
    assert '"timeZone"' in text and '"time_zone"' not in text
    assert '"manifest"' not in text
    assert validator.schema["$defs"]["Rollout"]["additionalProperties"] is False


@pytest.mark.parametrize(
    "example", sorted((REPO / "schedules").glob("*.yaml")), ids=lambda p: p.name
)
def test_schema_accepts_examples(validator: Draft202012Validator, example: Path) -> None:
    """Every example schedule is valid under the schema."""
    assert list(validator.iter_errors(_data(example))) == []


@pytest.mark.parametrize("name", ["wrong-types.yaml", "missing-keys.yaml", "semantics.yaml"])
def test_schema_rejects_schema_errors(validator: Draft202012Validator, name: str) -> None:
    """Broken files with wrong types, missing or unknown keys are rejected by the schema."""
    assert list(validator.iter_errors(_data(BROKEN / name)))


@pytest.mark.parametrize(
    "name", ["unknown-timezone.yaml", "bad-cron.yaml", "duplicate-window.yaml", "overlap-b.yaml"]
)
def test_semantic_errors_are_left_to_validate(validator: Draft202012Validator, name: str) -> None:
    """Time zones, cron syntax and cross-window rules need `tidal validate`, not the schema."""
    assert list(validator.iter_errors(_data(BROKEN / name))) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("catchUpWindow", "0s"),
        ("catchUpWindow", "10"),
        ("suspend", "yes"),
    ],
)
def test_schema_checks_value_forms(validator: Draft202012Validator, key: str, value: str) -> None:
    """Zero or unit-less durations and non-boolean suspend fail the schema."""
    data = _data(REPO / "schedules" / "team-3007.yaml")
    data["spec"][key] = value
    assert list(validator.iter_errors(data))
