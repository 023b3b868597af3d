"""This project's agent behind an in-process AG-UI app, served in this process too.

For AG-UI tests of what the endpoint streams (progress, summaries, redaction), where the agent's
process proves nothing: :func:`tests.helpers.shared_servers.drive_own_agent_in_process` swaps the
pipe and the process for in-memory transports; the endpoint, its driver side and the agent are the
production code. Another agent (``agent_command``) still runs as a process of its own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.helpers.shared_servers import drive_own_agent_in_process


def use_in_process_agui_agents(monkeypatch: Any) -> None:
    """Every AG-UI agent host built from now on that runs this project's agent (the default
    command) drives it in this process instead of spawning it."""
    from acp_adapter.client.agent_process import default_agent_command
    from acp_adapter.frontends.agui.host import AgentHost

    drive_own_agent_in_process(monkeypatch, AgentHost, lambda host: host.argv == default_agent_command())


def use_in_process_test_agent(monkeypatch: Any, command: str | list[str], make_agent: Any) -> None:
    """Every AG-UI agent host built from now on whose agent command is ``command`` (a test agent of
    ``tests/agents``, as a string split like a shell would or as a list) runs ``make_agent()`` in
    this process instead of spawning it: for tests where what that agent sends is the point, not
    its process."""
    import shlex

    from acp_adapter.frontends.agui.host import AgentHost

    argv = shlex.split(command) if isinstance(command, str) else list(command)
    drive_own_agent_in_process(monkeypatch, AgentHost, lambda host: host.argv == argv, make_agent)


def state_directory(workspace: Path) -> Path:
    """Where :func:`endpoint_in_process` keeps the state of an endpoint on ``workspace``: beside
    it, not in the workspace the agent lists."""
    return workspace.with_name(f"{workspace.name}-state")


@contextlib.contextmanager
def endpoint_in_process(
    workspace: Path, *, env: dict[str, str] | None = None, **options: Any
) -> Iterator[Any]:
    """The endpoint ``acp-progress agui --no-token --cwd WORKSPACE`` builds, served over HTTP in
    this process (a :class:`tests.helpers.agui_http.Served`, started): ``options`` are the
    :class:`~acp_adapter.frontends.agui.endpoint.AguiOptions` its flags give, its threads are
    remembered in the agent's state directory (beside the workspace) as the command's are, and the
    agent gets the environment an :class:`~tests.helpers.agui_process.AguiProcess` gives its agent
    (with ``env``; with ``ACP_PROGRESS_STATE_DIR`` there, its threads are remembered in that
    directory, with ``ACP_PROGRESS_DATABASE_URL`` in that database, as the command's are). For
    tests where the page, a client or the stream is the point, not the endpoint's process."""
    from acp_adapter.frontends.agui.app import create_app
    from acp_adapter.frontends.agui.endpoint import AguiOptions
    from acp_adapter.store import open_store
    from tests.helpers.acp_agent import agent_env
    from tests.helpers.agui_http import Served

    given = {"ACP_PROGRESS_STATE_DIR": str(state_directory(workspace)), **(env or {})}
    agent = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", **given)
    state = Path(agent["ACP_PROGRESS_STATE_DIR"])
    store = open_store(state, retention_days=0, url=agent.get("ACP_PROGRESS_DATABASE_URL"))
    try:
        app = create_app(AguiOptions(cwd=str(workspace), agent_env=agent, thread_store=store, **options))
        served = Served(app).start()
        try:
            yield served
        finally:
            served.stop()
    finally:
        store.close()
