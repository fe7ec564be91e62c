"""The chart's command API values: port on the container and the Service, the token Secret
mounted (created or existing), the NetworkPolicy admitting the port and letting a standby reach
the leader; off by default; the pod still passes the restricted Pod Security Standard."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from tests.packaging.test_chart import KUBE_VERSION, env_of, one
from tests.packaging.test_chart_sources import restricted_violations

Render = Callable[..., list[dict[str, Any]]]
ON: dict[str, Any] = {"commandApi": {"enabled": True}}


def test_off_by_default(render: Render) -> None:
    """Default values: no command port, no token Secret, no TIDAL_COMMANDS__* setting."""
    objects = render()
    assert not [o for o in objects if o["kind"] == "Secret"]
    deployment = one(objects, "Deployment")
    assert [
        p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    ] == ["http"]
    assert not [n for n in env_of(deployment) if n.startswith("TIDAL_COMMANDS__")]
    assert [p["name"] for p in one(objects, "Service")["spec"]["ports"]] == ["http"]


def test_enabled_wires_port_token_and_advertised_address(
    render: Render, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On: the container and the Service serve port 8081 (`commands`); a random token Secret is
    created and mounted read-only where TIDAL_COMMANDS__TOKEN_FILE points; the pod IP is the
    advertised host; every object is schema-valid and the settings model takes the env."""
    objects = render(ON)
    for obj in objects:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
    secret = one(objects, "Secret")
    assert secret["metadata"]["name"] == "tidal-command-token"
    assert len(base64.b64decode(secret["data"]["token"])) == 40
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert {"name": "commands", "containerPort": 8081, "protocol": "TCP"} in container["ports"]
    env = env_of(deployment)
    assert env["TIDAL_COMMANDS__ENABLED"] == "true" and env["TIDAL_COMMANDS__PORT"] == "8081"
    assert env["TIDAL_COMMANDS__TOKEN_FILE"] == "/etc/tidal/command-api/token"
    assert env["TIDAL_COMMANDS__ADVERTISE_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    mount = next(m for m in container["volumeMounts"] if m["name"] == "command-token")
    assert (mount["mountPath"], mount["readOnly"]) == ("/etc/tidal/command-api", True)
    volume = next(v for v in pod["volumes"] if v["name"] == "command-token")
    assert volume["secret"]["secretName"] == "tidal-command-token"
    service = one(objects, "Service")
    assert {
        "name": "commands",
        "port": 8081,
        "targetPort": "commands",
        "protocol": "TCP",
    } in service["spec"]["ports"]
    assert restricted_violations(pod) == []
    from tidal.settings import load_settings

    for name, value in env.items():
        monkeypatch.setenv(name, value if isinstance(value, str) else "10.0.0.7")
    settings = load_settings()
    assert settings.commands.enabled and settings.commands.port == 8081
    assert str(settings.commands.token_file) == "/etc/tidal/command-api/token"
    assert settings.commands.advertise_host == "10.0.0.7"


def test_an_existing_token_secret_is_mounted_and_none_created(render: Render) -> None:
    """token.existingSecret: that Secret (and key) is mounted; the chart renders no Secret."""
    objects = render(
        {
            "commandApi": {
                "enabled": True,
                "port": 9443,
                "token": {"existingSecret": "ops-token", "key": "bearer"},
            }
        }
    )
    assert not [o for o in objects if o["kind"] == "Secret"]
    deployment = one(objects, "Deployment")
    volume = next(
        v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "command-token"
    )
    assert volume["secret"]["secretName"] == "ops-token"
    assert volume["secret"]["items"] == [{"key": "bearer", "path": "bearer"}]
    assert env_of(deployment)["TIDAL_COMMANDS__TOKEN_FILE"] == "/etc/tidal/command-api/bearer"
    assert env_of(deployment)["TIDAL_COMMANDS__PORT"] == "9443"


def test_network_policy_admits_the_command_port(render: Render) -> None:
    """On: ingress to `commands` (from the given peers plus tidal's own pods, else from any),
    and egress from a standby to the leader's command port on tidal's pods."""
    objects = render(ON)
    policy = one(objects, "NetworkPolicy")
    selector = one(objects, "Deployment")["spec"]["selector"]["matchLabels"]
    assert [p["port"] for r in policy["spec"]["ingress"] for p in r["ports"]] == [
        "http",
        "commands",
    ]
    assert "from" not in policy["spec"]["ingress"][1]
    assert {
        "ports": [{"port": 8081, "protocol": "TCP"}],
        "to": [{"podSelector": {"matchLabels": selector}}],
    } in policy["spec"]["egress"]
    ops = {"namespaceSelector": {"matchLabels": {"team": "platform"}}}
    narrowed = one(render({"commandApi": {"enabled": True, "from": [ops]}}), "NetworkPolicy")
    assert narrowed["spec"]["ingress"][1]["from"] == [
        ops,
        {"podSelector": {"matchLabels": selector}},
    ]


def test_values_schema_refuses_a_typo(render: Render) -> None:
    """A misspelt commandApi key is refused by the values schema."""
    with pytest.raises(Exception, match="tokn"):
        render({"commandApi": {"enabled": True, "tokn": {}}})
