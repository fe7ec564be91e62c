"""The Karmada release a plan predicts for: the minors whose scheduling rules differ.

The planner's own definition (the emulator has its own, tidal.sim.version): the Karmada API
does not tell its release (karmada-apiserver's /version is the kube-apiserver's, and karmadactl
reports only itself), so the release is a setting whose default is the latest one.
"""

from __future__ import annotations

import enum


class KarmadaRelease(enum.Enum):
    """Minor releases whose modelled behaviour differs; ordered by minor."""

    V1_17 = "1.17"
    V1_18 = "1.18"
    V1_19 = "1.19"

    @property
    def minor(self) -> int:
        return int(self.value.split(".")[1])

    def at_least(self, other: KarmadaRelease) -> bool:
        return self.minor >= other.minor

    @classmethod
    def parse(cls, text: object) -> KarmadaRelease:
        """'1.18', 'v1.18' or 'v1.18.2' -> V1_18; ValueError naming the choices otherwise."""
        if isinstance(text, KarmadaRelease):
            return text
        parts = str(text).strip().removeprefix("v").split(".")
        if all(p.isdigit() for p in parts) and len(parts) in (2, 3):
            for release in cls:
                if release.value == ".".join(parts[:2]):
                    return release
        choices = ", ".join(r.value for r in cls)
        raise ValueError(f"unsupported Karmada release {text!r}; choose one of {choices}")


# The latest release when this was written (v1.18.2; v1.19 was at rc.0).
LATEST_RELEASE = KarmadaRelease.V1_18
