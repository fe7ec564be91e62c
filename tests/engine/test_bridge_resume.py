"""A bridged wave stopped at its worst moments: a crash after each bridge step is journalled
(before its side effect) and while the bridged replicas start resumes to a clean end (the
policy at the window's placement and no longer Lazy, every workload at its share, none ever
below its replicas); a rollback and a halt put the policy's placement back too."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.e2e.surge_helpers import FULL_AVAILABILITY, desired, dips, splits, surge_schedule, team
from tests.e2e.switch_helpers import MakeEmulator, client_for, load_one, static_placement
from tests.engine.crashing import crash_run
from tidal.domain.clock import SystemClock
from tidal.domain.placement import Placement
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.states import BridgeStep
from tidal.engine.switch import run_switch
from tidal.karmada import policies as policies_api
from tidal.karmada.client import KarmadaClient
from tidal.karmada.names import BRIDGE_PLACEMENT
from tidal.karmada.views import PolicyView

pytestmark = pytest.mark.e2e

NIGHT_PLACEMENT = Placement(static_placement({"cluster-b": 1}))


def _policy(client: KarmadaClient) -> PolicyView:
    return PolicyView(policies_api.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None))


def _at(step: BridgeStep) -> Callable[[Any], bool]:
    return lambda e: isinstance(e, ev.BridgeStepped) and e.step is step and not e.rollback


def _waiting() -> Callable[[Any], bool]:
    """While the bridged replicas start (after the touches, before they are ready)."""
    seen: list[bool] = []

    def when(e: Any) -> bool:
        if isinstance(e, ev.BridgeStepped) and e.step is BridgeStep.TOUCHING:
            seen.append(True)
        return bool(seen) and isinstance(e, ev.WaveProgress)

    return when


POINTS: dict[str, Callable[[], Callable[[Any], bool]]] = {
    "reserved": lambda: _at(BridgeStep.RESERVED),
    "placing": lambda: _at(BridgeStep.PLACING),
    "touching": lambda: _at(BridgeStep.TOUCHING),
    "waiting": _waiting,
    "restoring": lambda: _at(BridgeStep.RESTORING),
    "restored": lambda: _at(BridgeStep.RESTORED),
}


@pytest.mark.parametrize("point", sorted(POINTS))
def test_a_crash_at_each_bridge_step_resumes_to_a_clean_end(
    make_switch_emulator: MakeEmulator, tmp_path: Path, point: str
) -> None:
    """Crashed at the step, the resumed run succeeds: the policy has the night placement (no
    Duplicated left) without the temporary Lazy, each workload is at its night share and no
    more, and no workload was ever below its replicas, the crash included."""
    emu = make_switch_emulator(team([1, 2]))
    client = client_for(emu, tmp_path)
    loaded = load_one(surge_schedule(tmp_path, FULL_AVAILABILITY))
    journal = InMemoryJournal()
    day = splits(emu)
    night = {w: {"cluster-b": sum(split.values())} for w, split in day.items()}
    since = emu.clock.now()
    crash_run(client, loaded, journal, POINTS[point]())
    state = journal.load("team-s")
    assert state is not None and state.waves[0].forward.bridge is not None
    duplicated = (
        _policy(client).spec["placement"]["replicaScheduling"].get("replicaSchedulingType")
        == "Duplicated"
    )
    assert duplicated is (point in ("touching", "waiting", "restoring"))  # the worst moments
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded", record.to_json()
    final = journal.load("team-s")
    assert final is not None and final.waves[0].forward.bridge is not None
    assert final.waves[0].forward.bridge.step is BridgeStep.RELEASED
    policy = _policy(client)
    assert Placement.of(policy.spec.get("placement")) == NIGHT_PLACEMENT
    assert policy.activation != "Lazy"
    assert dips(emu, since, day, night) == []
    assert splits(emu) == night and desired(emu) == night


ROLLBACK = (
    FULL_AVAILABILITY.replace("waveTimeout: 60s", "waveTimeout: 3s") + "    onFailure: rollback\n"
)


def test_a_bridge_that_never_gets_ready_rolls_back_to_the_day_placement(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b's pods fail: the bridged replicas never serve, the wave times out, and the
    rollback puts the day placement back on the policy (not the bridge), moves the bridged
    workloads back to cluster-a only, with none ever below its replicas."""
    emu = make_switch_emulator(team([1, 2]))
    client = client_for(emu, tmp_path)
    placement_before = Placement.of(_policy(client).spec.get("placement"))
    path = surge_schedule(tmp_path, ROLLBACK)
    emu.set_pods_fail("cluster-b")
    day = splits(emu)
    since = emu.clock.now()
    record = run_switch(
        client, load_one(path), "night", clock=SystemClock(), journal=InMemoryJournal()
    )
    assert record.result == "rolledBack", record.to_json()
    assert "bridged replicas not ready" in record.waves[0].reason
    policy = _policy(client)
    assert Placement.of(policy.spec.get("placement")) == placement_before
    assert policy.activation != "Lazy"
    assert dips(emu, since, day, day) == []
    assert desired(emu) == day


def test_a_halted_bridge_leaves_the_window_placement_on_the_policy(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """onFailure halt: the timed-out bridge gives way to the night placement on the policy
    (the run's own change stays, as any halted run's), its room is given back, and the run
    warns that web-0 keeps serving in both clusters until a run moves it."""
    emu = make_switch_emulator(team([1]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, ROLLBACK.replace("onFailure: rollback", "onFailure: halt"))
    emu.set_pods_fail("cluster-b")
    journal = InMemoryJournal()
    with structlog.testing.capture_logs() as logs:
        record = run_switch(client, load_one(path), "night", clock=SystemClock(), journal=journal)
    assert record.result == "failed", record.to_json()
    assert Placement.of(_policy(client).spec.get("placement")) == NIGHT_PLACEMENT
    assert BRIDGE_PLACEMENT not in _policy(client).annotations
    left = [e for e in logs if e.get("code") == "bridge_left"]
    assert left and "ai-app/Deployment/web-0" in left[0]["message"]
    state = journal.load("team-s")
    assert state is not None and state.waves[0].forward.bridge is not None
    assert state.waves[0].forward.bridge.step is BridgeStep.RELEASED


def test_a_rollback_bridges_the_way_back_too(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Wave 1 moved web-0 (1 replica) to cluster-b through a bridge; wave 2's bridge never
    serves (cluster-b's new pods fail from then on): the rollback moves web-0 back to
    cluster-a through a bridge of its own (cluster-a has no member at night), so no workload
    is ever below its replicas, and the day placement is back on the policy."""
    emu = make_switch_emulator(team([1, 1]))
    client = client_for(emu, tmp_path)
    placement_before = Placement.of(_policy(client).spec.get("placement"))
    path = surge_schedule(tmp_path, ROLLBACK.replace("waveSize: 2", "waveSize: 1"))
    day = splits(emu)
    since = emu.clock.now()
    events: list[Any] = []

    def observe(e: Any) -> None:
        events.append(e)
        if isinstance(e, ev.WaveStarted) and e.wave == 2 and not e.rollback:
            emu.set_pods_fail("cluster-b")

    record = run_switch(
        client,
        load_one(path),
        "night",
        clock=SystemClock(),
        journal=InMemoryJournal(),
        on_event=observe,
    )
    assert record.result == "rolledBack", record.to_json()
    back = [e for e in events if isinstance(e, ev.BridgeStepped) and e.rollback]
    assert [e.step for e in back][-1] is BridgeStep.RESTORED
    assert Placement.of(_policy(client).spec.get("placement")) == placement_before
    night = {w: {"cluster-b": sum(split.values())} for w, split in day.items()}
    assert dips(emu, since, day, night) == []  # never below its replicas, there and back
    assert desired(emu) == day


def test_a_template_changed_while_the_bridge_is_on_its_policy_is_put_back(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """web-0 moved in wave 1; someone edits it while wave 2's bridge placement is on the
    policy, so it takes the bridge: once the placement is back the run touches web-0 again,
    warns (bridge_stray), and web-0 ends at its night share only."""
    from tidal.karmada import templates as templates_api

    emu = make_switch_emulator(team([1, 1]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY.replace("waveSize: 2", "waveSize: 1"))
    day = splits(emu)
    night = {w: {"cluster-b": sum(split.values())} for w, split in day.items()}
    since = emu.clock.now()

    def edit(e: Any) -> None:
        if isinstance(e, ev.BridgeStepped) and e.wave == 2 and e.step is BridgeStep.TOUCHING:
            templates_api.touch(
                client,
                "apps/v1",
                "Deployment",
                "ai-app",
                "web-0",
                stamp="someone",
                run_id="someone",
            )
            time.sleep(0.3)  # let the emulator's detector apply the bridge placement to it

    with structlog.testing.capture_logs() as logs:
        record = run_switch(
            client,
            load_one(path),
            "night",
            clock=SystemClock(),
            journal=InMemoryJournal(),
            on_event=edit,
        )
    assert record.result == "succeeded", record.to_json()
    strays = [e for e in logs if e.get("code") == "bridge_stray"]
    assert strays and "ai-app/Deployment/web-0" in strays[0]["message"]
    assert dips(emu, since, day, night) == []
    assert desired(emu) == night


def test_a_journal_lost_mid_bridge_loses_nothing(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Crashed with the bridge placement on the policy and the journal gone: the next run
    finds the placement from before the bridge in the policy's own mark and puts it back
    before it plans; it ends at the night placement, no mark left, every workload at its
    night share, none below its replicas once the bridge served."""
    emu = make_switch_emulator(team([1, 2]))
    client = client_for(emu, tmp_path)
    loaded = load_one(surge_schedule(tmp_path, FULL_AVAILABILITY))
    day = splits(emu)
    night = {w: {"cluster-b": sum(split.values())} for w, split in day.items()}
    crash_run(client, loaded, InMemoryJournal(), _waiting())
    assert BRIDGE_PLACEMENT in _policy(client).annotations
    served = {
        w: {"cluster-a": n, "cluster-b": n}
        for w, n in ((w, sum(split.values())) for w, split in day.items())
    }
    deadline = time.monotonic() + 20
    while splits(emu) != served and time.monotonic() < deadline:
        time.sleep(0.1)
    assert splits(emu) == served
    since = emu.clock.now()
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=InMemoryJournal())
    assert record.result == "succeeded", record.to_json()
    policy = _policy(client)
    assert Placement.of(policy.spec.get("placement")) == NIGHT_PLACEMENT
    assert BRIDGE_PLACEMENT not in policy.annotations and policy.activation != "Lazy"
    assert dips(emu, since, day, night) == []  # never below its replicas
    assert splits(emu) == night and desired(emu) == night
