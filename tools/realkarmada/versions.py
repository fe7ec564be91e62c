"""Which upstream releases the wrapper modules pin, and the Go module cache paths they live at."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_KARMADA = "v1.18.2"
KWOK = "v0.8.0"
MODULES_DIR = Path(__file__).parent / "modules"

KARMADA_MODULE = "github.com/karmada-io/karmada"
KUBERNETES_MODULE = "k8s.io/kubernetes"
KWOK_MODULE = "sigs.k8s.io/kwok"


NO_GO = (
    "go not found on PATH: install Go >= 1.25 (the real-Karmada tier builds upstream "
    "commands from Go modules)"
)


class ToolchainError(RuntimeError):
    """Go is missing or a go command failed; the message is one line naming the fix."""


def go_env() -> dict[str, str]:
    """The environment every go command runs with: local toolchain, no workspace, no cgo."""
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", GOWORK="off", CGO_ENABLED="0", GOFLAGS="-mod=mod")
    return env


def go(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run `go ARGS` and return stdout; a failure raises ToolchainError with go's last line."""
    try:
        done = subprocess.run(
            ["go", *args], cwd=cwd, env=env or go_env(), text=True, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise ToolchainError(NO_GO) from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ToolchainError(f"go {' '.join(args[:3])} failed in {cwd}: {tail}")
    return done.stdout


def module_dir(path: str, version: str) -> Path:
    """Download (if needed) a module and return its read-only directory in the module cache."""
    out = go("mod", "download", "-json", f"{path}@{version}", cwd=Path("/"))
    return Path(json.loads(out)["Dir"])


def gomod_file(path: str, version: str) -> str:
    """The go.mod text of an upstream module release (from the module cache)."""
    out = go("mod", "download", "-json", f"{path}@{version}", cwd=Path("/"))
    return Path(json.loads(out)["GoMod"]).read_text()


@dataclass(frozen=True)
class Release:
    """A Karmada release and the Kubernetes release of the same k8s.io/* version."""

    karmada: str
    kubernetes: str
    staging: str  # the k8s.io/* staging version, v0.N.M

    @classmethod
    def of(cls, karmada: str) -> Release:
        gomod = gomod_file(KARMADA_MODULE, karmada)
        m = re.search(r"^\s*k8s\.io/api (v0\.(\d+)\.(\d+))\s*$", gomod, re.MULTILINE)
        if m is None:
            raise ToolchainError(f"karmada {karmada}: go.mod does not require k8s.io/api")
        return cls(karmada, f"v1.{m.group(2)}.{m.group(3)}", m.group(1))


def staging_replaces(kubernetes_gomod: str, staging: str) -> list[str]:
    """`replace k8s.io/X => k8s.io/X v0.N.M` for every staging module k8s.io/kubernetes replaces
    with a local path (the list changes between releases, so it is read, not hard-coded)."""
    names = re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/", kubernetes_gomod, re.MULTILINE)
    if not names:
        raise ToolchainError("k8s.io/kubernetes go.mod: no staging replaces found")
    return [f"{n} => {n} {staging}" for n in sorted(set(names))]


def go_directive(gomod: str) -> str:
    m = re.search(r"^go (\S+)", gomod, re.MULTILINE)
    return m.group(1) if m else "1.25.0"
