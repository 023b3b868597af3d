"""This project's agent behind an in-process AG-UI app, served in this process too.

For AG-UI tests of what the endpoint streams (progress, summaries, redaction), where the agent's
process proves nothing: :func:`tests.helpers.shared_servers.in_process_link_class` swaps the
pipe and the process for in-memory transports; the endpoint, its driver side and the agent are the
production code. Another agent (``agent_command``) still runs as a process of its own."""

from __future__ import annotations

from typing import Any

from tests.helpers.shared_servers import in_process_link_class


def use_in_process_agui_agents(monkeypatch: Any) -> None:
    """Make every AG-UI agent host built from now on that runs this project's agent (the default
    command) drive it in this process instead of spawning it."""
    from acp_adapter.client.agent_process import default_agent_command
    from acp_adapter.frontends.agui.host import AgentHost

    in_process = in_process_link_class()
    make_process_driver = AgentHost._make_driver

    def make_driver(self: Any) -> Any:
        driver = make_process_driver(self)  # the host's own arguments, whatever they become
        if self.argv == default_agent_command():
            driver.link.__class__ = in_process  # a subclass adding no state of its own: same layout
        return driver

    monkeypatch.setattr(AgentHost, "_make_driver", make_driver)
