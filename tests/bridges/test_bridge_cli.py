"""``acp-progress bridge …`` end to end: instance commands and a console run in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from acp_adapter.cli import main
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.acp_progress_command import AGENT_INSIDE


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path))
    return tmp_path


def show(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, object]:
    capsys.readouterr()
    assert main(["bridge", "show", name]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_create_update_list_show_delete(cfg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["bridge", "create", "tg", "--platform", "telegram", "--chat-id", "42", "--chat-id", "-1001"])
        == 0
    )
    doc = show(capsys, "tg")
    assert doc["routing"] == {"chat_ids": [42, -1001]}
    assert doc["delivery_defaults"] == {"progress": None}
    assert doc["effective_progress"] == {
        "tool_progress": "new",
        "grouping": "accumulate",
        "typing": True,
        "reactions": True,
    }
    assert doc["cwd"] == str(Path.cwd()) and doc["agent"] is None
    rc = main(
        [
            "bridge",
            "update",
            "tg",
            "--delivery-progress",
            "all",
            "--delivery-progress-grouping",
            "separate",
            "--delivery-progress-typing=false",
            "--delivery-progress-reactions",
        ]
    )
    assert rc == 0
    doc = show(capsys, "tg")
    assert doc["routing"] == {"chat_ids": [42, -1001]}  # progress changes never clear routing
    assert doc["effective_progress"] == {
        "tool_progress": "all",
        "grouping": "separate",
        "typing": False,
        "reactions": True,
    }
    assert main(["bridge", "list"]) == 0
    assert "tg\ttelegram\tchats=2\tprogress=all/separate" in capsys.readouterr().out
    assert main(["bridge", "delete", "tg"]) == 0
    capsys.readouterr()
    assert main(["bridge", "show", "tg"]) == 2
    assert "no bridge named 'tg'" in capsys.readouterr().err


def test_bad_values_are_clear_errors(cfg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bridge", "create", "x", "--platform", "console", "--delivery-progress-typing=maybe"])
    assert "expected true or false" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bridge", "create", "x", "--platform", "console", "--delivery-progress", "loud"])
    assert main(["bridge", "create", "x", "--platform", "console", "--agent", "a 'b"]) == 2
    assert "cannot parse" in capsys.readouterr().err
    (cfg / "bridges.json").write_text('{"version": 1, "instances": {}, "extra": 1}')
    assert main(["bridge", "list"]) == 2
    assert "extra: unknown key" in capsys.readouterr().err


@pytest.mark.e2e
def test_bridge_run_console_in_a_subprocess(cfg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bridge", "create", "demo", "--platform", "console", "--cwd", str(ROOT)]) == 0
    env = {**agent_env(), "ACP_PROGRESS_CONFIG_DIR": str(cfg)}
    # the bridge is a process of its own; its agent runs inside it (a second process proves nothing)
    proc = subprocess.run(
        [*AGENT_INSIDE, "bridge", "run", "demo"],
        input="search for TODO\n",
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "🔎 Searching for TODO" in proc.stdout
    assert "[#2 edited] ✅ Searching for TODO" in proc.stdout
    assert "delivery metrics" in proc.stderr and "delivery_dropped_by_reason" in proc.stderr
    last = show(capsys, "demo")["last_run"]
    assert isinstance(last, dict) and last["posts"] >= 2 and last["delivery_dropped_by_reason"] == {}
