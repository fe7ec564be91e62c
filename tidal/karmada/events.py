"""Kubernetes Events in the Karmada control plane: what a switch did, for `kubectl describe`.

Best-effort by design: one attempt, a short timeout, and any failure is logged and swallowed.
A switch never fails, slows down for long, or retries because an Event could not be written.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

import structlog

from tidal.karmada.client import KNOWN, STRICT, KarmadaClient, RetryPolicy

log = structlog.get_logger(__name__)

EventType = Literal["Normal", "Warning"]
# The reasons tidal records; stable, CamelCase as Kubernetes reasons are.
SWITCH_STARTED: Final = "SwitchStarted"
WAVE_SUCCEEDED: Final = "WaveSucceeded"
WAVE_FAILED: Final = "WaveFailed"
FLOOR_BREACHED: Final = "FloorBreached"
SWITCH_SUCCEEDED: Final = "SwitchSucceeded"
ROLLED_BACK: Final = "RolledBack"
REASONS: Final = (
    SWITCH_STARTED,
    WAVE_SUCCEEDED,
    WAVE_FAILED,
    FLOOR_BREACHED,
    SWITCH_SUCCEEDED,
    ROLLED_BACK,
)

_EVENTS = next(r for r in KNOWN if r.plural == "events" and r.group == "")
_MAX_MESSAGE: Final = 1024
# Events about cluster-scoped objects (ClusterPropagationPolicy) go to "default", as kubectl
# and client-go's recorder do.
_CLUSTER_SCOPED_EVENT_NAMESPACE: Final = "default"


def log_event_failed(logger: Any, involved: ObjectRef, reason: str, exc: Exception) -> None:
    """Warn (on the caller's logger) that an Event about `involved` could not be recorded."""
    about = {"kind": involved.kind, "name": involved.name, "namespace": involved.namespace}
    logger.warning("kube_event_failed", reason=reason, **about, error=str(exc))


@dataclass(frozen=True)
class ObjectRef:
    """The object an Event is about."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    uid: str | None = None

    def as_involved_object(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref


def policy_ref(kind: str, name: str, namespace: str | None = None) -> ObjectRef:
    """A reference to a (Cluster)PropagationPolicy."""
    return ObjectRef(
        "policy.karmada.io/v1alpha1", kind, name, namespace if kind == "PropagationPolicy" else None
    )


def configmap_ref(name: str, namespace: str) -> ObjectRef:
    """A reference to a ConfigMap, e.g. a schedule's state object."""
    return ObjectRef("v1", "ConfigMap", name, namespace)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class EventRecorder:
    """Writes core/v1 Events; `record` returns False (and logs) instead of raising."""

    def __init__(
        self,
        client: KarmadaClient,
        *,
        component: str = "tidal",
        instance: str = "",
        now: Callable[[], datetime] = _utc_now,
        timeout_seconds: float = 5.0,
        may_write: Callable[[], bool] = lambda: True,
    ) -> None:
        self._may_write = may_write  # the daemon's leadership: a fenced replica writes nothing
        # A private single-attempt client on the same connection pool and request hook.
        self._client: Any = client
        if isinstance(client, KarmadaClient):
            self._client = KarmadaClient(
                client.api,
                on_request=client.on_request,
                retry=RetryPolicy(attempts=1),
                request_timeout=timeout_seconds,
            )
        self.component = component
        self.instance = instance
        self._now = now

    def event_body(
        self, involved: ObjectRef, reason: str, message: str, event_type: EventType = "Normal"
    ) -> dict[str, Any]:
        """The Event object that `record` would create (exposed for tests and dry runs)."""
        namespace = involved.namespace or _CLUSTER_SCOPED_EVENT_NAMESPACE
        stamp = self._now().astimezone(UTC)
        seconds = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
        name = f"{involved.name}.{int(stamp.timestamp() * 1e9):x}{secrets.token_hex(2)}"
        if len(message) > _MAX_MESSAGE:
            message = message[: _MAX_MESSAGE - 3] + "..."
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name[:253], "namespace": namespace},
            "involvedObject": involved.as_involved_object(),
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {
                "component": self.component,
                **({"host": self.instance} if self.instance else {}),
            },
            "reportingComponent": self.component,
            "reportingInstance": self.instance or self.component,
            "firstTimestamp": seconds,
            "lastTimestamp": seconds,
            "count": 1,
        }

    def _with_uid(self, involved: ObjectRef) -> ObjectRef:
        """The reference with the object's uid: `kubectl describe` selects Events by uid."""
        if involved.uid or not isinstance(self._client, KarmadaClient):
            return involved
        try:
            resource = self._client.resource_for(involved.api_version, involved.kind)
            obj = self._client.request(
                "get", resource, "GET", resource.path(involved.namespace, involved.name)
            )
        except Exception:  # gone, or not there yet: the Event still says what happened
            return involved
        uid = (obj.get("metadata") or {}).get("uid")
        return replace(involved, uid=str(uid)) if uid else involved

    def record(
        self, involved: ObjectRef, reason: str, message: str, event_type: EventType = "Normal"
    ) -> bool:
        """Create one Event about `involved`; True when the server took it."""
        if not self._may_write():
            log.debug("kube_event_skipped", reason=reason, why="not the acting replica")
            return False
        try:
            involved = self._with_uid(involved)
            body = self.event_body(involved, reason, message, event_type)
            namespace = body["metadata"]["namespace"]
            if not self._may_write():  # asked again: the uid lookup is a round trip
                log.debug("kube_event_skipped", reason=reason, why="not the acting replica")
                return False
            self._client.request(
                "create", _EVENTS, "POST", _EVENTS.path(namespace), body=body, query=STRICT
            )
        except Exception as exc:  # best-effort: never let an Event break a switch
            log_event_failed(log, involved, reason, exc)
            return False
        return True
