"""The one settings model: built once in main from flags and TIDAL_* variables, then passed down.

Every environment variable tidal reads is read here: its own TIDAL_* ones, and kubectl's
KUBECONFIG and KUBERNETES_SERVICE_HOST (where to look for a kubeconfig when none is given).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from tidal.domain.karmada_release import LATEST_RELEASE, KarmadaRelease

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _object_name(value: str, pattern: re.Pattern[str], form: str) -> str:
    if not pattern.match(value):
        raise ValueError(
            f"expected {form} (lowercase letters, digits and '-', starting and "
            "ending with a letter or digit), e.g. tidal-system"
        )
    return value


FINITE = ConfigDict(allow_inf_nan=False)  # inf or nan in a duration is never meant
MAX_LEASE_SECONDS = 3600.0  # a Lease's leaseDurationSeconds is an int32; an hour is plenty


class LeaderElectionSettings(BaseModel):
    """The Lease that makes exactly one replica act (TIDAL_LEADER_ELECTION__*)."""

    model_config = FINITE

    enabled: bool = True
    lease_name: str = "tidal-leader"
    lease_duration_seconds: float = Field(15.0, gt=0, le=MAX_LEASE_SECONDS)
    renew_deadline_seconds: float = Field(10.0, gt=0, le=MAX_LEASE_SECONDS)
    retry_period_seconds: float = Field(2.0, gt=0, le=MAX_LEASE_SECONDS)

    @field_validator("lease_name")
    @classmethod
    def _lease_name(cls, value: str) -> str:
        return _object_name(value, _DNS_SUBDOMAIN, "a Kubernetes object name")

    @model_validator(mode="after")
    def _timings(self) -> LeaderElectionSettings:
        if not (
            self.retry_period_seconds < self.renew_deadline_seconds < self.lease_duration_seconds
        ):
            raise ValueError(
                "expected RETRY_PERIOD_SECONDS < RENEW_DEADLINE_SECONDS < LEASE_DURATION_SECONDS"
                f" (got {self.retry_period_seconds:g} < {self.renew_deadline_seconds:g} < "
                f"{self.lease_duration_seconds:g})"
            )
        return self


class SchedulerSettings(BaseModel):
    """How the daemon fires windows (TIDAL_SCHEDULER__*)."""

    model_config = FINITE

    max_concurrent_switches: int = Field(1, ge=1)
    misfire_grace_seconds: float = Field(300.0, gt=0)
    resync_seconds: float = Field(15.0, gt=0)  # re-read state/controls and re-decide this often
    shutdown_grace_seconds: float = Field(20.0, ge=0)  # SIGTERM: wait this long for a step
    # refuse to act while the local clock and the API server's differ by more than this
    max_clock_skew_seconds: float = Field(30.0, gt=0)
    # a surge released by one switch keeps counting against the shared capacity this long:
    # its replicas stay, and Cluster status may not show them; about 1.5x Karmada's
    # --cluster-status-update-frequency (10 s by default): longer leaves room unused
    capacity_settle_seconds: float = Field(15.0, ge=0)
    # where the shared budget reads free capacity: Karmada's Cluster status (its resource
    # summary, refreshed every --cluster-status-update-frequency), or the members' Nodes and
    # Pods watched through the cluster proxy (current; needs clusters/proxy here and list/watch
    # of nodes and pods in each member). auto: the members' with shared watches on (a member
    # that refuses or does not answer is read from its Cluster status), else Cluster status
    capacity_source: Literal["auto", "cluster-status", "members"] = "auto"


class SweeperSettings(BaseModel):
    """The daemon's sweep of leftovers: temporary objects of runs no longer active
    (TIDAL_SWEEPER__*; tidal.daemon.sweeping)."""

    model_config = FINITE

    enabled: bool = True
    interval_seconds: float = Field(60.0, gt=0)  # and once as soon as this replica leads
    # a leftover older than this counts in tidal_leftover_overdue_objects (TidalLeftoverObjects)
    alert_age_seconds: float = Field(900.0, gt=0)
    budget_seconds: float = Field(30.0, gt=0)  # per call: 429/5xx/timeouts retried this long


class ApiSettings(BaseModel):
    """How tidal talks to the Karmada apiserver (TIDAL_API__*)."""

    model_config = FINITE

    # client-side rate limit, as client-go's QPS and Burst: sustained requests a second, and
    # how many may go at once after a quiet spell (watches count when they are opened)
    qps: float = Field(50.0, gt=0)
    burst: int = Field(100, ge=1)
    # the daemon lists and watches bindings and clusters once for all its switches (False: each
    # switch lists and watches on its own, once for its run; for comparison)
    shared_watch: bool = True
    shared_watch_seconds: float = Field(60.0, ge=1, le=3600)  # one watch request's length


class CommandApiSettings(BaseModel):
    """The daemon's command API: `POST /v1/schedules/NAME/VERB` on a port of its own, for
    `tidal pause|resume|abort|promote|retry NAME --daemon URL` (TIDAL_COMMANDS__*;
    tidal.daemon.command_api). Off unless enabled; enabled, it needs a token file."""

    enabled: bool = False
    port: int = Field(8081, ge=0, le=65535)
    # the bearer token callers must send (the chart mounts a Secret here); read at each request
    token_file: Path | None = None
    # the host other replicas forward a command to while this one leads (the chart gives the
    # pod IP); None: the listen address, or this host's address when that is a wildcard
    advertise_host: str | None = None

    @model_validator(mode="after")
    def _token(self) -> CommandApiSettings:
        if self.enabled and self.token_file is None:
            raise ValueError(
                "the command API needs a bearer token: set TOKEN_FILE to a file "
                "holding it (the chart mounts its Secret), or ENABLED=false"
            )
        return self


@dataclass(frozen=True)
class KubeconfigSources:
    """Where to look for a kubeconfig when none is given, in kubectl's order: the files
    listed in $KUBECONFIG (the first that exists), the pod's service account when running in
    one ($KUBERNETES_SERVICE_HOST set), then ~/.kube/config."""

    listed: tuple[str, ...] = ()
    in_cluster: bool = False
    home_config: Path = Path("~/.kube/config")


class KarmadaSettings(BaseModel):
    """The Karmada control plane tidal drives (TIDAL_KARMADA__*)."""

    # the release whose scheduler rules `tidal plan` predicts with ("1.17", "v1.18.2"); the
    # Karmada API does not tell it, so the default is the latest release
    version: KarmadaRelease = LATEST_RELEASE
    # a run patches a policy only once its last change (anyone's) is this old, so the resource
    # detector has reconciled the templates that change enqueued (tidal.engine.detector_settle)
    policy_settle_seconds: float = Field(15.0, ge=0, le=600)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: object) -> KarmadaRelease:
        return KarmadaRelease.parse(value)


class EstimatorSettings(BaseModel):
    """`tidal estimator`, the team-level scheduler-estimator (TIDAL_ESTIMATOR__*)."""

    model_config = FINITE

    teams: Path | None = None  # the TeamCapacity file
    address: str = "0.0.0.0"  # karmada-scheduler dials it from another pod
    # karmada-scheduler's --scheduler-estimator-port default
    grpc_port: int = Field(10352, ge=0, le=65535)
    refresh_seconds: float = Field(15.0, gt=0, le=3600)  # members and bindings re-read
    # a view older than this answers "cannot tell" (a member unreadable for that long)
    stale_seconds: float = Field(60.0, gt=0, le=86400)
    workers: int = Field(16, ge=1, le=256)  # gRPC handler threads
    # `tidal plan`: the running estimator's HTTP address, to say which clusters
    # karmada-scheduler has not asked it about (None: not checked)
    status_url: str | None = None

    @model_validator(mode="after")
    def _bound(self) -> EstimatorSettings:
        if self.stale_seconds < self.refresh_seconds:
            raise ValueError(
                "expected STALE_SECONDS >= REFRESH_SECONDS (got "
                f"{self.stale_seconds:g} < {self.refresh_seconds:g})"
            )
        return self


class Settings(BaseSettings):
    """Everything tidal can be told; a flag overrides its TIDAL_* variable."""

    model_config = SettingsConfigDict(
        env_prefix="TIDAL_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
        allow_inf_nan=False,
    )

    kubeconfig: Path | None = None
    context: str | None = None
    schedules: Path = Path("schedules")
    port: int = Field(8080, ge=0, le=65535)
    # the address /healthz, /readyz, /metrics and /status are served on (0.0.0.0: every IPv4
    # interface; 127.0.0.1: this host only; "::" every IPv6 one)
    listen_address: str = "0.0.0.0"
    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    state_namespace: str = "tidal-system"
    identity: str = Field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}", min_length=1
    )
    leader_election: LeaderElectionSettings = LeaderElectionSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    sweeper: SweeperSettings = SweeperSettings()
    karmada: KarmadaSettings = KarmadaSettings()
    # Directory of the upstream Karmada CRDs (policy.karmada.io_*.yaml): policy patches and
    # swap manifests are checked against their schemas when set (TIDAL_KARMADA_CRDS).
    karmada_crds: Path | None = None
    # kubectl's own variables, not TIDAL_*: see kubeconfig_sources()
    kubeconfig_env: str = Field("", validation_alias=AliasChoices("KUBECONFIG", "kubeconfig_env"))
    kubernetes_service_host: str = Field(
        "", validation_alias=AliasChoices("KUBERNETES_SERVICE_HOST", "kubernetes_service_host")
    )
    # the terminal's COLUMNS (as `ls` and kubectl honour it): the width of tidal's tables
    columns_env: str = Field("", validation_alias=AliasChoices("COLUMNS", "columns_env"))

    @property
    def columns(self) -> int | None:
        """COLUMNS when it is a positive number of columns, else None (not set or garbled)."""
        text = self.columns_env.strip()
        return int(text) if text.isdigit() and int(text) > 0 else None

    def kubeconfig_sources(self) -> KubeconfigSources:
        """Where the access layer looks for a kubeconfig when `kubeconfig` is not set."""
        listed = tuple(p for p in self.kubeconfig_env.split(os.pathsep) if p)
        return KubeconfigSources(
            listed, bool(self.kubernetes_service_host), Path.home() / ".kube" / "config"
        )

    api: ApiSettings = ApiSettings()
    estimator: EstimatorSettings = EstimatorSettings()
    commands: CommandApiSettings = CommandApiSettings()
    # `tidal pause|resume|abort|promote|retry NAME`: send the command to this daemon's command
    # API (e.g. http://tidal.tidal-system:8081) instead of writing the state object
    daemon_url: str | None = None
    daemon_token_file: Path | None = None  # the bearer token sent with it

    @model_validator(mode="after")
    def _members_need_shared_watches(self) -> Settings:
        if self.scheduler.capacity_source == "members" and not self.api.shared_watch:
            raise ValueError(
                "TIDAL_SCHEDULER__CAPACITY_SOURCE=members watches the members through the "
                "daemon's shared watches: set TIDAL_API__SHARED_WATCH=true, or the capacity "
                "source cluster-status"
            )
        return self

    @property
    def watches_members(self) -> bool:
        """The daemon reads free capacity from the members' Nodes and Pods."""
        source = self.scheduler.capacity_source
        return source == "members" or (source == "auto" and self.api.shared_watch)

    @field_validator("listen_address")
    @classmethod
    def _listen_address(cls, value: str) -> str:
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise ValueError(
                "expected an IP address to listen on, e.g. 0.0.0.0 (every "
                "interface) or 127.0.0.1 (this host only)"
            ) from None

    @field_validator("state_namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return _object_name(value, _DNS_LABEL, "a namespace name")


class SettingsError(ValueError):
    """A bad setting, already phrased for the user (one line per problem)."""


def load_settings(**overrides: object) -> Settings:
    """Build the settings from the environment, with explicit (flag) overrides on top."""
    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except SourceError as exc:  # a nested group given as one variable that is not JSON
        field = str(exc).split('field "', 1)[-1].split('"', 1)[0]
        name = "TIDAL_" + field.upper()
        raise SettingsError(
            f"setting {name}: expected a JSON object, or set its fields one by "
            f"one as {name}__<FIELD>"
        ) from None
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            if not err["loc"]:  # a rule across settings: its message names them
                lines.append(f"settings: {err['msg'].removeprefix('Value error, ')}")
                continue
            name = "TIDAL_" + "__".join(str(p).upper() for p in err["loc"])
            given = err.get("input")
            got = "" if isinstance(given, dict) else f" (got {given!r})"
            lines.append(f"setting {name}: {err['msg']}{got}")
        raise SettingsError("; ".join(lines)) from None
