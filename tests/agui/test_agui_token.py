"""The AG-UI endpoint asks for a token by default, on loopback too (Jupyter's model).

Any local user, and any web page its person opens, can reach a loopback port: without a token
they could read ``/threads`` and run prompts. ``acp-progress agui`` makes a token at its first
start, keeps it in the state directory (mode 0600) and prints it once, inside the web page's URL;
``--no-token`` is the explicit way to serve without one. The endpoint's own token, as a user starts
it, is checked on the web page tests' ``--own-token`` endpoint and its start line on their
``--no-token`` one, in ``test_agui_page.py`` (their processes are started once for both).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_adapter.frontends.agui.token_file import TOKEN_FILE, TokenFileError, endpoint_token


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
