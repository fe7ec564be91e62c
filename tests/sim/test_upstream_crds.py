"""The emulator finds Karmada's CRDs on any machine: setting, user cache, or the Go module proxy."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from tidal_sim.upstream_crds import MODULE, CrdSource, cache_root, find_crds, proxies
from tidal_sim.version import KarmadaVersion

CPP = "policy.karmada.io_clusterpropagationpolicies.yaml"


def _module_proxy(root: Path, release: str, files: dict[str, str]) -> str:
    """A file:// module proxy serving one release archive of the Karmada module."""
    folder = root / MODULE / "@v"
    folder.mkdir(parents=True)
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, text in files.items():
            archive.writestr(f"{MODULE}@{release}/{name}", text)
    (folder / f"{release}.zip").write_bytes(data.getvalue())
    return root.as_uri()


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No setting, an empty user cache, no proxy."""
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("GOPROXY", "off")
    return tmp_path


def test_the_release_archive_is_fetched_once_and_cached(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CRD files of the module archive are extracted into the user cache; the next start
    reads the cache, not the proxy."""
    url = _module_proxy(
        isolated / "proxy",
        "v1.18.2",
        {
            f"charts/karmada/_crds/bases/policy/{CPP}": "kind: CustomResourceDefinition\n",
            "charts/karmada/values.yaml": "not a CRD\n",
        },
    )
    monkeypatch.setenv("GOPROXY", f"{url},direct")
    found = find_crds(KarmadaVersion.V1_18)
    assert found.origin == "proxy" and found.notice == ""
    assert found.directory == cache_root() / "v1.18.2"
    assert sorted(p.name for p in found.directory.glob("*.yaml")) == [CPP]
    monkeypatch.setenv("GOPROXY", "off")
    assert find_crds(KarmadaVersion.V1_18) == CrdSource(found.directory, "cache")


def test_a_minor_the_proxy_lacks_borrows_the_default_release(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.17's archive missing, the default release's CRDs stand in, and the notice says so."""
    url = _module_proxy(
        isolated / "proxy", "v1.18.2", {f"charts/karmada/_crds/bases/policy/{CPP}": "kind: x\n"}
    )
    monkeypatch.setenv("GOPROXY", url)
    found = find_crds(KarmadaVersion.V1_17)
    assert found.directory is not None and "v1.18.2" in found.notice


def test_no_source_gives_one_line_notice(isolated: Path) -> None:
    """Offline and uncached: no directory, and one line saying the minimal check runs."""
    found = find_crds()
    assert found.directory is None and found.origin == "none"
    assert "\n" not in found.notice and "minimal built-in check" in found.notice


def test_an_archive_without_crds_is_no_source(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive that holds no CRD folder is refused, named in the notice, and not cached."""
    url = _module_proxy(isolated / "proxy", "v1.18.2", {"README.md": "x"})
    monkeypatch.setenv("GOPROXY", url)
    found = find_crds()
    assert found.directory is None and "holds no" in found.notice
    assert not (cache_root() / "v1.18.2").exists()


def test_goproxy_lists_are_read_like_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """Comma and pipe separate entries; `direct` is skipped and `off` ends the list."""
    monkeypatch.setenv("GOPROXY", "http://a.invalid/|file:///b,direct,off,http://c.invalid")
    assert proxies() == ["http://a.invalid", "file:///b"]
