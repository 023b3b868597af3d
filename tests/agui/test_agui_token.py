"""The AG-UI endpoint asks for a token by default, on loopback too (Jupyter's model).

Any local user, and any web page its person opens, can reach a loopback port: without a token
they could read ``/threads`` and run prompts. ``acp-progress agui`` makes a token at its first
start, keeps it in the state directory (mode 0600) and prints it once, inside the web page's URL;
``--no-token`` is the explicit way to serve without one (its start line is checked on the web page
tests' ``--no-token`` endpoint, in ``test_agui_page.py``).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import httpx
import pytest

from acp_adapter.frontends.agui.token_file import TOKEN_FILE, TokenFileError, endpoint_token
from tests.helpers.agui_process import AguiProcess


def _page_url(process: AguiProcess) -> str:
    process.wait_for("serving AG-UI")
    match = re.search(r"open the web page at (http://\S+)", process.text())
    assert match, process.text()
    return match.group(1)


@pytest.mark.e2e
def test_a_loopback_endpoint_needs_its_own_token_printed_with_the_page_url(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"ACP_PROGRESS_STATE_DIR": str(state)}
    process = AguiProcess(tmp_path, "--own-token", "--summary", "off", env=env)
    try:
        process.wait_healthy()
        url = _page_url(process)
        assert url.startswith(f"{process.url}/#token=")
        token = url.split("#token=", 1)[1]
        stored = state / TOKEN_FILE
        assert stored.read_text().strip() == token
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert httpx.get(process.url + "/threads").status_code == 401
        assert httpx.post(process.url + "/", json={}).status_code == 401
        assert httpx.get(process.url + "/").status_code == 200  # the page itself holds no secret
        authorized = httpx.get(process.url + "/threads", headers={"Authorization": f"Bearer {token}"})
        assert authorized.status_code == 200
        assert process.text().count(token) == 1  # printed once
    finally:
        process.stop()
    again = AguiProcess(tmp_path, "--own-token", "--summary", "off", env=env)
    try:
        again.wait_healthy()
        assert _page_url(again).endswith(f"#token={token}")  # kept across restarts
    finally:
        again.stop()


def test_a_token_file_others_could_read_or_plant_is_refused(tmp_path: Path) -> None:
    token, made = endpoint_token(tmp_path)
    assert made and len(token) >= 32 and endpoint_token(tmp_path) == (token, False)
    path = tmp_path / TOKEN_FILE
    path.chmod(0o644)
    with pytest.raises(TokenFileError, match="mode 0600"):
        endpoint_token(tmp_path)
    path.unlink()
    os.symlink(tmp_path / "elsewhere", path)
    (tmp_path / "elsewhere").write_text("x" * 40)
    (tmp_path / "elsewhere").chmod(0o600)
    with pytest.raises(OSError):
        endpoint_token(tmp_path)  # never through a link
    assert endpoint_token(None)[1] is True  # no state directory: a token for this process only
