"""An editor for the agent's tests: a client that offers its files (with unsaved buffers) and runs
commands in its terminals (:class:`EditorClient`), the router that hands a shared agent process's
file and terminal calls to each test's own editor (:class:`EditorRouter`), and an agent process
spawned for a client with given capabilities (:func:`spawn`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.helpers.acp_agent import ROOT, TEMP_ROOT, RecordingClient, agent_env
from tests.helpers.shared_agent import SessionRouter

__all__ = ["EDITOR", "EditorClient", "EditorRouter", "spawn"]


@contextlib.asynccontextmanager
async def spawn(client: Any, capabilities: ClientCapabilities) -> AsyncIterator[tuple[Any, Any, Path]]:
    """An agent process whose client ``client`` advertises ``capabilities``: (connection, process, log)."""
    log = Path(tempfile.mkstemp(prefix="acp-agent-", suffix=".log", dir=TEMP_ROOT)[1])
    with log.open("wb") as stderr:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "acp_adapter",
            env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"),
            cwd=str(ROOT),
            transport_kwargs={"stderr": stderr},
        ) as (conn, process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=capabilities,
                client_info=Implementation(name="pytest", version="0"),
            )
            yield conn, process, log


@dataclass
class EditorRouter(SessionRouter):
    """The one client of the shared editor process: each session's file and terminal calls go to
    the test's editor that opened it, as its updates and permission questions do."""

    def _editor(self, session_id: str) -> Any:
        """The test's editor (an :class:`EditorClient`) that opened ``session_id``."""
        return self.clients[session_id]

    async def read_text_file(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).read_text_file(session_id=session_id, **kwargs)

    async def write_text_file(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).write_text_file(session_id=session_id, **kwargs)

    async def create_terminal(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).create_terminal(session_id=session_id, **kwargs)

    async def wait_for_terminal_exit(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).wait_for_terminal_exit(session_id=session_id, **kwargs)

    async def terminal_output(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).terminal_output(session_id=session_id, **kwargs)

    async def kill_terminal(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).kill_terminal(session_id=session_id, **kwargs)

    async def release_terminal(self, session_id: str, **kwargs: Any) -> Any:
        return await self._editor(session_id).release_terminal(session_id=session_id, **kwargs)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@dataclass
class _Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None


@dataclass
class EditorClient(RecordingClient):
    """An editor that offers its files (with unsaved buffers) and runs commands in terminals."""

    buffers: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    terminals: dict[str, _Terminal] = field(default_factory=dict)
    fail: bool = False
    #: never answer fs/read_text_file (an editor stuck on a dialog)
    hang: bool = False
    read_asked: asyncio.Event = field(default_factory=asyncio.Event)
    terminal_started: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def _maybe_fail(self, method: str) -> None:
        self.calls.append(method)
        if self.fail:
            raise RequestError(-32603, f"{method} is broken in this editor")

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> ReadTextFileResponse:
        self._maybe_fail("fs/read_text_file")
        self.read_asked.set()
        if self.hang:
            await asyncio.Event().wait()
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self._maybe_fail("fs/write_text_file")
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(
        self, command: str, session_id: str, args: list[str] | None = None, cwd: str | None = None, **kw: Any
    ) -> CreateTerminalResponse:
        self._maybe_fail("terminal/create")
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal = _Terminal(process)

        async def read() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(4096):
                terminal.output.extend(chunk)

        terminal.reader = asyncio.ensure_future(read())
        terminal_id = f"term-{uuid.uuid4().hex[:8]}"
        self.terminals[terminal_id] = terminal
        self.terminal_started.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self.calls.append("terminal/wait_for_exit")
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None, signal=None)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        self.calls.append("terminal/output")
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None and code >= 0 else None
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"), truncated=False, exit_status=status
        )

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.calls.append("terminal/kill")
        _kill_group(self.terminals[terminal_id].process)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.calls.append("terminal/release")
        terminal = self.terminals.pop(terminal_id)
        _kill_group(terminal.process)  # what the command started too (sh may fork, not exec)
        await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        self.released.set()


EDITOR = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)
