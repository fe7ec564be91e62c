"""The daemon's lifecycle as a table: what starts, in which order, and what stops it.

Each `Stage` is one row: a part of the daemon (the HTTP server, the scheduler, the lease
thread...), how it starts, whether it runs at all with these settings, how it is stopped, and
in which place of the shutdown it is stopped. `Lifecycle.start` walks the rows in their order;
`Lifecycle.stop` walks them by `stop_rank`, which is not simply the reverse: the lease is given
back only after the in-flight runs reached a step boundary, and the HTTP server answers
probes until the very end. docs/architecture.md shows the daemon's table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

log = structlog.get_logger("tidal.daemon.lifecycle")


def _always() -> bool:
    return True


def _nothing(grace_seconds: float) -> None:
    pass


@dataclass(frozen=True)
class Stage:
    """One row of the lifecycle table."""

    name: str
    start: Callable[[], None]
    stop: Callable[[float], None] = _nothing  # given the shutdown's grace in seconds
    stopped_by: str = ""  # what ends it, in words (the docs' table, the stop log)
    stop_rank: int | None = None  # its place in the shutdown; None: nothing to stop
    enabled: Callable[[], bool] = _always  # whether it runs with these settings


class Lifecycle:
    """Starts the stages in table order and stops the started ones by their stop rank."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        names = [s.name for s in stages]
        if len(set(names)) != len(names):
            raise ValueError(f"lifecycle stages named twice: {names}")
        ranks = [s.stop_rank for s in stages if s.stop_rank is not None]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"lifecycle stop ranks used twice: {ranks}")
        self.stages = tuple(stages)
        self.started: list[str] = []

    def start(self) -> None:
        """Start every enabled stage, in table order (a stage that raises stops the start)."""
        for stage in self.stages:
            if stage.enabled():
                stage.start()
                self.started.append(stage.name)

    def stop_order(self) -> list[Stage]:
        """The stages that have something to stop, in shutdown order."""
        stoppable = [s for s in self.stages if s.stop_rank is not None]
        return sorted(stoppable, key=lambda s: s.stop_rank or 0)

    def stop(self, grace_seconds: float) -> None:
        """Stop each started stage in shutdown order (a stage never started is skipped)."""
        for stage in self.stop_order():
            if stage.name in self.started:
                stage.stop(grace_seconds)
        self.started.clear()
