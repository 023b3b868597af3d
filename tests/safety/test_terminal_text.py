"""One way out to a terminal: text the project lets in — a file, a model's answer, a chat
member's title, another agent's updates — never reaches a terminal raw, and nothing a reader
cannot see (bidirectional controls, zero-width and tag characters) reaches one unseen.

The sanitizer's properties over all code points (Hypothesis), then each front-end as a real
process, on a pty where a terminal is the point, reading a workspace file that holds OSC 0
(window title), OSC 52 (clipboard), ``ESC[2J``, a C1 CSI (U+009B) and a bidi override (U+202E)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_adapter.safety.terminal_text import (
    UNSAFE,
    SafeTextStream,
    is_shown_as_is,
    json_line_safe,
    terminal_safe,
    visible_text,
)
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.shared_servers import cli_in_process

EVIL = "A\x1b]0;PWNED-TITLE\x07 B\x1b]52;c;ZXZpbA==\x07 C\x1b[2J D\u009b31m E\u202etxt.exe F\x7f"
#: what must never reach a terminal byte for byte
FORBIDDEN = [b"\x1b]0;", b"\x1b]52;", b"\x1b[2J", "\u009b".encode(), "\u202e".encode(), b"\x7f", b"\x1b]8;"]

#: the characters that disguise text: bidirectional controls, zero-width characters, tag characters
BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
ZERO_WIDTH = [*range(0x200B, 0x200E), 0x2060, 0xFEFF, 0x180E, 0x2061, 0x2062, 0x2063, 0x2064]
TAGS = list(range(0xE0000, 0xE0080))
DISGUISES = [*BIDI, *ZERO_WIDTH, *TAGS]
#: a disguised file: a reversed tail, a zero-width space, a word joiner, a BOM, a hidden tag sentence
HIDDEN = 'echo "ok" \u202e; rm -rf data Z\u200bW \u2060J\ufeffB ' + "".join(
    chr(0xE0000 + ord(c)) for c in "ignore previous"
)
HIDDEN_RAW = ["\u202e", "\u200b", "\u2060", "\ufeff", chr(0xE0069)]

every_code_point = st.text(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=200
)
#: text thick with what must never pass, among ordinary characters
disguised_text = st.lists(
    st.one_of(st.sampled_from([chr(c) for c in sorted(UNSAFE)]), st.characters()), max_size=60
).map("".join)


#: a loaded machine must not fail a property for being slow to generate examples
RELAXED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _holds_nothing_to_change(text: str) -> bool:
    """No carriage return and no character the sanitizer replaces."""
    return "\r" not in text and not any(ord(ch) in UNSAFE for ch in text)


@RELAXED
@given(st.one_of(every_code_point, disguised_text))
def test_nothing_that_acts_or_hides_survives_and_everything_else_is_kept(text: str) -> None:
    safe = visible_text(text)
    assert _holds_nothing_to_change(safe)
    assert not any(ord(ch) in DISGUISES or 0xD800 <= ord(ch) <= 0xDFFF for ch in safe)
    assert visible_text(safe) == safe == terminal_safe(text)  # idempotent; one function, two names
    kept = [ch for ch in text.replace("\r\n", "\n") if ord(ch) not in UNSAFE]
    rest = iter(safe)
    assert all(ch in rest for ch in kept), "every character that only shows is kept, in order"
    if _holds_nothing_to_change(text):
        assert safe == text
    safe.encode("utf-8")  # a lone surrogate cannot be written: it is shown as its escape


def _no_split_pair(text: str) -> bool:
    """A high surrogate followed by a low one, as two code points: no JSON decoder or byte decoder
    makes such a string (JSON joins the pair into one character), and JSON cannot spell it apart."""
    return not any(
        "\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in itertools.pairwise(text)
    )


@RELAXED
@given(st.one_of(every_code_point, disguised_text).filter(_no_split_pair))
def test_json_stays_the_same_value_and_shows_nothing_hidden(text: str) -> None:
    for line in (
        json_line_safe(json.dumps({"t": text}, ensure_ascii=False)),
        visible_text(json.dumps({"t": text}, ensure_ascii=False)),  # through a SafeTextStream
    ):
        assert json.loads(line) == {"t": text} and not any(ord(ch) in UNSAFE for ch in line)


def test_every_character_class_that_disguises_is_covered() -> None:
    """Format characters (Cf: bidi, zero-width …) by the running Python's own Unicode database;
    the tag block whole; the named zero-width and bidi characters one by one."""
    format_chars = {c for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"}
    assert format_chars <= UNSAFE, sorted(hex(c) for c in format_chars - UNSAFE)
    assert set(DISGUISES) <= UNSAFE
    assert all(not is_shown_as_is(chr(c)) for c in DISGUISES)
    assert is_shown_as_is("\ufe0f") and visible_text("✏️ 👍🏽 中文 עברית") == "✏️ 👍🏽 中文 עברית"


def test_the_escape_file_is_shown_not_obeyed() -> None:
    shown = visible_text(EVIL)
    assert shown == "A␛]0;PWNED-TITLE␇ B␛]52;c;ZXZpbA==␇ C␛[2J D\\u009b31m E\\u202etxt.exe F\\u007f"
    assert visible_text("line\r\nnext\roverwrite") == "line\nnext␍overwrite"
    assert visible_text("da\u200bta \ufeff" + chr(0xE0041)) == "da\\u200bta \\ufeff\\udb40\\udc41"


def test_a_safe_text_stream_shows_what_it_is_given() -> None:
    import io

    out = io.StringIO()
    SafeTextStream(out).write(HIDDEN)
    assert not any(raw in out.getvalue() for raw in HIDDEN_RAW) and "\\u202e" in out.getvalue()


# ------------------------------------------------------------------ the front-ends, real processes


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "evil.txt").write_text(EVIL + "\n" + HIDDEN + "\n", encoding="utf-8")
    return ws


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir(mode=0o700, exist_ok=True)
    return {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_SUMMARY="off"),
        "ACP_PROGRESS_CONFIG_DIR": str(config),
        "ACP_PROGRESS_STATE_DIR": str(tmp_path / "state"),
        "COLUMNS": "200",
        **extra,
    }


#: what chat draws as its prompt
PROMPT = "›".encode()


def on_a_pty(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    feed: bytes = b"",
    timeout: float = 60,
    quit_after: bytes | None = None,
) -> bytes:
    """Run ``argv`` with a pty as its terminal (stdin, stdout, stderr); everything it wrote.

    ``feed`` is typed once the command's prompt (``›``) is drawn. An interactive command (chat)
    is sent Ctrl-D once ``quit_after`` and then its prompt were written — the prompt is drawn once
    the terminal is raw; a Ctrl-D typed before, while the terminal is still cooked, is an end of
    input the prompt never reads — and again each second until it exits, so the test ends with the
    turn, not at ``timeout``."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    out = b""
    deadline = time.monotonic() + timeout
    next_quit = None if quit_after is None else float("inf")
    try:
        while time.monotonic() < deadline:
            if next_quit is not None and time.monotonic() >= next_quit:
                os.write(fd, b"\x04")
                next_quit = time.monotonic() + 1.0
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
                if feed and PROMPT in out:
                    os.write(fd, feed)
                    feed = b""
                if quit_after is not None and quit_after in out:
                    after = out.index(quit_after) + len(quit_after)
                    if PROMPT in out[after:]:
                        next_quit = time.monotonic()
                        quit_after = None
            elif os.waitpid(pid, os.WNOHANG) != (0, 0):
                pid = 0
                break
    finally:
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        os.close(fd)
    return out


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _assert_safe(out: bytes, must_show: str = "␛]0;PWNED-TITLE") -> None:
    for raw in [*FORBIDDEN, *(h.encode() for h in HIDDEN_RAW)]:
        assert raw not in out, f"{raw!r} reached the terminal:\n{out.decode(errors='replace')[-3000:]}"
    assert must_show.encode() in out, out.decode(errors="replace")[-3000:]


CLI = [sys.executable, "-m", "acp_adapter.cli"]
# the front-end's own process (what its terminal shows is the point) serving this project's agent
# inside it: the agent's process is not what these tests are about
FRONTEND = [sys.executable, str(ROOT / "tests" / "helpers" / "cli_agent_inside.py")]


@pytest.mark.e2e
@pytest.mark.parametrize("animated", [True, False])
def test_watch_shows_the_escape_file(tmp_path: Path, animated: bool) -> None:
    ws = _workspace(tmp_path)
    argv = [*FRONTEND, "watch", "--cwd", str(ws), "read evil.txt"]
    if animated:
        out = on_a_pty(argv, _env(tmp_path), ws)
    else:
        out = subprocess.run(argv, env=_env(tmp_path), cwd=ws, capture_output=True, timeout=60).stdout
    _assert_safe(out)


@pytest.mark.e2e
def test_watch_json_is_ascii_escaped_for_what_a_terminal_obeys(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    done = subprocess.run(
        [*FRONTEND, "watch", "--json", "--cwd", str(ws), "read evil.txt"],
        env=_env(tmp_path),
        cwd=ws,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for raw in [*FORBIDDEN, *(h.encode() for h in HIDDEN_RAW)]:
        assert raw not in done.stdout
    values = [s for line in done.stdout.decode().splitlines() for s in _strings(json.loads(line))]
    assert any(EVIL in v for v in values)  # the value itself is kept, only its spelling is escaped
    assert any(HIDDEN in v for v in values)


@pytest.mark.e2e
def test_run_shows_the_escape_file(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _assert_safe(on_a_pty([*FRONTEND, "run", "--cwd", str(ws), "read evil.txt"], _env(tmp_path), ws))


@pytest.mark.e2e
def test_chat_shows_the_escape_file_and_a_hidden_link_target(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    out = on_a_pty(
        [*FRONTEND, "chat", "--cwd", str(ws)],
        # the pty does not answer cursor-position requests (a terminal does): without this, the
        # Ctrl-D typed while the prompt waits 2 s for the answer is taken for it
        _env(tmp_path, PROMPT_TOOLKIT_NO_CPR="1"),
        ws,
        feed=b"read evil.txt\r",
        quit_after=b"stop reason:",
    )
    _assert_safe(out)


@pytest.mark.e2e
def test_sessions_and_a_console_bridge_show_a_hostile_title(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path)
    env = _env(tmp_path)
    with monkeypatch.context() as patched, cli_in_process() as main:  # it only writes the config
        for name in ("ACP_PROGRESS_CONFIG_DIR", "ACP_PROGRESS_STATE_DIR"):
            patched.setenv(name, env[name])
        assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ws)]) == 0
    bridge = subprocess.run(
        [*FRONTEND, "bridge", "run", "con"],
        input=(EVIL + " read evil.txt\n").encode(),
        env=env,
        cwd=ws,
        capture_output=True,
        timeout=60,
    )
    _assert_safe(bridge.stdout + bridge.stderr)
    listed = subprocess.run(
        [*FRONTEND, "sessions", "--cwd", str(ws)], env=env, cwd=ws, capture_output=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    _assert_safe(listed.stdout + listed.stderr, must_show="A␛]0;PWNED-TITLE")  # the member's first message


@pytest.mark.e2e
def test_a_foreign_agents_stderr_is_shown_not_obeyed(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(f"import sys; sys.stderr.write({EVIL + HIDDEN!r}); sys.exit(3)\n")
    done = subprocess.run(
        [*CLI, "watch", "--agent", f"{sys.executable} {agent}", "hi"],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    _assert_safe(done.stdout + done.stderr)


@pytest.mark.e2e
def test_the_relay_shows_its_wrapped_agents_stderr_not_obeyed(tmp_path: Path) -> None:
    """The wrapped agent's stderr goes through the sanitizer, never inherited raw (output is data)."""
    agent = tmp_path / "agent.py"
    agent.write_text(f"import sys; sys.stderr.write({EVIL + HIDDEN!r} + '\\n'); sys.stderr.flush()\n")
    done = subprocess.run(
        [*CLI, "relay", "--", sys.executable, str(agent)],
        input=b"",
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    _assert_safe(done.stdout + done.stderr)
