"""Sign-in the protocol's way: the auth methods ``initialize`` lists, ``authenticate`` and ``logout``.

The agent runs in this process with the connection ``serve`` builds (its ``logout`` route included,
:func:`tests.helpers.shared_agent.served_inprocess`), driven by the SDK's client side; the
OpenAI-compatible endpoint is the fake server on loopback (:mod:`tests.helpers.fake_openai`), which
refuses a wrong key with a 401 as a real one does. What the ACP Registry's CI requires (at least
one method of type ``agent`` or ``terminal``, the type read from the JSON as its checker reads it)
is checked on the wire form of the answer.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import AuthCapabilities, ClientCapabilities, Implementation

from acp_adapter.agent.sign_in import SignIn
from acp_adapter.config import Settings
from acp_adapter.config.sign_in_file import BackendChoice, save_choice
from tests.helpers.acp_agent import RecordingClient, agent_env, prompt_text
from tests.helpers.fake_openai import FakeOpenAI, text_reply
from tests.helpers.shared_agent import progress_agent, served_inprocess

KEY = "sk-test-0123456789abcdefSECRET"


def _agent(tmp_path: Path, **env: str) -> Any:
    """This project's agent configured by ``env`` (as a process started with it), whose settings
    file is ``tmp_path/config/config.toml``."""
    agent = progress_agent(Settings.from_env(agent_env(ACP_PROGRESS_STATE="off", **env)))
    agent.sign_in = SignIn(tmp_path / "config" / "config.toml")
    return agent


async def _initialize(conn: Any, capabilities: ClientCapabilities) -> dict[str, Any]:
    answer = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities,
        client_info=Implementation(name="pytest", version="0"),
    )
    return answer.model_dump(by_alias=True, exclude_none=True)


def _registry_types(wire: dict[str, Any]) -> list[str]:
    """Each method's type as the ACP Registry's checker reads it: ``type``, else ``agent``."""
    return [method.get("type") or "agent" for method in wire["authMethods"]]


@pytest.mark.anyio
async def test_initialize_lists_the_embedded_model_and_the_key_variables(tmp_path: Path) -> None:
    async with served_inprocess(RecordingClient(), _agent(tmp_path)) as conn:
        wire = await _initialize(conn, ClientCapabilities())
    methods = {m["id"]: m for m in wire["authMethods"]}
    assert set(methods) == {"embedded", "openai-api-key"}  # no terminal method for this client
    assert "agent" in _registry_types(wire)  # the registry's requirement
    assert methods["openai-api-key"]["type"] == "env_var"
    variables = {v["name"]: (v["secret"], v["optional"]) for v in methods["openai-api-key"]["vars"]}
    assert variables == {
        "OPENAI_API_KEY": (True, False),
        "OPENAI_BASE_URL": (False, True),
        "ACP_PROGRESS_OPENAI_MODEL": (False, True),
    }
    assert wire["agentCapabilities"]["auth"] == {"logout": {}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "capabilities",
    [
        ClientCapabilities(auth=AuthCapabilities(terminal=True)),
        ClientCapabilities(field_meta={"terminal-auth": True}),  # the flag clients sent before
    ],
    ids=["auth.terminal", "_meta.terminal-auth"],
)
async def test_a_client_that_runs_terminal_sign_in_is_offered_serve_setup(
    tmp_path: Path, capabilities: ClientCapabilities
) -> None:
    async with served_inprocess(RecordingClient(), _agent(tmp_path)) as conn:
        wire = await _initialize(conn, capabilities)
    terminal = [m for m in wire["authMethods"] if m.get("type") == "terminal"]
    assert terminal == [
        {
            "id": "setup",
            "name": "Set up in a terminal",
            "description": terminal[0]["description"],
            "type": "terminal",
            "args": ["--setup"],
        }
    ]


@pytest.mark.anyio
async def test_sessions_work_without_authenticate_and_with_the_embedded_method(tmp_path: Path) -> None:
    client = RecordingClient()
    # two embedded turns: their thinking time is not the point (0.02 s, not the test agent's 0.3 s)
    async with served_inprocess(client, _agent(tmp_path, ACP_PROGRESS_EMBEDDED_DELAY="0.02")) as conn:
        first = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert (await prompt_text(conn, first.session_id, "hello")).stop_reason == "end_turn"
        await conn.authenticate(method_id="embedded")
        second = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert second.config_options[1].current_value == "embedded"
        assert (await prompt_text(conn, second.session_id, "hello")).stop_reason == "end_turn"


@pytest.mark.anyio
async def test_the_env_method_without_a_key_names_the_missing_variable(tmp_path: Path) -> None:
    async with served_inprocess(RecordingClient(), _agent(tmp_path)) as conn:
        with pytest.raises(RequestError) as caught:
            await conn.authenticate(method_id="openai-api-key")
    assert caught.value.code == -32000
    assert "OPENAI_API_KEY is not set" in str(caught.value)
    assert caught.value.data["missing"] == ["OPENAI_API_KEY"]


@pytest.mark.anyio
async def test_the_env_method_checks_the_key_and_new_sessions_use_the_endpoint(tmp_path: Path) -> None:
    with FakeOpenAI(api_key=KEY, fallback=text_reply("from the endpoint")) as server:
        env = {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.base_url,
            "ACP_PROGRESS_OPENAI_MODEL": "test-model",
        }
        client = RecordingClient()
        async with served_inprocess(client, _agent(tmp_path, **env)) as conn:
            before = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert before.config_options[1].current_value == "embedded"  # nothing forced
            await conn.authenticate(method_id="openai-api-key")
            after = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert after.config_options[1].current_value == "openai:test-model"
            assert (await prompt_text(conn, after.session_id, "hi")).stop_reason == "end_turn"
        assert [r.path for r in server.requests][:1] == ["/v1/models"]  # the check came first
        assert server.chat_bodies, "the prompt reached the endpoint"
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)


@pytest.mark.anyio
async def test_a_refused_key_or_an_unoffered_model_is_an_error_without_the_key(tmp_path: Path) -> None:
    with FakeOpenAI(api_key="sk-the-right-one-0000") as server:
        env = {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.base_url,
            "ACP_PROGRESS_OPENAI_MODEL": "test-model",
        }
        async with served_inprocess(RecordingClient(), _agent(tmp_path, **env)) as conn:
            with pytest.raises(RequestError) as refused:
                await conn.authenticate(method_id="openai-api-key")
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert session.config_options[1].current_value == "embedded"  # a failed sign-in changes nothing
        assert "401" in str(refused.value)
        assert KEY not in str(refused.value) and KEY not in repr(refused.value.data)
    with FakeOpenAI(api_key=KEY) as server:
        env = {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.base_url,
            "ACP_PROGRESS_OPENAI_MODEL": "gpt-9",
        }
        async with served_inprocess(RecordingClient(), _agent(tmp_path, **env)) as conn:
            with pytest.raises(RequestError) as unoffered:
                await conn.authenticate(method_id="openai-api-key")
        assert "does not offer the model gpt-9 (it offers: test-model)" in str(unoffered.value)


@pytest.mark.anyio
async def test_an_unknown_method_is_invalid_params(tmp_path: Path) -> None:
    async with served_inprocess(RecordingClient(), _agent(tmp_path)) as conn:
        with pytest.raises(RequestError) as caught:
            await conn.authenticate(method_id="x" * 10_000)
    assert caught.value.code == -32602
    assert len(caught.value.data["methodId"]) == 200  # an id from outside is echoed bounded
    assert "embedded, openai-api-key, setup" in caught.value.data["details"]


@pytest.mark.anyio
async def test_the_terminal_method_says_whether_setup_saved_a_choice(tmp_path: Path) -> None:
    async with served_inprocess(RecordingClient(), _agent(tmp_path)) as conn:
        with pytest.raises(RequestError) as caught:
            await conn.authenticate(method_id="setup")
        assert "acp-progress serve --setup" in str(caught.value)
        (tmp_path / "config").mkdir(mode=0o700)
        save_choice(tmp_path / "config" / "config.toml", BackendChoice("embedded"))
        await conn.authenticate(method_id="setup")


@pytest.mark.anyio
async def test_logout_clears_what_setup_saved_and_the_key_in_memory(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir(mode=0o700)
    settings_file = config_dir / "config.toml"
    settings_file.write_text("# mine\nheartbeat_interval = 10\n")
    settings_file.chmod(0o600)
    with FakeOpenAI(api_key=KEY) as server:
        save_choice(settings_file, BackendChoice("openai", server.base_url, "test-model", KEY))
        agent = progress_agent(
            Settings.from_env(agent_env(ACP_PROGRESS_STATE="off", ACP_PROGRESS_CONFIG_DIR=str(config_dir)))
        )
        agent.sign_in = SignIn(settings_file)
        assert agent.settings.model == "openai" and agent.settings.openai.api_key == KEY
        async with served_inprocess(RecordingClient(), agent) as conn:
            before = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert before.config_options[1].current_value == "openai:test-model"
            assert await conn._conn.send_request("logout", {}) == {}
            after = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert after.config_options[1].current_value == "embedded"
            # the session opened before logout no longer reaches the endpoint with the old key
            with pytest.raises(RequestError, match="401"):
                await prompt_text(conn, before.session_id, "hi")
            assert server.chat_bodies
            assert all(KEY not in str(r.headers) for r in server.requests if r.method == "POST")
    text = settings_file.read_text()
    assert KEY not in text and "openai" not in text
    assert text.startswith("# mine\nheartbeat_interval = 10\n")  # the rest of the file is untouched
    assert stat.S_IMODE(os.stat(settings_file).st_mode) == 0o600
    assert agent.settings.openai.api_key == ""
