"""A command's terminal in its card, for a client that runs no terminal of its own but renders one
from the card (``clientCapabilities._meta.terminal_output: true``): ``terminal_info``, the new output
in ``terminal_output`` pieces, ``terminal_exit`` — the shape claude-agent-acp and codex-acp send.
Redacted as a stream, bounded, and rendered by our own front-ends from exactly what the agent sent.
In-process: the card's updates are what is checked, the process adds nothing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import ClientCapabilities, TerminalToolCallContent, ToolCallProgress, ToolCallStart

from acp_adapter.agent.card_terminal import MAX_SHOWN_BYTES
from acp_adapter.frontends.watch.view import PlainView
from tests.helpers.acp_agent import RecordingClient, prompt_text
from tests.helpers.piped_agent import piped_progress_agent
from tests.helpers.shared_agent import progress_agent, served_inprocess

pytestmark = pytest.mark.e2e

SECRET = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
RENDERS = ClientCapabilities(field_meta={"terminal_output": True})


async def _run(tmp_path: Path, command: str, capabilities: ClientCapabilities) -> tuple[RecordingClient, str]:
    client = RecordingClient()
    agent = progress_agent(state_dir=str(tmp_path / "state"))
    async with served_inprocess(client, agent) as conn:
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, f"run {command}")).stop_reason == "end_turn"
    return client, sid


def _command_card(client: RecordingClient, sid: str) -> tuple[str, list[Any]]:
    cards = {cid: ups for cid, ups in client.cards(sid).items() if ups[0].kind == "execute"}
    assert len(cards) == 1, cards
    return next(iter(cards.items()))


def _meta(updates: list[Any], key: str) -> list[dict[str, Any]]:
    return [u.field_meta[key] for u in updates if isinstance(u.field_meta, dict) and key in u.field_meta]


@pytest.mark.anyio
async def test_the_card_shows_the_command_s_terminal_live_and_its_exit(tmp_path: Path) -> None:
    (tmp_path / "steps.sh").write_text(f"echo one; sleep 0.2; echo two; echo token {SECRET}; exit 3\n")
    client, sid = await _run(tmp_path, "sh steps.sh", RENDERS)
    card_id, updates = _command_card(client, sid)
    (info,) = _meta(updates, "terminal_info")
    assert info == {"terminal_id": card_id, "cwd": str(tmp_path.resolve())}
    pieces = _meta(updates, "terminal_output")
    assert len(pieces) >= 2, "the output arrives as it is written, in pieces"
    assert all(p["terminal_id"] == card_id for p in pieces)
    shown = "".join(p["data"] for p in pieces)
    assert "one\ntwo\n" in shown and "token" in shown and SECRET not in shown
    assert _meta(updates, "terminal_exit") == [{"terminal_id": card_id, "exit_code": 3, "signal": None}]
    terminals = [
        c.terminal_id for u in updates for c in (u.content or []) if isinstance(c, TerminalToolCallContent)
    ]
    assert terminals and set(terminals) == {card_id}, "the card's content names its terminal"
    assert updates[-1].status == "failed"  # exit 3: the card's end is the tool's, after the exit
    exit_at = next(i for i, u in enumerate(updates) if "terminal_exit" in (u.field_meta or {}))
    assert exit_at < len(updates) - 1

    # our own front-end renders the terminal from exactly these updates
    out = io.StringIO()
    view = PlainView(out)
    for update in client.for_session(sid):
        view.apply(update)
    view.finish("end_turn")
    assert "│ one" in out.getvalue() and "│ two" in out.getvalue() and SECRET not in out.getvalue()


@pytest.mark.anyio
async def test_the_card_s_terminal_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "flood.sh").write_text(
        "i=0; while [ $i -lt 4000 ]; do echo line-$i-padding-padding-padding; i=$((i+1)); done\n"
    )
    client, sid = await _run(tmp_path, "sh flood.sh", RENDERS)
    _card_id, updates = _command_card(client, sid)
    shown = "".join(p["data"] for p in _meta(updates, "terminal_output"))
    assert len(shown.encode()) <= MAX_SHOWN_BYTES + 100 and "output cut" in shown
    assert _meta(updates, "terminal_exit")[0]["exit_code"] == 0


@pytest.mark.anyio
async def test_no_card_terminal_for_a_client_that_did_not_ask(tmp_path: Path) -> None:
    client, sid = await _run(tmp_path, "echo hi", ClientCapabilities())
    _card_id, updates = _command_card(client, sid)
    for key in ("terminal_info", "terminal_output", "terminal_exit"):
        assert not _meta(updates, key)
    assert not any(isinstance(c, TerminalToolCallContent) for u in updates for c in (u.content or []))
    assert isinstance(updates[0], ToolCallStart) and isinstance(updates[-1], ToolCallProgress)


def test_watch_shows_the_command_s_terminal_the_agent_puts_in_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: ``acp-progress watch`` tells the agent it renders card terminals, the agent
    (over the stdio of the process watch spawns: this project's agent served behind it, as
    ``serve`` serves it) runs the command and puts its output in the card, watch shows it."""
    from acp_adapter.cli import main
    from tests.helpers.acp_agent import agent_env

    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "steps.sh").write_text(f"echo first-line; echo second-line; echo {SECRET}\n")
    with piped_progress_agent(env) as agent:
        assert main(["watch", "--yes", "--agent", agent, "--cwd", str(tmp_path), "run sh steps.sh"]) == 0
    out = capsys.readouterr().out
    assert "│ first-line" in out and "│ second-line" in out, out
    assert SECRET not in out
