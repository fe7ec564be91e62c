"""Secrets never reach the log output: the redaction processor and the logging set-up."""

from __future__ import annotations

import http.client
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from tests.e2e import alert_scenario
from tidal.domain.clock import SystemClock
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient
from tidal.loading.loader import load_schedules
from tidal.logs import REDACTED, configure_logging, redact_secrets

TOKEN = "sha256~Zm9vYmFyLXRva2VuLW5ldmVyLWxvZ2dlZA"
JWT = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6InRpZGFsIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGlkYWwifQ."
    "c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
)
PEM = (
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oBB1TTEbSUnO\n"
    "-----END EC PRIVATE KEY-----"
)
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: karmada
  cluster: {{server: "https://karmada:5443"}}
users:
- name: tidal
  user:
    token: {TOKEN}
    client-key-data: TFMwdExTMUNSVWRKVGlCRlF5QlFVa2xXUVZSRklFdEZXUzB0TFMwdA==
"""


@pytest.fixture(autouse=True)
def _restore_logging() -> object:
    """Leave structlog and the root logger as they were for other tests."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_secret_keys_are_blanked_at_any_depth() -> None:
    """Values under token/authorization/password/client-key keys are replaced, nested too."""
    with capture_logs(processors=[redact_secrets]) as logs:
        structlog.get_logger().info(
            "request_sent",
            token=TOKEN,
            headers={"Authorization": f"Bearer {TOKEN}"},
            user={"client-key-data": "abc", "name": "tidal"},
            password="hunter2",
            token_file="/var/run/secrets/token",
        )
    (entry,) = logs
    assert entry["token"] == REDACTED
    assert entry["headers"] == {"Authorization": REDACTED}
    assert entry["user"] == {"client-key-data": REDACTED, "name": "tidal"}
    assert entry["password"] == REDACTED
    assert entry["token_file"] == "/var/run/secrets/token"
    assert entry["event"] == "request_sent"


def test_secret_looking_text_is_scrubbed_inside_any_value() -> None:
    """JWTs, PEM blocks, bearer headers and kubeconfig text are scrubbed wherever they appear."""
    with capture_logs(processors=[redact_secrets]) as logs:
        log = structlog.get_logger()
        log.warning("auth_failed", detail=f"server rejected {JWT}", key=PEM)
        log.debug("headers_seen", raw=f"Authorization: Bearer {TOKEN}\nAccept: */*")
        log.info("kubeconfig_loaded", kubeconfig_text=KUBECONFIG, items=[f"Basic {TOKEN}"])
        log.info("plain", message=f"token: {TOKEN}", client={"cfg": f"'token': '{TOKEN}'"})
    dumped = json.dumps(logs)
    assert TOKEN not in dumped and JWT not in dumped and "PRIVATE KEY" not in dumped
    assert logs[0]["detail"] == f"server rejected {REDACTED}"
    assert logs[1]["raw"].startswith("Authorization: ")
    assert "Accept: */*" in logs[1]["raw"]
    assert logs[2]["kubeconfig_text"] == REDACTED


def test_ordinary_fields_pass_untouched() -> None:
    """Run context and counts are not mistaken for secrets."""
    with capture_logs(processors=[redact_secrets]) as logs:
        structlog.get_logger().info(
            "wave_started",
            schedule="team-a",
            window="night",
            run_id="r-1",
            wave=2,
            workloads=10,
            ok=True,
        )
    assert logs == [
        {
            "event": "wave_started",
            "schedule": "team-a",
            "window": "night",
            "run_id": "r-1",
            "wave": 2,
            "workloads": 10,
            "ok": True,
            "log_level": "info",
        }
    ]


def test_configured_output_at_debug_never_shows_a_token() -> None:
    """Through configure_logging at DEBUG (structlog, stdlib, tracebacks) the token never shows."""
    out = io.StringIO()
    configure_logging("json", "DEBUG", out)
    log = structlog.get_logger()
    log.debug("request_sent", headers={"authorization": f"Bearer {TOKEN}"}, body=KUBECONFIG)
    logging.getLogger("apscheduler.scheduler").warning("job failed: Bearer %s", TOKEN)
    try:
        raise RuntimeError(f"cannot authenticate with token: {TOKEN} ({JWT})")
    except RuntimeError:
        log.exception("switch_failed")
    text = out.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["event"] == "request_sent"
    assert "switch_failed" in [line["event"] for line in lines]
    assert TOKEN not in text and JWT not in text


def test_kubernetes_client_debug_is_switched_off() -> None:
    """Logging set-up undoes kubernetes' Configuration.debug and quiets its loggers."""
    from kubernetes.client import Configuration

    original = Configuration._default  # restored below, exactly as it was
    noisy = Configuration()
    noisy.debug = True
    Configuration.set_default(noisy)
    try:
        configure_logging("json", "DEBUG", io.StringIO())
        assert Configuration.get_default_copy().debug is False
        assert http.client.HTTPConnection.debuglevel == 0
        for name in ("kubernetes", "urllib3"):
            assert logging.getLogger(name).getEffectiveLevel() >= logging.WARNING
    finally:
        Configuration._default = original
        http.client.HTTPConnection.debuglevel = 0


@pytest.mark.e2e
def test_a_switch_at_debug_never_logs_the_kubeconfig_token(
    make_emulator: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A whole switch at DEBUG, token in the kubeconfig: the token is nowhere in the output."""
    from ruamel.yaml import YAML

    emulator = make_emulator(alert_scenario.topology(pods_fail=False))
    config = emulator.kubeconfig()
    config["users"][0]["user"]["token"] = TOKEN
    kubeconfig = tmp_path / "kubeconfig"
    with kubeconfig.open("w") as out:
        YAML().dump(config, out)
    loaded = load_schedules([alert_scenario.write_schedule(tmp_path, "00:00", "12:00")])
    assert not loaded.errors

    stream = io.StringIO()
    configure_logging("json", "DEBUG", stream)
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    log = structlog.get_logger("test")
    log.debug("careless_debugging", kubeconfig_text=kubeconfig.read_text(), client=vars(client))
    record = run_switch(
        client, loaded.schedules[0], "night", clock=SystemClock(), journal=InMemoryJournal()
    )
    client.close()

    assert record.result == "succeeded"
    captured = capfd.readouterr()
    output = stream.getvalue() + captured.out + captured.err
    assert TOKEN not in output
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    story = [line["event"] for line in lines if line.get("run_id") == record.run_id]
    assert story[0] == "run_started" and story[-1] == "run_finished"
    assert {"policy_changed", "wave_started", "wave_succeeded"} <= set(story)
    assert any(line["level"] == "debug" for line in lines)
