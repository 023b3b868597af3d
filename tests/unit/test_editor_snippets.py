"""The editor set-up in the documentation works: each snippet's agent command, run exactly, serves ACP.

The "Use it from an editor" section of docs/editors.md shows Zed (``agent_servers`` in ``settings.json``),
JetBrains (``acp.json``), acpx and Toad, each through ``uvx`` and from a virtual environment; each
block is marked ``<!-- editor: NAME -->``. This test reads every marked block, takes the agent
command it names (``command`` + ``args`` of the JSON entry; the ``--agent`` value for acpx; the
argument of ``toad acp``) and runs exactly that command as an editor would, over stdio, through
``initialize``, a session and one prompt whose think card completes.

Two substitutions make it runnable here, and only these:

* the ``uvx`` form names the package on PyPI (``uvx acp-progress serve``); the test puts
  ``--from <the wheel built from this checkout>`` in front of it, so uv installs this version of
  the package under that name (the published one may be older or not exist yet) and runs the same
  command with the same arguments. A local index would do as well but adds a server and proves
  nothing more: ``--from`` is how uv itself runs a wheel that is not on an index.
* the virtual-environment form stands ``/path/to/clone/.venv`` for the reader's environment; the
  test makes a fresh environment, installs the wheel into it, and runs the command at that absolute
  path with a ``PATH`` that does not contain it (an editor started from the desktop has none).

uv runs with an empty cache and ``HOME`` shared by this module's tests, on every test worker: they
and the virtual environment are made once per run (:func:`tests.helpers.built_wheel.uv_env`,
:func:`~tests.helpers.built_wheel.made_once`).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_adapter._version import __version__
from tests.helpers.acp_agent import ROOT
from tests.helpers.built_wheel import Dist, dist, made_once, one_prompt, think_card_statuses, uv_env

pytestmark = pytest.mark.slow

__all__ = ["dist"]  # the session fixture, imported to be used here

BLOCK = re.compile(r"<!-- editor: (?P<name>[a-z-]+) -->\n```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)
PLACEHOLDER_VENV = "/path/to/clone/.venv"
CLIENTS = ("zed", "jetbrains", "acpx", "toad")
FORMS = ("uvx", "venv")


def readme_snippets() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    return {m["name"]: (m["lang"], m["body"]) for m in BLOCK.finditer(text)}


def agent_command(lang: str, body: str) -> list[str]:
    """The command line an editor runs for this snippet."""
    if lang == "json":
        (entry,) = json.loads(body)["agent_servers"].values()
        return [entry["command"], *entry.get("args", [])]
    words = shlex.split(body)
    if words[0] == "acpx":
        return shlex.split(words[words.index("--agent") + 1])
    if words[0] == "toad":
        return shlex.split(words[words.index("acp") + 1])
    raise AssertionError(f"no agent command in {body!r}")


def test_the_readme_shows_every_client_through_uvx_and_a_virtual_environment() -> None:
    snippets = readme_snippets()
    assert set(snippets) == {f"{client}-{form}" for client in CLIENTS for form in FORMS}
    for name, (lang, body) in snippets.items():
        command = agent_command(lang, body)
        if name.endswith("-uvx"):
            assert command == ["uvx", "acp-progress", "serve"], name
        else:
            assert command == [f"{PLACEHOLDER_VENV}/bin/acp-progress", "serve"], name
            assert Path(command[0]).is_absolute(), name


@pytest.fixture(scope="session")
def uv_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """uv's home and cache, one for the run: this module's tests on every worker share it."""
    return made_once(tmp_path_factory, "editor-uv", lambda _out: None)


@pytest.fixture(scope="session")
def venv(dist: Dist, uv_base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (as ``pip install acp-progress`` would),
    made once for the run whichever worker needs it first."""

    def make(out: Path) -> None:
        path = out / "venv"
        env = uv_env(uv_base)
        subprocess.run(["uv", "venv", "--quiet", str(path)], env=env, check=True, timeout=120)
        subprocess.run(
            ["uv", "pip", "install", "--quiet", "--python", str(path / "bin" / "python"), str(dist.wheel)],
            env=env,
            check=True,
            timeout=600,
        )

    return made_once(tmp_path_factory, "editor-venv", make) / "venv"


def _runnable(command: list[str], dist: Dist, venv: Path) -> list[str]:
    if command[0] == "uvx":
        return ["uvx", "--from", str(dist.wheel), *command[1:]]
    assert command[0].startswith(PLACEHOLDER_VENV + "/")
    return [str(venv) + command[0].removeprefix(PLACEHOLDER_VENV), *command[1:]]


@pytest.fixture(scope="module")
def served_by_command() -> dict[tuple[str, ...], tuple[Any, Any]]:
    """The turn each distinct command line served, by command line. Several snippets name the very
    same command (every ``uvx`` form is ``uvx acp-progress serve``): the editor runs the same process
    with the same arguments and environment, so running it again would prove nothing more."""
    return {}


@pytest.mark.e2e
@pytest.mark.anyio
@pytest.mark.parametrize("name", [f"{client}-{form}" for client in CLIENTS for form in FORMS])
async def test_each_snippets_command_serves_a_prompt_with_its_think_card(
    name: str,
    dist: Dist,
    venv: Path,
    uv_base: Path,
    tmp_path: Path,
    served_by_command: dict[tuple[str, ...], tuple[Any, Any]],
) -> None:
    lang, body = readme_snippets()[name]
    argv = _runnable(agent_command(lang, body), dist, venv)
    env = uv_env(uv_base, ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1")
    assert str(venv) not in env["PATH"]
    key = (*argv, *sorted(f"{k}={v}" for k, v in env.items()))
    if key not in served_by_command:
        served_by_command[key] = await one_prompt(argv, env, tmp_path, tmp_path / "agent.log")
    answer, client = served_by_command[key]
    assert answer.agent_info.version == __version__
    statuses = think_card_statuses(client)
    assert statuses[0] == "in_progress" and statuses[-1] == "completed", statuses


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["acpx-uvx", "acpx-venv"])
def test_acpx_itself_runs_its_snippet(
    name: str, dist: Dist, venv: Path, uv_base: Path, tmp_path: Path
) -> None:
    """The acpx snippets are whole command lines: the real acpx (npm, at its locked version) runs
    them, with the agent command substituted as above, and prints the answer of the turn."""
    from tests.helpers.npm_client import CLIENT_DIR, node_with_packages

    node_with_packages("acpx")
    _lang, body = readme_snippets()[name]
    words = shlex.split(body)
    at = words.index("--agent") + 1
    words[at] = shlex.join(_runnable(shlex.split(words[at]), dist, venv))
    words[0] = str(CLIENT_DIR / "node_modules" / ".bin" / "acpx")
    (tmp_path / "home").mkdir()
    env = uv_env(
        uv_base, ACP_PROGRESS_EMBEDDED_DELAY="0.05", HOME=str(tmp_path / "home")
    )  # acpx keeps ~/.acpx
    done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Thinking... (completed)" in done.stdout
    assert "2+2 = 4" in done.stdout and "[done] end_turn" in done.stdout
