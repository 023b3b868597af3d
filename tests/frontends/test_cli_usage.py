"""Usage errors name the subcommand and suggest the nearest spelling."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acp_adapter.cli import build_parser
from acp_adapter.cli._usage import suggest
from tests.helpers.acp_agent import ROOT


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.e2e
def test_a_mistyped_subcommand_flag_gets_that_subcommands_usage_and_a_suggestion() -> None:
    """More than the top-level usage and "unrecognized arguments: --yess": the subcommand and the
    nearest spelling."""
    done = cli("watch", "--yess", "hi")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: acp-progress watch ")
    assert "acp-progress watch: error: unrecognized arguments: --yess (did you mean --yes" in done.stderr
    assert "usage: acp-progress [-h]" not in done.stderr


@pytest.mark.e2e
def test_a_mistyped_command_name_gets_a_suggestion() -> None:
    done = cli("wach", "hi")
    assert done.returncode == 2
    assert "invalid choice: 'wach'" in done.stderr and "(did you mean watch?)" in done.stderr


@pytest.mark.parametrize(
    ("argv", "usage", "wanted"),
    [
        (["sessions", "--jsn"], "acp-progress sessions", "--json"),
        (["watch", "--summary", "ofg", "x"], "acp-progress watch", "off"),
        (["bridge", "run", "--bogus"], "acp-progress bridge run", ""),
    ],
)
def test_nested_and_choice_errors_name_their_own_parser(
    argv: list[str], usage: str, wanted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {usage} ")
    assert f"{usage}: error:" in err
    if wanted:
        assert f"did you mean {wanted}" in err
    else:
        assert "did you mean" not in err  # nothing close: no guess


def test_suggest_takes_the_close_ones_only() -> None:
    assert suggest("--yess", ["--yes", "--json", "--cwd"]) == ["--yes"]
    assert suggest("--zzz", ["--yes", "--json"]) == []
