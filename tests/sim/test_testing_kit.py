"""tidal_sim.testing: the in-process Karmada answers as the HTTP server does, and its time
moves only when told (the engine's sleeps, a watch with nothing to send)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from tests.e2e.switch_helpers import static_placement, static_team
from tidal.karmada.client import CLUSTER_PROPAGATION_POLICIES as CPP
from tidal.karmada.client import CLUSTERS, RESOURCE_BINDINGS, KarmadaClient
from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator
from tidal_sim.testing import EngineClock, InProcessKarmada, ManualClock
from tidal_sim.testing.plugin import MakeKarmadaFake


def _names(client: KarmadaClient) -> list[str]:
    listing = client.request("list", CLUSTERS, "GET", CLUSTERS.path())
    return sorted(item["metadata"]["name"] for item in listing["items"])


def test_in_process_answers_like_http(
    make_karmada_fake: MakeKarmadaFake, demo_emulator: Emulator, tmp_path: Path
) -> None:
    """The same list request gives the same clusters in-process and over HTTP, and the
    in-process one is counted by the emulator's request accounting like any other."""
    fake = make_karmada_fake(DEFAULT_TOPOLOGY)
    http = KarmadaClient.from_kubeconfig(demo_emulator.write_kubeconfig(tmp_path / "kc"))
    in_process = _names(fake.client())
    assert in_process == _names(http) and {"cluster-a", "cluster-b"} <= set(in_process)
    assert fake.emulator.requests()["byVerb"].get("list") == 1


def test_engine_clock_sleep_moves_the_emulator() -> None:
    """Sleeping on the engine clock advances the emulator: pods of a changed placement start
    (0.5 simulated seconds), and now() is tz-aware simulated time."""
    with InProcessKarmada(static_team(), clock=ManualClock(start=0.0)) as fake:
        client, clock = fake.client(), fake.engine_clock()
        clock.sleep(5.0)  # the day placement's pods are up
        client.request(
            "patch",
            CPP,
            "PATCH",
            CPP.path(None, "team-cpp"),
            body={"spec": {"placement": static_placement({"cluster-b": 1})}},
            content_type="application/merge-patch+json",
        )
        path = RESOURCE_BINDINGS.path("ai-app", "web-0-deployment")

        def ready_on_b() -> int:
            binding = client.request("get", RESOURCE_BINDINGS, "GET", path)
            return sum(
                int(s.get("status", {}).get("readyReplicas", 0))
                for s in binding.get("status", {}).get("aggregatedStatus", [])
                if s["clusterName"] == "cluster-b"
            )

        assert ready_on_b() == 1
        clock.sleep(2.0)
        assert ready_on_b() == 5
        assert clock.now() == datetime.fromtimestamp(fake.clock.now(), tz=UTC)
        assert clock.monotonic() >= 7.0


def test_an_idle_watch_costs_simulated_time_only(make_karmada_fake: MakeKarmadaFake) -> None:
    """A watch with nothing to send ends after its timeoutSeconds of simulated time, in far
    less real time."""
    fake = make_karmada_fake(static_team())
    client = fake.client()
    fake.advance(5.0)  # the day placement's pods are up: nothing changes from here on
    began, sim_began = time.monotonic(), fake.clock.now()
    listing = client.request("list", RESOURCE_BINDINGS, "GET", RESOURCE_BINDINGS.path("ai-app"))
    query = {"resourceVersion": listing["metadata"]["resourceVersion"], "timeoutSeconds": 30}
    events = list(client.stream(RESOURCE_BINDINGS, RESOURCE_BINDINGS.path("ai-app"), query, 35.0))
    assert [e["type"] for e in events] == []
    assert fake.clock.now() - sim_began >= 30.0
    assert time.monotonic() - began < 10.0


def test_engine_clock_needs_a_manual_clock() -> None:
    """An emulator on a real-time clock cannot be driven by the engine's sleeps."""
    emulator = Emulator(None)
    try:
        EngineClock(emulator)
    except TypeError as exc:
        assert "ManualClock" in str(exc)
    else:
        raise AssertionError("EngineClock accepted a ScaledClock")
