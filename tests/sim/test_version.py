"""The Karmada version setting: parsing, ordering, the CLI flag and the topology field."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tidal.cli.main import cli
from tidal_sim.emulator import Emulator
from tidal_sim.topology import TopologyError, load_topology
from tidal_sim.version import LATEST_RELEASE, KarmadaVersion


def test_versions_parse_and_order() -> None:
    """'1.18', 'v1.18' and 'v1.18.2' name the same release; 1.17 < 1.18 <= 1.19."""
    assert {KarmadaVersion.parse(t) for t in ("1.18", "v1.18", "v1.18.2")} == {KarmadaVersion.V1_18}
    assert KarmadaVersion.V1_17 < KarmadaVersion.V1_18
    assert KarmadaVersion.V1_19 >= KarmadaVersion.V1_18
    assert LATEST_RELEASE is KarmadaVersion.V1_18  # v1.18.2 was the latest release
    with pytest.raises(ValueError, match=r"choose one of 1\.17, 1\.18, 1\.19"):
        KarmadaVersion.parse("1.9")


def test_topology_field_and_emulator_override() -> None:
    """EmulatorSettings karmadaVersion sets it; an Emulator argument (the CLI flag) wins."""
    doc = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {"karmadaVersion": "1.17"},
    }
    assert load_topology([doc]).settings.karmada_version is KarmadaVersion.V1_17
    emu = Emulator([doc], karmada_version=KarmadaVersion.V1_19, controllers=False)
    assert emu.karmada_version is KarmadaVersion.V1_19
    bad = {**doc, "spec": {"karmadaVersion": "2.0"}}
    with pytest.raises(TopologyError, match="unsupported Karmada version"):
        load_topology([bad])


def test_cli_flag_rejects_unknown_versions() -> None:
    """`tidal sim --karmada-version 1.16` is a usage error naming the choices."""
    result = CliRunner().invoke(cli, ["sim", "--karmada-version", "1.16"])
    assert result.exit_code == 2
    assert "1.17" in result.output and "1.19" in result.output
