"""The front-ends' options objects: built once, frozen, and never changed by the layers they pass.

One :class:`AguiOptions` may configure several endpoints and one :class:`BridgeOptions` several
runners, so what a layer derives from them (the agent's environment, the resolved workspace) is its
own copy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from acp_adapter.frontends.agui.app import create_app
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.policy import default_policy
from acp_adapter.frontends.bridges.config import new_instance
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.runner import BridgeRunner


def test_one_agui_options_configures_two_endpoints_and_stays_as_given(tmp_path: Path) -> None:
    given = {"EXTRA": "1"}
    options = AguiOptions(agent_command=["true"], cwd=tmp_path, agent_env=given, policy=default_policy)
    first, second = create_app(options), create_app(options)
    for app in (first, second):
        service = app.state.agui
        assert service.options is options
        assert service.host.env == {"EXTRA": "1", "ACP_PROGRESS_SUMMARY": "off"}
        assert service.workspace == str(tmp_path.resolve())
        assert service.argv == ["true"]
    assert first.state.agui.host.env is not second.state.agui.host.env
    assert given == {"EXTRA": "1"}  # the agent is asked for no summary of its own, in a copy
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.cwd = "/elsewhere"  # type: ignore[misc]


def test_an_agent_env_that_asks_for_the_agents_summary_keeps_it(tmp_path: Path) -> None:
    options = AguiOptions(
        agent_command=["true"], cwd=tmp_path, agent_env={"ACP_PROGRESS_SUMMARY": "embedded"}
    )
    assert create_app(options).state.agui.host.env["ACP_PROGRESS_SUMMARY"] == "embedded"


def test_create_app_without_options_serves_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = create_app()
    assert app.state.agui.workspace == str(tmp_path.resolve())
    assert app.state.admission == AguiOptions().admission
    assert app.state.limits == AguiOptions().limits


def test_one_bridge_options_serves_two_runners_and_stays_as_given(tmp_path: Path) -> None:
    given = {"EXTRA": "1"}
    options = BridgeOptions(agent_env=given, window=0.25, permission_timeout=3.0)
    instance = new_instance("opts", "console", cwd=str(tmp_path))
    runners = [BridgeRunner(instance, options), BridgeRunner(instance, options)]
    for runner in runners:
        assert runner.options is options
        assert runner.agent_env == {"EXTRA": "1", "ACP_PROGRESS_SUMMARY": "off"}
        assert (runner.window, runner.permission_timeout) == (0.25, 3.0)
    assert runners[0].agent_env is not runners[1].agent_env
    assert given == {"EXTRA": "1"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.window = 1.0  # type: ignore[misc]
    assert BridgeRunner(instance).options == BridgeOptions()
