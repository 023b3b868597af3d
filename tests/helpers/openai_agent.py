"""This project's agent on its OpenAI back-end, pointed at the fake OpenAI server
(:mod:`tests.helpers.fake_openai`): the environment a spawned agent gets, and the same agent in
this process."""

from __future__ import annotations

from typing import Any

from acp_adapter.config import Settings
from tests.helpers.acp_agent import agent_env
from tests.helpers.fake_openai import FakeOpenAI

#: the API key the agent sends (a test checks it never shows)
KEY = "sk-test-SECRETKEY1234567890abcdef"


def openai_env(server: FakeOpenAI, **extra: str) -> dict[str, str]:
    """The environment of an agent whose model is ``server`` (quick heartbeats), ``extra`` added."""
    return agent_env(
        ACP_PROGRESS_MODEL="openai",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY=KEY,
        ACP_PROGRESS_OPENAI_MODEL="test-model",
        ACP_PROGRESS_HEARTBEAT_INTERVAL="0.05",
        **extra,
    )


def openai_agent(server: FakeOpenAI, **extra: str) -> Any:
    """This project's agent in this process with the settings ``openai_env`` gives a spawned one
    (the settings come from the same variables; only the process and its pipe are left out)."""
    import os

    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    settings = Settings.load({**os.environ, **openai_env(server, **extra)}, flags={})
    return ProgressAgent(settings, turn_runner=AIAgent)
