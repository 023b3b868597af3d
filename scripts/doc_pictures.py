"""Make the documentation's pictures from real runs: terminal screens as SVG, the web page as PNG.

Each terminal picture runs a command for real (the embedded offline model, no network) on a 100×30
pseudo-terminal in a fresh copy of ``examples/workspace/``, reads the screen back with ``pyte`` — text,
colours and bold as the terminal drew them — at the moment the picture is about, and records it with
rich's own ``Console(record=True)`` as SVG. The web page is driven by Playwright in Debian's chromium
(Playwright downloads no browser) against a real ``acp-progress agui`` on loopback.

    python scripts/doc_pictures.py                 # write every picture into docs/images/
    python scripts/doc_pictures.py --only watch    # one of them
    python scripts/doc_pictures.py --out DIR       # somewhere else (the test writes to a temp dir)
    python scripts/doc_pictures.py --agent-inside  # a terminal command's agent inside its process
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import readme_examples  # noqa: E402  (the examples' workspace and environment, shared)

IMAGES = ROOT / "docs" / "images"
WIDTH, HEIGHT = 100, 30
TIMEOUT = 60.0
CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True)
class Screen:
    """A terminal picture: the command, when to take it, and what to type on the way."""

    title: str
    argv: list[str]
    until: str
    keys: tuple[tuple[str, bytes], ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    setup: tuple[list[str], ...] = ()


ACP = [sys.executable, "-m", "acp_adapter.cli"]
SILENT_AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'thinking_agent.py'} 30"

SCREENS: dict[str, Screen] = {
    "watch": Screen(
        "acp-progress watch: the plan, a progress bar and the summary line",
        [*ACP, "watch", "--summary-interval", "0.5", "search for TODO and then wait 3 seconds"],
        until=r"█+░+ +50% ",
    ),
    "chat-permission": Screen(
        "acp-progress chat: a permission question",
        [*ACP, "chat"],
        until=r"Allow .*\[y/N\]",
        keys=((r"›|>\s*$", b"run `ls -la`\r"),),
    ),
    "diff": Screen(
        "acp-progress watch: an edit and its diff",
        [*ACP, "watch", "--yes", 'edit notes.py: replace "fix login" with "fix the login form"'],
        until=r"stop reason",
    ),
    "relay": Screen(
        "acp-progress relay: a silent agent gets a think card with its heartbeat",
        [*ACP, "watch", "--agent", f"acp-progress relay -- {SILENT_AGENT}", "hello"],
        until=r"Thinking\.\.\. — [3-9](?:\.\d+)?s|Still thinking",
        env={"ACP_PROGRESS_HEARTBEAT_INTERVAL": "1"},
    ),
    "bridge": Screen(
        "acp-progress bridge: the progress message a chat sees",
        [*ACP, "bridge", "run", "demo"],
        until=r"⏳ Working on long task",
        keys=((r"", b"search for TODO and then wait 3 seconds\r"),),
        setup=([*ACP, "bridge", "create", "demo", "--platform", "console", "--delivery-progress", "all"],),
    ),
}
PAGES = ("agui-running", "agui-stopped")


def _rich_color(color: str) -> str | None:
    if color == "default":
        return None
    if re.fullmatch(r"[0-9a-fA-F]{6}", color):
        return f"#{color}"
    if color.startswith("bright"):
        return "bright_" + color.removeprefix("bright")
    return {"brown": "yellow"}.get(color, color)


def screen_text(screen: Any, hide: str = "", shown_as: str = "~") -> list[Any]:
    """The pyte screen as rich Text lines, with the colours and weights the terminal drew (``hide``,
    the run's temporary directory, shown as ``shown_as`` in the style of its first character)."""
    from rich.style import Style
    from rich.text import Text

    lines = []
    for row in range(screen.lines):
        buffer = screen.buffer[row]
        cells: list[tuple[str, Style]] = []
        for col in range(screen.columns):
            char = buffer[col]
            if char.data == "":  # the second column of a wide character
                continue
            fg, bg = _rich_color(char.fg), _rich_color(char.bg)
            if char.reverse:
                fg, bg = bg or "black", fg or "white"
            cells.append((char.data, Style(color=fg, bgcolor=bg, bold=char.bold, italic=char.italics)))
        plain = "".join(c for c, _ in cells)
        while hide and (at := plain.find(hide)) >= 0:
            cells[at : at + len(hide)] = [(c, cells[at][1]) for c in shown_as]
            plain = "".join(c for c, _ in cells)
        while cells and not cells[-1][0].strip():
            cells.pop()
        line = Text()
        run, run_style = "", None
        for char_data, style in cells:  # one span per run of equal style: an SVG text per run
            if style != run_style and run:
                line.append(run, run_style)
                run = ""
            run, run_style = run + char_data, style
        if run:
            line.append(run, run_style)
        lines.append(line)
    while lines and not lines[-1].plain.strip():
        lines.pop()
    return lines


def record_svg(lines: Sequence[Any], title: str) -> str:
    from rich.console import Console

    console = Console(
        record=True, width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor"
    )
    for line in lines:
        console.print(line, soft_wrap=True)
    return console.export_svg(title=title)


def _command(argv: list[str]) -> list[str]:
    """``argv`` as run: an ``acp-progress`` command line runs the module ``--agent-inside`` chose."""
    if argv[: len(ACP)] == ACP:
        return [sys.executable, "-m", readme_examples.FRONT_END["module"], *argv[len(ACP) :]]
    return argv


def capture(spec: Screen, cwd: Path, env: dict[str, str], hide: str = "") -> list[Any]:
    import pyte

    from tests.helpers.pty_child import PtyChild

    screen = pyte.Screen(WIDTH, HEIGHT)
    stream = pyte.ByteStream(screen)

    class Child(PtyChild):
        def on_output(self, chunk: bytes) -> None:
            stream.feed(chunk)

    def shown() -> str:
        return "\n".join(line.rstrip() for line in screen.display)

    child = Child(_command(spec.argv), str(cwd), {**env, **spec.env, "TERM": "xterm-256color"})
    try:
        for waiting_for, keys in spec.keys:
            child.read_while(TIMEOUT, lambda w=waiting_for: re.search(w, shown(), re.M) is not None)
            child.type(keys)
        child.read_while(TIMEOUT, lambda: re.search(spec.until, shown()) is not None)
        if re.search(spec.until, shown()) is None:
            raise TimeoutError(f"{spec.title}: the screen never matched {spec.until!r}:\n{shown()}")
        child.read_while(0.3)  # a redraw cut in two chunks finishes
        return screen_text(screen, hide)
    finally:
        child.close()


def _workspace(home: Path) -> tuple[Path, dict[str, str]]:
    cwd = home / "workspace"
    shutil.copytree(readme_examples.WORKSPACE, cwd)
    env = readme_examples.base_env(home)
    env["PYTHONPATH"] = str(ROOT)
    return cwd, env


def terminal_picture(name: str, out: Path) -> Path:
    spec = SCREENS[name]
    with tempfile.TemporaryDirectory(prefix="acp-pictures-") as tmp:
        cwd, env = _workspace(Path(tmp))
        for argv in spec.setup:
            subprocess.run(_command(argv), cwd=cwd, env=env, check=True, capture_output=True, timeout=TIMEOUT)
        lines = capture(spec, cwd, env, hide=str(cwd.parent))
    target = out / f"{name}.svg"
    target.write_text(record_svg(lines, spec.title), encoding="utf-8")
    return target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def page_pictures(out: Path) -> list[Path]:
    """The web page mid-run (a plan, a progress bar, the summary) and after Stop (every card cancelled)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="acp-pictures-") as tmp:
        cwd, env = _workspace(Path(tmp))
        port = _free_port()
        server = subprocess.Popen(
            _command([*ACP, "agui", "--port", str(port), "--tool-progress", "--redact", "counts"]),
            cwd=cwd,
            env={**env, "ACP_PROGRESS_EMBEDDED_DELAY": "0.5"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            url = _wait_for_url(server, port)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM,
                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
                )
                page = browser.new_page(viewport={"width": 1100, "height": 760})
                page.goto(url)
                page.locator("#prompt").fill("search for TODO and then wait 6 seconds")
                page.locator("#send").click()
                page.wait_for_selector("text=/ · [2-7]\\d%/", timeout=TIMEOUT * 1000)
                running = out / "agui-running.png"
                page.screenshot(path=str(running))
                page.locator("#stop").click()
                page.wait_for_selector("text=/[Cc]ancelled/", timeout=TIMEOUT * 1000)
                stopped = out / "agui-stopped.png"
                page.screenshot(path=str(stopped))
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    return [running, stopped]


def _wait_for_url(server: subprocess.Popen[str], port: int) -> str:
    """The page's address as ``acp-progress agui`` printed it (with its token when it has one)."""
    import threading

    assert server.stdout is not None
    seen: list[str] = []
    stream = server.stdout
    threading.Thread(target=lambda: seen.extend(iter(stream.readline, "")), daemon=True).start()
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        match = re.search(rf"http://127\.0\.0\.1:{port}/#token=\S+", "".join(seen))
        if match:
            return match.group(0)
        if server.poll() is not None:
            raise RuntimeError(f"acp-progress agui exited: {''.join(seen)}")
        time.sleep(0.05)
    raise TimeoutError(f"acp-progress agui printed no address: {''.join(seen)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="where to write (default docs/images)")
    parser.add_argument("--only", action="append", choices=[*SCREENS, "page"], help="just these (repeatable)")
    parser.add_argument(
        "--agent-inside",
        action="store_true",
        help="the terminal commands' agent runs inside the command's process (the same pictures, fewer "
        "processes; agui still starts its own)",
    )
    args = parser.parse_args(argv)
    if args.agent_inside:
        readme_examples.FRONT_END["module"] = readme_examples.AGENT_INSIDE_MODULE
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = args.only or [*SCREENS, "page"]
    makers: dict[str, Callable[[], list[Path]]] = {
        name: (lambda n=name: [terminal_picture(n, args.out)]) for name in SCREENS
    }
    makers["page"] = lambda: page_pictures(args.out)

    def made(name: str) -> list[tuple[Path, float]]:
        started = time.monotonic()
        return [(path, time.monotonic() - started) for path in makers[name]()]

    # each picture has its own temporary home and port, and most of a run is waiting for the screen
    # or the page to reach its moment: the pictures are made at once, so the waits overlap
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(chosen)) as pool:
        for future in concurrent.futures.as_completed([pool.submit(made, name) for name in chosen]):
            for path, seconds in future.result():
                print(f"doc_pictures: {path} ({seconds:.1f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
