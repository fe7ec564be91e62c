"""Settings: flags over TIDAL_* variables, nested groups, and one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidal.settings import SettingsError, load_settings


def test_defaults_are_usable_without_any_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing set, settings fall back to documented defaults."""
    for name in ("TIDAL_SCHEDULES", "TIDAL_PORT", "TIDAL_KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.schedules == Path("schedules")
    assert settings.port == 8080
    assert settings.leader_election.lease_duration_seconds == 15.0
    assert settings.scheduler.max_concurrent_switches == 1


def test_flag_overrides_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """An explicit flag value wins over its TIDAL_* variable; None means 'flag not given'."""
    monkeypatch.setenv("TIDAL_SCHEDULES", "/from/env")
    assert load_settings(schedules=None).schedules == Path("/from/env")
    assert load_settings(schedules=Path("/from/flag")).schedules == Path("/from/flag")


def test_nested_group_reads_double_underscore_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS sets the nested lease duration."""
    monkeypatch.setenv("TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS", "30")
    assert load_settings().leader_election.lease_duration_seconds == 30.0


def test_bad_value_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad value is reported with the variable's name and what was given."""
    monkeypatch.setenv("TIDAL_PORT", "eighty")
    with pytest.raises(SettingsError, match="TIDAL_PORT") as info:
        load_settings()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("env", "value", "words"),
    [
        ("TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS", "inf", "finite"),
        ("TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS", "nan", "finite"),
        ("TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS", "-inf", "finite"),
        ("TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS", "1e12", "less than or equal to 3600"),
        ("TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS", "15", "RENEW_DEADLINE_SECONDS < LEASE"),
        ("TIDAL_LEADER_ELECTION__RETRY_PERIOD_SECONDS", "10", "RETRY_PERIOD_SECONDS < RENEW"),
        ("TIDAL_SCHEDULER__MISFIRE_GRACE_SECONDS", "inf", "finite"),
        ("TIDAL_SCHEDULER__MAX_CLOCK_SKEW_SECONDS", "nan", "finite"),
        ("TIDAL_KARMADA__POLICY_SETTLE_SECONDS", "-1", "greater than or equal to 0"),
        ("TIDAL_KARMADA__POLICY_SETTLE_SECONDS", "1e9", "less than or equal to 600"),
    ],
)
def test_non_finite_and_inconsistent_timings_are_refused(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, words: str
) -> None:
    """inf, nan, absurd sizes and renewDeadline >= leaseDuration are one named error each."""
    monkeypatch.setenv(env, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert words in message and "\n" not in message
    assert env.rsplit("__", 1)[0] in message


def test_karmada_release_from_environment_and_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """TIDAL_KARMADA__VERSION takes "v1.17.3" as well as "1.17"; the flag's value overrides it;
    unset, the latest release (the Karmada API does not tell its release)."""
    from tidal.domain.karmada_release import LATEST_RELEASE, KarmadaRelease

    assert load_settings().karmada.version is LATEST_RELEASE
    monkeypatch.setenv("TIDAL_KARMADA__VERSION", "v1.17.3")
    assert load_settings().karmada.version is KarmadaRelease.V1_17
    assert load_settings(karmada={"version": "1.19"}).karmada.version is KarmadaRelease.V1_19


def test_policy_settle_defaults_to_15_seconds_and_is_settable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TIDAL_KARMADA__POLICY_SETTLE_SECONDS: 15 unset; 0 switches the wait off."""
    monkeypatch.delenv("TIDAL_KARMADA__POLICY_SETTLE_SECONDS", raising=False)
    assert load_settings().karmada.policy_settle_seconds == 15.0
    monkeypatch.setenv("TIDAL_KARMADA__POLICY_SETTLE_SECONDS", "0")
    assert load_settings().karmada.policy_settle_seconds == 0.0


def test_unsupported_karmada_release_names_the_setting_and_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unknown release is one line naming the variable and the releases to choose from."""
    monkeypatch.setenv("TIDAL_KARMADA__VERSION", "1.9")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith("setting TIDAL_KARMADA__VERSION: ")
    assert "choose one of 1.17, 1.18, 1.19" in message and "\n" not in message


def test_karmada_crds_come_from_tidal_karmada_crds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The CRD directory is a setting (TIDAL_KARMADA_CRDS or a flag); unset, it is None and
    nothing is guessed."""
    monkeypatch.delenv("TIDAL_KARMADA_CRDS", raising=False)
    assert load_settings().karmada_crds is None
    monkeypatch.setenv("TIDAL_KARMADA_CRDS", str(tmp_path))
    assert load_settings().karmada_crds == tmp_path
    assert load_settings(karmada_crds=tmp_path / "flag").karmada_crds == tmp_path / "flag"


def test_kubectl_variables_are_read_by_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """KUBECONFIG (every listed file, in order) and KUBERNETES_SERVICE_HOST reach the access
    layer through the settings' kubeconfig sources."""
    monkeypatch.setenv("KUBECONFIG", f"/a{os.pathsep}{os.pathsep}/b")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    sources = load_settings().kubeconfig_sources()
    assert sources.listed == ("/a", "/b") and sources.in_cluster
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    sources = load_settings().kubeconfig_sources()
    assert sources.listed == () and not sources.in_cluster
    assert sources.home_config == Path.home() / ".kube" / "config"


def test_the_access_layer_reads_no_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without a path the client looks only where its sources say: a KUBECONFIG in the
    environment is not read behind the settings' back, and the error names what was tried."""
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.errors import KarmadaError
    from tidal.settings import KubeconfigSources

    present = tmp_path / "kubeconfig"
    present.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(present))
    sources = KubeconfigSources((), False, tmp_path / "no-home-config")
    with pytest.raises(KarmadaError) as raised:
        KarmadaClient.from_kubeconfig(None, sources=sources)
    assert str(raised.value) == (
        "no kubeconfig found; tried KUBECONFIG (not set), in-cluster config (not in a pod: "
        f"KUBERNETES_SERVICE_HOST not set), {tmp_path / 'no-home-config'} (no such file)"
    )


def test_no_module_but_settings_reads_the_environment() -> None:
    """Every environment read of the product is in tidal/settings.py (no os.environ, getenv,
    click envvar= elsewhere), and no product module guesses a ../shared path."""
    root = Path(__file__).resolve().parents[1] / "tidal"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if path.name == "settings.py" and path.parent == root:
            continue
        for needle in ("os.environ", "getenv", "envvar=", '"shared"', "../shared"):
            if needle in text:
                offenders.append(f"{path.relative_to(root.parent)}: {needle}")
    assert offenders == []


def test_reading_the_members_without_shared_watches_is_one_line_naming_both_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The members' capacity is watched through the shared watches: turning those off with it
    on is refused in one line that names both variables."""
    monkeypatch.setenv("TIDAL_SCHEDULER__CAPACITY_SOURCE", "members")
    assert load_settings().scheduler.capacity_source == "members"
    monkeypatch.setenv("TIDAL_API__SHARED_WATCH", "false")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message and message.startswith("settings: ")
    assert "TIDAL_SCHEDULER__CAPACITY_SOURCE" in message and "TIDAL_API__SHARED_WATCH" in message


def test_the_daemon_reads_the_members_capacity_by_default_where_it_can(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """capacity_source defaults to auto: the members' capacity with shared watches on, Cluster
    status with them off (no error, unlike an explicit `members`), Cluster status when set."""
    settings = load_settings()
    assert settings.scheduler.capacity_source == "auto" and settings.watches_members
    monkeypatch.setenv("TIDAL_API__SHARED_WATCH", "false")
    assert not load_settings().watches_members
    monkeypatch.setenv("TIDAL_API__SHARED_WATCH", "true")
    monkeypatch.setenv("TIDAL_SCHEDULER__CAPACITY_SOURCE", "cluster-status")
    assert not load_settings().watches_members
