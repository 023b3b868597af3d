"""This project's agent behind an in-process AG-UI app, served in this process too.

For AG-UI tests of what the endpoint streams (progress, summaries, redaction), where the agent's
process proves nothing: :func:`tests.helpers.shared_servers.drive_own_agent_in_process` swaps the
pipe and the process for in-memory transports; the endpoint, its driver side and the agent are the
production code. Another agent (``agent_command``) still runs as a process of its own."""

from __future__ import annotations

from typing import Any

from tests.helpers.shared_servers import drive_own_agent_in_process


def use_in_process_agui_agents(monkeypatch: Any) -> None:
    """Every AG-UI agent host built from now on that runs this project's agent (the default
    command) drives it in this process instead of spawning it."""
    from acp_adapter.client.agent_process import default_agent_command
    from acp_adapter.frontends.agui.host import AgentHost

    drive_own_agent_in_process(monkeypatch, AgentHost, lambda host: host.argv == default_agent_command())
