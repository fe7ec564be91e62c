"""The emulator's own throughput (issue 3): requests/s for list, get, patch and watch fan-out
over HTTP with the official kubernetes client, and the time its controllers need to
reschedule every binding after a policy change.

    python -m benchmarks.sim_throughput [--workloads 10000] [--quick]

The HTTP figures use an emulator in a child process (server and client on their own cores);
the reschedule runs in-process so the time is read straight from the store.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from benchmarks import scenario as sc
from benchmarks.harness import RunConfig, Section, fmt, rtype, wait_until
from benchmarks.remote import RemoteEmulator

RB = ("work.karmada.io", "v1alpha2", "resourcebindings")
WATCHERS = 10


def _objects(url: str) -> Any:
    from kubernetes import client

    config = client.Configuration()
    config.host = url
    config.api_key = {"authorization": "Bearer sim:bench"}
    return client.CustomObjectsApi(client.ApiClient(config))


def http_rates(workloads: int, ops: int) -> dict[str, float]:
    fleet = sc.Fleet(workloads=workloads)
    topology = [sc.cluster("cluster-a", 100_000, 1, 0), sc.cluster("cluster-b", 100_000, 1, 0)]
    out: dict[str, float] = {}
    with RemoteEmulator(topology) as remote:
        remote.populate(
            fleet,
            sc.cpp("team-cpp", sc.static_placement({"cluster-a": 4, "cluster-b": 1})),
            {"cluster-a": 0.8, "cluster-b": 0.2},
        )
        api = _objects(remote.url)
        names = [f"{name}-deployment" for name, _ in sc.workload_names(fleet)]
        # list: every binding, 500 per page
        t0 = time.perf_counter()
        pages = items = 0
        token = None
        while True:
            page = api.list_namespaced_custom_object(
                *RB[:2], sc.NAMESPACE, RB[2], limit=500, _continue=token
            )
            pages += 1
            items += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        spent = time.perf_counter() - t0
        out["list_pages_per_s"] = pages / spent
        out["list_objects_per_s"] = items / spent
        # get: single bindings
        chosen = names[:: max(1, len(names) // ops)][:ops]
        t0 = time.perf_counter()
        for name in chosen:
            api.get_namespaced_custom_object(*RB[:2], sc.NAMESPACE, RB[2], name)
        out["get_per_s"] = len(chosen) / (time.perf_counter() - t0)
        # patch: merge patch of a template annotation
        t0 = time.perf_counter()
        for name, _ in sc.workload_names(fleet)[:ops]:
            api.patch_namespaced_custom_object(
                "apps",
                "v1",
                sc.NAMESPACE,
                "deployments",
                name,
                {"metadata": {"annotations": {"bench.tidal.io/n": str(t0)}}},
            )
        out["patch_per_s"] = ops / (time.perf_counter() - t0)
        # watch fan-out: WATCHERS streams, `ops` binding writes, every event to every watcher
        out["watch_events_per_s"] = _fan_out(remote.url, names[:ops], api)
    return out


def _fan_out(url: str, names: list[str], api: Any) -> float:
    version = api.list_namespaced_custom_object(*RB[:2], sc.NAMESPACE, RB[2], limit=1)["metadata"][
        "resourceVersion"
    ]
    received = [0] * WATCHERS
    done = threading.Event()
    started = threading.Barrier(WATCHERS + 1)

    def watch(i: int) -> None:
        watcher_api = _objects(url)
        response = watcher_api.list_namespaced_custom_object(
            *RB[:2],
            sc.NAMESPACE,
            RB[2],
            watch=True,
            resource_version=version,
            timeout_seconds=60,
            _preload_content=False,
        )
        started.wait()
        for line in response.stream(amt=None, decode_content=False):
            received[i] += line.count(b"\n")
            if received[i] >= len(names) or done.is_set():
                break
        response.release_conn()

    threads = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(WATCHERS)]
    for t in threads:
        t.start()
    started.wait()
    t0 = time.perf_counter()
    for name in names:
        api.patch_namespaced_custom_object(
            *RB[:2],
            sc.NAMESPACE,
            RB[2],
            name,
            {"metadata": {"annotations": {"bench.tidal.io/w": "1"}}},
        )
    ok = wait_until(lambda: min(received) >= len(names), 60, interval=0.005)
    spent = time.perf_counter() - t0
    done.set()
    return sum(received) / spent if ok else -1.0


def reschedule(workloads: int) -> dict[str, float]:
    """Load N Deployments through the controllers, patch the policy (not Lazy) to new weights,
    and time until every binding is scheduled to the new split."""
    from tidal_sim.clock import ScaledClock
    from tidal_sim.emulator import Emulator

    fleet = sc.Fleet(
        workloads=workloads,
        startup_seconds=0.0,
        termination_seconds=0.0,
        gpu_a=1_000_000,
        gpu_b=1_000_000,
        scheduler_latency=0.0,
    )
    policy = sc.cpp("team-cpp", sc.static_placement({"cluster-a": 4, "cluster-b": 1}))
    t0 = time.perf_counter()
    emu = Emulator(sc.topology(fleet, [policy]), clock=ScaledClock(1.0)).start()
    try:
        rb = rtype(emu, "work.karmada.io/v1alpha2", "ResourceBinding")
        cpp_type = rtype(emu, sc.CPP_API, "ClusterPropagationPolicy")

        def all_on(target: set[str]) -> bool:
            items, _ = emu.store.list(rb, copy_=False)
            if len(items) < workloads:
                return False
            for b in items:
                spec, status = b.get("spec") or {}, b.get("status") or {}
                if {c["name"] for c in spec.get("clusters") or [] if c.get("replicas")} - target:
                    return False
                if status.get("schedulerObservedGeneration") != b["metadata"]["generation"]:
                    return False
            return True

        wait_until(lambda: all_on({"cluster-a", "cluster-b"}), 600, interval=0.2)
        load = time.perf_counter() - t0
        current = emu.store.get(cpp_type, None, "team-cpp")
        current["spec"]["placement"] = sc.static_placement({"cluster-b": 1})
        t1 = time.perf_counter()
        emu.store.update(cpp_type, current)
        ok = wait_until(lambda: all_on({"cluster-b"}), 600, interval=0.1)
        spent = time.perf_counter() - t1
        return {"load_seconds": load, "reschedule_seconds": spent if ok else -1.0}
    finally:
        emu.stop()


def measure(workloads: int, ops: int) -> dict[str, float]:
    return {**http_rates(workloads, ops), **reschedule(workloads)}


def run(cfg: RunConfig) -> Section:
    workloads = 200 if cfg.tiny else 1_000 if cfg.quick else 10_000
    section = Section("sim", "Emulator throughput (issue 3)")
    figures = measure(workloads, 50 if cfg.tiny else 200 if cfg.quick else 500)
    for key, value in figures.items():
        section.put(key, round(value, 2))
    section.put("workloads", workloads)
    section.say(
        f"{workloads:,} Deployments with their ResourceBindings"
        + (" (--quick: 1/10 of the 10,000 of the full run)" if cfg.quick else "")
        + "; official kubernetes client, one connection, sequential requests; "
        f"watch fan-out: {WATCHERS} watchers on resourcebindings, each write delivered to all.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| LIST resourcebindings, 500 per page | {fmt(figures['list_pages_per_s'], 1)} pages/s, "
        f"{fmt(figures['list_objects_per_s'], 0)} objects/s |",
        f"| GET one binding | {fmt(figures['get_per_s'], 0)} requests/s |",
        f"| PATCH (merge) one template | {fmt(figures['patch_per_s'], 0)} requests/s |",
        f"| watch fan-out | {fmt(figures['watch_events_per_s'], 0)} events/s delivered |",
        f"| load {workloads:,} templates through the controllers | "
        f"{fmt(figures['load_seconds'], 1)} s |",
        f"| reschedule all {workloads:,} bindings after a policy patch | "
        f"{fmt(figures['reschedule_seconds'], 1)} s |",
    )
    return section


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sim_throughput")
    parser.add_argument("--workloads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="1,000 workloads")
    args = parser.parse_args()
    workloads = args.workloads or (1_000 if args.quick else 10_000)
    figures = measure(workloads, min(500, workloads))
    for key, value in figures.items():
        print(f"{key:24} {value:12,.2f}")


if __name__ == "__main__":
    main()
