"""The emulator's RBAC, when enforced: bindings, ClusterRoles bound in one namespace,
ServiceAccount subjects and resourceNames decide; `admin` is a superuser; off by default."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tidal_sim.emulator import Emulator

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def as_user(emu: Emulator, user: str, method: str, path: str, body: Any = None) -> int:
    """The status code of one request made with the token of `user`."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        emu.url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer sim:{user}"},
    )
    try:
        with urllib.request.urlopen(req) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def grant(emu: Emulator) -> None:
    """Role `reader` in default: get configmap `one` only; ClusterRole `lister` (list
    configmaps) bound in kube-public only, to a ServiceAccount."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get"],
                "resourceNames": ["one"],
            }
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "reader", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
    }
    lister = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lister"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
    }
    scoped = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "lister", "namespace": "kube-public"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "lister",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}],
    }
    for path, obj in (
        (f"{RBAC}/namespaces/default/roles", role),
        (f"{RBAC}/namespaces/default/rolebindings", binding),
        (f"{RBAC}/clusterroles", lister),
        (f"{RBAC}/namespaces/kube-public/rolebindings", scoped),
        ("/api/v1/namespaces/default/configmaps", cm("one")),
        ("/api/v1/namespaces/default/configmaps", cm("two")),
    ):
        assert as_user(emu, "admin", "POST", path, obj) == 201


def test_rbac_is_enforced_only_when_asked(emulator: Emulator) -> None:
    """Off: anyone may read. On: resourceNames and namespaces of the bindings decide."""
    grant(emulator)
    two = "/api/v1/namespaces/default/configmaps/two"
    assert as_user(emulator, "alice", "GET", two) == 200
    emulator.enforce_rbac(True)
    assert as_user(emulator, "alice", "GET", "/api/v1/namespaces/default/configmaps/one") == 200
    assert as_user(emulator, "alice", "GET", two) == 403  # not among resourceNames
    assert as_user(emulator, "alice", "GET", "/api/v1/namespaces/default/configmaps") == 403
    assert as_user(emulator, "alice", "DELETE", "/api/v1/namespaces/default/configmaps/one") == 403
    bot = "system:serviceaccount:default:bot"
    assert as_user(emulator, bot, "GET", "/api/v1/namespaces/kube-public/configmaps") == 200
    assert as_user(emulator, bot, "GET", "/api/v1/namespaces/default/configmaps") == 403
    assert as_user(emulator, "mallory", "GET", "/api/v1/namespaces") == 403
    assert as_user(emulator, "admin", "GET", two) == 200
    refused = [r for r in emulator.request_log() if r.code == 403]
    assert {r.identity for r in refused} == {"alice", bot, "mallory"}
