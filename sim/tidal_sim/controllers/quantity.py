"""Kubernetes resource quantities, just enough for capacity arithmetic.

Values are kept as integers: CPU in millicores, everything else in whole units rounded up
(as `Quantity.Value()` does), which is what Karmada's general estimator divides.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, InvalidOperation
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}

Resources = dict[str, int]  # resource name -> integer amount (cpu in millicores)


class QuantityError(ValueError):
    """A quantity string that does not parse."""


def parse_quantity(value: Any) -> Decimal:
    """'500m' -> 0.5, '1Gi' -> 1073741824, 2 -> 2."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    text = str(value).strip()
    try:
        for suffix, factor in _BINARY.items():
            if text.endswith(suffix):
                return Decimal(text[: -len(suffix)]) * factor
        if text and text[-1] in _DECIMAL and not text[-1].isdigit():
            return Decimal(text[:-1]) * _DECIMAL[text[-1]]
        return Decimal(text)
    except InvalidOperation as exc:
        raise QuantityError(f"not a quantity: {value!r}") from exc


def to_units(name: str, value: Any) -> int:
    """Integer amount of a resource: millicores for cpu, rounded-up units otherwise."""
    if isinstance(value, str):
        return _units_of_text(name, value)
    return _units(name, parse_quantity(value))


@functools.lru_cache(maxsize=4096)
def _units_of_text(name: str, text: str) -> int:
    return _units(name, parse_quantity(text))


def _units(name: str, amount: Decimal) -> int:
    if name == "cpu":
        return math.ceil(amount * 1000)
    return math.ceil(amount)


def resource_list(raw: dict[str, Any] | None) -> Resources:
    """A resource list (`{cpu: "2", memory: "4Gi"}`) as integer amounts; bad entries are skipped."""
    out: Resources = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = to_units(name, value)
        except QuantityError:
            continue
    return out


def format_units(name: str, amount: int) -> str:
    """Integer amount back to a canonical quantity string."""
    if name == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if name == "memory" or name.endswith("storage"):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            factor = _BINARY[suffix]
            if amount and amount % factor == 0:
                return f"{amount // factor}{suffix}"
    return str(amount)


def format_list(resources: Resources) -> dict[str, str]:
    return {name: format_units(name, amount) for name, amount in sorted(resources.items())}


def _container_requests(container: dict[str, Any] | None) -> Resources:
    return resource_list(((container or {}).get("resources") or {}).get("requests"))


def pod_template_requests(template: dict[str, Any]) -> Resources:
    """Per-replica requests of a pod template: sum over containers, at least each init container,
    plus pod overhead (as Karmada's GenerateReplicaRequirements); zero entries dropped."""
    spec = (template or {}).get("spec") or {}
    total: Resources = {}
    for container in spec.get("containers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in resource_list(spec.get("overhead")).items():
        total[name] = total.get(name, 0) + amount
    return {name: amount for name, amount in total.items() if amount > 0}
