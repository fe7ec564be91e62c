"""The one settings model: built once in main from flags and TIDAL_* variables, then passed down."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict


class LeaderElectionSettings(BaseModel):
    """The Lease that makes exactly one replica act (TIDAL_LEADER_ELECTION__*)."""

    enabled: bool = True
    lease_name: str = "tidal-leader"
    lease_duration_seconds: float = Field(15.0, gt=0)
    renew_deadline_seconds: float = Field(10.0, gt=0)
    retry_period_seconds: float = Field(2.0, gt=0)


class SchedulerSettings(BaseModel):
    """How the daemon fires windows (TIDAL_SCHEDULER__*)."""

    max_concurrent_switches: int = Field(1, ge=1)
    misfire_grace_seconds: float = Field(300.0, gt=0)
    resync_seconds: float = Field(15.0, gt=0)  # re-read state/controls and re-decide this often


class Settings(BaseSettings):
    """Everything tidal can be told; a flag overrides its TIDAL_* variable."""

    model_config = SettingsConfigDict(
        env_prefix="TIDAL_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    kubeconfig: Path | None = None
    context: str | None = None
    schedules: Path = Path("schedules")
    port: int = Field(8080, ge=0, le=65535)
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    state_namespace: str = "tidal-system"
    identity: str = Field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    leader_election: LeaderElectionSettings = LeaderElectionSettings()
    scheduler: SchedulerSettings = SchedulerSettings()


class SettingsError(ValueError):
    """A bad setting, already phrased for the user (one line per problem)."""


def load_settings(**overrides: object) -> Settings:
    """Build the settings from the environment, with explicit (flag) overrides on top."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            name = "TIDAL_" + "__".join(str(p).upper() for p in err["loc"])
            lines.append(f"setting {name}: {err['msg']} (got {err.get('input')!r})")
        raise SettingsError("; ".join(lines)) from None
