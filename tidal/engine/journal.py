"""The run journal: the engine saves a RunState before every side effect, so a crashed or
replaced process can resume, and a second writer is fenced out.

Protocol: `load(schedule_name) -> RunState | None`; `save(state)` stores it, or raises
tidal.karmada.errors.Conflict when the stored state is not the one this writer last loaded
or saved (someone else wrote since): the engine then stops acting (FencedOut); JournalLost
when the stored state of a run under way has disappeared.
`RunState.journal_token` is the journal's own concurrency token (e.g. a ConfigMap's
resourceVersion); the engine carries it along and never interprets it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol

from tidal.domain.schedule import PolicyRef
from tidal.domain.waves import WorkloadKey
from tidal.engine.states import (
    BridgeStep,
    ChangeKind,
    Direction,
    LazyMark,
    Phase,
    PolicyStage,
    RunResult,
    Strategy,
    SurgeStep,
    Trigger,
    WaveResult,
    check_bridge_step,
    check_surge_step,
    check_transition,
)
from tidal.karmada.errors import Conflict


class FencedOut(Exception):
    """Another writer saved this schedule's run state: this process must stop acting."""


class Interrupted(FencedOut):
    """This process may no longer save (it is stopping, or lost its lease or run lock): the
    run stops where it is, between two looks of a wait, and stays journalled for whoever
    carries it on (the engine's runner and the daemon's interlude check between waits)."""


class JournalLost(Exception):
    """The journal of a run under way is gone (its state object was deleted): the engine stops
    acting at once; the run's marks on its policies let the next pass find and finish it."""


def content_hash(obj: Any) -> str:
    """A stable short hash of a JSON-able value (policy specs)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class PolicyRecord:
    """What the engine did (or will do) to one policy, with what it needs to undo it.

    Stored with the JSON keys of 0.1.0 (applied/restored and lazyAdded/keepLazy/lazyRestored
    booleans), so that a replica of either version reads what the other wrote."""

    kind: str
    name: str  # the policy in force after the change
    namespace: str | None = None
    action: ChangeKind = ChangeKind.PATCH
    swap_from: str | None = None
    pre_image: dict[str, Any] | None = None  # the spec before (of `swap_from` for a swap)
    pre_hash: str | None = None
    post_hash: str | None = None
    stage: PolicyStage = PolicyStage.PENDING
    lazy: LazyMark = LazyMark.NONE
    original_activation: str | None = None

    def __post_init__(self) -> None:
        self.action = ChangeKind(self.action)
        self.stage = PolicyStage(self.stage)
        self.lazy = LazyMark(self.lazy)

    @property
    def key(self) -> str:
        return PolicyRef(self.kind, self.namespace, self.name).key

    def followed(self, direction: Direction) -> str:
        """The policy a wave's workloads follow going `direction`: the one in force after the
        window (the plan's way), or back, a swap's `from` (restored)."""
        if direction.planned or self.action is not ChangeKind.SWAP:
            return self.name
        assert self.swap_from is not None
        return self.swap_from

    @property
    def applied(self) -> bool:
        """The run wrote this policy (it may have been put back since)."""
        return self.stage is not PolicyStage.PENDING

    @property
    def restored(self) -> bool:
        return self.stage is PolicyStage.RESTORED

    def keep_lazy(self, keep: bool) -> None:
        """Leave (or stop leaving) the Lazy this run added after the switch."""
        if keep and self.lazy is LazyMark.ADDED:
            self.lazy = LazyMark.KEPT
        elif not keep and self.lazy is LazyMark.KEPT:
            self.lazy = LazyMark.ADDED

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "action": self.action.value,
            "swapFrom": self.swap_from,
            "preImage": self.pre_image,
            "preHash": self.pre_hash,
            "postHash": self.post_hash,
            "applied": self.applied,
            "lazyAdded": self.lazy.added,
            "originalActivation": self.original_activation,
            "keepLazy": self.lazy is LazyMark.KEPT,
            "lazyRestored": self.lazy is LazyMark.LIFTED,
            "restored": self.restored,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PolicyRecord:
        stage = (
            PolicyStage.RESTORED
            if d.get("restored")
            else PolicyStage.APPLIED
            if d.get("applied")
            else PolicyStage.PENDING
        )
        lazy = LazyMark.NONE
        if d.get("lazyAdded"):
            lazy = (
                LazyMark.LIFTED
                if d.get("lazyRestored")
                else LazyMark.KEPT
                if d.get("keepLazy")
                else LazyMark.ADDED
            )
        return cls(
            kind=d["kind"],
            name=d["name"],
            namespace=d.get("namespace"),
            action=ChangeKind(d.get("action", "patch")),
            swap_from=d.get("swapFrom"),
            pre_image=d.get("preImage"),
            pre_hash=d.get("preHash"),
            post_hash=d.get("postHash"),
            stage=stage,
            lazy=lazy,
            original_activation=d.get("originalActivation"),
        )


@dataclass
class SurgeRecord:
    """One direction of a wave's surge: the replicas its overrides set (workload -> cluster ->
    replicas), the capacity it reserved, the overrides it wrote, and where it is. Journalled
    before each side effect, so a resume creates, waits for or deletes exactly these."""

    targets: dict[str, dict[str, int]]
    need: dict[str, dict[str, float]] = field(default_factory=dict)
    step: SurgeStep = SurgeStep.NONE
    overrides: list[str] = field(default_factory=list)  # kind/namespace/name
    kept: str = ""  # why overrides were left on a halt
    # workloads scaled while surged (their override lifted) -> their replicas then
    rescaled: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.step = SurgeStep(self.step)

    def advance(self, step: SurgeStep) -> None:
        self.step = check_surge_step(self.step, step)

    @property
    def active(self) -> bool:
        """Overrides may exist (or be about to)."""
        return self.step not in (SurgeStep.NONE, SurgeStep.RELEASED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "targets": self.targets,
            "need": self.need,
            "step": self.step.value,
            "overrides": list(self.overrides),
            "kept": self.kept,
            **({"rescaled": dict(self.rescaled)} if self.rescaled else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SurgeRecord:
        return cls(
            targets={
                w: {c: int(n) for c, n in t.items()} for w, t in (d.get("targets") or {}).items()
            },
            need={c: {r: float(q) for r, q in a.items()} for c, a in (d.get("need") or {}).items()},
            step=SurgeStep(d.get("step", SurgeStep.NONE)),
            overrides=list(d.get("overrides") or []),
            kept=d.get("kept", ""),
            rescaled={w: int(n) for w, n in (d.get("rescaled") or {}).items()},
        )


@dataclass
class BridgedPolicy:
    """A policy a bridge rewrites: its placement before the bridge (put back afterwards) and
    the bridge placement (Duplicated over the clusters the bridged workloads leave and reach)."""

    kind: str
    name: str
    namespace: str | None
    original: dict[str, Any]
    bridge: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "original": self.original,
            "bridge": self.bridge,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BridgedPolicy:
        return cls(
            kind=d["kind"],
            name=d["name"],
            namespace=d.get("namespace"),
            original=dict(d.get("original") or {}),
            bridge=dict(d.get("bridge") or {}),
        )


@dataclass
class BridgeRecord:
    """One direction of a wave's bridge: the replicas each bridged workload gets per cluster
    (workload -> cluster -> replicas), the capacity reserved, the policies rewritten and the
    templates touched so far, and where it is (journalled before each side effect)."""

    targets: dict[str, dict[str, int]]
    need: dict[str, dict[str, float]] = field(default_factory=dict)
    step: BridgeStep = BridgeStep.NONE
    policies: list[BridgedPolicy] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.step = BridgeStep(self.step)

    def advance(self, step: BridgeStep) -> None:
        self.step = check_bridge_step(self.step, step)

    @property
    def active(self) -> bool:
        """Capacity held (and the bridge placement possibly written)."""
        return self.step not in (BridgeStep.NONE, BridgeStep.RELEASED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "targets": self.targets,
            "need": self.need,
            "step": self.step.value,
            "policies": [p.to_dict() for p in self.policies],
            "touched": list(self.touched),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BridgeRecord:
        return cls(
            targets={
                w: {c: int(n) for c, n in t.items()} for w, t in (d.get("targets") or {}).items()
            },
            need={c: {r: float(q) for r, q in a.items()} for c, a in (d.get("need") or {}).items()},
            step=BridgeStep(d.get("step", BridgeStep.NONE)),
            policies=[BridgedPolicy.from_dict(p) for p in d.get("policies") or []],
            touched=list(d.get("touched") or []),
        )


@dataclass(frozen=True)
class StepMark:
    """Where the wave's kernel is (tidal.engine.runner): the index of its current step in the
    wave's step list and that step's kind (`done` past the last). Journals from before it
    carry none: the runner derives it from the wave's records."""

    index: int
    kind: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "kind": self.kind}

    @classmethod
    def from_dict(cls, d: Any) -> StepMark | None:
        if not isinstance(d, dict) or not isinstance(d.get("index"), int):
            return None  # unreadable: derived again from the records
        return cls(int(d["index"]), str(d.get("kind", "")))


@dataclass
class WaveLeg:
    """What a wave did in one direction (`direction`, fixed): the templates whose trigger it
    wrote, its surge, its bridge and where its kernel is (tidal.engine.runner). The records
    are filled as the leg goes; the leg itself stays the wave's for good
    (`WaveState.leg(direction)`)."""

    direction: Direction
    triggered: list[str] = field(default_factory=list)
    surge: SurgeRecord | None = None
    bridge: BridgeRecord | None = None
    step: StepMark | None = None

    def __post_init__(self) -> None:
        self.direction = Direction(self.direction)

    def to_dict(self) -> dict[str, Any]:
        """The leg under its direction's journal keys (`LEG_KEYS`): the triggered list
        always, each record only when there is one."""
        keys = LEG_KEYS[self.direction]
        records = ((keys.surge, self.surge), (keys.bridge, self.bridge), (keys.step, self.step))
        return {
            keys.triggered: list(self.triggered),
            **{key: record.to_dict() for key, record in records if record is not None},
        }

    @classmethod
    def from_dict(cls, direction: Direction, d: dict[str, Any]) -> WaveLeg:
        keys = LEG_KEYS[direction]
        return cls(
            direction,
            triggered=list(d.get(keys.triggered, [])),
            surge=SurgeRecord.from_dict(d[keys.surge]) if d.get(keys.surge) else None,
            bridge=BridgeRecord.from_dict(d[keys.bridge]) if d.get(keys.bridge) else None,
            step=StepMark.from_dict(d.get(keys.step)),
        )


@dataclass(frozen=True)
class LegKeys:
    """The journal keys of one direction's leg (those of 0.1.0 and of every release since)."""

    triggered: str
    surge: str
    bridge: str
    step: str


# the one place the legs meet the journal's keys
LEG_KEYS: Final[Mapping[Direction, LegKeys]] = MappingProxyType(
    {
        Direction.FORWARD: LegKeys("triggered", "surge", "bridge", "step"),
        Direction.BACK: LegKeys("rollbackTriggered", "surgeBack", "bridgeBack", "stepBack"),
    }
)


def _forward() -> WaveLeg:
    return WaveLeg(Direction.FORWARD)


def _back() -> WaveLeg:
    return WaveLeg(Direction.BACK)


@dataclass
class WaveState:
    index: int  # from 1
    workloads: list[WorkloadKey]
    result: WaveResult | None = None
    reason: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    # rebalancers of both directions (a rollback's carry the `-back` suffix in their name)
    rebalancers: list[str] = field(default_factory=list)
    forward: WaveLeg = field(default_factory=_forward)
    back: WaveLeg = field(default_factory=_back)
    # the run's replicas per cluster while this wave ran (tidal.engine.samples)
    samples: list[dict[str, Any]] = field(default_factory=list)

    def leg(self, direction: Direction) -> WaveLeg:
        """What the wave did (and does) in `direction`."""
        return self.back if Direction(direction).rollback else self.forward

    @property
    def legs(self) -> tuple[WaveLeg, WaveLeg]:
        """Forward, then back."""
        return self.forward, self.back

    def __post_init__(self) -> None:
        self.workloads = [
            k if isinstance(k, WorkloadKey) else WorkloadKey.parse(k) for k in self.workloads
        ]
        if self.result is not None:
            self.result = WaveResult(self.result)
        if self.forward.direction is not Direction.FORWARD or self.back.direction.planned:
            raise ValueError(f"wave {self.index}: its legs are forward, then back")

    @property
    def rolled_back(self) -> bool:
        return self.result is not None and self.result.rolled_back

    def to_dict(self) -> dict[str, Any]:
        # 0.1.0 keys: a failed wave that was moved back is result "failed" + rolledBack
        return {
            "index": self.index,
            "workloads": [str(k) for k in self.workloads],
            "result": self.result.reported if self.result is not None else None,
            "reason": self.reason,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "rebalancers": list(self.rebalancers),
            "rolledBack": self.rolled_back,
            **self.forward.to_dict(),
            **self.back.to_dict(),
            **({"samples": list(self.samples)} if self.samples else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WaveState:
        raw = d.get("result")
        result = WaveResult(raw) if raw is not None else None
        if result is WaveResult.FAILED and d.get("rolledBack"):
            result = WaveResult.FAILED_ROLLED_BACK
        return cls(
            index=int(d["index"]),
            workloads=[WorkloadKey.parse(str(k)) for k in d.get("workloads", [])],
            result=result,
            reason=d.get("reason", ""),
            started_at=d.get("startedAt"),
            finished_at=d.get("finishedAt"),
            rebalancers=list(d.get("rebalancers", [])),
            forward=WaveLeg.from_dict(Direction.FORWARD, d),
            back=WaveLeg.from_dict(Direction.BACK, d),
            samples=[dict(x) for x in d.get("samples") or [] if isinstance(x, dict)],
        )


@dataclass
class RunState:
    """Everything needed to resume a switch: JSON-serialisable via to_dict/from_dict."""

    schedule: str
    window: str
    run_id: str
    phase: Phase = Phase.PLANNED
    trigger: Trigger = Trigger.TOUCH
    started_at: str | None = None
    finished_at: str | None = None
    result: RunResult | None = None
    reason: str = ""
    policies: list[PolicyRecord] = field(default_factory=list)
    waves: list[WaveState] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The schedule the run started with: a resume finishes against it, whatever the file
    # says by then (an edit applies to the next start).
    schedule_hash: str | None = None
    schedule_snapshot: dict[str, Any] | None = field(default=None, repr=False)
    journal_token: str | None = field(default=None, compare=False)
    started_by: str | None = None  # daemon:<identity> | cli:<identity>
    strategy: Strategy = Strategy.DIRECT  # a journal from before surges: direct

    def __post_init__(self) -> None:
        self.phase, self.trigger = Phase(self.phase), Trigger(self.trigger)
        self.strategy = Strategy(self.strategy)
        if self.result is not None:
            self.result = RunResult(self.result)

    def advance(self, phase: Phase) -> None:
        """Move to `phase` (IllegalTransition if the state machine does not allow it)."""
        self.phase = check_transition(Phase(self.phase), phase)

    @property
    def completed_waves(self) -> list[int]:
        return [w.index for w in self.waves if w.result == WaveResult.SUCCEEDED]

    @property
    def finished(self) -> bool:
        return self.phase == Phase.DONE  # (a test may have set the plain string)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule,
            "window": self.window,
            "runId": self.run_id,
            "phase": str(self.phase),
            "trigger": str(self.trigger),
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "result": str(self.result) if self.result is not None else None,
            "reason": self.reason,
            "policies": [p.to_dict() for p in self.policies],
            "waves": [w.to_dict() for w in self.waves],
            "warnings": list(self.warnings),
            "scheduleHash": self.schedule_hash,
            "scheduleSnapshot": self.schedule_snapshot,
            "startedBy": self.started_by,
            # only surges are marked: a journal without the key is a direct run (0.1.0 too)
            **({"strategy": str(self.strategy)} if self.strategy is not Strategy.DIRECT else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], journal_token: str | None = None) -> RunState:
        try:
            phase = Phase(d.get("phase", Phase.PLANNED))
        except ValueError:
            raise ValueError(f"unknown run phase {d.get('phase')!r}") from None
        try:
            strategy = Strategy(d.get("strategy") or Strategy.DIRECT)
        except ValueError:
            raise ValueError(
                f"unknown run strategy {d.get('strategy')!r} (surge or direct; "
                "a journal without one is direct)"
            ) from None
        result = d.get("result")
        return cls(
            schedule=d["schedule"],
            window=d["window"],
            run_id=d["runId"],
            phase=phase,
            trigger=Trigger(d.get("trigger", Trigger.TOUCH)),
            started_at=d.get("startedAt"),
            finished_at=d.get("finishedAt"),
            result=RunResult(result) if result is not None else None,
            reason=d.get("reason", ""),
            policies=[PolicyRecord.from_dict(p) for p in d.get("policies", [])],
            waves=[WaveState.from_dict(w) for w in d.get("waves", [])],
            started_by=d.get("startedBy"),
            strategy=strategy,
            warnings=list(d.get("warnings", [])),
            schedule_hash=d.get("scheduleHash"),
            schedule_snapshot=d.get("scheduleSnapshot"),
            journal_token=journal_token,
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, journal_token: str | None = None) -> RunState:
        return cls.from_dict(json.loads(text), journal_token)


class Journal(Protocol):
    def load(self, schedule_name: str) -> RunState | None:
        """The last saved state of the schedule's latest run, or None."""
        ...

    def save(self, state: RunState) -> None:
        """Store the state (updating state.journal_token); Conflict if another writer won."""
        ...

    def may_save(self) -> bool:
        """False once a save would be refused for good (this process stopping, its lease or
        lock lost), so a run that waits stops at its next look, not at its next save."""
        ...


class InMemoryJournal:
    """A Journal in a dict, with the same fencing rule as the ConfigMap one."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._counter = 0
        self.saves = 0

    def load(self, schedule_name: str) -> RunState | None:
        with self._lock:
            stored = self._states.get(schedule_name)
            if stored is None:
                return None
            token, data = stored
            return RunState.from_dict(copy.deepcopy(data), journal_token=token)

    def may_save(self) -> bool:
        return True

    def save(self, state: RunState) -> None:
        with self._lock:
            stored = self._states.get(state.schedule)
            current = stored[0] if stored else None
            if current != state.journal_token:
                raise Conflict(
                    f"run state of {state.schedule} was written by another writer",
                    code=409,
                    reason="Conflict",
                )
            self._counter += 1
            token = str(self._counter)
            self._states[state.schedule] = (token, json.loads(state.to_json()))
            state.journal_token = token
            self.saves += 1

    def steal(self, schedule_name: str) -> None:
        """Test helper: pretend another writer saved (bumps the token)."""
        with self._lock:
            _token, data = self._states[schedule_name]
            self._counter += 1
            self._states[schedule_name] = (str(self._counter), data)
