"""The run record: what one switch did, in the shape `tidal switch -o json` prints.

{schedule, window, runId, result: succeeded|failed|rolledBack, startedAt, finishedAt,
 waves: [{index, workloads: ["ns/kind/name"], result, reason, startedAt, finishedAt}],
 warnings: [...]}  (wave index counts from 1; warnings say what was left out or kept Lazy)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tidal.engine.journal import RunState
from tidal.engine.states import NOT_STARTED, LazyMark, RunResult


@dataclass
class WaveRecord:
    index: int
    workloads: list[str]
    result: str
    reason: str = ""
    started_at: str | None = None
    finished_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "workloads": list(self.workloads),
            "result": self.result,
            "reason": self.reason,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
        }


@dataclass
class RunRecord:
    schedule: str
    window: str
    run_id: str
    result: RunResult
    started_at: str | None
    finished_at: str | None
    waves: list[WaveRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reason: str = ""
    noop: bool = False
    # policies the run left with the Lazy it added: (kind/[ns/]name, the value it goes back to)
    left_lazy: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.result is RunResult.SUCCEEDED

    def to_dict(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule,
            "window": self.window,
            "runId": self.run_id,
            "result": self.result.value,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "waves": [w.to_dict() for w in self.waves],
            "warnings": list(self.warnings),
            "leftLazy": [{"policy": p, "restoresTo": r} for p, r in self.left_lazy],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_state(cls, state: RunState, *, noop: bool = False) -> RunRecord:
        waves = [
            WaveRecord(
                w.index,
                [str(k) for k in w.workloads],
                w.result.reported if w.result is not None else NOT_STARTED,
                w.reason,
                w.started_at,
                w.finished_at,
            )
            for w in state.waves
            if w.result is not None or w.started_at is not None
        ]
        left = [(p.key, p.original_activation) for p in state.policies if p.lazy is LazyMark.ADDED]
        return cls(
            state.schedule,
            state.window,
            state.run_id,
            state.result or RunResult.FAILED,
            state.started_at,
            state.finished_at,
            waves,
            list(state.warnings),
            state.reason,
            noop,
            left,
        )
