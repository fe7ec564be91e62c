"""The run's replicas over time (tidal.engine.samples): taken from the bindings the gate
watches, kept compact in each wave's journal record, and old records still load."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.switch_helpers import load_one, static_team, write_schedule
from tests.engine.test_inprocess import SCHEDULE
from tidal.engine import samples
from tidal.engine.journal import InMemoryJournal, WaveState
from tidal.engine.states import RunResult
from tidal.engine.switch import run_switch
from tidal_sim.testing.plugin import MakeKarmadaFake


def _sample(t: float, ready_b: int) -> samples.Sample:
    return {"t": t, "ready": {"cluster-b": ready_b}, "desired": {"cluster-b": 5}, "lowest": {}}


def test_a_flat_stretch_keeps_its_start_and_moves_its_end() -> None:
    """Three samples with the same figures are two: the first, and the latest time."""
    kept: list[samples.Sample] = []
    for t in (0.0, 2.0, 4.0):
        samples.keep(kept, _sample(t, 3))
    assert [s["t"] for s in kept] == [0.0, 4.0]
    samples.keep(kept, _sample(6.0, 5))
    assert [(s["t"], s["ready"]["cluster-b"]) for s in kept] == [(0.0, 3), (4.0, 3), (6.0, 5)]


def test_a_full_wave_is_thinned_to_every_other_sample_keeping_both_ends() -> None:
    """Past MAX_SAMPLES every other sample goes; the first and the newest stay."""
    kept: list[samples.Sample] = []
    for i in range(samples.MAX_SAMPLES + 1):
        samples.keep(kept, _sample(float(i), i))
    assert len(kept) == samples.MAX_SAMPLES // 2 + 1
    assert kept[0]["t"] == 0.0 and kept[-1]["t"] == float(samples.MAX_SAMPLES)


def test_a_run_of_many_waves_keeps_fewer_samples_a_wave() -> None:
    """10 waves keep 48 a wave; 100 keep 4 (RUN_SAMPLES over the run, MIN_SAMPLES a wave)."""
    assert samples.limit(10) == 48 and samples.limit(100) == 4 and samples.limit(0) == 48
    kept: list[samples.Sample] = []
    for i in range(20):
        samples.keep(kept, _sample(float(i), i), samples.limit(100))
    assert len(kept) <= 4 and kept[0]["t"] == 0.0 and kept[-1]["t"] == 19.0


def test_the_sampler_waits_between_samples_unless_forced() -> None:
    """A second sample within EVERY_SECONDS is not due; a forced one is."""
    sampler = samples.Sampler()
    assert sampler.due(1, 10.0) and not sampler.due(1, 11.0)
    assert sampler.due(1, 11.5, force=True) and sampler.due(2, 11.6)


def test_a_wave_record_without_samples_loads_and_writes_no_key() -> None:
    """A journal from before samples loads (no samples), and writes none back."""
    wave = WaveState.from_dict({"index": 1, "workloads": ["ai-app/Deployment/web-0"]})
    assert wave.samples == [] and "samples" not in wave.to_dict()


def test_a_switch_records_the_runs_replicas_per_cluster_in_each_wave(
    make_karmada_fake: MakeKarmadaFake, tmp_path: Path
) -> None:
    """The night switch of four 5-replica workloads: each wave's record ends with the run's
    totals as they were when it converged (wave 1: its 10 replicas on cluster-b, the other two
    workloads' 4:1 split left; wave 2: all 20), and times since the run's start never go
    back."""
    fake = make_karmada_fake(static_team())
    journal = InMemoryJournal()
    client = fake.client()
    record = run_switch(
        client,
        load_one(write_schedule(tmp_path, SCHEDULE)),
        "night",
        clock=fake.engine_clock(),
        journal=journal,
    )
    assert record.result is RunResult.SUCCEEDED
    state = journal.load("team-u")
    assert state is not None
    first, second = state.waves
    assert first.samples and second.samples
    assert first.samples[-1]["desired"] == {"cluster-a": 8, "cluster-b": 12}
    assert second.samples[-1]["desired"] == {"cluster-b": 20}
    assert second.samples[-1]["ready"]["cluster-b"] == 20  # (cluster-a's 8: pods leaving)
    times = [s["t"] for w in state.waves for s in w.samples]
    assert times == sorted(times)
    assert len(first.samples) <= samples.MAX_SAMPLES
