"""`tidal schema`: the JSON Schema of the schedule file, for editors and CI."""

from __future__ import annotations

import json
from typing import Any

import click

from tidal.domain.schedule import TidalSchedule

SCHEMA_ID = "https://tidal.io/schemas/v1alpha1/tidalschedule.json"


def schedule_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a TidalSchedule file, with the YAML (camelCase) names."""
    schema = TidalSchedule.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "description": "A tidal schedule: windows that switch Karmada policies, and how the "
        "workloads are moved (waves, floors). Semantic rules (time zone exists, "
        "starts never coincide, swap manifests) are checked by `tidal validate`.",
    }


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the schedule file on stdout."""
    click.echo(json.dumps(schedule_json_schema(), indent=2, sort_keys=False))


COMMANDS = [schema_command]
