"""Remembered permissions mean what the person saw: "always allow `ls`" covers the program ``PATH``
finds for the bare name, outside the workspace, and nothing else.

The attacks: after "always allow" of ``ls``, a script of the workspace run as ``./ls``, as
``bin/ls -la`` or by its absolute path, or found first on a ``PATH`` entry inside the workspace,
must ask again; so must a stored rule of the older, base-name form. Unit checks of the resolver,
then the agent (served in this process, as ``serve`` builds it) driven by the SDK's client side.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.agent.command_rules import command_rule, resolve_program
from acp_adapter.agent.permissions import SessionPolicy, permission_options, rule_for
from acp_adapter.agent.session_config import SessionConfig
from acp_adapter.tooling.calls import ToolCall
from tests.helpers.acp_agent import agent_env, final_status, prompt_text
from tests.helpers.choosing_client import ChoosingClient, agent_from_env, card_of
from tests.helpers.shared_agent import served_inprocess


def _script(path: Path, marker: Path) -> Path:
    """An executable shell script that leaves ``marker`` behind when it runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A workspace holding scripts called ``ls``, and a system folder outside it with the real one."""
    work = tmp_path / "work"
    system = tmp_path / "system"
    marker = tmp_path / "ran"
    _script(work / "ls", marker)
    _script(work / "bin" / "ls", marker)
    system.mkdir()
    real = shutil.which("ls")
    assert real is not None
    (system / "ls").symlink_to(os.path.realpath(real))
    return {"work": work, "system": system, "marker": marker, "real": Path(os.path.realpath(real))}


def _call(command: str) -> ToolCall:
    return ToolCall("c1", "run_command", {"command": command})


def test_a_bare_name_is_keyed_on_the_program_path_finds_outside_the_workspace(
    layout: dict[str, Path],
) -> None:
    work, system = str(layout["work"]), str(layout["system"])
    rule = command_rule("execute", "ls -la src", work, {"PATH": system})
    assert rule.allow_key == f"execute:program:{layout['real']}"
    assert rule.reject_key == "execute:ls"
    assert str(layout["real"]) in rule.allow_covers and "not ./ls" in rule.allow_covers
    for named_by_path in ("./ls", "bin/ls -la", f"{work}/ls", f"{system}/ls -l"):
        assert command_rule("execute", named_by_path, work, {"PATH": system}).allow_key is None
        assert command_rule("execute", named_by_path, work, {"PATH": system}).reject_key == "execute:ls"


@pytest.mark.parametrize("entry", ["bin", "", ".", "{work}/bin"])
def test_a_path_entry_inside_the_workspace_gets_no_always_allow(layout: dict[str, Path], entry: str) -> None:
    work = str(layout["work"])
    path_env = os.pathsep.join([entry.format(work=work), str(layout["system"])])
    program, why = resolve_program("ls", work, path_env)
    assert program is None and "inside the workspace" in why
    assert command_rule("execute", "ls", work, {"PATH": path_env}).allow_key is None


def test_a_symlink_outside_that_points_into_the_workspace_gets_no_always_allow(
    layout: dict[str, Path], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ls").symlink_to(layout["work"] / "bin" / "ls")
    rule = command_rule("execute", "ls", str(layout["work"]), {"PATH": str(elsewhere)})
    assert rule.allow_key is None and "inside the workspace" in rule.why_not


def test_launchers_interpreters_and_unknown_programs_get_no_always_allow(layout: dict[str, Path]) -> None:
    work = str(layout["work"])
    for command in ("env ls", "python3 ls", "bash -c id", "sudo ls", "xargs rm", "find . -delete"):
        assert command_rule("execute", command, work).allow_key is None, command
    assert command_rule("execute", "no-such-program-here", work).allow_key is None
    assert command_rule("execute", "ls; id", work).allow_key is None


def test_an_mcp_tools_command_argument_is_never_a_local_program(layout: dict[str, Path]) -> None:
    class Remote:
        server, mcp_name = "remote", "shell"

    rule = rule_for("execute", ToolCall("c", "mcp__remote__shell", {"command": "ls"}), Remote(), None)
    assert rule.allow_key == rule.reject_key == "execute:mcp:remote/shell"


def test_the_policy_never_lets_a_rule_for_ls_answer_for_another_program(layout: dict[str, Path]) -> None:
    work = str(layout["work"])
    os.environ["PATH"], saved = str(layout["system"]), os.environ.get("PATH", "")
    try:
        policy = SessionPolicy(SessionConfig())
        allowed = rule_for("execute", _call("ls"), None, work)
        assert policy.remember(allowed, True) == f"always allow execute:program:{layout['real']}"
        assert policy.before_asking(rule_for("execute", _call("ls -la"), None, work)) is not None
        for attack in ("./ls", "bin/ls -la", f"{work}/ls"):
            assert policy.before_asking(rule_for("execute", _call(attack), None, work)) is None, attack
        # the option says what "always" covers
        names = [o.name for o in permission_options(allowed)]
        assert any(str(layout["real"]) in n and "not ./ls" in n for n in names)
        assert any("any path" in n for n in names)
    finally:
        os.environ["PATH"] = saved


def test_a_stored_always_allow_of_the_older_base_name_form_allows_nothing(layout: dict[str, Path]) -> None:
    config = SessionConfig.from_json({"mode": "ask", "always": {"execute:ls": True}}, "embedded", [])
    policy = SessionPolicy(config)
    for command in ("ls", "./ls", "bin/ls -la"):
        assert policy.before_asking(rule_for("execute", _call(command), None, str(layout["work"]))) is None
    rejecting = SessionPolicy(SessionConfig(always={"execute:ls": False}))
    verdict = rejecting.before_asking(rule_for("execute", _call("./ls"), None, str(layout["work"])))
    assert verdict is not None and not verdict.allowed  # an old "always reject" still refuses


@pytest.mark.e2e
@pytest.mark.anyio
async def test_always_allow_ls_does_not_run_a_workspace_ls_unasked(
    layout: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    """The attack end to end: the workspace's scripts called ``ls`` are each asked about (and,
    rejected, never run), while the real ``ls`` runs unasked as promised."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(layout["system"]), os.environ.get("PATH", "")]))
    work, marker = layout["work"], layout["marker"]
    # five turns whose model thinks 0.02 s (the rules are the point, not the thinking time)
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"), ACP_PROGRESS_EMBEDDED_DELAY="0.02")
    client = ChoosingClient(choices=["allow_always", "reject_once", "reject_once", "reject_once"])
    async with served_inprocess(client, agent_from_env(env)) as conn:
        sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "run `ls -d .`")
        assert len(client.permission_requests) == 1
        await prompt_text(conn, sid, "run `ls -a`")  # the same program: not asked
        assert len(client.permission_requests) == 1
        assert final_status(card_of(client, sid, "ls -a")) == "completed"
        for attack in ("./ls", "bin/ls -la", f"{work}/ls"):
            before = len(client.permission_requests)
            await prompt_text(conn, sid, f"run `{attack}`")
            assert len(client.permission_requests) == before + 1, f"{attack} ran without asking"
            assert not marker.exists(), f"{attack} ran"
        assert "allow_always" not in client.offered[1]  # a path is never offered "always"


def test_no_command_line_gets_an_always_allow_for_a_path_or_a_workspace_program(
    layout: dict[str, Path],
) -> None:
    """Property: whatever the line, an "always allow" key names a program outside the workspace
    that the line named bare."""
    from hypothesis import given
    from hypothesis import strategies as st

    from acp_adapter.agent.command_rules import split_command

    work = str(layout["work"])
    path_env = os.pathsep.join(["bin", str(layout["system"]), "/usr/bin", "/bin"])
    words = st.sampled_from(["ls", "./ls", "bin/ls", f"{work}/ls", "cat", "echo", "-la", "x y", "../ls"])

    @given(st.lists(words, min_size=1, max_size=4), st.text(max_size=8))
    def check(parts: list[str], tail: str) -> None:
        line = " ".join(parts) + tail
        rule = command_rule("execute", line, work, {"PATH": path_env})
        if rule.allow_key is not None:
            first, simple = split_command(line.strip())  # run_command strips the line too
            program = rule.allow_key.removeprefix("execute:program:")
            assert simple and "/" not in first
            assert not program.startswith(os.path.realpath(work) + os.sep)

    check()


@pytest.mark.e2e
def test_an_always_allowed_command_runs_the_approved_program_by_its_path(layout: dict[str, Path]) -> None:
    """The remembered answer pins the program: ``ls -la`` runs as ``/usr/bin/ls -la`` (resolved
    when the rule matched), so a shell with another ``PATH`` (an editor's terminal) or a file
    appearing in between cannot swap the program."""
    from acp_adapter.agent.command_rules import pinned_command
    from acp_adapter.cancel import CancelToken
    from acp_adapter.tooling.builtin import default_toolbox
    from acp_adapter.tooling.toolbox import PermissionDecision

    real = str(layout["real"])
    key = f"execute:program:{real}"
    assert pinned_command("ls -la 'a b'", key) == f"{real} -la 'a b'"
    for unpinned in ("./ls", "ls; id", "bin/ls -la"):
        assert pinned_command(unpinned, key) is None
    work = str(layout["work"])
    os.environ["PATH"], saved = str(layout["system"]), os.environ.get("PATH", "")
    try:
        policy = SessionPolicy(SessionConfig())
        policy.remember(rule_for("execute", _call("ls"), None, work), True)
        verdict = policy.before_asking(rule_for("execute", _call("ls -d ."), None, work))
        assert verdict is not None and verdict.pinned == f"{real} -d ."
    finally:
        os.environ["PATH"] = saved
    # the toolbox runs the pinned arguments, not the model's
    toolbox = default_toolbox(layout["work"])

    def allow_pinned(call: Any, tool: Any) -> PermissionDecision:
        return PermissionDecision(True, automatic=True, arguments={"command": "echo pinned"})

    outcome = toolbox.execute(
        ToolCall("c1", "run_command", {"command": "echo original"}),
        cancel=CancelToken(),
        permission=allow_pinned,
    )
    assert outcome.ok and outcome.text.strip() == "pinned"
