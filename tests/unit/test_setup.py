"""``acp-progress serve --setup``: the terminal sign-in, and the settings file it writes.

The conversation itself is driven in this process with scripted answers (every branch: the
embedded model, an endpoint checked and saved, a refused key, a model the server does not offer,
giving up); then once for real on a pseudo-terminal, as an editor's terminal sign-in runs it —
the key typed there is never echoed — and the agent started afterwards uses what was saved.
The endpoint is the fake OpenAI-compatible server on loopback.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_adapter._config_file import ConfigFileError
from acp_adapter.cli.setup import run_setup
from acp_adapter.config import Settings
from acp_adapter.config.sign_in_file import BackendChoice, clear_choice, save_choice
from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, prompt_text, spawn_agent
from tests.helpers.fake_openai import FakeOpenAI, text_reply
from tests.helpers.pty_child import PtyChild

KEY = "sk-setup-0123456789abcdefSECRET"


def scripted(*answers: str) -> tuple[list[tuple[str, bool]], object]:
    """An ``ask`` that gives ``answers`` in order and records each question (and whether hidden)."""
    asked: list[tuple[str, bool]] = []
    queue: Iterator[str] = iter(answers)

    def ask(question: str, hidden: bool) -> str:
        asked.append((question, hidden))
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return asked, ask


def _setup(tmp_path: Path, *answers: str) -> tuple[int, str, list[tuple[str, bool]], Path]:
    config = tmp_path / "config"
    config.mkdir(mode=0o700, exist_ok=True)
    path = config / "config.toml"
    asked, ask = scripted(*answers)
    out = io.StringIO()
    code = run_setup(Settings(), ask=ask, out=out, settings_file=path)  # type: ignore[arg-type]
    return code, out.getvalue(), asked, path


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_choosing_the_embedded_model_saves_it(tmp_path: Path) -> None:
    code, out, _asked, path = _setup(tmp_path, "1")
    assert code == 0, out
    assert tomllib.loads(path.read_text()) == {"model": "embedded"}
    assert _mode(path) == 0o600
    assert "Saved: the agent uses the embedded model" in out


def test_an_endpoint_is_checked_then_saved_and_the_key_is_never_shown(tmp_path: Path) -> None:
    with FakeOpenAI(api_key=KEY) as server:
        code, out, asked, path = _setup(tmp_path, "2", server.base_url, KEY, "test-model")
        assert [r.path for r in server.requests] == ["/v1/models"]
    assert code == 0, out
    assert [hidden for _question, hidden in asked] == [False, False, True, False]  # only the key hidden
    assert asked[2][0].startswith("API key")
    assert tomllib.loads(path.read_text()) == {
        "model": "openai",
        "openai": {"base_url": server.base_url, "model": "test-model", "api_key": KEY},
    }
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert KEY not in out
    assert "accepted the key and offers test-model" in out
    # what was saved is what the agent reads at its next start
    loaded = Settings.load(environ={"ACP_PROGRESS_CONFIG_DIR": str(path.parent)})
    assert loaded.model == "openai" and loaded.openai.api_key == KEY


def test_a_refused_key_offers_another_try_and_nothing_is_saved_on_giving_up(tmp_path: Path) -> None:
    with FakeOpenAI(api_key=KEY) as server:
        code, out, _asked, path = _setup(
            tmp_path, "2", server.base_url, "sk-wrong-key-999999", "test-model", "n"
        )
    assert code == 1
    assert "✗ Authentication failed (HTTP 401)" in out and "Nothing saved." in out
    assert "sk-wrong-key-999999" not in out
    assert not path.exists()


def test_a_model_the_server_does_not_offer_is_named_with_the_ones_it_does(tmp_path: Path) -> None:
    with FakeOpenAI(models=["llama3.2", "qwen2.5"]) as server:
        code, out, _asked, path = _setup(
            tmp_path, "2", server.base_url, "", "gpt-4o", "y", "", "", "qwen2.5"
        )  # second try: Enter keeps the URL just typed
    assert code == 0, out
    assert "does not offer the model gpt-4o (it offers: llama3.2, qwen2.5)" in out
    saved = tomllib.loads(path.read_text())
    assert saved["openai"] == {"base_url": server.base_url, "model": "qwen2.5"}  # no key: none typed


def test_hostile_answers_from_the_server_reach_the_terminal_shown_not_obeyed(tmp_path: Path) -> None:
    with FakeOpenAI(models=["\x1b]52;c;cHduZWQ=\x07evil", "\u202eexe.txt"]) as server:
        code, out, _asked, _path = _setup(tmp_path, "2", server.base_url, "", "gpt-4o", "n")
    assert code == 1
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "␛]52;c;cHduZWQ=␇evil" in out


def test_a_bad_url_and_a_bad_choice_are_asked_again(tmp_path: Path) -> None:
    code, out, asked, _path = _setup(tmp_path, "3", "1")
    assert code == 0 and "Type 1 or 2." in out and len(asked) == 2
    code, out, _asked, _path = _setup(tmp_path, "2", "ftp://x", "n")
    assert "starts with http:// or https://" in out


def test_other_settings_and_comments_survive_and_embedded_drops_a_saved_key(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    path = config / "config.toml"
    path.write_text("# my settings\nheartbeat_interval = 10\n\n[openai]\ntimeout = 30.0 # slow server\n")
    path.chmod(0o600)
    save_choice(path, BackendChoice("openai", "http://127.0.0.1:9/v1", "m", KEY))
    save_choice(path, BackendChoice("embedded"))
    text = path.read_text()
    assert KEY not in text
    assert "# my settings" in text and "# slow server" in text
    assert tomllib.loads(text) == {
        "heartbeat_interval": 10,
        "model": "embedded",
        "openai": {"timeout": 30.0, "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    }
    assert clear_choice(path) is True
    assert tomllib.loads(path.read_text()) == {"heartbeat_interval": 10, "openai": {"timeout": 30.0}}
    assert clear_choice(path) is False


def test_a_settings_file_another_user_may_write_is_never_written(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    path = config / "config.toml"
    path.write_text("heartbeat_interval = 10\n")
    path.chmod(0o666)
    with pytest.raises(ConfigFileError, match="may be written by other users"):
        save_choice(path, BackendChoice("openai", "http://127.0.0.1:9/v1", "m", KEY))
    assert KEY not in path.read_text()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ConfigFileError, match="directory"):
        save_choice(shared / "config.toml", BackendChoice("openai", "http://127.0.0.1:9/v1", "m", KEY))
    assert not (shared / "config.toml").exists()


@pytest.mark.e2e
def test_setup_without_a_terminal_says_so(tmp_path: Path) -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-m", "acp_adapter", "--setup"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "run it in a terminal" in done.stderr
    assert not (tmp_path / "config").exists()


def _setup_terminal(tmp_path: Path, module: str) -> PtyChild:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "config"),
        "TERM": "xterm-256color",
        "COLUMNS": "100",
        "LINES": "24",
        # this terminal does not answer cursor-position requests (a terminal does): without it,
        # prompt_toolkit waits a second for each answer before it shows a question
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    return PtyChild([sys.executable, "-m", module, "--setup"], str(tmp_path), env)


def _until(term: PtyChild, text: bytes, seconds: float = 30) -> bytes:
    start = len(term.output)
    term.read_while(seconds, lambda: text in term.output[start:])
    return term.output[start:]


@pytest.mark.e2e
@pytest.mark.anyio
async def test_serve_setup_on_a_terminal_then_the_agent_uses_the_saved_endpoint(tmp_path: Path) -> None:
    with FakeOpenAI(api_key=KEY, fallback=text_reply("answered by the endpoint")) as server:
        term = _setup_terminal(tmp_path, "acp_adapter")  # python -m acp_adapter --setup = serve --setup
        try:
            assert b"Back-end [1]" in _until(term, b"Back-end [1]")
            term.type(b"2\r")
            _until(term, b"Base URL")
            term.type(server.base_url.encode() + b"\r")
            _until(term, b"API key")
            term.type(KEY.encode() + b"\r")
            _until(term, b"Model")
            term.type(b"test-model\r")
            assert b"Saved:" in _until(term, b"Saved:")
            assert term.wait(20) == 0
        finally:
            term.close()
        assert KEY.encode() not in term.output, "the key was echoed"
        assert b"*" * 8 in term.output  # typed into a password field
        path = tmp_path / "config" / "config.toml"
        assert _mode(path) == 0o600
        client = RecordingClient()
        env = agent_env(ACP_PROGRESS_CONFIG_DIR=str(tmp_path / "config"), ACP_PROGRESS_STATE="off")
        async with spawn_agent(client, env=env) as (conn, _process, log):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert session.config_options[1].current_value == "openai:test-model"
            assert (await prompt_text(conn, session.session_id, "hi")).stop_reason == "end_turn"
        assert server.chat_bodies
        assert KEY not in log.read_text(), "the key reached the agent's log"


@pytest.mark.e2e
def test_ctrl_c_in_setup_saves_nothing(tmp_path: Path) -> None:
    term = _setup_terminal(tmp_path, "acp_adapter.cli")  # acp-progress --setup: the top-level form
    try:
        _until(term, b"Back-end [1]")
        term.type(b"2\r")
        _until(term, b"Base URL")
        term.type(b"\x03")
        assert b"nothing saved" in _until(term, b"nothing saved")
        assert term.wait(20) == 130
    finally:
        term.close()
    assert not (tmp_path / "config" / "config.toml").exists()
