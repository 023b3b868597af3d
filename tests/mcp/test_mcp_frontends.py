"""Front-ends hand MCP servers to the agent they drive: ``--mcp-config FILE``
(the common ``{"mcpServers": …}`` form) and the settings file's ``[mcp_servers.NAME]`` tables,
sent in ``session/new`` by ``watch``, ``chat``, ``run``, ``bridge run`` and ``agui`` — through
the relay too. What is tested is which servers a front-end passes, which its own process proves
nothing about, so the command lines run in this process (:func:`_cli_here`); the MCP servers are
real processes: the kit over stdio that ``watch``'s agent starts (its marker file proves the
server ran), and for the other front-ends one HTTP kit server shared by the module (a tool call
answered by it proves the front-end passed it: the agent has no other way to know it). ``watch``,
``chat`` and the console bridge drive their agent in this process; through the relay, ``watch``
spawns the relay and the relay its agent. Real front-end processes remain where the process is the
point: a bad file's exit status, and the ``agui`` endpoint a browser would talk to (its agent
inside it)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from acp_adapter.cli._config_report import describe_server
from acp_adapter.config import Settings
from acp_adapter.mcp import McpConfigError, frontend_servers, servers_from_settings_file
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.acp_progress_command import acp_progress
from tests.helpers.cli_agent_inside import agent_inside
from tests.helpers.mcp_kit import http_kit
from tests.helpers.settings_file import write_settings
from tests.helpers.shared_servers import cli_in_process, use_in_process_agents

SECRET = "kit-env-secret-9Hq2Lm4Np6Rt8Vx0"


def kit_entry(marker: Path) -> dict[str, Any]:
    """A common-form entry starting tests/mcp_servers/kit.py over stdio, marked trusted (its
    ``peek`` runs unasked, as its ``readOnlyHint`` says)."""
    return {
        "trusted": True,
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.kit", "stdio"],
        "env": {"PYTHONPATH": str(ROOT), "MCP_KIT_MARKER": str(marker), "KIT_SECRET": SECRET},
    }


def servers_file(tmp_path: Path, marker: Path) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"kit": kit_entry(marker)}}))
    return path


@pytest.fixture(scope="module")
def web_kit() -> Any:
    """The common-form entry of one HTTP kit server shared by the module's front-end tests."""
    with http_kit() as port:
        yield {
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {"Authorization": f"Bearer {SECRET}"},
            "trusted": True,
        }


def web_servers_file(tmp_path: Path, entry: dict[str, Any]) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"kit": entry}}))
    return path


@pytest.fixture
def in_process_cli() -> Any:
    """``acp_adapter.cli.main`` in this process (streams and logging put back after)."""
    with cli_in_process() as main:
        yield main


def env_for(config_dir: Path, **extra: str) -> dict[str, str]:
    config_dir.mkdir(mode=0o700, exist_ok=True)
    return {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_SUMMARY="off"),
        "ACP_PROGRESS_CONFIG_DIR": str(config_dir),
        **extra,
    }


def cli(*args: str, env: dict[str, str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*acp_progress(), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def json_updates(stdout: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout.splitlines():
        item = json.loads(line)
        if "update" in item:
            out.append(item["update"])
    return out


# ------------------------------------------------------------------ parsing and the settings file


SETTINGS_WITH_SERVERS = f"""
heartbeat_interval = 10

[mcp_servers.kit]
command = "python3"
args = ["-m", "tests.mcp_servers.kit", "stdio"]
env = {{ KIT_SECRET = "{SECRET}" }}

[mcp_servers.web]
url = "https://mcp.example.test/mcp"
headers = {{ Authorization = "Bearer {SECRET}" }}
"""


def test_settings_file_servers_parse_and_leave_the_settings_alone(tmp_path: Path) -> None:
    write_settings(tmp_path / "c", SETTINGS_WITH_SERVERS)
    environ = {"ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "c")}
    kit, web = servers_from_settings_file(environ)
    assert kit.name == "kit" and kit.args[-1] == "stdio" and kit.env[0].value == SECRET
    assert web.name == "web" and web.url == "https://mcp.example.test/mcp"
    # the table is not a setting, and not an unknown one either
    assert Settings.load(environ, flags={}).heartbeat_interval == 10
    shown = json.dumps([describe_server(kit), describe_server(web)])
    assert SECRET not in shown and shown.count("[hidden]") == 2


def test_a_file_named_on_the_command_line_wins_over_the_settings_file(tmp_path: Path) -> None:
    write_settings(tmp_path / "c", SETTINGS_WITH_SERVERS)
    environ = {"ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "c")}
    marker = tmp_path / "started"
    specs = frontend_servers(str(servers_file(tmp_path, marker)), environ)
    assert [s.name for s in specs] == ["kit", "web"]
    assert specs[0].command == sys.executable  # the --mcp-config entry, not the settings file's
    assert frontend_servers(None, {"ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "none")}) == []


def test_every_mistake_of_the_table_is_named_with_the_file(tmp_path: Path) -> None:
    path = write_settings(
        tmp_path / "c",
        '[mcp_servers.a]\nargs = ["x"]\n[mcp_servers.b]\nurl = "ftp://x"\n'
        f'[mcp_servers.c]\ncommand = "x"\nenv = {{ K = 1 }}\n[mcp_servers.d]\ncommand = "{SECRET}\\u001b"\n',
    )
    with pytest.raises(McpConfigError) as info:
        servers_from_settings_file({"ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "c")})
    text = str(info.value)
    assert str(path) in text and "[mcp_servers] a: needs" in text and "b.url" in text
    assert "c.env.K" in text and "d.command: contains control characters" in text
    assert SECRET not in text
    write_settings(tmp_path / "c", 'mcp_servers = "x"\n')
    with pytest.raises(McpConfigError, match="must be a table"):
        servers_from_settings_file({"ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "c")})


def test_config_shows_the_servers_with_secrets_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], in_process_cli: Any
) -> None:
    write_settings(tmp_path / "c", SETTINGS_WITH_SERVERS)
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "c"))
    assert in_process_cli(["config"]) == 0
    shown = capsys.readouterr()
    assert "MCP server kit: stdio python3 -m tests.mcp_servers.kit stdio  KIT_SECRET=[hidden]" in shown.out
    assert "MCP server web: http https://mcp.example.test/mcp  Authorization=[hidden]" in shown.out
    assert in_process_cli(["config", "--json"]) == 0
    as_json = capsys.readouterr()
    servers = json.loads(as_json.out)["mcpServers"]
    assert [s["name"] for s in servers] == ["kit", "web"] and servers[0]["env"] == {"KIT_SECRET": "[hidden]"}
    assert SECRET not in shown.out + shown.err + as_json.out + as_json.err


@pytest.mark.e2e
def test_a_bad_mcp_config_stops_a_front_end_process_with_exit_2(tmp_path: Path) -> None:
    """One real process: the exit status and stderr of the command line; the other front-ends
    take the same path in this process (below)."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x y": {"command": "x"}}}')
    done = cli("watch", "hi", "--mcp-config", str(bad), env=env_for(tmp_path / "c"), cwd=tmp_path, timeout=30)
    assert done.returncode == 2, done.stderr
    assert "MCP servers:" in done.stderr and "'x y'" in done.stderr


@pytest.mark.parametrize(
    "command",
    [["watch", "hi"], ["chat"], ["run", "hi"], ["agui", "--port", "9"], ["bridge", "run", "nobody"]],
)
def test_a_bad_mcp_config_stops_every_front_end_before_it_starts(
    tmp_path: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    in_process_cli: Any,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x y": {"command": "x"}}}')
    (tmp_path / "c").mkdir(mode=0o700)
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    if command[0] == "bridge":
        assert in_process_cli(["bridge", "create", "nobody", "--platform", "console"]) == 0
    capsys.readouterr()
    assert in_process_cli([*command, "--mcp-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "MCP servers:" in err and "'x y'" in err


# ------------------------------------------------------------------ each front-end, real processes


@pytest.mark.e2e
def test_watch_passes_mcp_config_servers_and_shows_their_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], in_process_cli: Any
) -> None:
    marker = tmp_path / "started"
    servers = servers_file(tmp_path, marker)
    ask = 'call slow_count {"steps": 3, "delay": 0.05}'
    args = ["watch", "--json", "--yes", "--mcp-config", str(servers), ask]
    # the agent watch drives, in this process too: the servers reach it only through session/new
    # (the kit it starts is still a process: its marker file proves the server ran)
    with agent_inside():
        status, out, err = _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, args)
    assert status == 0, err
    assert marker.exists()  # the agent started the server the front-end named
    updates = json_updates(out)
    start = next(
        u for u in updates if u.get("sessionUpdate") == "tool_call" and "slow_count" in json.dumps(u)
    )
    card = [u for u in updates if u.get("toolCallId") == start["toolCallId"]]
    progress = [
        u["_meta"]["acpProgress"]["progress"]
        for u in card
        if "progress" in u.get("_meta", {}).get("acpProgress", {})
    ]
    assert {k: progress[-1][k] for k in ("value", "total")} == {"value": 3, "total": 3}
    assert progress[-1]["message"] == "step 3 of 3"
    assert card[-1]["status"] == "completed" and "counted 3 sheep" in json.dumps(card[-1])
    assert SECRET not in out + err


@pytest.mark.e2e
def test_servers_reach_the_agent_behind_the_relay(
    tmp_path: Path,
    web_kit: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    in_process_cli: Any,
) -> None:
    servers = web_servers_file(tmp_path, web_kit)
    agent = f"{sys.executable} -m acp_adapter.cli relay -- {sys.executable} -m acp_adapter"
    ask = 'call peek {"text": "through the relay"}'
    args = ["watch", "--json", "--agent", agent, "--mcp-config", str(servers), ask]
    status, out, err = _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, args)
    assert status == 0, err
    assert "peek: through the relay" in out and SECRET not in out + err


def _cli_here(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    main: Any,
    args: list[str],
    stdin: str | None = None,
) -> tuple[int, str, str]:
    """``acp-progress ARGS`` as a user runs it in ``tmp_path`` with the settings file in
    ``tmp_path/c`` (and ``stdin`` as its input), in this process: what is tested is which servers
    the front-end passes, which its own process proves nothing about. An agent it spawns is still
    a process, its stderr captured with the front-end's. Its exit status, stdout and stderr."""
    for name, value in env_for(tmp_path / "c").items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    given = tmp_path / "stdin"
    given.write_text(stdin or "")
    sigint = signal.getsignal(signal.SIGINT)
    capfd.readouterr()
    with given.open() as handle, monkeypatch.context() as scoped:
        if stdin is not None:
            scoped.setattr(sys, "stdin", handle)
        try:
            status = main(args)
        finally:
            signal.signal(signal.SIGINT, sigint)  # as the command line set it up for its own process
    shown = capfd.readouterr()
    return status, shown.out, shown.err


@pytest.mark.e2e
def test_run_takes_the_settings_file_servers(
    tmp_path: Path,
    web_kit: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    in_process_cli: Any,
) -> None:
    write_settings(
        tmp_path / "c",
        f"[mcp_servers.kit]\nurl = {json.dumps(web_kit['url'])}\ntrusted = true\n"
        f"headers = {{ Authorization = {json.dumps(web_kit['headers']['Authorization'])} }}\n",
    )
    ask = 'call peek {"text": "from the settings file"}'
    status, out, err = _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, ["run", ask])
    assert status == 0, err
    assert "peek: from the settings file" in out and SECRET not in out + err


@pytest.mark.e2e
def test_an_untrusted_settings_file_servers_lying_tool_is_asked_about(
    tmp_path: Path,
    web_kit: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    in_process_cli: Any,
) -> None:
    """Without ``trusted = true`` the server's ``readOnlyHint`` is not believed: ``run`` on a pipe
    has nobody to ask, so the tool that claims to only read (and writes a file) never runs."""
    target = tmp_path / "pwned"
    write_settings(
        tmp_path / "c",
        f"[mcp_servers.kit]\nurl = {json.dumps(web_kit['url'])}\n"
        f"headers = {{ Authorization = {json.dumps(web_kit['headers']['Authorization'])} }}\n",
    )
    ask = f'call sneaky {{"path": "{target}"}}'
    _status, out, err = _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, ["run", ask])
    assert not target.exists(), "the untrusted server's tool ran unasked"
    assert "denied" in (out + err).lower()


@pytest.mark.e2e
def test_console_bridge_passes_the_servers(
    tmp_path: Path,
    web_kit: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    in_process_cli: Any,
) -> None:
    servers = web_servers_file(tmp_path, web_kit)
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    use_in_process_agents(monkeypatch)  # the servers reach the agent only through session/new
    create = ["bridge", "create", "con", "--platform", "console", "--cwd", str(tmp_path)]
    assert _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, create)[0] == 0
    stdin = 'call peek {"text": "from a chat"}\n'
    run = ["bridge", "run", "con", "--mcp-config", str(servers)]
    status, out, err = _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, run, stdin)
    assert status == 0, err
    assert "peek: from a chat" in out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: ``acp-progress ARGS`` as a process of its own whose AG-UI endpoint drives this project's agent
#: inside that process: the endpoint a browser talks to is real, the agent behind it proves nothing
#: about which servers the endpoint passes (they reach it only through session/new)
#: (the patch lasts as long as the process: plain ``setattr`` does what a monkeypatch would)
AGUI_AGENT_INSIDE = (
    "import sys, types; from tests.helpers.agui_inprocess import use_in_process_agui_agents; "
    "from acp_adapter.cli import main; use_in_process_agui_agents(types.SimpleNamespace(setattr=setattr)); "
    "sys.argv[0] = 'acp-progress'; sys.exit(main())"
)


@pytest.mark.e2e
def test_agui_endpoint_passes_the_servers(tmp_path: Path, web_kit: dict[str, Any]) -> None:
    servers = web_servers_file(tmp_path, web_kit)
    port = _free_port()
    env = env_for(tmp_path / "c", ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            AGUI_AGENT_INSIDE,
            "agui",
            "--no-token",
            "--port",
            str(port),
            "--cwd",
            str(tmp_path),
            "--mcp-config",
            str(servers),
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "the endpoint did not come up"
            time.sleep(0.1)
        body = {
            "threadId": "t1",
            "runId": "r1",
            "state": {},
            "messages": [{"id": "m1", "role": "user", "content": 'call peek {"text": "from a web page"}'}],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
        response = httpx.post(url, json=body, timeout=60, headers={"Accept": "text/event-stream"})
        events = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
        kinds = [e["type"] for e in events]
        assert kinds[-1] == "RUN_FINISHED", kinds
        results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
        assert results and "peek: from a web page" in results[-1]["content"]
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.e2e
def test_chat_passes_the_servers(
    tmp_path: Path,
    web_kit: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    in_process_cli: Any,
) -> None:
    servers = web_servers_file(tmp_path, web_kit)
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    # the agent chat drives, in this process too: the servers reach it only through session/new
    args = ["chat", "--mcp-config", str(servers), "--cwd", str(tmp_path)]
    stdin = 'call peek {"text": "from chat"}\n'
    with agent_inside():
        status, out, err = _cli_here(tmp_path, monkeypatch, capfd, in_process_cli, args, stdin)
    assert status == 0, err
    assert "peek: from chat" in out


def test_config_shows_an_sse_server_as_sse_with_its_headers_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], in_process_cli: Any
) -> None:
    write_settings(
        tmp_path / "c",
        f'[mcp_servers.old]\ntype = "sse"\nurl = "https://old.example.test/sse"\n'
        f'headers = {{ Authorization = "Bearer {SECRET}" }}\n',
    )
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "c"))
    assert in_process_cli(["config"]) == 0
    shown = capsys.readouterr()
    assert "MCP server old: sse https://old.example.test/sse  Authorization=[hidden]" in shown.out
    assert SECRET not in shown.out + shown.err
