"""The rollback as a reverse plan built from the journal (tidal.engine.reverse_plan): which
waves go back, in which order, with which workloads; the policies restored last first and the
Lazy lifted. Table-driven over journalled runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import BridgeRecord, PolicyRecord, RunState, WaveLeg, WaveState
from tidal.engine.reverse_plan import ReversePlan, WaveUndo, reverse_plan
from tidal.engine.states import Direction, LazyMark, PolicyStage, WaveResult

P, Q = "ClusterPropagationPolicy/p", "ClusterPropagationPolicy/q"
OK, FAILED = WaveResult.SUCCEEDED, WaveResult.FAILED


def _name(n: str) -> str:
    return f"ns/Deployment/{n}"


@dataclass
class Wave:
    """A journalled wave, briefly: its workloads, result and what it did forward."""

    names: str  # workload names, one letter each
    result: WaveResult | None = None
    triggered: str = ""
    rebalancers: tuple[str, ...] = ()
    bridged: str = ""  # templates its forward bridge touched

    def state(self, index: int) -> WaveState:
        bridge = (
            BridgeRecord({}, touched=[_name(n) for n in self.bridged]) if self.bridged else None
        )
        return WaveState(
            index,
            [WorkloadKey.parse(_name(n)) for n in self.names],
            result=self.result,
            rebalancers=list(self.rebalancers),
            forward=WaveLeg(
                Direction.FORWARD, triggered=[_name(n) for n in self.triggered], bridge=bridge
            ),
        )


@dataclass
class Case:
    waves: list[Wave]
    expected: list[tuple[int, str]]  # (wave, the workloads it moves back)
    stray: str = ""
    policy_of: dict[str, str] = field(default_factory=dict)  # default: every workload of P


CASES = {
    "succeeded and failed waves go back last first; one never started stays": Case(
        [Wave("ab", OK, "ab"), Wave("cd", FAILED, "cd"), Wave("ef")],
        [(2, "cd"), (1, "ab")],
    ),
    "a failed wave goes back with all its workloads, triggered or not yet": Case(
        [Wave("ab", OK, "ab"), Wave("cd", FAILED, "c")],
        [(2, "cd"), (1, "ab")],
    ),
    "a wave moved by a rebalancer counts as triggered": Case(
        [Wave("ab", OK, rebalancers=("tidal-t-r-w1",)), Wave("cd", FAILED, "cd")],
        [(2, "cd"), (1, "ab")],
    ),
    "waves rolled back already (a resumed rollback) are not moved again": Case(
        [Wave("ab", WaveResult.ROLLED_BACK, "ab"), Wave("cd", WaveResult.FAILED_ROLLED_BACK, "cd")],
        [],
    ),
    "a wave whose bridge alone touched templates moves those back, after the triggered": Case(
        [Wave("ab", OK, "ab"), Wave("cde", FAILED, bridged="ce")],
        [(1, "ab"), (2, "ce")],
    ),
    "a bridge of a wave that never started is not undone": Case(
        [Wave("ab", OK, "ab"), Wave("cd", None, bridged="c")],
        [(1, "ab")],
    ),
    "strays of untriggered waves go back in their waves, last first, after ours": Case(
        [Wave("ab", OK, "ab"), Wave("cd", FAILED), Wave("ef"), Wave("gh")],
        [(1, "ab"), (4, "h"), (3, "e")],
        stray="eh",
    ),
    "a stray of a triggered wave changes nothing": Case(
        [Wave("ab", OK, "ab"), Wave("cd")],
        [(1, "ab")],
        stray="a",
    ),
    "workloads of a policy the run did not change stay (only its Lazy was adopted)": Case(
        [Wave("ab", OK, "ab"), Wave("cd", FAILED, "cd")],
        [(2, "c"), (1, "a")],
        policy_of={_name("a"): P, _name("b"): Q, _name("c"): P, _name("d"): Q},
    ),
    "a workload outside the plan is not moved back; its wave still is": Case(
        [Wave("ab", OK, "ab"), Wave("c", FAILED, "c")],
        [(2, ""), (1, "a")],
        policy_of={_name("a"): P},
    ),
}


def _state(case: Case) -> RunState:
    return RunState(
        "team",
        "night",
        "r1",
        policies=[
            PolicyRecord("ClusterPropagationPolicy", "p", stage=PolicyStage.APPLIED),
            PolicyRecord("ClusterPropagationPolicy", "q", lazy=LazyMark.ADDED),  # adopted
        ],
        waves=[wave.state(i) for i, wave in enumerate(case.waves, start=1)],
    )


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_the_waves_to_undo_and_their_workloads(case: Case) -> None:
    names = {_name(n) for wave in case.waves for n in wave.names}
    policy_of = case.policy_of or dict.fromkeys(names, P)
    plan = reverse_plan(_state(case), {_name(n) for n in case.stray}, policy_of)
    expected = tuple(WaveUndo(i, tuple(_name(n) for n in moved)) for i, moved in case.expected)
    assert plan.waves == expected


def test_policies_restored_last_first_and_the_lazy_lifted_where_the_run_wrote_or_adopted_it() -> (
    None
):
    """Restore: every record, last first. Lift: the policies the run wrote and those whose
    Lazy it adopted; one neither written nor Lazy is left alone."""
    state = RunState(
        "team",
        "night",
        "r1",
        policies=[
            PolicyRecord("ClusterPropagationPolicy", "p", stage=PolicyStage.APPLIED),
            PolicyRecord("ClusterPropagationPolicy", "q", lazy=LazyMark.ADDED),
            PolicyRecord("ClusterPropagationPolicy", "r"),  # never written
            PolicyRecord("PropagationPolicy", "s", "ns", stage=PolicyStage.RESTORED),
        ],
    )
    plan = reverse_plan(state, set(), {})
    assert plan == ReversePlan(
        restore=(
            "PropagationPolicy/ns/s",
            "ClusterPropagationPolicy/r",
            "ClusterPropagationPolicy/q",
            "ClusterPropagationPolicy/p",
        ),
        waves=(),
        lift=("ClusterPropagationPolicy/p", "ClusterPropagationPolicy/q", "PropagationPolicy/ns/s"),
    )


def test_the_plan_reads_the_journal_only() -> None:
    """Built twice from the same journal (a resumed rollback), the same plan; the journal is
    left as it was."""
    case = CASES["strays of untriggered waves go back in their waves, last first, after ours"]
    state = _state(case)
    before = state.to_json()
    names = {_name(n) for wave in case.waves for n in wave.names}
    first = reverse_plan(state, {_name("e")}, dict.fromkeys(names, P))
    assert reverse_plan(state, {_name("e")}, dict.fromkeys(names, P)) == first
    assert state.to_json() == before
