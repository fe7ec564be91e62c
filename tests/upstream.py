"""The upstream Karmada CRDs for the tests that need them: the setting (TIDAL_KARMADA_CRDS),
else ../shared/karmada/crds beside this checkout, else the ones the emulator fetched into the
user's cache from the Go module proxy (tidal_sim.upstream_crds), as on a fresh machine. With
none of these (offline and uncached) those tests skip, saying what to set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidal.settings import SettingsError, load_settings

REPO = Path(__file__).resolve().parents[1]
BESIDE_CHECKOUT = REPO.parent / "shared" / "karmada" / "crds"
MISSING = (
    "upstream Karmada CRDs not found: set TIDAL_KARMADA_CRDS to a directory holding "
    "policy.karmada.io_*.yaml (a checkout beside shared/ uses ../shared/karmada/crds)"
)


def upstream_crds() -> Path | None:
    """The CRD directory, or None when there is none."""
    try:
        configured = load_settings().karmada_crds
    except SettingsError:
        configured = None
    if configured is not None:
        return configured if configured.is_dir() else None
    if BESIDE_CHECKOUT.is_dir():
        return BESIDE_CHECKOUT
    from tidal_sim.upstream_crds import find_crds

    return find_crds().directory


CRDS = upstream_crds()
needs_upstream_crds = pytest.mark.skipif(CRDS is None, reason=MISSING)
