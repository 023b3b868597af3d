"""A redaction attack on real processes: ``run `cat creds.txt``` on every surface.

The password families (``*_PASS=``, ``login -p``, ``redis-cli -a``, ``htpasswd -b``, openssl
``pass:``, netrc, ``.pgpass``, ``sudo -S`` feeds, Mailgun ``key-``) are in the same file.

The workspace holds a ``creds.txt`` with each credential form that is easy to miss: the
command-line forms (``curl -u``, ``mysql -p``, ``sshpass -p``, ``… | --password-stdin``,
``config set password``), an ``agh_claim_`` token and an AWS secret key in prose. The embedded
model runs the command (``run `…```: its planner takes the backquoted text as the command) and its
answer quotes the output, streamed a few words per delta — so each secret crosses the tool card
*and* the streamed text, split wherever the chunking falls. Before the fixes, ``watch``, ``run``,
ACP ``agent_message_chunk`` and AG-UI deltas printed the mysql and sshpass passwords and the claim
token. No secret, nor a fragment of one, may reach any surface; the file must visibly have been read.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, prompt_text
from tests.helpers.agui_inprocess import use_in_process_agui_agents
from tests.helpers.shared_agent import progress_agent, served_inprocess

CLAIM = "agh" + "_claim_" + "PjKYw3Zr9-Qm2Lx_7Tn4Vb8Hc1Gd5Fs6"
AWS_SECRET = "r8Vq" + "Xk2mP9sL4tN7wQ1zB5cD8fG3hJ6kM0nR2yT5"
SECRETS = {
    "curl -u": "Cu7lPassw0rdXy",
    "mysql -p": "MyS3cretRootPw",
    "sshpass -p": "Ssh9PassVal3x",
    "--password-stdin": "D0ckerPassXyz9",
    "config set": "C0nfigSetPwQ7",
    "claim token": CLAIM,
    "aws secret in prose": AWS_SECRET,
    # the password families
    "env *_PASS": "EnvPa55wordQz",
    "docker login -p": "D0ckLoginPw7x",
    "redis-cli -a": "Red1sAuthPw4q",
    "htpasswd -b": "HtPa55Bv9zWq",
    "openssl pass:": "0sslPa55Kq2w",
    "netrc": "N3trcPa55Wd8v",
    ".pgpass": "PgPa55L1neX4",
    "sudo -S": "Sud0StdinPw6k",
    "mailgun key-": "key-" + "3a86f0c29d1e4b57a0c6d3e9f21b8c47",
}
CREDS = f"""\
curl -u deploy:{SECRETS["curl -u"]} https://ci.example.com/api/json
mysql -h db.internal -u root -p{SECRETS["mysql -p"]} app
sshpass -p {SECRETS["sshpass -p"]} ssh deploy@10.0.0.7 uptime
echo {SECRETS["--password-stdin"]} | docker login --password-stdin -u bot ghcr.io
redis-cli config set password {SECRETS["config set"]}
agh task release T-42 --claim {CLAIM}
the aws secret key is {AWS_SECRET} (rotate monthly)
SMTP_PASS={SECRETS["env *_PASS"]}
docker login -u bot -p {SECRETS["docker login -p"]} registry.example.com
redis-cli -h cache.internal -a {SECRETS["redis-cli -a"]} ping
htpasswd -b .htpasswd admin {SECRETS["htpasswd -b"]}
openssl enc -aes-256-cbc -pass pass:{SECRETS["openssl pass:"]} -in a.txt
machine api.example.com login bot password {SECRETS["netrc"]}
db.internal:5432:app:deploy:{SECRETS[".pgpass"]}
echo {SECRETS["sudo -S"]} | sudo -S systemctl restart app
MAILGUN_API={SECRETS["mailgun key-"]}
end-of-creds-marker
"""
PROMPT = "run `cat creds.txt`"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "creds.txt").write_text(CREDS)
    return tmp_path


def assert_no_secret(surface: str, seen: str, *, shown: bool = True) -> None:
    """No secret nor a fragment of one in ``seen``; ``shown``: the output of the command is in it."""
    if shown:
        assert "end-of-creds-marker" in seen, f"{surface}: the command did not run:\n{seen[-2000:]}"
        assert "[REDACTED]" in seen, seen[-2000:]
    for form, secret in SECRETS.items():
        assert secret not in seen, f"{surface}: the {form} secret leaked"
        middle = secret[len(secret) // 2 - 4 : len(secret) // 2 + 4]
        assert middle not in seen, f"{surface}: a fragment ({middle}) of the {form} secret leaked"


def cli(workspace: Path, *args: str) -> str:
    env = {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_CHUNK_DELAY="0.001", ACP_PROGRESS_EMBEDDED_DELAY="0.05"),
    }
    # the front-end's own process (what it prints is the point) with this project's agent inside it
    frontend = ROOT / "tests" / "helpers" / "cli_agent_inside.py"
    proc = subprocess.run(
        [sys.executable, str(frontend), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(workspace),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.e2e
def test_watch_prints_no_secret(workspace: Path) -> None:
    assert_no_secret("watch", cli(workspace, "watch", "--yes", PROMPT))


@pytest.mark.e2e
def test_run_prints_no_secret(workspace: Path) -> None:
    assert_no_secret("run", cli(workspace, "run", "--yes", "--cwd", str(workspace), PROMPT))


@pytest.mark.e2e
@pytest.mark.anyio
async def test_acp_chunks_and_tool_content_carry_no_secret(workspace: Path) -> None:
    """(The agent is served in process: what it sends is the point, not its process; ``cat``, the
    command it runs, is a process of its own.)"""
    client = RecordingClient(permission="allow")
    agent = progress_agent(embedded_chunk_delay=0.001)  # 0.05 s a step, as the front-ends' agents
    async with served_inprocess(client, agent) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt_text(conn, session.session_id, PROMPT)
    chunks = [r.update for r in client.updates if r.update.session_update == "agent_message_chunk"]
    assert len(chunks) > 10  # streamed a few words at a time: the secrets were split across chunks
    wire = "\n".join(r.update.model_dump_json() for r in client.updates)
    wire += "\n".join(t.model_dump_json() for t in client.permission_requests)
    assert_no_secret("ACP", wire)
    assert_no_secret("ACP message chunks", "".join(c.content.text for c in chunks) + "[REDACTED]")


@pytest.mark.e2e
def test_agui_deltas_and_tool_events_carry_no_secret(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """(The endpoint, as ``acp-progress agui --yes`` builds it, and this project's agent are served
    in this process: what the stream and the log carry is the point, not their processes; ``cat``,
    the command the agent runs, is a process of its own.)"""
    from acp_adapter.client.driver import allow_all
    from acp_adapter.config import Settings
    from acp_adapter.frontends.agui.app import create_app
    from acp_adapter.frontends.agui.endpoint import AguiOptions
    from tests.helpers.agui_http import Served, run, run_input

    use_in_process_agui_agents(monkeypatch)
    caplog.set_level(logging.INFO)  # the level the endpoint's process logs at (agent_env)
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    settings = Settings.load({**os.environ, **env}, flags={})
    options = AguiOptions(cwd=str(workspace), permission_policy=allow_all, agent_env=env, summary=settings)
    served = Served(create_app(options)).start()
    try:
        events = run(served.url, run_input("t-creds", PROMPT, run_id="r-creds"), timeout=60)
    finally:
        served.stop()
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(deltas) > 10
    assert_no_secret("AG-UI", json.dumps(events))
    assert_no_secret("AG-UI deltas", "".join(deltas) + "[REDACTED]")
    assert_no_secret("agui log", caplog.text, shown=False)


def test_the_workspace_really_holds_the_secrets() -> None:
    """The fixture's secrets are what the file says (guards against a typo making the test vacuous)."""
    for secret in SECRETS.values():
        assert secret in CREDS
    assert ROOT.is_dir()
