"""The AG-UI endpoint under attack: a real ``acp-progress agui`` process on loopback.

Each test is one attack as a web page, a DNS-rebinding page, a slow-loris client or a log forger
would make it, against the command a user runs (its uvicorn, its admission gates, its limits),
driving this project's real agent with ``--yes`` — so a request that got through *would* run a
command, and the tests check that nothing ran. Every loop is bounded in count and time; every
socket is on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE
from tests.helpers.shared_servers import cli_in_process

pytestmark = pytest.mark.e2e

PROGRESS_AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'progress_agent.py'}"
ALLOWED_ORIGIN = "http://app.example:5173"
EVIL = "https://evil.example"
TOKEN = "t0ken-for-the-tests-" + "x" * 12
BODY_TIMEOUT = 1.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli() -> list[str]:
    return [sys.executable, "-c", "import sys; from acp_adapter.cli import main; sys.exit(main())"]


def _gate(args: tuple[str, ...], env: dict[str, str] | None) -> list[str]:
    """An endpoint without a token unless the test gives one (the token gate is tested as such)."""
    given = "--token" in args or "ACP_PROGRESS_AGUI_TOKEN" in (env or {})
    return [] if given else ["--no-token"]


class Endpoint:
    """``acp-progress agui`` with ``args`` on a free loopback port; its stderr goes to ``log``.
    With ``agent_inside``, this project's agent runs inside the endpoint's process
    (:mod:`tests.helpers.cli_agent_inside`)."""

    def __init__(
        self,
        workspace: Path,
        *args: str,
        env: dict[str, str] | None = None,
        nofile: int | None = None,
        agent_inside: bool = False,
    ) -> None:
        self.workspace = workspace
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workspace / f"agui-{self.port}.log"
        cli = [sys.executable, "-m", CLI_AGENT_INSIDE] if agent_inside else _cli()
        argv = [*cli, "agui", "--port", str(self.port), "--cwd", str(workspace), "--summary", "off"]
        argv += [*_gate(args, env), *args]
        full_env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"), **(env or {})}
        full_env.pop("ACP_PROGRESS_AGUI_TOKEN", None)
        full_env.update(env or {})

        def limit_fds() -> None:
            if nofile is not None:
                _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, env=full_env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, preexec_fn=limit_fds
            )
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, f"acp-progress agui exited:\n{self.text()}"
            assert time.monotonic() < deadline, f"no /health answer in 30 s:\n{self.text()}"
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agui-hostile")


@pytest.fixture(scope="module")
def served(workspace: Path) -> Iterator[Endpoint]:
    """This project's agent with ``--yes``: a request that gets through runs its command. The
    agent runs inside the endpoint's process (the attacks are on the endpoint: the agent's own
    process proves nothing here, and would cost a second start)."""
    endpoint = Endpoint(
        workspace,
        "--yes",
        "--allowed-origin",
        ALLOWED_ORIGIN,
        "--body-timeout",
        str(BODY_TIMEOUT),
        "--max-connections",
        "80",
        "--max-runs",
        "2",
        agent_inside=True,
    )
    try:
        yield endpoint
    finally:
        endpoint.stop()


def body(prompt: str, **ids: str) -> dict[str, Any]:
    return {
        "threadId": ids.get("threadId", f"t-{uuid.uuid4().hex[:8]}"),
        "runId": ids.get("runId", f"r-{uuid.uuid4().hex[:8]}"),
        "messages": [{"id": ids.get("messageId", "m1"), "role": "user", "content": prompt}],
    }


def sse_types(response: httpx.Response) -> list[str]:
    return [json.loads(line[6:])["type"] for line in response.iter_lines() if line.startswith("data: ")]


def wait_for(predicate: Any, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


# ---------------------------------------------------------------- a web page drives the endpoint


def test_a_no_cors_text_plain_post_from_a_page_runs_nothing(served: Endpoint) -> None:
    """403 (origin) / 415 (type) and nothing runs — a 200 would run the command under --yes."""
    pwned = served.workspace / "PWNED"
    attack = json.dumps(body("run `touch PWNED`"))
    page = httpx.post(
        served.url + "/",
        content=attack,
        headers={"Content-Type": "text/plain", "Origin": EVIL, "Sec-Fetch-Site": "cross-site"},
        timeout=5,
    )
    assert page.status_code == 403
    plain = httpx.post(served.url + "/", content=attack, headers={"Content-Type": "text/plain"}, timeout=5)
    assert plain.status_code == 415 and "application/json" in plain.json()["detail"]
    form = httpx.post(
        served.url + "/", content=attack, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert form.status_code == 415
    # the same request, admitted (JSON, no foreign origin), does run its command: the test can fail
    with httpx.stream("POST", served.url + "/", json=body("run `touch ADMITTED`"), timeout=15) as ok:
        assert ok.status_code == 200 and sse_types(ok)[-1] == "RUN_FINISHED"
    assert (served.workspace / "ADMITTED").exists()
    assert not pwned.exists()


def test_json_with_a_charset_is_json(served: Endpoint) -> None:
    response = httpx.post(
        served.url + "/",
        content=json.dumps(body("hello")),
        headers={"Content-Type": "application/json; charset=utf-8"},
        timeout=15,
    )
    assert response.status_code == 200 and "RUN_FINISHED" in response.text


def test_dns_rebinding_host_is_a_403_before_anything_runs(served: Endpoint) -> None:
    """A page on evil.example:PORT (resolving to 127.0.0.1) gets 403, never the stream."""
    for host in (f"evil.example:{served.port}", "evil.example", f"127.0.0.1.evil.example:{served.port}"):
        response = httpx.post(
            served.url + "/", json=body("run `touch REBOUND`"), headers={"Host": host}, timeout=5
        )
        assert response.status_code == 403, host
        assert httpx.get(served.url + "/health", headers={"Host": host}, timeout=5).status_code == 403
    assert not (served.workspace / "REBOUND").exists()
    for host in (f"localhost:{served.port}", f"[::1]:{served.port}", f"127.0.0.1:{served.port}"):
        assert httpx.get(served.url + "/health", headers={"Host": host}, timeout=5).status_code == 200, host


def test_a_loopback_host_with_another_port_is_a_403(served: Endpoint) -> None:
    """The Host gate admits the bound loopback name *with the port*, not the name on any port."""
    wrong = served.port + 1 if served.port < 65535 else served.port - 1
    for host in (f"127.0.0.1:{wrong}", f"localhost:{wrong}", f"[::1]:{wrong}", "localhost", "127.0.0.1:x"):
        response = httpx.post(
            served.url + "/", json=body("run `touch WRONGPORT`"), headers={"Host": host}, timeout=5
        )
        assert response.status_code == 403, host
        assert httpx.get(served.url + "/health", headers={"Host": host}, timeout=5).status_code == 403, host
    assert not (served.workspace / "WRONGPORT").exists()
    assert "not an allowed port for that host" in served.text()


def test_foreign_origins_and_cross_site_fetches_are_refused(served: Endpoint) -> None:
    health = served.url + "/health"
    assert httpx.get(health, headers={"Origin": EVIL}, timeout=5).status_code == 403
    assert httpx.get(health, headers={"Origin": "null"}, timeout=5).status_code == 403
    assert httpx.get(health, headers={"Sec-Fetch-Site": "cross-site"}, timeout=5).status_code == 403
    # the server's own origin, and fetches that are not cross-site, are fine
    own = {"Origin": served.url, "Sec-Fetch-Site": "same-origin"}
    assert httpx.get(health, headers=own, timeout=5).status_code == 200
    for site in ("same-site", "none"):
        assert httpx.get(health, headers={"Sec-Fetch-Site": site}, timeout=5).status_code == 200
    other_port = {"Origin": f"http://127.0.0.1:{served.port + 1}"}
    assert httpx.get(health, headers=other_port, timeout=5).status_code == 403
    refused = httpx.post(
        served.url + "/", json=body("run `touch CROSS`"), headers={"Sec-Fetch-Site": "cross-site"}, timeout=5
    )
    assert refused.status_code == 403
    assert not (served.workspace / "CROSS").exists()


def test_an_allowed_origin_gets_cors_and_preflight_others_do_not(served: Endpoint) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
        "Sec-Fetch-Site": "cross-site",
    }
    ok = httpx.options(served.url + "/", headers={**preflight, "Origin": ALLOWED_ORIGIN}, timeout=5)
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "POST" in ok.headers["access-control-allow-methods"]
    assert "content-type" in ok.headers["access-control-allow-headers"].lower()
    evil = httpx.options(served.url + "/", headers={**preflight, "Origin": EVIL}, timeout=5)
    assert evil.status_code == 403 and "access-control-allow-origin" not in evil.headers
    # the allowed origin's real request runs, with CORS headers a browser lets its page read
    with httpx.stream(
        "POST",
        served.url + "/",
        json=body("hello"),
        headers={"Origin": ALLOWED_ORIGIN, "Sec-Fetch-Site": "cross-site"},
        timeout=15,
    ) as response:
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
        assert sse_types(response)[-1] == "RUN_FINISHED"


# ---------------------------------------------------------------- the token


def test_a_non_loopback_bind_without_a_token_refuses_to_start(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ACP_PROGRESS_AGUI_TOKEN", None)
    # one real process: the exit status and the one stderr line of the command a user runs ...
    done = subprocess.run(
        [*_cli(), "agui", "--host", "0.0.0.0", "--port", "1", "--cwd", str(workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "without a token" in lines[0] and "ACP_PROGRESS_AGUI_TOKEN" in lines[0]
    # ... the other addresses and a short token take the same path before anything starts
    monkeypatch.delenv("ACP_PROGRESS_AGUI_TOKEN", raising=False)
    with cli_in_process() as main:
        for host in ("::", "192.0.2.10"):
            capsys.readouterr()
            assert main(["agui", "--host", host, "--port", "1", "--cwd", str(workspace)]) == 2
            lines = capsys.readouterr().err.strip().splitlines()
            assert len(lines) == 1 and "without a token" in lines[0] and "ACP_PROGRESS_AGUI_TOKEN" in lines[0]
        capsys.readouterr()
        code = main(["agui", "--host", "0.0.0.0", "--token", "short", "--cwd", str(workspace)])
        err = capsys.readouterr().err
    assert code == 2 and "at least 16 characters" in err and "short" not in err[err.index("characters") :]


@pytest.fixture(scope="module")
def limited(workspace: Path) -> Iterator[Endpoint]:
    """Extra Host names admitted, a 4 KiB body limit and a token: one endpoint for the tests of
    them (none of the three is in the way of the others' requests). This project's agent runs
    inside its process (what the gates let through is the point, not the agent's process)."""
    endpoint = Endpoint(
        workspace,
        "--allowed-host",
        "proxy.example",
        "--allowed-host",
        "pinned.example:8443",
        "--allowed-host",
        "*.wild.example",
        "--max-body-bytes",
        "4096",
        env={"ACP_PROGRESS_AGUI_TOKEN": TOKEN},
        agent_inside=True,
    )
    try:
        yield endpoint
    finally:
        endpoint.stop()


def test_allowed_hosts_with_a_port_admit_that_port_only_and_without_one_any_port(limited: Endpoint) -> None:
    health = limited.url + "/health"
    admitted = ("proxy.example", "proxy.example:1", "pinned.example:8443", "a.wild.example:9")
    for host in admitted:
        assert httpx.get(health, headers={"Host": host}, timeout=5).status_code == 200, host
    for host in (
        "pinned.example",
        "pinned.example:8444",
        f"pinned.example:{limited.port}",
        "wild.example",
    ):
        assert httpx.get(health, headers={"Host": host}, timeout=5).status_code == 403, host


@pytest.fixture(scope="module")
def tokened(limited: Endpoint) -> Endpoint:
    """The endpoint with a token (``limited``'s: its admitted hosts and body limit change no
    answer here)."""
    return limited


def test_the_token_is_required_on_every_route_but_a_quiet_health(tokened: Endpoint) -> None:
    url = tokened.url
    for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"}, {"Authorization": TOKEN}):
        refused = httpx.post(url + "/", json=body("hello"), headers=headers, timeout=5)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert httpx.get(url + "/health", timeout=5).json() == {"status": "ok"}
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(url + "/health", headers=good, timeout=5).json()["agentRunning"] is True
    with httpx.stream("POST", url + "/", json=body("hello"), headers=good, timeout=15) as response:
        assert response.status_code == 200 and sse_types(response)[-1] == "RUN_FINISHED"
    assert TOKEN not in tokened.text()


# ---------------------------------------------------------------- slow loris, caps


def _slow_requests(port: int, count: int) -> list[socket.socket]:
    """``count`` connections: half send a head and half a body, half only part of a head; all stall."""
    sockets = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if i % 2:
            sock.sendall(
                b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % port
                + b"Content-Length: 1000\r\n\r\n"
                + b'{"threadId": "'
                + b"x" * 400
            )
        else:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Typ" % port)
        sockets.append(sock)
    return sockets


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, TimeoutError):
            return data
        if not chunk:
            return data
        data += chunk


def test_slow_loris_connections_get_408_and_health_answers_meanwhile(served: Endpoint) -> None:
    """Each such connection gets 408 within the timeout; 3,000 of them are not held 60 s+."""
    started = time.monotonic()
    stalled = _slow_requests(served.port, 50)
    try:
        assert httpx.get(served.url + "/health", timeout=2).status_code == 200
        answers = [_answer(sock) for sock in stalled]
    finally:
        for sock in stalled:
            sock.close()
    elapsed = time.monotonic() - started
    assert elapsed < BODY_TIMEOUT + 4, elapsed
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers), {a[:40] for a in answers}
    assert "Traceback" not in served.text()


def test_connections_over_the_cap_get_503_with_retry_after(served: Endpoint) -> None:
    idle = [socket.create_connection(("127.0.0.1", served.port), timeout=5) for _ in range(80)]
    try:
        wait_for(lambda: False, within=0.2)  # let the server accept them (well within the timeout)
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as extra:
            extra.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % served.port)
            answer = _answer(extra)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer.lower()
    finally:
        for sock in idle:
            sock.close()
    assert wait_for(lambda: httpx.get(served.url + "/health", timeout=2).status_code == 200)


def test_runs_over_the_cap_get_503_with_retry_after(served: Endpoint) -> None:
    with httpx.Client(timeout=15) as client:
        streams = []
        try:
            for _ in range(2):
                request = client.build_request("POST", served.url + "/", json=body("wait 3 seconds"))
                response = client.send(request, stream=True)
                assert response.status_code == 200
                streams.append(response)
            assert wait_for(lambda: httpx.get(served.url + "/health").json()["activeRuns"] == 2)
            third = httpx.post(served.url + "/", json=body("hello"), timeout=5)
            assert third.status_code == 503 and third.headers["retry-after"] == "1"
            assert "2 runs are in progress" in third.json()["detail"]
        finally:
            for response in streams:
                response.close()  # disconnect: cancels both runs
    assert wait_for(lambda: httpx.get(served.url + "/health").json()["activeRuns"] == 0, within=10)
    with httpx.stream("POST", served.url + "/", json=body("hello"), timeout=15) as response:
        assert response.status_code == 200


def test_a_body_over_the_limit_is_a_413(limited: Endpoint) -> None:
    big = body("x" * 5000)
    good = {"Authorization": f"Bearer {TOKEN}"}  # the token admits it: the size alone refuses it
    assert httpx.post(limited.url + "/", json=big, headers=good, timeout=5).status_code == 413

    def chunked() -> Iterator[bytes]:
        yield json.dumps(big).encode()  # no Content-Length: counted as it arrives

    refused = httpx.post(
        limited.url + "/", content=chunked(), headers={"Content-Type": "application/json", **good}, timeout=5
    )
    assert refused.status_code == 413


# ---------------------------------------------------------------- ids, logs


@pytest.mark.parametrize("field", ["threadId", "runId", "messageId"])
def test_ids_longer_than_256_characters_are_a_422_naming_the_field(served: Endpoint, field: str) -> None:
    response = httpx.post(served.url + "/", json=body("hello", **{field: "i" * 257}), timeout=5)
    assert response.status_code == 422
    where = "messages.0.id" if field == "messageId" else field
    assert f"{where}: longer than 256 characters" in response.json()["detail"]
    ok = httpx.post(served.url + "/", json=body("hello", **{field: "i" * 256}), timeout=15)
    assert ok.status_code == 200 and "RUN_FINISHED" in ok.text


def _tool_round(call_id: str, result_id: str) -> dict[str, Any]:
    """A RunAgentInput whose history holds an assistant tool call and its result."""
    call = {"id": call_id, "type": "function", "function": {"name": "search", "arguments": "{}"}}
    return body("hello") | {
        "messages": [
            {"id": "m-user", "role": "user", "content": "search"},
            {"id": "m-call", "role": "assistant", "toolCalls": [call]},
            {"id": "m-result", "role": "tool", "content": "no matches", "toolCallId": result_id},
            {"id": "m-again", "role": "user", "content": "hello"},
        ]
    }


def test_an_over_long_tool_call_id_is_a_422_naming_the_field(served: Endpoint) -> None:
    long = "c" * 257
    for request, where in (
        (_tool_round("call-1", long), "messages.2.toolCallId"),
        (_tool_round(long, "call-1"), "messages.1.toolCalls.0.id"),
    ):
        response = httpx.post(served.url + "/", json=request, timeout=5)
        assert response.status_code == 422, response.text
        assert f"{where}: longer than 256 characters" in response.json()["detail"]
    ok = httpx.post(served.url + "/", json=_tool_round("c" * 256, "c" * 256), timeout=15)
    assert ok.status_code == 200 and "RUN_FINISHED" in ok.text


def test_a_megabyte_run_id_is_not_repeated_into_the_stream(served: Endpoint) -> None:
    """A 1 MB runId gets a short 422, not ten copies of itself in a 10 MB stream."""
    response = httpx.post(served.url + "/", json=body("hello", runId="r" * 1_000_000), timeout=10)
    assert response.status_code == 422 and len(response.content) < 1000


def test_a_client_gone_mid_body_is_one_info_line(served: Endpoint) -> None:
    """One INFO line, no traceback — not an ERROR traceback per client."""
    before = served.text()
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % served.port
            + b'Content-Length: 1000\r\n\r\n{"threadId": '
        )
        time.sleep(0.2)
    marker = "disconnected before its request body arrived"
    assert wait_for(lambda: marker in served.text()[len(before) :])
    time.sleep(0.2)
    new = served.text()[len(before) :]
    lines = [line for line in new.splitlines() if marker in line]
    assert len(lines) == 1 and " INFO " in lines[0]
    assert "Traceback" not in new and " ERROR " not in new


def test_control_characters_in_ids_are_escaped_in_the_log(served: Endpoint) -> None:
    """A runId with a newline cannot forge a CRITICAL line, nor ESC[2J clear the terminal."""
    forged = "r1\n2099-01-01 00:00:00,000 CRITICAL acp_progress: forged\x1b[2J\r\x07"
    response = httpx.post(served.url + "/", json=body("hello", runId=forged, threadId="t\x1b]0;x\x07"))
    assert response.status_code == 200
    assert wait_for(lambda: "r1\\n2099-01-01" in served.text())
    text = served.text()
    assert not re.search(r"^2099-01-01", text, re.MULTILINE)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "forged\\x1b[2J\\r\\x07" in text and "t\\x1b]0;x\\x07" in text


def test_uvicorn_logs_go_through_the_package_formatter(served: Endpoint) -> None:
    httpx.get(served.url + "/health", timeout=5)
    assert wait_for(lambda: "uvicorn.access" in served.text())
    access = [line for line in served.text().splitlines() if "uvicorn.access" in line]
    assert all(re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO uvicorn\.access: ", a) for a in access)


def test_no_token_is_explicit_and_said_at_start(served: Endpoint) -> None:
    """``--no-token`` (this module's endpoint, as a user starts it): nothing asks for a token, and
    the start line says so."""
    assert httpx.get(served.url + "/threads").status_code == 200
    assert wait_for(lambda: "serving AG-UI" in served.text())
    assert f"the web page is at {served.url}/ - WITHOUT a token (--no-token)" in served.text()


def test_no_fd_exhaustion_flood_when_connections_pile_up(workspace: Path) -> None:
    """At the fd limit asyncio would log a traceback per accept() (240 MB in 40 s), so the
    connection cap is kept below the fd limit (160 here: 72 connections, backlog 24), the connections
    over it get 503 and are closed, the endpoint keeps serving."""
    endpoint = Endpoint(workspace, "--agent", PROGRESS_AGENT, "--body-timeout", "20", nofile=160)
    try:
        assert "at most 72 connections at once" in endpoint.text()
        sockets = [socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) for _ in range(100)]
        # the answered ones, found with select (the 72 held open never answer: waiting on each in
        # turn cost 72 timeouts)
        answered: set[socket.socket] = set()
        deadline = time.monotonic() + 5
        while len(answered) < 100 - 72 and time.monotonic() < deadline:
            readable, _, _ = select.select([s for s in sockets if s not in answered], [], [], 0.1)
            answered.update(readable)
        time.sleep(0.05)  # a late answer beyond the 28 would show as one more below
        readable, _, _ = select.select([s for s in sockets if s not in answered], [], [], 0)
        answered.update(readable)
        busy = sum(sock.recv(100).startswith(b"HTTP/1.1 503") for sock in answered)
        for sock in sockets:
            sock.close()
        assert busy >= 100 - 72
        assert wait_for(lambda: httpx.get(endpoint.url + "/health", timeout=2).status_code == 200)
        with httpx.stream("POST", endpoint.url + "/", json=body("hello"), timeout=15) as response:
            assert response.status_code == 200 and sse_types(response)[-1] == "RUN_FINISHED"
        text = endpoint.text()
        assert "Too many open files" not in text and "Traceback" not in text
        assert "connections open, the most allowed" in text
    finally:
        endpoint.stop()
