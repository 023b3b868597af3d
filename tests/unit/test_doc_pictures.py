"""scripts/doc_pictures.py still makes the documentation's pictures from real runs, and what it records
is what the terminal drew (text, colours, weight), with the run's temporary directory hidden."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.acp_agent import ROOT

SCRIPT = ROOT / "scripts" / "doc_pictures.py"


def _script() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("doc_pictures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_terminal_screen_keeps_its_colours_and_hides_the_temp_directory() -> None:
    import pyte

    script = _script()
    screen = pyte.Screen(40, 4)
    stream = pyte.ByteStream(screen)
    stream.feed(b"\x1b[1;32m+ added\x1b[0m\r\n\x1b[31m- /tmp/acp-x/ws/a.py\x1b[0m\r\nplain")
    lines = script.screen_text(screen, hide="/tmp/acp-x", shown_as="~")
    assert [line.plain for line in lines] == ["+ added", "- ~/ws/a.py", "plain"]
    assert lines[0].get_style_at_offset(script_console(), 0).color.name == "green"
    assert lines[0].get_style_at_offset(script_console(), 0).bold
    assert lines[1].get_style_at_offset(script_console(), 3).color.name == "red"
    svg = script.record_svg(lines, "pictured")
    assert svg.startswith("<svg") and "pictured" in svg and "added" in svg


def script_console():  # a console only to resolve styles
    from rich.console import Console

    return Console()


ONLY_WATCH_AND_PAGE = ("--only", "watch", "--only", "page")


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_the_script_makes_a_terminal_picture_and_the_web_page_pictures(tmp_path: Path) -> None:
    done = subprocess.run(
        # watch's agent inside watch's process: the picture is what watch drew, not the agent's process
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--agent-inside", *ONLY_WATCH_AND_PAGE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    import html

    svg = html.unescape((tmp_path / "watch.svg").read_text(encoding="utf-8")).replace("\xa0", " ")
    assert "Searching for TODO" in svg and "50%" in svg and "/tmp/" not in svg
    for name in ("agui-running.png", "agui-stopped.png"):
        png = (tmp_path / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_every_picture_the_pages_show_exists() -> None:
    import re

    for page in (ROOT / "docs").rglob("*.md"):
        for target in re.findall(r"!\[[^]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).resolve().is_file(), f"{page.name} → {target}"
