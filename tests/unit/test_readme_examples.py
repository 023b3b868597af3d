"""The example output in README.md and the documentation pages is what the commands print
(scripts/readme_examples.py).

The first test runs every documented command for real and fails on drift: a change that alters
what a command prints must regenerate the pages (``python scripts/readme_examples.py --update``).
Each command line is its own process (its pipe or terminal is what is shown); the agent it talks to
runs inside it (``--agent-inside``): what the command prints is compared, not the agent's process.
Each of those processes is forked from one that imported the command line once (``--forked``,
tests/helpers/cli_zygote.py): its own pipes or terminal, environment, directory and exit status,
without ten interpreters importing the same modules.
The others hold the comparison to its promises without running anything.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.helpers.acp_agent import ROOT

SCRIPT = ROOT / "scripts" / "readme_examples.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_every_readme_example_is_what_its_command_prints() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--agent-inside", "--forked"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_changed_line_is_drift_and_the_message_names_the_command() -> None:
    script = _script()
    example = script.EXAMPLES["watch-pipe"]
    printed = ["▶ 💭 Thinking... — 0.0s", "✅ 💭 Thinking... — Thought for 2.0s", "I found 3 matches"]
    documented = [*printed[:2], "I found 4 matches"]
    diff = script.drift(example, documented, printed)
    assert "-I found 4 matches" in diff and "+I found 3 matches" in diff
    assert script.drift(example, documented[:2], printed), "a missing line is drift"
    assert script.drift(example, [*printed, "— stop reason: end_turn"], printed), "an extra line is drift"
    assert script.UPDATE_COMMAND == "python scripts/readme_examples.py --update"


def test_durations_spinner_frames_and_volatile_lines_are_not_drift() -> None:
    script = _script()
    example = script.EXAMPLES["watch-terminal"]
    printed = [
        "✅ 💭 Thinking... — Thought for 2.0s",
        "⠇ 🧰 Working on long task — ██████████░░░░░░░░░░  50% long task: step 3 of 6 · 1.5s",
        "  ↳ Thinking about the request to search for TODO and then wait 3 seconds.",
    ]
    documented = [
        "✅ 💭 Thinking... — Thought for 2.3s",
        "⠋ 🧰 Working on long task — ██████████░░░░░░░░░░  50% long task: step 3 of 6 · 1m 2s",
        "  ↳ Still thinking about the request.",
    ]
    assert script.drift(example, documented, printed) == []
    assert script.drift(example, documented[:2], printed) == [], "a summary line may be missing"
    # the step and the percentage are not durations: they must match
    changed = [documented[0], documented[1].replace("step 3", "step 4"), documented[2]]
    assert script.drift(example, changed, printed)


@pytest.mark.e2e
def test_the_shown_command_is_what_runs() -> None:
    script = _script()
    chat = script.parse_command("printf 'hello\\nwhat is 2+2\\n' | acp-progress chat --summary off")
    assert chat.args == ["chat", "--summary", "off"]
    assert chat.stdin == b"hello\nwhat is 2+2\n"
    config = script.parse_command("OPENAI_API_KEY=sk-… acp-progress config --summary-interval 3")
    assert config.env == {"OPENAI_API_KEY": "sk-…"} and config.args[0] == "config"
    watch = script.parse_command('acp-progress watch "search for TODO" | cat')
    assert watch.args == ["watch", "search for TODO"] and watch.stdin is None
    with pytest.raises(ValueError):
        script.parse_command("acp-progress watch x | head")  # `head` would change what is seen


def test_every_example_has_one_marked_block_and_markers_name_examples() -> None:
    script = _script()
    docs = script.documents()
    assert ROOT / "README.md" in docs and ROOT / "docs" / "configuration.md" in docs
    blocks = script.find_blocks(docs)
    assert {block.name for block in blocks} == set(script.EXAMPLES)
    assert {block.path.name for block in blocks} > {"README.md"}, "the pages hold examples too"
    config_page = ROOT / "docs" / "configuration.md"
    lines = docs[config_page]
    marker = next(i for i, line in enumerate(lines) if line == "<!-- example: config -->")
    with pytest.raises(ValueError, match="missing \\['config'\\]"):
        script.find_blocks({**docs, config_page: lines[:marker] + lines[marker + 1 :]})
    with pytest.raises(ValueError, match="unknown \\['nope'\\]"):
        script.find_blocks({**docs, config_page: [*lines, "<!-- example: nope -->", "```text", "x", "```"]})
    closing = lines.index(script.FENCE.match(lines[marker + 1]).group(1), marker + 2)
    readme = [*docs[ROOT / "README.md"], *lines[marker : closing + 1]]
    twice = script.find_blocks({**docs, ROOT / "README.md": readme})
    assert sorted(b.path.name for b in twice if b.name == "config") == ["README.md", "configuration.md"]


def test_update_rewrites_the_page_that_holds_the_block(tmp_path) -> None:
    script = _script()
    page = tmp_path / "page.md"
    lines = ["# p", "<!-- example: config -->", "```text", "old", "```", "after"]
    (block,) = [b for b in script.find_blocks({page: lines, **_others(script)}) if b.path == page]
    run = script.Run("config", ["new 1", "new 2"])
    assert script.rewrite(lines, [block], {"config": run}) == [
        "# p",
        "<!-- example: config -->",
        "```text",
        "new 1",
        "new 2",
        "```",
        "after",
    ]


def _others(script: ModuleType) -> dict:
    """Every document but the config example's, so a test page can hold that example alone."""
    docs = script.documents()
    return {
        path: [line for line in lines if line != "<!-- example: config -->"] for path, lines in docs.items()
    }


def test_the_config_example_reads_the_settings_file_the_readme_shows() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = page[page.index("**The settings file**") :]
    start = section.index("```toml\n") + len("```toml\n")
    toml = section[start : section.index("```\n", start)]
    assert toml == _script().CONFIG_TOML
