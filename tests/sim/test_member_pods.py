"""The members' Node and Pods behind the cluster proxy (EmulatorSettings memberPods)."""

from __future__ import annotations

from typing import Any

from tests.e2e.switch_helpers import NS, cluster, cpp, deployment, namespace
from tests.sim.http_helpers import call, raw
from tidal_sim.clock import ManualClock
from tidal_sim.controllers.member_pods import POD
from tidal_sim.emulator import Emulator

WITHOUT_PODS = {
    "apiVersion": "sim.tidal.io/v1alpha1",
    "kind": "EmulatorSettings",
    "spec": {"memberPods": False},
}
PROXY = "/apis/cluster.karmada.io/v1alpha1/clusters/cluster-a/proxy"
ONLY_A = {"clusterAffinity": {"clusterNames": ["cluster-a"]}}


def _pods(emu: Emulator) -> list[dict[str, Any]]:
    code, listed = call(emu, "GET", PROXY + "/api/v1/pods")
    assert code == 200
    return list(listed["items"])


def _emulator(make_emulator: Any, *, settings: dict[str, Any] | None = None) -> Emulator:
    a = cluster("cluster-a", cpu="3", pods="10", startup=1.0, termination=5.0)
    team = [namespace(), cpp("team-cpp", "t1", ONLY_A), deployment("web", "t1", 4, cpu="1")]
    emu: Emulator = make_emulator(
        ([settings] if settings else []) + [a, *team], clock=ManualClock()
    )
    emu.advance(0.5)
    return emu


def test_members_show_the_simulated_pods_from_creation_to_the_end_of_termination(
    make_emulator: Any,
) -> None:
    """Nothing is written for a member until a request reaches it through the proxy; from
    then on its pods are there (those it had, and new ones as they are created: bound when
    they got room, pending without a node), keep their requests while they terminate and are
    gone once termination ends."""
    emu = _emulator(make_emulator)
    unread = emu.server.members.member("cluster-a")
    assert unread.list(POD)[0] == []
    code, nodes = call(emu, "GET", PROXY + "/api/v1/nodes")
    assert code == 200
    (node,) = nodes["items"]
    assert node["status"]["allocatable"] == {"cpu": "3", "memory": "4Ti", "pods": "10"}
    pods = _pods(emu)
    assert len(pods) == 4
    bound = sorted(p["spec"].get("nodeName", "") for p in pods)
    assert bound == ["", *[node["metadata"]["name"]] * 3]
    assert {p["spec"]["containers"][0]["resources"]["requests"]["cpu"] for p in pods} == {"1"}

    path = f"/apis/apps/v1/namespaces/{NS}/deployments/web"
    body = {"spec": {"replicas": 1}}
    assert raw(emu, "PATCH", path, body, "application/merge-patch+json")[0] == 200
    emu.advance(1.0)
    assert len(_pods(emu)) == 3  # the pending one went at once; two terminate for 5 s
    emu.advance(5.0)
    assert len(_pods(emu)) == 1


def test_with_member_pods_off_the_members_hold_no_pods(make_emulator: Any) -> None:
    """With memberPods false (a test writes the members itself) the simulation writes
    nothing behind the proxy."""
    emu = _emulator(make_emulator, settings=WITHOUT_PODS)
    assert _pods(emu) == []
