"""``acp-progress serve --setup``: the terminal sign-in a client runs (and a person can run by hand).

The person picks the embedded model or an OpenAI-compatible endpoint; for an endpoint they type
its base URL, its key (hidden: prompt_toolkit's password input shows ``*`` for each character,
and the key is never printed or logged) and the model. The choice is checked against the endpoint
(:func:`~acp_adapter.models.openai_check.check_endpoint`) and only then written to the settings
file, mode 0600 (:mod:`acp_adapter.config.sign_in_file`). Exit status 0 means a choice was saved
(a client that ran this as the ``terminal`` auth method then starts the agent again), 1 that
nothing was, 130 Ctrl-C.

Everything shown that did not come from this module (a server's error message, the names of its
models, the settings file's path) goes through the one terminal-text sanitizer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from acp_adapter.safety.terminal_text import terminal_safe

if TYPE_CHECKING:
    from acp_adapter.config import Settings

__all__ = ["Ask", "run_setup", "terminal_ask"]

#: ``ask(question, hidden)`` → the answer typed (raises EOFError/KeyboardInterrupt when the person leaves)
Ask = Callable[[str, bool], str]

#: tries at an endpoint that does not answer as hoped, before setup gives up
MAX_TRIES = 3
#: the longest one endpoint check may take
CHECK_TIMEOUT = 15.0

EMBEDDED_ANSWERS = frozenset({"", "1", "embedded"})
OPENAI_ANSWERS = frozenset({"2", "openai"})


def terminal_ask(question: str, hidden: bool) -> str:
    """One line read on the terminal with prompt_toolkit (``hidden``: a password field)."""
    from prompt_toolkit import prompt

    return prompt(question, is_password=hidden)


def run_setup(
    settings: Settings,
    *,
    ask: Ask | None = None,
    out: TextIO | None = None,
    settings_file: Path | None = None,
) -> int:
    """The set-up conversation; the exit status (see the module doc)."""
    from acp_adapter._config_file import config_file_path

    stream = out if out is not None else sys.stdout
    path = settings_file if settings_file is not None else config_file_path()
    if ask is None:
        if not sys.stdin.isatty():
            print("acp-progress serve --setup asks questions: run it in a terminal", file=sys.stderr)
            return 2
        ask = terminal_ask
    if path is None:
        print("acp-progress: no settings file here (HOME is not set); nothing to set up", file=sys.stderr)
        return 2

    def say(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    try:
        return _converse(settings, ask, say, path)
    except KeyboardInterrupt:
        say("\nSet-up cancelled; nothing saved.")
        return 130
    except EOFError:
        say("\nSet-up ended; nothing saved.")
        return 1


def _converse(settings: Settings, ask: Ask, say: Callable[[str], None], path: Path) -> int:
    say("acp-progress set-up: choose the model the agent uses.")
    say(f"The choice is saved in {terminal_safe(str(path))} (readable by you only).")
    say("  1  the embedded model: offline, no key (the default)")
    say("  2  an OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, LM Studio …")
    while True:
        answer = ask("Back-end [1]: ", False).strip().lower()
        if answer in EMBEDDED_ANSWERS:
            return _save(path, "embedded", say)
        if answer in OPENAI_ANSWERS:
            break
        say("Type 1 or 2.")
    return _endpoint(settings, ask, say, path)


def _endpoint(settings: Settings, ask: Ask, say: Callable[[str], None], path: Path) -> int:
    from acp_adapter.models.openai_check import check_endpoint
    from acp_adapter.models.openai_errors import display_url

    base_default, model_default = settings.openai.base_url, settings.openai.model
    for _ in range(MAX_TRIES):
        base_url = ask(f"Base URL [{terminal_safe(base_default)}]: ", False).strip() or base_default
        if not base_url.startswith(("http://", "https://")):
            say("The base URL starts with http:// or https:// (for example http://localhost:11434/v1).")
            continue
        key = ask("API key (hidden; Enter for none): ", True).strip()
        model = ask(f"Model [{terminal_safe(model_default)}]: ", False).strip() or model_default
        say(f"Checking {terminal_safe(display_url(base_url))} …")
        check = check_endpoint(base_url, key, model, timeout=min(settings.openai.timeout, CHECK_TIMEOUT))
        if check.ok:
            say(f"✓ {terminal_safe(check.message)}")
            return _save(path, "openai", say, base_url=base_url, model=model, api_key=key)
        say(f"✗ {terminal_safe(check.message)}")
        base_default, model_default = base_url, model
        if ask("Try again? [Y/n]: ", False).strip().lower() in ("n", "no"):
            break
    say("Nothing saved.")
    return 1


def _save(path: Path, backend: str, say: Callable[[str], None], **endpoint: str) -> int:
    from acp_adapter._config_file import ConfigFileError
    from acp_adapter.config.sign_in_file import BackendChoice, save_choice

    choice = BackendChoice("openai", **endpoint) if backend == "openai" else BackendChoice("embedded")
    try:
        save_choice(path, choice)
    except (ConfigFileError, OSError) as exc:
        say(f"✗ cannot save the choice: {terminal_safe(str(exc))}")
        return 1
    what = "the embedded model" if backend == "embedded" else f"{endpoint['model']} at the endpoint"
    say(f"Saved: the agent uses {terminal_safe(what)} from its next start.")
    return 0
