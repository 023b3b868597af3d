"""The settings file is used only when it is private and sane: the ssh ownership rule, a size cap,
regular files only, bounded nesting, no control characters, a relative state directory refused, and
every mistake reported at once.

The attacks that need a whole process (a FIFO that would block the reader for ever, a device that
would be read without end) are run through the real ``acp-progress config`` process; the files
that are only reported on go through ``acp-progress config`` run in this process, in the
environment a spawned command gets (its start proves nothing there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_adapter.config import ConfigError, Settings
from tests.helpers.acp_agent import ROOT
from tests.helpers.shared_servers import cli_in_process


def write(directory: Path, text: str, mode: int = 0o600) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    path = directory / "config.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def config_cli(config_dir: Path, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(config_dir),
        "PYTHONPATH": str(ROOT),
        "ACP_PROGRESS_CONFIG_DIR": str(config_dir),
        "XDG_STATE_HOME": str(config_dir / "state"),
    }
    return subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "config", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def config_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config_dir: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """:func:`config_cli` run by ``acp_adapter.cli.main`` in this process, in the same environment
    (none of this process's own settings)."""
    with monkeypatch.context() as patched, cli_in_process() as main:
        for name in list(os.environ):
            if name.startswith(("ACP_PROGRESS_", "OPENAI_")):
                patched.delenv(name)
        patched.setenv("HOME", str(config_dir))
        patched.setenv("ACP_PROGRESS_CONFIG_DIR", str(config_dir))
        patched.setenv("XDG_STATE_HOME", str(config_dir / "state"))
        capsys.readouterr()
        code = main(["config", *args])
        shown = capsys.readouterr()
    return subprocess.CompletedProcess(["acp-progress", "config", *args], code, shown.out, shown.err)


def test_a_config_in_a_world_writable_directory_cannot_send_the_key_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack: someone else's (or a shared) world-writable directory holds a config.toml that
    points ``[openai] base_url`` at their server; the victim's OPENAI_API_KEY would go there."""
    shared = tmp_path / "shared"
    path = write(shared, '[openai]\nbase_url = "http://evil.example/v1"\n')
    shared.chmod(0o777)
    done = config_in_process(monkeypatch, capsys, shared, "--json")
    assert done.returncode == 2, done.stdout
    assert "evil.example" not in done.stdout
    assert f"the settings file {path} is in {shared}, which other users may write" in done.stderr
    assert f"chmod go-w {shared}" in done.stderr


@pytest.mark.parametrize(("mode", "fix"), [(0o666, "chmod go-w"), (0o620, "chmod go-w")])
def test_a_settings_file_others_may_write_is_refused_naming_the_fix(
    tmp_path: Path, mode: int, fix: str
) -> None:
    path = write(tmp_path / "c", "heartbeat_interval = 5\n", mode=mode)
    with pytest.raises(ConfigError) as err:
        Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(path.parent)})
    assert str(path) in str(err.value) and f"{fix} {path}" in str(err.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file to another user")
def test_a_settings_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "c", "heartbeat_interval = 5\n")
    os.chown(path, 12345, 12345)
    with pytest.raises(ConfigError, match=r"owned by uid 12345, not by you"):
        Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(path.parent)})


def test_a_private_settings_file_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "c", "heartbeat_interval = 5\n", mode=0o644)  # readable is fine
    assert Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(path.parent)}).heartbeat_interval == 5


@pytest.mark.e2e
def test_a_fifo_as_settings_file_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO is refused, never opened to wait for a writer for ever."""
    directory = tmp_path / "c"
    directory.mkdir(mode=0o700)
    os.mkfifo(directory / "config.toml", 0o600)
    done = config_cli(directory, timeout=15)
    assert done.returncode == 2
    assert "is not a regular file" in done.stderr and str(directory / "config.toml") in done.stderr


@pytest.mark.e2e
def test_dev_zero_as_settings_file_is_refused_without_reading(tmp_path: Path) -> None:
    """A device is refused, never read (/dev/zero would take hundreds of MB)."""
    directory = tmp_path / "c"
    directory.mkdir(mode=0o700)
    (directory / "config.toml").symlink_to("/dev/zero")
    done = config_cli(directory, timeout=15)
    assert done.returncode == 2
    assert "is not a regular file" in done.stderr


def test_a_settings_file_over_one_mib_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "c", "# " + "x" * (1024 * 1024) + "\nheartbeat_interval = 5\n")
    with pytest.raises(ConfigError, match=r"larger than 1024 KiB"):
        Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(path.parent)})


def test_deeply_nested_arrays_are_a_clear_error_not_a_recursion_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    depth = 100_000
    path = write(tmp_path / "c", "allowed = " + "[" * depth + "]" * depth + "\n")
    done = config_in_process(monkeypatch, capsys, path.parent)
    assert done.returncode == 2
    assert "nested too deeply" in done.stderr and "Traceback" not in done.stderr
    shallow = write(tmp_path / "d", "[agui]\nallowed_hosts = [[[[[[[[[[]]]]]]]]]]\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(shallow.parent)})


def test_a_nul_in_a_string_setting_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    """Refused up front, not accepted only to fail with a traceback when the agent is spawned."""
    path = write(tmp_path / "c", '[openai]\nmodel = "gpt\\u0000x"\n')
    with pytest.raises(ConfigError) as err:
        Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(path.parent)})
    assert f"{path}: [openai] model: must not contain control characters (found U+0000)" in str(err.value)
    with pytest.raises(ConfigError, match=r"ACP_PROGRESS_OPENAI_MODEL: must not contain control"):
        Settings.load({"ACP_PROGRESS_OPENAI_MODEL": "a\x1b]0;x\x07"})
    # newlines and tabs stay allowed (a multi-line summary guidance)
    ok = write(tmp_path / "e", 'summary_guidance = """be\n\tbrief"""\n')
    assert Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(ok.parent)}).summary_guidance == "be\n\tbrief"


def test_a_relative_state_dir_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "c", 'state_dir = "relative/dir"\n')
    with pytest.raises(ConfigError, match=r"state_dir: must be an absolute path"):
        Settings.load({"ACP_PROGRESS_CONFIG_DIR": str(path.parent)})
    with pytest.raises(ConfigError, match=r"^ACP_PROGRESS_STATE_DIR: must be an absolute path"):
        Settings.load({"ACP_PROGRESS_STATE_DIR": "state"})
    assert Settings.load({"ACP_PROGRESS_STATE_DIR": "~/s"}).state_dir == "~/s"


def test_three_mistakes_are_all_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path / "c",
        'heartbeat_interval = "fast"\nbogus = 1\n[openai]\ntimeout = -1\nmodle = "x"\n[nope]\na = 1\n',
    )
    done = config_in_process(monkeypatch, capsys, path.parent)
    assert done.returncode == 2
    for problem in (
        "\n  heartbeat_interval: expected a number",
        "\n  bogus: is not a setting",
        "\n  [openai] timeout: must be > 0",
        "\n  [openai] modle: is not a setting (did you mean model?)",
        "\n  [nope] is not a settings table",
    ):
        assert problem in done.stderr, done.stderr
    assert done.stderr.count(str(path)) == 1  # the path once, in the first line
    assert done.stderr.startswith(f"acp-progress config: 5 mistakes in {path}:\n  ")
    assert len(done.stderr.splitlines()) == 6  # one line each


def test_config_json_still_works_with_a_good_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "c", "heartbeat_interval = 5\n")
    done = config_in_process(monkeypatch, capsys, tmp_path / "c", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["settings"]["heartbeat_interval"]["value"] == 5
