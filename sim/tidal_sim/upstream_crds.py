"""Where the emulator's Karmada CRD schemas come from, on any machine.

In order: the directory named by $TIDAL_KARMADA_CRDS (tidal's own setting; it wins when set),
else the user's cache (`$XDG_CACHE_HOME/tidal-sim/karmada-crds/<release>`), else the release's
module archive from the Go module proxy named by $GOPROXY (or by `go env GOPROXY` when Go is
installed) with plain HTTP: no Go toolchain is needed. The archive's CRD files
(charts/karmada/_crds/bases/) are extracted into the cache once. Nothing upstream is in this
repository. When none of these can be had the emulator runs with its minimal built-in check and
says so in one line (`CrdSource.notice`).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tidal_sim.version import KarmadaVersion

MODULE = "github.com/karmada-io/karmada"
CRD_FOLDER = "charts/karmada/_crds/bases/"
# The release whose CRDs stand for each emulated minor; a minor the proxy does not serve falls
# back to the default release's schemas (the policy CRDs did not change between these).
RELEASES = {
    KarmadaVersion.V1_17: "v1.17.0",
    KarmadaVersion.V1_18: "v1.18.2",
    KarmadaVersion.V1_19: "v1.19.0",
}
DEFAULT_RELEASE = "v1.18.2"
DOWNLOAD_TIMEOUT = 30.0
MAX_ARCHIVE_BYTES = 200 * 1024 * 1024
_COMPLETE = ".complete"


@dataclass(frozen=True)
class CrdSource:
    """The CRD directory found (None: minimal check) and how it was found."""

    directory: Path | None
    origin: str  # "setting", "cache", "proxy" or "none"
    notice: str = ""  # one line for the user when the schemas are missing or stand in


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tidal-sim" / "karmada-crds"


def proxies() -> list[str]:
    """The GOPROXY entries to try, in order (`off` ends the list; `direct` is not a proxy)."""
    value = os.environ.get("GOPROXY")
    if value is None and shutil.which("go"):
        try:
            value = subprocess.run(
                ["go", "env", "GOPROXY"], capture_output=True, text=True, timeout=10, check=False
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            value = None
    found: list[str] = []
    for entry in (value or "").replace("|", ",").split(","):
        entry = entry.strip()
        if entry == "off":
            break
        if entry.startswith(("http://", "https://", "file://")):
            found.append(entry.rstrip("/"))
    return found


def find_crds(version: KarmadaVersion | None = None) -> CrdSource:
    """The CRD directory for `version` (default: the latest emulated release)."""
    env = os.environ.get("TIDAL_KARMADA_CRDS")
    if env:
        path = Path(env)
        if path.is_dir():
            return CrdSource(path, "setting")
        return CrdSource(
            None,
            "none",
            f"TIDAL_KARMADA_CRDS={env} is not a directory: "
            "validating Karmada objects with the minimal check",
        )
    wanted = RELEASES.get(version, DEFAULT_RELEASE) if version else DEFAULT_RELEASE
    releases = list(dict.fromkeys([wanted, DEFAULT_RELEASE]))
    for release in releases:
        cached = cache_root() / release
        if (cached / _COMPLETE).is_file():
            return CrdSource(cached, "cache", _stand_in(wanted, release))
    errors: list[str] = []
    for release in releases:
        for proxy in proxies():
            try:
                return CrdSource(_download(proxy, release), "proxy", _stand_in(wanted, release))
            except (OSError, ValueError, zipfile.BadZipFile) as exc:
                errors.append(f"{proxy}: {exc}")
    why = errors[-1] if errors else "GOPROXY names no module proxy"
    return CrdSource(
        None,
        "none",
        f"no upstream Karmada CRDs for {wanted} ({why}); validating "
        "Karmada objects with the minimal built-in check (set "
        "TIDAL_KARMADA_CRDS to a CRD directory, or GOPROXY)",
    )


def _stand_in(wanted: str, release: str) -> str:
    return "" if wanted == release else f"Karmada {release}'s CRDs stand in for {wanted}'s"


def _download(proxy: str, release: str) -> Path:
    """Fetch the module archive, extract its CRD files into the cache, return their folder."""
    url = f"{proxy}/{MODULE}/@v/{release}.zip"
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as answer:
        data = answer.read(MAX_ARCHIVE_BYTES + 1)
    if len(data) > MAX_ARCHIVE_BYTES:
        raise ValueError(f"{url} is larger than {MAX_ARCHIVE_BYTES} bytes")
    prefix = f"{MODULE}@{release}/{CRD_FOLDER}"
    target = cache_root() / release
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = [n for n in archive.namelist() if n.startswith(prefix) and n.endswith(".yaml")]
        if not names:
            raise ValueError(f"{url} holds no {CRD_FOLDER} CRD files")
        staging = Path(tempfile.mkdtemp(prefix=f".{release}-", dir=target.parent))
        for name in names:
            (staging / Path(name).name).write_bytes(archive.read(name))
    (staging / _COMPLETE).write_text(url + "\n")
    try:
        staging.rename(target)
    except OSError:  # another process extracted it first: keep theirs
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / _COMPLETE).is_file():
            raise
    return target
