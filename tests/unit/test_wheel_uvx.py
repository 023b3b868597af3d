"""The built package on its own: the sdist and wheel pass ``twine check`` and carry the licence and
complete metadata, and ``uvx --from <the wheel> acp-progress serve`` — an empty uv cache, an empty
``HOME``, nothing of this checkout on the path — answers ``initialize`` and runs a prompt on the
embedded model with its think card, as an editor that installs agents from the ACP Registry runs it.

Slow (it builds the package and lets uv install it with its dependencies) but part of every run.
"""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from acp_adapter._version import __version__
from tests.helpers.built_wheel import Dist, dist, one_prompt, think_card_statuses, uv_env

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

__all__ = ["dist"]  # the session fixture, imported to be used here


def test_the_sdist_and_wheel_pass_twine_check_and_carry_licence_and_metadata(dist: Dist) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.wheel), str(dist.sdist)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert dist.wheel.name == f"acp_progress-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = wheel.namelist()
        info = f"acp_progress-{__version__}.dist-info"
        metadata = email.message_from_bytes(wheel.read(f"{info}/METADATA"))
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert f"{info}/licenses/LICENSE" in names
    assert "acp_adapter/py.typed" in names and "run_agent.py" in names
    assert metadata["Version"] == __version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "# acp-progress" in metadata.get_payload()
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Repository", "Issues", "Changelog"}
    assert "Programming Language :: Python :: 3.11" in metadata.get_all("Classifier")
    assert "acp-progress = acp_adapter.cli:main" in entry_points
    with tarfile.open(dist.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "registry/acp-progress/agent.json"} <= members


@pytest.mark.anyio
async def test_uvx_runs_the_wheel_from_an_empty_cache_and_home(dist: Dist, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = uv_env(tmp_path, ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1")
    argv = ["uvx", "--from", str(dist.wheel), "acp-progress", "serve"]
    answer, client = await one_prompt(argv, env, work, tmp_path / "agent.log")
    assert answer.agent_info.name == "acp-progress"
    assert answer.agent_info.version == __version__  # the wheel's version, read from _version.py
    assert {m.id for m in answer.auth_methods} == {"embedded", "openai-api-key", "setup"}
    statuses = think_card_statuses(client)
    assert statuses[0] == "in_progress" and statuses[-1] == "completed"
    # uv installed the wheel into its own environment in the empty cache: the agent ran from there
    assert list((tmp_path / "uv-cache").rglob("acp_adapter/server.py")), "not run from uv's environment"
