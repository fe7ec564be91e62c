"""tools.realkarmada without Go: module generation, certificates, process supervision."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tools.realkarmada import modules
from tools.realkarmada.pki import Pki
from tools.realkarmada.plane import default_work_dir, serving_flags
from tools.realkarmada.procs import PlaneError, Supervisor, free_port, stop_pids
from tools.realkarmada.versions import Release, ToolchainError, go, staging_replaces

KUBERNETES_GOMOD = """module k8s.io/kubernetes

go 1.25.0

require (
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-2025
)
"""
MODULES = Path(modules.__file__).parent / "modules"


def test_staging_replaces_come_from_the_kubernetes_gomod() -> None:
    """Every ./staging replace becomes a pin to the release's v0 version; others are left."""
    assert staging_replaces(KUBERNETES_GOMOD, "v0.35.3") == [
        "k8s.io/api => k8s.io/api v0.35.3",
        "k8s.io/client-go => k8s.io/client-go v0.35.3",
    ]


def test_a_gomod_without_staging_replaces_is_an_error() -> None:
    """A go.mod that is not Kubernetes' (no staging replaces) is refused with one line."""
    with pytest.raises(ToolchainError, match="no staging replaces"):
        staging_replaces("module x\n", "v0.35.3")


def test_committed_controlplane_module_pins_every_staging_module_to_one_version() -> None:
    """The committed go.mod pins Karmada, Kubernetes and k8s.io/* of one release."""
    text = (MODULES / "controlplane" / "go.mod").read_text()
    replaces = [line.split() for line in text.splitlines() if " => " in line]
    assert len(replaces) > 20
    assert {r[-1] for r in replaces} == {"v0.35.3"}
    assert all(r[0] == r[2] for r in replaces)
    assert "github.com/karmada-io/karmada v1.18.2" in text
    assert "k8s.io/kubernetes v1.35.3" in text
    assert (MODULES / "controlplane" / "go.sum").stat().st_size > 0
    assert "sigs.k8s.io/kwok v0.8.0" in (MODULES / "kwok" / "go.mod").read_text()


def test_release_pairs_karmada_with_the_kubernetes_of_its_k8s_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """k8s.io/api v0.N.M in Karmada's go.mod selects k8s.io/kubernetes v1.N.M."""
    monkeypatch.setattr(
        "tools.realkarmada.versions.gomod_file",
        lambda path, version: "require (\n\tk8s.io/api v0.34.7\n)\n",
    )
    assert Release.of("v1.16.0") == Release("v1.16.0", "v1.34.7", "v0.34.7")


def test_missing_go_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without go on PATH the error names the fix, not a traceback."""
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolchainError, match="go not found on PATH"):
        go("version")


def test_pki_server_certificate_verifies_for_loopback(tmp_path: Path) -> None:
    """A server leaf verifies against the CA for 127.0.0.1 and localhost."""
    pki = Pki(tmp_path)
    crt, key = pki.issue("srv", "srv", server=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(crt), str(key))
    client = ssl.create_default_context(cafile=str(pki.ca))
    import socket
    import threading

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def accept() -> None:
            conn, _ = listener.accept()
            with server.wrap_socket(conn, server_side=True):
                pass

        t = threading.Thread(target=accept)
        t.start()
        for host in ("127.0.0.1", "localhost"):
            if host == "localhost":
                t.join()
                t = threading.Thread(target=accept)
                t.start()
            with (
                socket.create_connection(("127.0.0.1", port)) as raw,
                client.wrap_socket(raw, server_hostname=host) as tls,
            ):
                assert tls.version()
        t.join()


def test_a_process_that_dies_is_named_with_its_last_log_lines(tmp_path: Path) -> None:
    """Supervisor.wait raises naming the process, its exit code and its log's last lines."""
    sup = Supervisor(tmp_path)
    sup.start("broken", [sys.executable, "-c", "print('flag --x unknown'); raise SystemExit(3)"])
    with pytest.raises(PlaneError, match=r"(?s)broken exited with code 3.*flag --x unknown"):
        sup.wait("broken", lambda: False, timeout=10)


def test_stop_pids_ends_recorded_process_groups(tmp_path: Path) -> None:
    """down's stop: SIGTERM, then SIGKILL for a process that ignores SIGTERM."""
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
        ],
        start_new_session=True,
    )
    polite = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stop_pids({"stubborn": stubborn.pid, "polite": polite.pid}, grace=1.0)
    assert stubborn.wait(5) != 0 and polite.wait(5) != 0


def test_stop_pids_leaves_a_reused_pid_alone() -> None:
    """A recorded PID whose start time no longer matches belongs to someone else: not signalled."""
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        stop_pids({"gone": other.pid}, grace=0.5, starts={"gone": 1})
        assert other.poll() is None
    finally:
        other.kill()
        other.wait(5)


def _fake_command(tmp: Path, help_text: str) -> str:
    cmd = tmp / "karmada-scheduler"
    cmd.write_text(f"#!/bin/sh\ncat <<'HELP'\n{help_text}\nHELP\n")
    cmd.chmod(0o755)
    return str(cmd)


@pytest.mark.parametrize(
    ("help_text", "expected"),
    [
        (
            "      --health-probe-bind-address string   probes\n"
            "      --metrics-bind-address string   metrics",
            ["--metrics-bind-address=127.0.0.1:2", "--health-probe-bind-address=127.0.0.1:1"],
        ),
        (
            "      --bind-address string   ip\n      --secure-port int   port\n"
            "      --metrics-bind-address string   metrics",
            ["--bind-address=127.0.0.1", "--secure-port=1", "--metrics-bind-address=127.0.0.1:2"],
        ),
        (
            "      --bind-address string   ip\n      --secure-port int   healthz and metrics",
            ["--bind-address=127.0.0.1", "--secure-port=1"],
        ),
    ],
)
def test_controller_listeners_use_the_flags_the_release_offers(
    tmp_path: Path, help_text: str, expected: list[str]
) -> None:
    """v1.18-style health-probe flags when --help lists them, else v1.10's bind/secure port."""
    assert serving_flags(_fake_command(tmp_path, help_text), 1, 2) == expected


def test_plane_work_dir_follows_its_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """TIDAL_REALKARMADA_PLANE gives a second checkout its own plane; unset, the cache's."""
    monkeypatch.setenv("TIDAL_REALKARMADA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TIDAL_REALKARMADA_PLANE", raising=False)
    assert default_work_dir() == tmp_path / "cache" / "plane"
    monkeypatch.setenv("TIDAL_REALKARMADA_PLANE", str(tmp_path / "mine"))
    assert default_work_dir() == tmp_path / "mine"


def test_the_planes_ports_are_distinct_and_outside_the_ephemeral_range() -> None:
    """Ports chosen before the processes start never come from the range the kernel gives to
    outgoing connections, so a client cannot take one meanwhile, and no port is chosen twice."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    taken: set[int] = set()
    ports = [free_port(taken) for _ in range(14)]
    assert len(set(ports)) == 14
    assert not [p for p in ports if low <= p <= high]


def test_kwok_pod_stages_take_the_planes_jitter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plane's jitter replaces that of every pod stage that has one; node stages keep
    theirs."""
    from tools.realkarmada import upstream

    stage = tmp_path / "kustomize" / "stage"
    for folder, name, delay in (
        ("node/fast", "node-initialize", None),
        ("node/heartbeat-with-lease", "node-heartbeat-with-lease", 610000),
        ("pod/general", "pod-create", 5000),
        ("pod/general", "pod-delete", None),
        ("pod/general", "pod-ready", 5000),
    ):
        (stage / folder).mkdir(parents=True, exist_ok=True)
        spec = {} if delay is None else {"delay": {"durationMilliseconds": 1000}}
        if delay is not None:
            spec["delay"]["jitterDurationMilliseconds"] = delay
        doc = {"kind": "Stage", "metadata": {"name": name}, "spec": spec}
        (stage / folder / f"{name}.yaml").write_text(json.dumps(doc))
    monkeypatch.setattr(upstream, "module_dir", lambda path, version: tmp_path)
    jitter = {
        d["metadata"]["name"]: d["spec"].get("delay", {}).get("jitterDurationMilliseconds")
        for d in upstream.kwok_stages(1000)
    }
    assert jitter == {
        "node-initialize": None,
        "node-heartbeat-with-lease": 610000,
        "pod-create": 1000,
        "pod-delete": None,
        "pod-ready": 1000,
    }
