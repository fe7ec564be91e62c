"""The official kubernetes client as these tests use it: bodies as plain dicts, answers read as
dicts or models. Its annotations name model classes only (V1ConfigMap, V1Deployment, ...), so
the API objects are handed out as Any, in this one place, rather than casting at every call."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException as ApiException


def core(api_client: Any) -> Any:
    """CoreV1Api over `api_client`."""
    return client.CoreV1Api(api_client)


def apps(api_client: Any) -> Any:
    """AppsV1Api over `api_client`."""
    return client.AppsV1Api(api_client)


def custom(api_client: Any) -> Any:
    """CustomObjectsApi over `api_client`."""
    return client.CustomObjectsApi(api_client)


def coordination(api_client: Any) -> Any:
    """CoordinationV1Api over `api_client`."""
    return client.CoordinationV1Api(api_client)


_Watch: Any = watch.Watch  # untyped in the client


def watcher() -> Any:
    """A kubernetes.watch.Watch."""
    return _Watch()


def status_of(exc: ApiException) -> dict[str, Any]:
    """The Status object an ApiException carries (its JSON body)."""
    body: dict[str, Any] = json.loads(exc.body or "{}")
    return body
