"""The README's promises: its schedule example is valid and its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tidal.cli.main import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_schedule_example_validates(tmp_path: Path) -> None:
    """The schedule shown in the README passes `tidal validate`."""
    match = re.search(r"```yaml\n(.*?)```", README.read_text(), re.S)
    assert match is not None
    (tmp_path / "example.yaml").write_text(match.group(1))
    result = CliRunner().invoke(cli, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output


def test_every_command_in_the_cli_reference_exists() -> None:
    """Each `tidal X` row of the CLI reference names a registered sub-command."""
    named = set(re.findall(r"^\| `tidal (\w+)", README.read_text(), re.M))
    assert named, "the CLI reference table is missing"
    assert named <= set(cli.commands), named - set(cli.commands)


@pytest.mark.parametrize("doc", ["README.md", "docs/reliability.md", "docs/fidelity.md"])
def test_every_test_cited_as_proof_exists(doc: str) -> None:
    """Each `tests/...[::name]` the README or the reliability page cites is a real file (and
    test)."""
    root = README.parent
    cited = re.findall(r"`(tests/[^`:]+)(?:::(\w+))?`", (root / doc).read_text())
    assert cited
    for path, name in cited:
        target = root / path
        assert target.exists(), path
        if name:
            assert f"def {name}(" in target.read_text(), f"{path}::{name}"


def test_the_quick_start_shows_the_demo_picture() -> None:
    """README shows the picture of a demo run, committed under docs/img and small."""
    text = README.read_text()
    assert "](docs/img/tidal-demo.png)" in text
    png = README.parent / "docs" / "img" / "tidal-demo.png"
    data = png.read_bytes()
    assert data[:4] == b"\x89PNG" and len(data) < 150_000
    assert text.index("docs/img/tidal-demo.png") < text.index("## Onboard a team")
