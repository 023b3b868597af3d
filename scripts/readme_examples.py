"""Keep the documented example output true: run each documented command and compare, or regenerate.

Every block in README.md or a documentation page (``docs/**/*.md``) that shows what a command prints
carries a marker line right before its fence, ``<!-- example: NAME -->``. ``EXAMPLES`` below says,
for each NAME, the command exactly as the page shows it (stdin, environment and arguments are read
from that one shell line, so the shown command and the command run cannot differ), and how its
output is captured: through a pipe, or as a screen snapshot of a pseudo-terminal read back through ``pyte``.

Each command runs for real — the embedded offline model, no network — in a fresh copy of
``examples/workspace/`` with its own temporary home (state and settings directories inside it,
removed afterwards), all examples at once, each bounded by a timeout.

    python scripts/readme_examples.py            # --check: exit 1 with a diff when a block drifted
    python scripts/readme_examples.py --update   # rewrite the blocks that drifted, from fresh runs

The check compares after normalising what legitimately varies from run to run (durations such as
``0.2s`` or ``1m 5s``, the spinner's frame); lines that are inherently timing-dependent (summary
and heartbeat lines, intermediate progress) are matched by their example's patterns instead of
their text. Everything else must be exactly what the run printed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documents() -> dict[Path, list[str]]:
    """README.md and every documentation page (the generated references hold no examples)."""
    pages = [README, *sorted(p for p in DOCS.rglob("*.md") if "reference" not in p.relative_to(DOCS).parts)]
    return {page: page.read_text(encoding="utf-8").splitlines() for page in pages}


def shown_path(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


WORKSPACE = ROOT / "examples" / "workspace"
UPDATE_COMMAND = "python scripts/readme_examples.py --update"
#: what the temporary home directory is shown as (the workspace is ``HOME/project``)
HOME_PLACEHOLDER = "/home/me"
#: bounds: one command, and a pty example's wait for its screen condition
COMMAND_TIMEOUT = 60.0
SCREEN_SIZE = (100, 30)

MARKER = re.compile(r"^<!-- example: ([a-z0-9-]+) -->$")
FENCE = re.compile(r"^(`{3,})(text|console)$")
DURATION = re.compile(r"(?<![\w.])(?:\d+m )?\d+(?:\.\d+)?s\b")
SPINNER = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]")
#: variables of the caller that would change what a command prints; the examples run without them
SCRUBBED_PREFIXES = ("ACP_PROGRESS_", "OPENAI_", "TELEGRAM_", "XDG_")
SCRUBBED = {"FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES", "TERM", "PYTHONPATH", "HOME"}

# Loose on purpose: a card line may gain an emoji or a new word without making these lines exact.
SUMMARY_LINE = r"^ +… .*summary: .+$"
HEARTBEAT_LINE = r"^ +… .*Still thinking… .+$"
SCAN_START_LINE = r"^ +… .*Searching for TODO: .*\b0% Scanning .+$"
OUTPUT_SO_FAR_LINE = r"^ +… .*Running .+: \d+ lines? of output so far$"


@dataclass(frozen=True)
class Example:
    """One documented command and how to compare what it prints with its README block."""

    #: the command exactly as a person types it (``$`` line of the block); ``acp-progress`` stands
    #: for this checkout's CLI, a part before ``|`` is run by bash to make stdin, ``VAR=value``
    #: words before ``acp-progress`` are its environment, a trailing ``| cat`` only says "a pipe"
    command: str
    #: "pipe" (stdout through a pipe) or "pty" (a screen snapshot, taken when ``until`` matches)
    mode: str = "pipe"
    until: str | None = None
    #: write the ``$ command`` line at the top of the block (a screen snapshot has none)
    show_command: bool = True
    #: commands run first in the same home and workspace (their output is not shown)
    setup: tuple[str, ...] = ()
    #: files written under the temporary home before the run (``~/.config/…``)
    files: Mapping[str, str] = field(default_factory=dict)
    #: regexes of timing-dependent lines: compared by shape, not text, and in any position
    volatile: tuple[str, ...] = ()
    #: lines matching this regex are left out of the block; each run of them becomes one "…"
    elide: str | None = None
    exit_code: int = 0
    #: further commands shown in the same block, each with its expected exit code
    then: tuple[tuple[str, int], ...] = ()
    #: show stderr too, interleaved with stdout as on a terminal (else it is only kept for errors)
    stderr: bool = False
    #: compare the distinct steady lines, not their order: a chat's edits are coalesced by time,
    #: so how often and in which order a message is edited depends on the machine's pace
    unordered: bool = False


#: the settings file of the README's "Configuration" section (its ```toml block), as the user's
CONFIG_TOML = """\
heartbeat_interval = 10
summary = "embedded"

[openai]                      # the OpenAI-compatible back-end (OPENAI_BASE_URL …)
base_url = "http://localhost:11434/v1"
model = "llama3.2"

[summary_openai]              # the summary model (ACP_PROGRESS_SUMMARY_OPENAI_…)
model = "qwen2.5:0.5b"

[agui]                        # also [telegram], [streams] and [mcp]
allowed_origins = ["https://app.example"]
"""

#: the README's MCP tool descriptor and its manifest entry with a preview the rules refuse
TOOL_JSON = '{ "_meta": { "agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey" } }\n'
BAD_TOML = """\
[resources.tools.issue_lookup]
friendly_verb = "Looking up"
preview = "arg:api_key"
"""

EXAMPLES: dict[str, Example] = {
    "watch-pipe": Example(
        'acp-progress watch "search the workspace for TODO" | cat',
        volatile=(SUMMARY_LINE, HEARTBEAT_LINE, SCAN_START_LINE),
    ),
    "watch-terminal": Example(
        'acp-progress watch "search for TODO and then wait 3 seconds"',
        mode="pty",
        until=r"█+░+ +50% ",
        show_command=False,
        volatile=(r"^  ↳ .+$",),
    ),
    "chat-pipe": Example(
        "printf 'hello\\nwhat is 2+2\\nwhat is 3*7\\n' | acp-progress chat --summary off",
        volatile=(HEARTBEAT_LINE,),
    ),
    "config": Example(
        "OPENAI_API_KEY=sk-… acp-progress config --summary-interval 3",
        files={".config/acp-progress/config.toml": CONFIG_TOML},
        elide=r"\sdefault$",
    ),
    "summaries": Example(
        'acp-progress watch --yes --summary-interval 2 "search for TODO and read notes.py" | cat',
        volatile=(SUMMARY_LINE, HEARTBEAT_LINE, SCAN_START_LINE),
    ),
    "tool-cards": Example(
        'acp-progress watch --yes "search for TODO and run ls" | cat',
        volatile=(SUMMARY_LINE, HEARTBEAT_LINE, SCAN_START_LINE, OUTPUT_SO_FAR_LINE),
    ),
    "descriptor": Example(
        """acp-progress descriptor tool.json --tool-id issue_lookup --input '{"issueKey": "BUG-456"}'""",
        then=(("acp-progress descriptor bad.toml", 1),),
        files={"project/tool.json": TOOL_JSON, "project/bad.toml": BAD_TOML},
        stderr=True,
    ),
    "bridge-console": Example(
        'echo "search for TODO and then wait 3 seconds" | acp-progress bridge run demo',
        setup=("acp-progress bridge create demo --platform console --delivery-progress all",),
        # the plan's and the summary's edits are coalesced by time (which intermediate states a
        # chat sees, which summary revision the placeholder is first posted with, and where it is
        # deleted, depends on the machine's pace)
        unordered=True,
        volatile=(
            r"^\[typing…\]$",
            r"^\[typing off\]$",
            r"^\[#\d+ reaction .+\]$",
            r"^\[#\d+(?: edited)?\] plan \d+/\d+$",
            r"^ {5}[○◐✓] ",
            r"^ {5}⏳ ",
            r"^\[#\d+(?: edited)?\] 📝 ",
            r"^\[#\d+ deleted\]$",
        ),
    ),
}


@dataclass(frozen=True)
class Invocation:
    """What a shown command line runs: argv after ``acp-progress``, its stdin and environment."""

    args: list[str]
    stdin: bytes | None
    env: dict[str, str]


def parse_command(command: str) -> Invocation:
    """Read the argv, stdin and environment from the command line as the README shows it."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|")
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    for token in lexer:
        if token == "|":
            segments.append([])
        else:
            segments[-1].append(token)
    main = next((i for i, seg in enumerate(segments) if "acp-progress" in seg), None)
    if main is None or main > 1 or segments[main + 1 :] not in ([], [["cat"]]):
        raise ValueError(f"unsupported example command: {command!r}")
    stdin = None
    if main == 1:
        made = subprocess.run(["bash", "-c", shlex.join(segments[0])], capture_output=True, check=True)
        stdin = made.stdout
    words = segments[main]
    start = words.index("acp-progress")
    env = dict(word.split("=", 1) for word in words[:start])
    if not all(re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) for name in env):
        raise ValueError(f"only VAR=value words may precede acp-progress: {command!r}")
    return Invocation(words[start + 1 :], stdin, env)


@dataclass
class Run:
    """What one example printed (lines as the README would show them) or why it could not run."""

    name: str
    lines: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def base_env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in SCRUBBED and not key.startswith(SCRUBBED_PREFIXES)
    }
    env.update(
        HOME=str(home),
        PYTHONPATH=str(ROOT),  # this checkout's code, whatever is installed
        LC_ALL="C.UTF-8",  # `ls` and sorting as everywhere
        TZ="UTC",
        COLUMNS=str(SCREEN_SIZE[0]),
        LINES=str(SCREEN_SIZE[1]),
    )
    return env


#: the module each command line runs (``--agent-inside`` swaps in the test suite's twin of it)
FRONT_END = {"module": "acp_adapter.cli"}
#: ``acp_adapter.cli`` whose front-end drives this project's agent inside its own process
AGENT_INSIDE_MODULE = "tests.helpers.cli_agent_inside"


#: ``--forked``: the process each command line is forked from (tests/helpers/cli_zygote.py)
ZYGOTE: list[Any] = []


def cli(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", FRONT_END["module"], *args]


def run_pipe(
    args: list[str], stdin: bytes | None, cwd: Path, env: Mapping[str, str], merge_stderr: bool = False
) -> tuple[int, str, str]:
    """Run ``acp-progress ARGS`` to the end with stdout and stderr on pipes; kill its process group
    after the timeout."""
    if ZYGOTE:
        from tests.helpers.cli_zygote import run_forked_pipe

        code, out, err = run_forked_pipe(ZYGOTE[0], args, stdin, cwd, env, COMMAND_TIMEOUT, merge_stderr)
        return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    proc = subprocess.Popen(
        cli(args),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise TimeoutError(
            f"timed out after {COMMAND_TIMEOUT:.0f}s; stdout ends: {out.decode()[-500:]!r}"
        ) from None
    return proc.returncode, out.decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace")


def run_pty(args: list[str], cwd: Path, env: Mapping[str, str], until: str) -> tuple[int | None, str]:
    """The screen of a pseudo-terminal when ``until`` first matches it, after the output settles."""
    try:
        import pyte
    except ImportError:
        raise RuntimeError("the terminal examples need pyte: pip install -e '.[test]'") from None

    sys.path.insert(0, str(ROOT))
    from tests.helpers.pty_child import PtyChild

    width, height = SCREEN_SIZE
    screen = pyte.Screen(width, height)
    stream = pyte.ByteStream(screen)

    class Screen(PtyChild):
        def on_output(self, chunk: bytes) -> None:
            stream.feed(chunk)

    def shown() -> str:
        return "\n".join(line.rstrip() for line in screen.display)

    on_terminal = {**env, "TERM": "xterm-256color"}
    if ZYGOTE:
        from tests.helpers.cli_zygote import ForkedPtyChild

        child: PtyChild = ForkedPtyChild(ZYGOTE[0], args, cwd, on_terminal, stream.feed)
    else:
        child = Screen(cli(args), str(cwd), on_terminal)
    try:
        child.read_while(COMMAND_TIMEOUT, lambda: re.search(until, shown()) is not None)
        snapshot = shown()
        if re.search(until, snapshot) is None:
            raise TimeoutError(f"the screen never matched {until!r}; it shows:\n{snapshot}")
        settled = time.monotonic() + 0.3  # let a redraw that was cut in two chunks finish
        before = len(child.output)
        while time.monotonic() < settled and child.read_once(0.05) and len(child.output) != before:
            before = len(child.output)
        if re.search(until, shown()) is not None:
            snapshot = shown()
        return child.wait(COMMAND_TIMEOUT), snapshot
    finally:
        child.close()


def as_shown(text: str, roots: Sequence[Path], elide: str | None) -> list[str]:
    """The lines a README block shows: temp paths as ``/home/me``, elided rows, no trailing blanks."""
    for root in roots:
        text = text.replace(str(root), HOME_PLACEHOLDER)
    lines = [line.rstrip() for line in text.splitlines()]
    if elide is not None:
        kept: list[str] = []
        for line in lines:
            if not re.search(elide, line):
                kept.append(line)
            elif not kept or kept[-1] != "…":
                kept.append("…")
        lines = kept
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def run_example(name: str, example: Example) -> Run:
    """Run one example in a fresh home and workspace copy (removed afterwards)."""
    started = time.monotonic()
    result = Run(name)
    top = Path(tempfile.mkdtemp(prefix="readme-example-"))
    try:
        home = top / "home"
        workspace = home / "project"
        shutil.copytree(WORKSPACE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        for relative, content in example.files.items():
            path = home / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        env = base_env(home)
        for line in example.setup:
            setup = parse_command(line)
            code, _, err = run_pipe(setup.args, setup.stdin, workspace, {**env, **setup.env})
            if code != 0:
                raise RuntimeError(f"setup {line!r} exited {code}: {err.strip()[-500:]}")
        for command, exit_code in ((example.command, example.exit_code), *example.then):
            invocation = parse_command(command)
            run_env = {**env, **invocation.env}
            if example.mode == "pty":
                assert example.until is not None
                code_or_none, text = run_pty(invocation.args, workspace, run_env, example.until)
                err = ""
                if code_or_none is None:
                    raise TimeoutError(f"did not exit within {COMMAND_TIMEOUT:.0f}s")
                code = code_or_none
            else:
                code, text, err = run_pipe(
                    invocation.args, invocation.stdin, workspace, run_env, example.stderr
                )
            if code != exit_code:
                why = f"{command!r} exited {code}, expected {exit_code}"
                raise RuntimeError(f"{why}; stderr ends: {err[-800:]}")
            shown = as_shown(text, [home.resolve(), home], example.elide)
            result.lines += ([f"$ {command}"] if example.show_command else []) + shown
    except Exception as exc:  # reported per example; the others still run
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(top, ignore_errors=True)
        result.seconds = time.monotonic() - started
    return result


@dataclass
class Block:
    """One marked example block of a document: which, where its body lines are, and its fence."""

    path: Path
    name: str
    fence: str
    language: str
    start: int  # index of the first body line
    end: int  # index of the closing fence
    lines: list[str]


def find_blocks(docs: Mapping[Path, list[str]]) -> list[Block]:
    """Every marked block of ``docs`` (path → lines). Each example is shown at least once; one shown on
    several pages (the README's tour and its front-end's page) is checked and rewritten in each."""
    blocks: list[Block] = []
    for path, lines in docs.items():
        where = shown_path(path)
        for index, line in enumerate(lines):
            marker = MARKER.match(line)
            if marker is None:
                continue
            name = marker.group(1)
            opening = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
            if opening is None:
                raise ValueError(
                    f"{where}:{index + 1}: the marker {name!r} must precede a ```text or ```console fence"
                )
            fence, language = opening.groups()
            end = next((i for i in range(index + 2, len(lines)) if lines[i] == fence), None)
            if end is None:
                raise ValueError(f"{where}:{index + 2}: the block of {name!r} is never closed")
            blocks.append(Block(path, name, fence, language, index + 2, end, lines[index + 2 : end]))
    names = [block.name for block in blocks]
    unknown = sorted(set(names) - set(EXAMPLES))
    missing = sorted(set(EXAMPLES) - set(names))
    if unknown or missing:
        raise ValueError(f"example markers: unknown {unknown}, missing {missing}")
    return blocks


def normalise(line: str) -> str:
    """What may differ between two runs of the same command: durations and the spinner's frame."""
    return SPINNER.sub("⠋", DURATION.sub("‹t›", line))


def drift(example: Example, documented: list[str], printed: list[str]) -> list[str]:
    """Why the documented block is not what the run printed (empty when it is)."""

    def volatile(line: str) -> bool:
        return any(re.search(pattern, line) for pattern in example.volatile)

    steady_doc = [normalise(line) for line in documented if not volatile(line)]
    steady_run = [normalise(line) for line in printed if not volatile(line)]
    if steady_doc == steady_run or (example.unordered and set(steady_doc) == set(steady_run)):
        return []
    labels = ("documented", "what the run printed")
    return list(difflib.unified_diff(documented, printed, *labels, lineterm=""))


def fence_for(lines: list[str]) -> str:
    """A fence longer than any backtick run that starts a line of the body."""
    longest = max((len(m.group(0)) for line in lines if (m := re.match(r"`+", line))), default=0)
    return "`" * max(3, longest + 1)


def run_all(names: Sequence[str], progress: Callable[[Run], None]) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names) or 1) as pool:
        futures = [pool.submit(run_example, name, EXAMPLES[name]) for name in names]
        for future in concurrent.futures.as_completed(futures):
            run = future.result()
            runs[run.name] = run
            progress(run)
    return runs


def rewrite(lines: list[str], blocks: list[Block], runs: Mapping[str, Run]) -> list[str]:
    """A document with each run example's block body replaced (from the last block backwards);
    ``blocks`` are that document's."""
    out = list(lines)
    for block in sorted(blocks, key=lambda b: b.start, reverse=True):
        run = runs.get(block.name)
        if run is None:
            continue
        fence = fence_for(run.lines)
        out[block.start - 1 : block.end + 1] = [f"{fence}{block.language}", *run.lines, fence]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare every block with a fresh run (default)")
    mode.add_argument("--update", action="store_true", help="rewrite the blocks that drifted from fresh runs")
    parser.add_argument("--only", action="append", metavar="NAME", help="just these examples (repeatable)")
    parser.add_argument(
        "--agent-inside",
        action="store_true",
        help="each command's agent runs inside the command's process instead of one of its own: what "
        "the command prints is the same, two interpreter starts fewer (the test suite's check)",
    )
    parser.add_argument(
        "--forked",
        action="store_true",
        help="each command line (its agent inside it) is a process forked from one that imported the "
        "command line once: its own pipes or terminal, environment, directory and exit status, without "
        "an interpreter start and the imports each (the test suite's check)",
    )
    args = parser.parse_args(argv)
    if args.agent_inside:
        FRONT_END["module"] = AGENT_INSIDE_MODULE
    if args.forked:
        sys.path.insert(0, str(ROOT))
        from tests.helpers.cli_zygote import Zygote

        zygote_home = Path(tempfile.mkdtemp(prefix="readme-example-zygote-"))
        ZYGOTE.append(Zygote(base_env(zygote_home)))
    try:
        return _check_or_update(args)
    finally:
        for zygote in ZYGOTE:
            zygote.close()
        ZYGOTE.clear()
        if args.forked:
            shutil.rmtree(zygote_home, ignore_errors=True)


def _check_or_update(args: argparse.Namespace) -> int:

    docs = documents()
    try:
        blocks = find_blocks(docs)
    except ValueError as exc:
        print(f"readme_examples: {exc}", file=sys.stderr)
        return 2
    names = args.only or list(EXAMPLES)
    unknown = [name for name in names if name not in EXAMPLES]
    if unknown:
        print(f"readme_examples: no example named {', '.join(unknown)}; known: {', '.join(EXAMPLES)}")
        return 2

    def progress(run: Run) -> None:
        state = "failed" if run.error else "ran"
        print(f"  {state} {run.name} ({run.seconds:.1f}s)", file=sys.stderr, flush=True)

    started = time.monotonic()
    runs = run_all(names, progress)
    failed = [run for run in runs.values() if run.error]
    for run in failed:
        print(f"readme_examples: {run.name}: {run.error}", file=sys.stderr)
    if failed:
        if args.update:
            print("readme_examples: no document was changed", file=sys.stderr)
        return 1

    if args.update:
        # a block that still matches stays as it is: no churn of durations or timing-dependent lines
        drifted = {
            block.name: runs[block.name]
            for block in blocks
            if block.name in runs and drift(EXAMPLES[block.name], block.lines, runs[block.name].lines)
        }
        for path, lines in docs.items():
            own = [block for block in blocks if block.path == path and block.name in drifted]
            if own:
                path.write_text("\n".join(rewrite(lines, own, drifted)) + "\n", encoding="utf-8")
        changed = len(drifted)
        took = time.monotonic() - started
        print(f"readme_examples: rewrote {changed} of {len(runs)} blocks in {took:.1f}s")
        return 0

    report: list[str] = []
    for block in blocks:
        if block.name in runs:
            diff = drift(EXAMPLES[block.name], block.lines, runs[block.name].lines)
            if diff:
                report += [
                    f"── example {block.name!r} ({shown_path(block.path)} line {block.start}) drifted:",
                    *diff,
                ]
    if report:
        print("\n".join(report))
        print(
            f"\nThe documented examples are not what the commands print. Regenerate them with:\n"
            f"    {UPDATE_COMMAND}\n(then review the diff and commit the pages)"
        )
        return 1
    print(f"readme_examples: {len(runs)} examples match ({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
