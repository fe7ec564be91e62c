"""ResourceInterpreterCustomizations (config.karmada.io/v1alpha1): Lua scripts that tell
Karmada a kind's replicas, member revision, status and health.

As pkg/resourceinterpreter/customized/declarative (configurable.go, configmanager) in karmada
v1.18.2: customizations are merged per target (apiVersion, kind) in name order, the first
non-empty script of each operation wins; an operation is enabled for a kind only when a
script is set (HookEnabled), else the built-in interpreters answer (the emulator's own, for
Deployment and the like; a kind without either has no replicas, reflects its whole
`.status`, and is treated as healthy).
Each call runs the script's function in the sandboxed Lua VM (tidal_sim.luavm) and checks the
result's type as upstream does; a failure raises `InterpreterError`, which the caller handles
as its upstream controller does (see docs/fidelity.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from tidal_sim.controllers.common import Obj, clone
from tidal_sim.controllers.quantity import QuantityError, parse_quantity
from tidal_sim.luavm import LuaError, LuaVM, quantity_text, restore_empty, to_python

RIC_API_VERSION = "config.karmada.io/v1alpha1"
RIC_KIND = "ResourceInterpreterCustomization"


class Operation(Enum):
    """Interpreter operations: (customization rule, Lua function) per upstream name."""

    INTERPRET_REPLICA = ("InterpretReplica", "replicaResource", "GetReplicas")
    REVISE_REPLICA = ("ReviseReplica", "replicaRevision", "ReviseReplica")
    INTERPRET_STATUS = ("InterpretStatus", "statusReflection", "ReflectStatus")
    AGGREGATE_STATUS = ("AggregateStatus", "statusAggregation", "AggregateStatus")
    INTERPRET_HEALTH = ("InterpretHealth", "healthInterpretation", "InterpretHealth")
    RETAIN = ("Retain", "retention", "Retain")

    @property
    def upstream(self) -> str:
        return self.value[0]

    @property
    def rule(self) -> str:
        return self.value[1]

    @property
    def function(self) -> str:
        return self.value[2]


class InterpreterError(RuntimeError):
    """A customization script failed: names the operation, kind and object."""


@dataclass(frozen=True)
class Replicas:
    count: int
    requirements: Obj | None  # workv1alpha2.ReplicaRequirements, or None


class Customizations:
    """Every ResourceInterpreterCustomization, merged per target kind."""

    def __init__(self, vm: LuaVM | None = None) -> None:
        self._vm = vm
        self._objects: dict[str, Obj] = {}
        self._scripts: dict[tuple[str, str], dict[Operation, str]] = {}

    @property
    def vm(self) -> LuaVM:
        if self._vm is None:  # created on first use: a topology without scripts pays nothing
            self._vm = LuaVM()
        return self._vm

    def on_event(self, etype: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if etype == "DELETED":
            self._objects.pop(name, None)
        else:
            self._objects[name] = obj
        self._merge()

    def load(self, objects: list[Obj]) -> None:
        """Replace every customization (tests, and the upstream table runner)."""
        self._objects = {o["metadata"]["name"]: o for o in objects}
        self._merge()

    def _merge(self) -> None:
        merged: dict[tuple[str, str], dict[Operation, str]] = {}
        for name in sorted(self._objects):
            spec = self._objects[name].get("spec") or {}
            target = spec.get("target") or {}
            key = (str(target.get("apiVersion", "")), str(target.get("kind", "")))
            scripts = merged.setdefault(key, {})
            rules = spec.get("customizations") or {}
            for op in Operation:
                script = (rules.get(op.rule) or {}).get("luaScript") or ""
                if script and op not in scripts:
                    scripts[op] = script
        self._scripts = merged

    def enabled(self, api_version: str, kind: str, op: Operation) -> bool:
        return op in self._scripts.get((api_version, kind), {})

    def kinds(self) -> set[tuple[str, str]]:
        return {k for k, scripts in self._scripts.items() if scripts}

    # -- operations ----------------------------------------------------------------------
    def _run(self, op: Operation, obj: Obj, nrets: int, *args: Any) -> list[Any]:
        script = self._scripts.get((obj.get("apiVersion", ""), obj.get("kind", "")), {}).get(op)
        if script is None:
            raise InterpreterError(f"no {op.rule} customization for {obj.get('kind')}")
        try:
            return self.vm.run(script, op.function, nrets, *args)
        except LuaError as exc:
            raise InterpreterError(self._where(op, obj, str(exc))) from None

    @staticmethod
    def _where(op: Operation, obj: Obj, problem: str) -> str:
        meta = obj.get("metadata") or {}
        name = (
            f"{meta.get('namespace')}/{meta.get('name')}"
            if meta.get("namespace")
            else str(meta.get("name"))
        )
        return f"{op.upstream} of {obj.get('kind')} {name}: {problem}"

    def _table(self, op: Operation, obj: Obj, value: Any, what: str) -> Any:
        converted = to_python(value) if value is not None else None
        if not isinstance(converted, dict | list):
            kind = "nil" if value is None else type(converted).__name__
            raise InterpreterError(
                self._where(op, obj, f"expect the returned {what} type is table but got {kind}")
            )
        return converted

    def get_replicas(self, obj: Obj) -> Replicas:
        op = Operation.INTERPRET_REPLICA
        count, requires = self._run(op, obj, 2, obj)
        if isinstance(count, bool) or not isinstance(count, int | float):
            raise InterpreterError(
                self._where(op, obj, f"result type {_lua_type(count)} is not number")
            )
        if requires is None:
            return Replicas(int(count), None)
        table = self._table(op, obj, requires, "requires")
        table = restore_empty(table, []) if isinstance(table, dict) else {}
        return Replicas(int(count), _requirements(table))

    def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        op = Operation.REVISE_REPLICA
        (result,) = self._run(op, obj, 1, obj, replicas)
        revised = self._table(op, obj, result, "requires")
        return _as_object(restore_empty(revised, [obj]))

    def reflect_status(self, observed: Obj) -> Obj:
        op = Operation.INTERPRET_STATUS
        (result,) = self._run(op, observed, 1, observed)
        status = self._table(op, observed, result, "replica")
        return _as_object(restore_empty(status, []))

    def aggregate_status(self, template: Obj, items: list[Obj] | None) -> Obj:
        """`items` None crosses as nil (a binding without aggregatedStatus upstream)."""
        op = Operation.AGGREGATE_STATUS
        (result,) = self._run(op, template, 1, template, items)
        return _as_object(restore_empty(self._table(op, template, result, "requires"), []))

    def interpret_health(self, observed: Obj) -> bool:
        op = Operation.INTERPRET_HEALTH
        (result,) = self._run(op, observed, 1, observed)
        if not isinstance(result, bool):
            raise InterpreterError(
                self._where(op, observed, f"result type {_lua_type(result)} is not bool")
            )
        return result

    def retain(self, desired: Obj, observed: Obj) -> Obj:
        op = Operation.RETAIN
        (result,) = self._run(op, desired, 1, desired, observed)
        return _as_object(
            restore_empty(self._table(op, desired, result, "requires"), [desired, observed])
        )


def _lua_type(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return "table"


def _as_object(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _requirements(table: Obj) -> Obj | None:
    """The requirements as the binding stores them: quantities in canonical form (as
    resource.Quantity prints them), zero amounts kept as the script gave them."""
    out = clone(table)
    requests = out.get("resourceRequest")
    if isinstance(requests, dict):
        canonical = {}
        for name, value in requests.items():
            try:
                canonical[name] = quantity_text(
                    parse_quantity(value), binary=str(value).endswith("i")
                )
            except QuantityError as exc:
                raise InterpreterError(f"resourceRequest {name}: {exc}") from None
        out["resourceRequest"] = canonical
    return out or None
