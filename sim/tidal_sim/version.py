"""The Karmada release the emulator stands in for (`tidal sim --karmada-version`)."""

from __future__ import annotations

import enum


class KarmadaVersion(enum.Enum):
    """Minor releases whose modelled behaviour differs; compare with <, >=."""

    V1_17 = "1.17"
    V1_18 = "1.18"
    V1_19 = "1.19"

    @property
    def minor(self) -> int:
        return int(self.value.split(".")[1])

    def __lt__(self, other: KarmadaVersion) -> bool:
        return self.minor < other.minor

    def __ge__(self, other: KarmadaVersion) -> bool:
        return self.minor >= other.minor

    @classmethod
    def parse(cls, text: str) -> KarmadaVersion:
        """'1.18', 'v1.18' or 'v1.18.2' -> V1_18; ValueError naming the choices otherwise."""
        parts = str(text).strip().lstrip("v").split(".")
        key = ".".join(parts[:2])
        for version in cls:
            if version.value == key and all(p.isdigit() for p in parts):
                return version
        choices = ", ".join(v.value for v in cls)
        raise ValueError(f"unsupported Karmada version {text!r}; choose one of {choices}")


# The latest release when this was written (v1.18.2; v1.19 was at rc.0).
LATEST_RELEASE = KarmadaVersion.V1_18
