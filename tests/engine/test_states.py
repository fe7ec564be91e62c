"""The run's state machine and vocabulary: legal moves only, stored values read back."""

from __future__ import annotations

import pytest

from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import PolicyRecord, RunState, WaveState
from tidal.engine.run import PHASE_HANDLERS
from tidal.engine.states import (
    TRANSITIONS,
    IllegalTransition,
    LazyMark,
    Phase,
    PolicyStage,
    RunResult,
    Strategy,
    Trigger,
    WaveResult,
)
from tidal.engine.strategies import STRATEGIES, strategy_for


def test_every_phase_but_done_has_a_handler_and_done_is_final() -> None:
    """The phase table covers every phase a run can be in; nothing leaves done."""
    assert set(PHASE_HANDLERS) == set(Phase) - {Phase.DONE}
    assert TRANSITIONS[Phase.DONE] == frozenset()
    assert all(Phase.DONE in TRANSITIONS[p] for p in Phase if p is not Phase.DONE)


@pytest.mark.parametrize(
    ("current", "wanted"),
    [
        (Phase.DONE, Phase.WAVES),
        (Phase.FINISHING, Phase.ROLLBACK),
        (Phase.ROLLBACK, Phase.WAVES),
        (Phase.PLANNED, Phase.WAVES),
        (Phase.WAVES, Phase.POLICIES),
    ],
)
def test_an_illegal_transition_raises(current: Phase, wanted: Phase) -> None:
    """A move the table does not list raises IllegalTransition and leaves the phase alone."""
    state = RunState("s", "night", "r", phase=current)
    with pytest.raises(IllegalTransition):
        state.advance(wanted)
    assert state.phase is current


def test_a_legal_transition_and_a_re_entry_are_allowed() -> None:
    """waves -> rollback -> done, and a resume re-entering its phase."""
    state = RunState("s", "night", "r", phase=Phase.WAVES)
    state.advance(Phase.WAVES)
    state.advance(Phase.ROLLBACK)
    state.advance(Phase.DONE)
    assert state.finished


def test_both_spellings_of_rolled_back_read_as_one_value() -> None:
    """`rolledBack` (written) and `rolled_back` read back as the same result."""
    assert WaveResult("rolled_back") is WaveResult("rolledBack") is WaveResult.ROLLED_BACK
    assert RunResult("rolled_back") is RunResult.ROLLED_BACK
    assert RunResult.ROLLED_BACK.metric_label == "rolled_back"


def test_a_failed_wave_moved_back_keeps_the_stored_keys_of_0_1_0() -> None:
    """One value in memory; result "failed" + rolledBack true in the journal, and back."""
    wave = WaveState(1, [WorkloadKey.parse("ns/Deployment/a")], result=WaveResult.FAILED)
    wave.result = WaveResult.FAILED.after_rollback()
    stored = wave.to_dict()
    assert stored["result"] == "failed" and stored["rolledBack"] is True
    again = WaveState.from_dict(stored)
    assert again.result is WaveResult.FAILED_ROLLED_BACK and again.rolled_back


@pytest.mark.parametrize(
    ("flags", "stage", "lazy"),
    [
        ({}, PolicyStage.PENDING, LazyMark.NONE),
        ({"applied": True}, PolicyStage.APPLIED, LazyMark.NONE),
        ({"applied": True, "lazyAdded": True}, PolicyStage.APPLIED, LazyMark.ADDED),
        (
            {"applied": True, "lazyAdded": True, "keepLazy": True},
            PolicyStage.APPLIED,
            LazyMark.KEPT,
        ),
        (
            {"applied": True, "lazyAdded": True, "lazyRestored": True},
            PolicyStage.APPLIED,
            LazyMark.LIFTED,
        ),
        (
            {"applied": True, "restored": True, "lazyAdded": True},
            PolicyStage.RESTORED,
            LazyMark.ADDED,
        ),
        ({"keepLazy": True}, PolicyStage.PENDING, LazyMark.NONE),  # keep without a Lazy: nothing
    ],
)
def test_policy_record_booleans_map_onto_stage_and_lazy_mark(
    flags: dict[str, bool], stage: PolicyStage, lazy: LazyMark
) -> None:
    """The five stored booleans read as a stage and a Lazy mark, and are written back."""
    record = PolicyRecord.from_dict({"kind": "ClusterPropagationPolicy", "name": "p", **flags})
    assert (record.stage, record.lazy) == (stage, lazy)
    assert PolicyRecord.from_dict(record.to_dict()) == record


def test_each_resolved_trigger_has_one_strategy() -> None:
    """touch, rebalance and both: one strategy each, chosen by the journalled value."""
    assert set(STRATEGIES) == set(Trigger)
    assert strategy_for("both").trigger is Trigger.BOTH
    assert [s.marks_lazy for s in map(strategy_for, Trigger)] == [True, False, True]


def test_surge_steps_move_only_along_their_table() -> None:
    """A surge goes none -> reserved -> surged -> moving -> releasing -> released; clean-up may
    release or keep any active step; nothing leaves released; a skipped step is a bug."""
    from tidal.engine.journal import SurgeRecord
    from tidal.engine.states import SURGE_TRANSITIONS, IllegalSurgeStep, SurgeStep

    record = SurgeRecord({"ns/Deployment/a": {"b": 5}})
    for step in (
        SurgeStep.RESERVED,
        SurgeStep.SURGED,
        SurgeStep.MOVING,
        SurgeStep.RELEASING,
        SurgeStep.RELEASED,
    ):
        record.advance(step)
    assert SURGE_TRANSITIONS[SurgeStep.RELEASED] == frozenset()
    with pytest.raises(IllegalSurgeStep):
        SurgeRecord({}).advance(SurgeStep.MOVING)
    assert all(
        SurgeStep.KEPT in SURGE_TRANSITIONS[s]
        for s in (SurgeStep.RESERVED, SurgeStep.SURGED, SurgeStep.MOVING, SurgeStep.RELEASING)
    )


def test_a_wave_surge_round_trips_through_the_journal() -> None:
    """Both directions' surge records and the run's strategy read back as written; a wave
    without surge keeps the 0.1.0 keys only."""
    from tidal.engine.journal import SurgeRecord
    from tidal.engine.states import SurgeStep

    wave = WaveState(1, [WorkloadKey("ns", "a", "Deployment")])
    assert "surge" not in wave.to_dict()
    wave.forward.surge = SurgeRecord(
        {"ns/Deployment/a": {"cluster-b": 5}},
        {"cluster-b": {"pods": 4.0}},
        SurgeStep.SURGED,
        ["OverridePolicy/ns/tidal-x-w1-0"],
    )
    wave.back.surge = SurgeRecord({"ns/Deployment/a": {"cluster-a": 4}}, kept="floor")
    state = RunState("team", "night", "r1", waves=[wave], strategy=Strategy.SURGE)
    again = RunState.from_dict(state.to_dict())
    assert again.strategy is Strategy.SURGE and state.to_dict()["strategy"] == "surge"
    assert (
        again.waves[0].forward.surge == wave.forward.surge
        and again.waves[0].back.surge == wave.back.surge
    )
    assert (
        RunState.from_dict({"schedule": "t", "window": "w", "runId": "r"}).strategy
        is Strategy.DIRECT
    )


def test_bridge_steps_move_only_along_their_table() -> None:
    """A bridge goes none -> reserved -> placing -> touching -> restoring -> restored ->
    released; a stopped run may release any active step; a skipped step is a bug."""
    from tidal.engine.journal import BridgeRecord
    from tidal.engine.states import BRIDGE_TRANSITIONS, BridgeStep, IllegalBridgeStep

    record = BridgeRecord({"ns/Deployment/a": {"a": 1, "b": 1}})
    for step in (
        BridgeStep.RESERVED,
        BridgeStep.PLACING,
        BridgeStep.TOUCHING,
        BridgeStep.RESTORING,
        BridgeStep.RESTORED,
        BridgeStep.RELEASED,
    ):
        record.advance(step)
    with pytest.raises(IllegalBridgeStep):
        BridgeRecord({}).advance(BridgeStep.TOUCHING)
    assert all(
        BridgeStep.RELEASED in BRIDGE_TRANSITIONS[s]
        for s in BridgeStep
        if s not in (BridgeStep.NONE, BridgeStep.RELEASED)
    )
    assert [s for s in BridgeStep if s.placed] == [
        BridgeStep.PLACING,
        BridgeStep.TOUCHING,
        BridgeStep.RESTORING,
    ]


def test_a_wave_bridge_round_trips_through_the_journal() -> None:
    """Both directions' bridge records (placements, touched templates) read back as written;
    a wave without one writes no bridge key."""
    from tidal.engine.journal import BridgedPolicy, BridgeRecord
    from tidal.engine.states import BridgeStep

    wave = WaveState(1, [WorkloadKey("ns", "a", "Deployment")])
    assert "bridge" not in wave.to_dict()
    wave.forward.bridge = BridgeRecord(
        {"ns/Deployment/a": {"a": 1, "b": 1}},
        {"b": {"pods": 1.0}},
        BridgeStep.TOUCHING,
        [
            BridgedPolicy(
                "ClusterPropagationPolicy",
                "p",
                None,
                {"x": 1},
                {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
            )
        ],
        ["ns/Deployment/a"],
    )
    wave.back.bridge = BridgeRecord({"ns/Deployment/a": {"a": 1, "b": 1}})
    again = RunState.from_dict(RunState("team", "night", "r1", waves=[wave]).to_dict())
    assert again.waves[0].forward.bridge == wave.forward.bridge
    assert again.waves[0].back.bridge == wave.back.bridge
