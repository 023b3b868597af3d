"""A tool's question on ``watch``'s terminal (a pty): the MCP server asks (``elicitation/create``),
the agent passes it on, ``watch`` asks the person field by field — what the server sent is shown
sanitized — and the typed answer goes back to the server; a wrong answer is asked again. Without a
terminal the question is declined and says so. The form's fields become prompts (pure helpers)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from acp.schema import ElicitationFormSessionMode, ElicitationSchema

from acp_adapter.client.questions import BadAnswer, QuestionRequest, field_value, form_fields
from tests.helpers.acp_agent import ROOT
from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.pty_child import PtyChild

ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "ACP_PROGRESS_EMBEDDED_DELAY": "0.05",
    "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
    "ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.1",
    "TERM": "xterm-256color",
    "COLUMNS": "100",
    "LINES": "30",
}


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.tasks"],
        "env": {"PYTHONPATH": str(ROOT)},
    }
    config.write_text(json.dumps({"mcpServers": {"jobs": server}}))
    return config


ASK = 'call asks {"question": "Favourite colour?\\u001b[2J"}'


@pytest.mark.e2e
def test_watch_asks_the_tool_s_question_on_the_terminal_and_the_answer_reaches_the_server(
    tmp_path: Path,
) -> None:
    argv = [
        sys.executable,
        "-m",
        CLI_AGENT_INSIDE,  # the command line on its terminal, its agent inside it: the screen is the point
        "watch",
        "--yes",
        "--mcp-config",
        str(_config(tmp_path)),
        ASK,
    ]
    term = PtyChild(argv, str(tmp_path), ENV)
    try:
        term.read_while(60, lambda: b"Colour: " in term.output)
        shown = term.output.decode(errors="replace")
        assert "[jobs] Favourite colour?" in shown, shown[-800:]
        assert "\x1b[2J" not in shown, "the server's escape sequence never reaches the terminal"
        term.type(b"teal\r")
        assert term.wait(60) == 0, term.output[-800:]
        text = term.output.decode(errors="replace")
        assert "the person said teal" in text
    finally:
        term.close()


@pytest.mark.e2e
def test_without_a_terminal_watch_declines_and_says_so(tmp_path: Path) -> None:
    # the command line in this process, its agent inside (what it prints is the point); the MCP
    # server is spawned as the agent starts it
    done = run_cli_inside(
        ["watch", "--yes", "--mcp-config", str(_config(tmp_path)), ASK], cwd=tmp_path, env=ENV
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert "❓ declined (no terminal to ask): [jobs] Favourite colour?" in done.stdout
    assert "the person chose decline" in done.stdout


def _request(schema: dict[str, object]) -> QuestionRequest:
    mode = ElicitationFormSessionMode(
        session_id="s", requested_schema=ElicitationSchema.model_validate(schema)
    )
    return QuestionRequest("q", mode)


def test_a_form_s_fields_become_prompts_and_typed_answers_are_checked() -> None:
    fields = form_fields(
        _request(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name"},
                    "age": {"type": "integer"},
                    "ok": {"type": "boolean"},
                    "size": {"type": "string", "enum": ["s", "m", "l"]},
                },
                "required": ["name"],
            }
        )
    )
    by_name = {f.name: f for f in fields}
    assert [f.name for f in fields] == ["name", "age", "ok", "size"]
    assert by_name["name"].required and by_name["name"].title == "Name"
    assert field_value(by_name["age"], " 42 ") == 42
    assert field_value(by_name["ok"], "yes") is True
    assert field_value(by_name["size"], "m") == "m"
    assert field_value(by_name["age"], "") is None
    for field, typed in (
        (by_name["name"], ""),
        (by_name["age"], "forty"),
        (by_name["size"], "xl"),
        (by_name["ok"], "maybe"),
    ):
        with pytest.raises(BadAnswer):
            field_value(field, typed)
