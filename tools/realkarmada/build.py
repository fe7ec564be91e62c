"""Build the upstream commands from the wrapper modules into a cache outside the repository.

The cache key hashes the wrapper go.mod/go.sum files, the Go version and the build flags, so a
second build with nothing changed costs one `stat`. Output: <cache>/<key>/bin/<name>.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tools.realkarmada.modules import (
    CONTROLPLANE_TOOLS,
    ETCD_MAIN,
    KWOK_TOOLS,
    write_modules,
)
from tools.realkarmada.versions import (
    DEFAULT_KARMADA,
    MODULES_DIR,
    NO_GO,
    Release,
    ToolchainError,
    go,
    go_env,
)

# Bump when the build flags or the set of binaries change: part of the cache key.
BUILD_FLAGS_REVISION = "2"  # 2: karmada-scheduler built with SCHEDULER_TAGS
# upstream's hack/build.sh builds Karmada with this tag; without it karmada-scheduler panics
# encoding scheduler-estimator messages (their Kubernetes fields need the protobuf messages)
SCHEDULER_TAGS = "kubernetes_protomessage_one_more_release"
BINARIES = ("etcd", *CONTROLPLANE_TOOLS, *KWOK_TOOLS)
# Both the Go build cache and the install cache live here unless TIDAL_REALKARMADA_CACHE says else.
DEFAULT_CACHE = Path.home() / ".cache" / "tidal-realkarmada"


def cache_root() -> Path:
    return Path(os.environ.get("TIDAL_REALKARMADA_CACHE") or DEFAULT_CACHE)


@dataclass(frozen=True)
class Built:
    """A finished build: where its binaries are and the release they come from."""

    bin_dir: Path
    release: Release

    def path(self, name: str) -> Path:
        return self.bin_dir / name


def modules_for(karmada: str) -> Path:
    """The committed modules for the default version; another version is generated in the cache."""
    if karmada == DEFAULT_KARMADA:
        return MODULES_DIR
    generated = cache_root() / "modules" / karmada
    if not (generated / "controlplane" / "go.sum").exists():
        write_modules(Release.of(karmada), generated)
    return generated


def ldflags(release: Release, stamp: str) -> str:
    major, minor, _ = release.kubernetes.lstrip("v").split(".")
    kv = "k8s.io/component-base/version"
    kd = "github.com/karmada-io/karmada/pkg/version"
    return " ".join(
        [
            "-s",
            "-w",
            f"-X {kv}.gitVersion={release.kubernetes}",
            f"-X {kv}.gitMajor={major}",
            f"-X {kv}.gitMinor={minor}",
            f"-X {kv}.gitTreeState=clean",
            f"-X {kv}.buildDate={stamp}",
            f"-X {kd}.gitVersion={release.karmada}",
            f"-X {kd}.gitTreeState=clean",
            f"-X {kd}.buildDate={stamp}",
        ]
    )


def cache_key(modules: Path, karmada: str) -> str:
    h = hashlib.sha256(karmada.encode())
    h.update(go("env", "GOVERSION").encode())
    for name in (
        "controlplane/go.mod",
        "controlplane/go.sum",
        "kwok/go.mod",
        "kwok/go.sum",
        f"controlplane/{ETCD_MAIN}/main.go",
    ):
        h.update(name.encode() + (modules / name).read_bytes())
    h.update(BUILD_FLAGS_REVISION.encode())
    return h.hexdigest()[:16]


def find(karmada: str = DEFAULT_KARMADA) -> Built | None:
    """The cached build for this version, or None when it has not been built."""
    modules = modules_for(karmada)
    out = cache_root() / f"{karmada}-{cache_key(modules, karmada)}"
    if not (out / "bin" / "DONE").exists():
        return None
    return Built(out / "bin", Release(*(out / "bin" / "DONE").read_text().split()))


def build(karmada: str = DEFAULT_KARMADA, log: Path | None = None) -> Built:
    """Build every command (or return the cached build). Go output goes to `log`."""
    cached = find(karmada)
    if cached is not None:
        return cached
    modules = modules_for(karmada)
    release = Release.of(karmada)
    out = cache_root() / f"{karmada}-{cache_key(modules, karmada)}"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    partial = out / "bin.partial"
    shutil.rmtree(out, ignore_errors=True)
    partial.mkdir(parents=True)
    log = log or out / "build.log"
    flags = ["-trimpath", "-ldflags", ldflags(release, stamp)]
    tools = {"etcd": f"./{ETCD_MAIN}", **CONTROLPLANE_TOOLS}
    scheduler = {"karmada-scheduler": tools.pop("karmada-scheduler")}
    _go_build(modules / "controlplane", flags, tools, partial, log)
    _go_build(modules / "controlplane", [*flags, "-tags", SCHEDULER_TAGS], scheduler, partial, log)
    _go_build(modules / "kwok", ["-trimpath", "-ldflags", "-s -w"], KWOK_TOOLS, partial, log)
    (partial / "DONE").write_text(f"{release.karmada} {release.kubernetes} {release.staging}\n")
    partial.rename(out / "bin")
    return Built(out / "bin", release)


def _go_build(module: Path, flags: list[str], tools: dict[str, str], into: Path, log: Path) -> None:
    """One `go build` per module, so shared packages compile once and in parallel; each main
    package lands under the last element of its path and is renamed to its binary name."""
    scratch = into / ".scratch"
    scratch.mkdir(exist_ok=True)
    started = time.monotonic()
    args = ["go", "build", *flags, "-o", f"{scratch}/", *tools.values()]
    with log.open("a") as f:
        f.write(f"$ cd {module} && {' '.join(args)}\n")
        f.flush()
        try:
            rc = subprocess.run(
                args, cwd=module, env=go_env(), stdout=f, stderr=subprocess.STDOUT, check=False
            ).returncode
        except FileNotFoundError:
            raise ToolchainError(NO_GO) from None
        f.write(f"exit {rc} after {time.monotonic() - started:.0f}s\n")
    if rc != 0:
        tail = log.read_text().strip().splitlines()[-2:-1] or ["?"]
        raise ToolchainError(f"go build of {', '.join(tools)} failed: {tail[0]} (see {log})")
    for name, pkg in tools.items():
        (scratch / pkg.rsplit("/", 1)[-1]).rename(into / name)
    scratch.rmdir()
