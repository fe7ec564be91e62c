"""What a controller may ask of the manager that hosts it: a small interface (Protocols), so the
controllers depend on it instead of on the manager, and reach their siblings only through the
narrow views below (status marks, member readings, template generations)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from tidal_sim.clock import Clock
from tidal_sim.controllers.customizations import Customizations
from tidal_sim.controllers.quantity import Resources
from tidal_sim.controllers.team_estimator import TeamEstimator
from tidal_sim.controllers.timeline import Timeline
from tidal_sim.kinds import ResourceType
from tidal_sim.store import Store
from tidal_sim.version import KarmadaVersion

BKey = tuple[str, str, str]  # binding kind, namespace, name


class Pending:
    """Work scheduled with `after()`; `cancel()` drops it."""

    __slots__ = ("cancelled", "fn")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class StatusMarks(Protocol):
    """The status writer, as the members see it: what changed and needs writing."""

    def mark_binding(self, bkey: BKey) -> None: ...

    def mark_cluster(self, name: str, *, urgent: bool = False) -> None: ...


class MemberReadings(Protocol):
    """The member clusters, as the status writer and the Works read them."""

    @property
    def bindings(self) -> Mapping[BKey, Any]: ...

    @property
    def by_template_name(self) -> Mapping[str, set[BKey]]: ...

    def member_status(self, bkey: BKey, cluster_name: str) -> dict[str, Any] | None: ...

    def cluster_usage(self, name: str) -> tuple[Resources, Resources]: ...


class TemplateGenerations(Protocol):
    """The detector, as the members and Works read it."""

    templates: dict[tuple[str, str, str, str], dict[str, Any]]

    def template_generation(self, resource: dict[str, Any]) -> int: ...


class WorkSync(Protocol):
    """The binding controller's Works, as the members see them: replicas per cluster."""

    def replicas(
        self, bkey: BKey, binding: dict[str, Any], targets: dict[str, int], is_workload: bool
    ) -> dict[str, int]: ...

    def forget(self, bkey: BKey) -> None: ...

    def manifest(self, bkey: BKey, cluster: str) -> dict[str, Any] | None: ...


class ControllerHost(Protocol):
    """The manager's side of every controller: store, clock, settings, timers, writes."""

    store: Store
    clock: Clock
    feature_gates: frozenset[str]
    karmada_version: KarmadaVersion
    empty_workload_propagation: bool  # karmada-scheduler --enable-empty-workload-propagation
    policy_change_lag: float  # seconds before the detector reaches a policy change's templates
    team_estimator: TeamEstimator
    timeline: Timeline
    customizations: Customizations

    @property
    def status(self) -> StatusMarks: ...

    @property
    def members(self) -> MemberReadings: ...

    @property
    def detector(self) -> TemplateGenerations: ...

    @property
    def works(self) -> WorkSync: ...

    def binding_type(self, kind: str) -> ResourceType: ...

    def after(self, delay: float, fn: Callable[[], None]) -> Pending: ...

    def write(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], None],
        *,
        subresource: Literal["status"] | None = None,
    ) -> dict[str, Any]: ...
