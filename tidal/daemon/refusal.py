"""Why the daemon could not start a window's switch, as a class monitoring can alert on and
lines a person can act on (a policy write the apiserver refused is located in the file)."""

from __future__ import annotations

from enum import StrEnum

from tidal.engine.resolve import ResolveError
from tidal.engine.switch import PlanRefused
from tidal.engine.write_check import PolicyWritesRefused
from tidal.karmada.errors import KarmadaError
from tidal.loading.loader import LoadedSchedule
from tidal.loading.refusals import locate_refusals

MAX_LINES = 20


class RefusalReason(StrEnum):
    UNSAFE_PLAN = "unsafe_plan"  # a floor would break, or the plan cannot be scheduled
    POLICY_INVALID = "policy_invalid"  # the apiserver refused a dry run of a policy write
    NOT_RESOLVED = "not_resolved"  # a policy the window names does not exist
    API_ERROR = "api_error"  # the apiserver refused or failed a read
    INTERNAL = "internal"  # a bug: reported, never retried blindly


def explain(
    exc: BaseException, loaded: LoadedSchedule, window: str
) -> tuple[RefusalReason, list[str]]:
    """The reason class and the one-line explanations of a switch that did not start."""
    path = getattr(loaded, "path", None)  # (a stand-in may have none)
    if isinstance(exc, PolicyWritesRefused):
        lines = (
            [str(e) for e in locate_refusals(path, window, exc.problems)]
            if path
            else [str(p) for p in exc.problems]
        )
        return RefusalReason.POLICY_INVALID, lines[:MAX_LINES]
    if isinstance(exc, PlanRefused):
        return RefusalReason.UNSAFE_PLAN, list(exc.problems[:MAX_LINES])
    if isinstance(exc, ResolveError):
        return RefusalReason.NOT_RESOLVED, [f"{path}: {exc}" if path else str(exc)]
    if isinstance(exc, KarmadaError):
        return RefusalReason.API_ERROR, [str(exc)]
    return RefusalReason.INTERNAL, [f"{type(exc).__name__}: {exc}"]
