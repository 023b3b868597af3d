"""The agent's own tools: read a file, list the tree, search text, run a command, a long task.

All paths stay inside the session's workspace: ``..`` escapes and symlinks that resolve outside
are rejected with a clear error. Long tools report honest progress through ``ctx.progress``
(files scanned of total, steps done) — never an estimate.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from acp_adapter.safety.secret_env import command_environment
from acp_adapter.tooling.calls import Concern
from acp_adapter.tooling.display import TerminalShown
from acp_adapter.tooling.edits import EDIT_TOOLS
from acp_adapter.tooling.paths import display as _display
from acp_adapter.tooling.paths import open_regular, resolve_in_roots
from acp_adapter.tooling.toolbox import Tool, Toolbox, ToolContext, ToolError, ToolReturn

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".tox"}
)
READ_CAP = 256 * 1024
OUTPUT_CAP = 64 * 1024
MAX_MATCHES = 200
MAX_LIST = 500


def _is_binary(sample: bytes) -> bool:
    return b"\x00" in sample


def hard_link_concern(what: str, links: int | None = None) -> Concern:
    """Why a read asks first: a hard link inside the workspace may be the very file (the same
    inode) as one outside it, which the workspace check cannot see — a link count above one is
    the only sign."""
    count = f" ({links} names for one file)" if links is not None else ""
    return Concern(
        reason=f"{what}{count}: the same file may also be outside the workspace",
        rule="read:hard-link",
        covers="reading hard-linked files",
    )


# ---------------------------------------------------------------- read_file


def read_file(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    root, path = resolve_in_roots(ctx.cwd, ctx.extra_roots, args["path"])
    if ctx.host is not None and ctx.host.reads_files and not path.is_dir():
        return _read_from_client(ctx, path)
    if not path.exists():
        raise ToolError(f"no such file: {args['path']}")
    if path.is_dir():
        raise ToolError(f"{args['path']} is a directory; use list_dir")
    with open_regular(root, path) as handle:
        info = os.fstat(handle.fileno())
        if info.st_nlink > 1:  # asked about the very file this descriptor reads
            ctx.confirm(hard_link_concern(f"{_display(ctx.cwd, path)} is a hard link", info.st_nlink))
        size = info.st_size
        data = handle.read(READ_CAP)
    if _is_binary(data[:4096]):
        raise ToolError(f"{args['path']} looks like a binary file ({size} bytes)")
    text = data.decode("utf-8", errors="replace")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    note = f"\n… (truncated: showing {READ_CAP} of {size} bytes)" if size > READ_CAP else ""
    shown = _display(ctx.cwd, path)
    return ToolReturn(text + note, f"{shown} ({lines} lines)", {"path": shown, "bytes": size, "lines": lines})


def _read_from_client(ctx: ToolContext, path: Path) -> ToolReturn:
    """``read_file`` through the client's ``fs/read_text_file``: its unsaved buffer, if any (the
    path was checked against the workspace first, as for a local read)."""
    assert ctx.host is not None
    try:
        info = os.lstat(path)
    except OSError:
        info = None  # a buffer the editor has not saved yet: no file to be linked
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        ctx.confirm(hard_link_concern(f"{_display(ctx.cwd, path)} is a hard link", info.st_nlink))
    text = ctx.host.read_text(str(path))
    size = len(text.encode("utf-8", "surrogatepass"))
    note = ""
    if size > READ_CAP:
        text = text.encode("utf-8", "surrogatepass")[:READ_CAP].decode("utf-8", "ignore")
        note = f"\n… (truncated: showing {READ_CAP} of {size} bytes)"
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    shown = _display(ctx.cwd, path)
    return ToolReturn(
        text + note,
        f"{shown} ({lines} lines, from the editor)",
        {"path": shown, "bytes": size, "lines": lines, "source": "editor"},
    )


# ---------------------------------------------------------------- list_dir


def _walk(root: Path, depth: int) -> Iterator[tuple[Path, int]]:
    try:
        entries = sorted(root.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return
    for entry in entries:
        yield entry, depth
        if entry.is_dir() and not entry.is_symlink() and entry.name not in SKIP_DIRS and depth > 0:
            yield from _walk(entry, depth - 1)


def list_dir(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    _, root = resolve_in_roots(ctx.cwd, ctx.extra_roots, args.get("path", ".") or ".")
    if not root.is_dir():
        raise ToolError(f"not a directory: {args.get('path', '.')}")
    depth = max(0, min(int(args.get("depth", 1)), 5))
    lines: list[str] = []
    for entry, level in _walk(root, depth):
        if len(lines) >= MAX_LIST:
            lines.append(f"… (stopped at {MAX_LIST} entries)")
            break
        indent = "  " * (depth - level)
        suffix = "/" if entry.is_dir() else ""
        lines.append(f"{indent}{entry.name}{suffix}")
    shown = _display(ctx.cwd, root)
    return ToolReturn(
        "\n".join(lines), f"{len(lines)} entries in {shown}", {"path": shown, "entries": len(lines)}
    )


# ---------------------------------------------------------------- search


def _candidate_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            files.append(Path(dirpath) / name)
    return files


#: The largest file ``search`` reads.
SEARCH_FILE_CAP = 4 * 1024 * 1024


def _searchable(base: Path, path: Path, *, linked_ok: bool) -> bytes | None:
    """The bytes of a file under ``base`` (the workspace or an additional directory) to search,
    or None (a symlink out of its root, not regular, too large, or hard-linked when
    ``linked_ok`` is False: such a file is searched only once allowed)."""
    try:
        resolved = path.resolve()
        if not resolved.is_relative_to(base):  # a symlink out of its root is skipped
            return None
        with open_regular(base, resolved) as handle:  # a FIFO or device is skipped
            info = os.fstat(handle.fileno())
            if info.st_size > SEARCH_FILE_CAP or (info.st_nlink > 1 and not linked_ok):
                return None
            return handle.read()
    except (OSError, ToolError):
        return None


def _hard_linked(path: Path) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def search(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    query = args["query"]
    if not query:
        raise ToolError("query must not be empty")
    base, root = resolve_in_roots(ctx.cwd, ctx.extra_roots, args.get("path", ".") or ".")
    files = _candidate_files(root)
    total = len(files)
    ctx.progress(0, total, f"Scanning {total} files")
    hits = _SearchHits(query.lower(), ctx.cwd)
    linked: list[Path] = []  # hard-linked files: searched only once the person allowed it
    last_report = time.monotonic()
    for index, path in enumerate(files, start=1):
        ctx.cancel.raise_if_cancelled()
        data = _searchable(base, path, linked_ok=False)
        if data is not None:
            hits.scan(path, data)
        elif _hard_linked(path):
            linked.append(path)
        now = time.monotonic()
        if now - last_report >= 0.05 or index == total:
            ctx.progress(index, total, f"Scanned {index}/{total} files")
            last_report = now
    skipped = _search_hard_linked(linked, base, hits, ctx) if linked else ""
    # one count for the card and the answer: every match and every file with one, whatever is listed
    found = f"{_count(hits.matches, 'match', 'matches')} in {_count(hits.files, 'file', 'files')}"
    listed = f"; the first {len(hits.listed)} listed" if len(hits.listed) < hits.matches else ""
    header = f"{found} (scanned {_count(total, 'file', 'files')}{listed}{skipped})"
    details = {"matches": hits.matches, "files": hits.files, "listed": len(hits.listed)}
    return ToolReturn("\n".join([header, *hits.listed]), found, details)


class _SearchHits:
    """What a search found: every match and every file with one counted, the first
    :data:`MAX_MATCHES` lines listed."""

    def __init__(self, needle: str, cwd: Path) -> None:
        self._needle = needle
        self._cwd = cwd
        self.listed: list[str] = []
        self.matches = self.files = 0

    def scan(self, path: Path, data: bytes) -> None:
        if _is_binary(data[:4096]):
            return
        hit = False
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if self._needle in line.lower():
                hit = True
                self.matches += 1
                if len(self.listed) < MAX_MATCHES:
                    self.listed.append(f"{_display(self._cwd, path)}:{number}: {line.strip()[:200]}")
        self.files += hit


def _search_hard_linked(linked: list[Path], base: Path, hits: _SearchHits, ctx: ToolContext) -> str:
    """Search the hard-linked files once the person allowed it; else what the answer says was
    not searched, and why."""
    many = _count(len(linked), "hard-linked file", "hard-linked files")
    names = ", ".join(_display(ctx.cwd, p) for p in linked[:5]) + (", …" if len(linked) > 5 else "")
    try:
        ctx.confirm(hard_link_concern(f"the search would read {many} ({names})"))
    except ToolError as refused:
        ctx.cancel.raise_if_cancelled()
        return f"; {many} not searched: {refused}"
    for path in linked:
        ctx.cancel.raise_if_cancelled()
        data = _searchable(base, path, linked_ok=True)
        if data is not None:
            hits.scan(path, data)
    return ""


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


# ---------------------------------------------------------------- run_command


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# Process groups of the commands run so far. A command that backgrounds a job (``sleep 300 &``)
# returns while the job lives on in the command's group; the agent kills those groups when it
# shuts down (``kill_started_processes``), so nothing it started outlives it.
#
# A process group id is a pid, and the kernel recycles it once the group is empty. Killing a
# remembered pgid blindly at shutdown could therefore hit a stranger's group that took the
# number. So each group is remembered with the identity (pid, start time) of the members it had
# when its command ended, a group is forgotten as soon as its command ends with no member left,
# and a group is signalled only while one of its remembered members is still in it: a pgid cannot
# be recycled while any member of the group exists.
_GROUPS: dict[int, frozenset[tuple[int, int]]] = {}
_GROUPS_LOCK = threading.Lock()
_PROC = "/proc"


def _start_time(stat: str) -> tuple[int, int] | None:
    """``(pgid, start time in clock ticks)`` from a ``/proc/PID/stat`` line."""
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[2]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _group_members(pgid: int) -> frozenset[tuple[int, int]]:
    """The ``(pid, start time)`` of every live process in group ``pgid`` (empty when none, or when
    ``/proc`` cannot be read)."""
    members: set[tuple[int, int]] = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"{_PROC}/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                    parsed = _start_time(f.read())
            except OSError:
                continue
            if parsed is not None and parsed[0] == pgid:
                members.add((int(entry.name), parsed[1]))
    return frozenset(members)


def _still_ours(pgid: int, members: frozenset[tuple[int, int]]) -> bool:
    return bool(members & _group_members(pgid))


def _remember_group(pgid: int) -> None:
    """Called once the command's leader runs (unreaped, so the pgid is ours while it lives)."""
    with _GROUPS_LOCK:
        _GROUPS[pgid] = _group_members(pgid)


def _settle_group(pgid: int) -> None:
    """Called once the command ended: keep the group only while something of it lives on."""
    members = _group_members(pgid)
    with _GROUPS_LOCK:
        if members:
            _GROUPS[pgid] = members
        else:
            _GROUPS.pop(pgid, None)


def kill_started_processes() -> int:
    """Kill every process group a command started that still has members; returns how many."""
    with _GROUPS_LOCK:
        groups = dict(_GROUPS)
        _GROUPS.clear()
    killed = 0
    for pgid, members in groups.items():
        if not _still_ours(pgid, members):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            killed += 1
    return killed


def run_command(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    command = args["command"].strip()
    if not command:
        raise ToolError("command must not be empty")
    timeout = float(args.get("timeout", 30))
    if not 0 < timeout <= 600:
        raise ToolError("timeout must be between 0 and 600 seconds")
    if ctx.host is not None and ctx.host.runs_terminals:
        return _run_in_client_terminal(command, timeout, ctx)
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=ctx.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so cancel/timeout kill the whole tree
        env=command_environment(os.environ),  # none of the package's secrets (model keys, tokens)
    )
    _remember_group(proc.pid)
    output = _OutputReader(cast(io.BufferedReader, proc.stdout))  # stdout=PIPE: never None
    card = _CardOutput(ctx, output.chunks)
    try:
        _watch(proc, output, card, timeout, ctx)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        proc.wait()
        _settle_group(proc.pid)
        output.join(timeout=ctx.output_wait)  # a background job may hold the pipe for good
        card.ended(proc.returncode, cut=output.size > OUTPUT_CAP)
    return _command_return(proc.returncode, output, card.shown)


class _OutputReader:
    """A command's output, read on a thread of its own so the watch never blocks on the pipe:
    the first :data:`OUTPUT_CAP` bytes kept, every byte and line counted."""

    def __init__(self, pipe: io.BufferedReader) -> None:
        self._pipe = pipe
        self.chunks: list[bytes] = []
        self.size = 0
        self.lines = 0
        self._thread = threading.Thread(target=self._drain, name="run_command-output", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        for chunk in iter(lambda: self._pipe.read1(4096), b""):
            self.lines += chunk.count(b"\n")
            if self.size < OUTPUT_CAP:
                self.chunks.append(chunk[: OUTPUT_CAP - self.size])
            self.size += len(chunk)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout=timeout)


def _watch(
    proc: subprocess.Popen[bytes], output: _OutputReader, card: _CardOutput, timeout: float, ctx: ToolContext
) -> None:
    """Follow the command until it exits: its output onto the card, the lines so far as progress;
    the turn's cancel or the timeout kills its process group."""
    started = time.monotonic()
    reported = 0
    while proc.poll() is None:
        card.follow()
        if ctx.cancel.wait(0.05):
            _kill_group(proc)
            ctx.cancel.raise_if_cancelled()
        if time.monotonic() - started > timeout:
            _kill_group(proc)
            raise ToolError(f"command timed out after {timeout:g}s")
        if output.lines != reported:
            reported = output.lines
            ctx.progress(message=f"{reported} lines of output so far")


def _command_return(code: int, output: _OutputReader, shown: tuple[TerminalShown, ...]) -> ToolReturn:
    """What the model reads of a finished command: its output (cut at :data:`OUTPUT_CAP`, saying
    so) and, unless it succeeded, its exit code."""
    text = b"".join(output.chunks).decode("utf-8", errors="replace")
    if output.size > OUTPUT_CAP:
        text += f"\n… (output truncated: {output.size} bytes)"
    text = text if text else "(no output)"
    if code != 0:
        text += f"\n(exit code {code})"
    return ToolReturn(
        text,
        f"exit code {code}",
        {"exit_code": code, "output_bytes": output.size},
        failed=code != 0,
        display=shown,
    )


class _CardOutput:
    """The command's output followed onto its card's terminal, when the client renders one from
    the card (:meth:`~acp_adapter.tooling.host.ToolHost.card_terminal`); nothing otherwise."""

    def __init__(self, ctx: ToolContext, chunks: list[bytes]) -> None:
        self._terminal = ctx.host.card_terminal(ctx.call) if ctx.host is not None else None
        self._chunks = chunks  # appended by the reader thread; read here up to its length
        self._sent = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        if self._terminal is not None:
            self._terminal.started(str(ctx.cwd))

    @property
    def shown(self) -> tuple[TerminalShown, ...]:
        return (TerminalShown(self._terminal.terminal_id),) if self._terminal is not None else ()

    def follow(self) -> None:
        if self._terminal is None:
            return
        new = self._chunks[self._sent :]
        self._sent += len(new)
        if new and (text := self._decoder.decode(b"".join(new))):
            self._terminal.output(text)

    def ended(self, returncode: int | None, *, cut: bool) -> None:
        if self._terminal is None:
            return
        self.follow()
        if rest := self._decoder.decode(b"", final=True):
            self._terminal.output(rest)
        if cut:  # the capture stopped at OUTPUT_CAP: the card says so, as the result does
            self._terminal.output(f"\n… (output truncated at {OUTPUT_CAP} bytes)\n")
        if returncode is not None and returncode < 0:
            self._terminal.exited(None, _signal_name(-returncode))
        else:
            self._terminal.exited(returncode, None)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _run_in_client_terminal(command: str, timeout: float, ctx: ToolContext) -> ToolReturn:
    """``run_command`` in the editor's terminal (it advertised ``terminal``): the card shows the
    terminal, the editor runs the command with its own environment and shell."""
    assert ctx.host is not None
    run = ctx.host.run_terminal(ctx.call, command, str(ctx.cwd), timeout, ctx.cancel)
    output = run.output
    if run.truncated:
        output = f"… (the start of the output was cut by the editor)\n{output}"
    code = run.exit_code
    summary = f"exit code {code}" if code is not None else f"killed by {run.signal or 'a signal'}"
    text = output if output else "(no output)"
    if code != 0:
        text += f"\n({summary})"
    size = len(run.output.encode("utf-8", "surrogatepass"))
    return ToolReturn(
        text,
        summary,
        {"exit_code": code, "output_bytes": size, "terminal_id": run.terminal_id},
        failed=code != 0,
        display=(TerminalShown(run.terminal_id),),
    )


# ---------------------------------------------------------------- wait (a long task for demos)


def wait(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    seconds = float(args.get("seconds", 3))
    if not 0 <= seconds <= 600:
        raise ToolError("seconds must be between 0 and 600")
    label = str(args.get("label", "long task"))
    steps = max(1, min(int(seconds * 2) or 1, 20))
    for step in range(1, steps + 1):
        if ctx.cancel.wait(seconds / steps):
            ctx.cancel.raise_if_cancelled()
        ctx.progress(step, steps, f"{label}: step {step} of {steps}")
    return ToolReturn(
        f"{label} finished after {seconds:g}s ({steps} steps)", f"{steps} steps", {"steps": steps}
    )


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


BUILTIN_TOOLS: tuple[Tool, ...] = (
    Tool(
        "read_file",
        "Read a UTF-8 text file in the workspace.",
        _schema({"path": {"type": "string", "description": "file path relative to the workspace"}}, ["path"]),
        read_file,
    ),
    Tool(
        "list_dir",
        "List a directory tree in the workspace.",
        _schema(
            {
                "path": {"type": "string", "description": "directory relative to the workspace"},
                "depth": {"type": "integer", "description": "levels below the directory (0-5)"},
            },
            [],
        ),
        list_dir,
    ),
    Tool(
        "search",
        "Search text (case-insensitive) across the files of the workspace.",
        _schema(
            {
                "query": {"type": "string", "description": "text to look for"},
                "path": {"type": "string", "description": "directory to search (default: workspace)"},
            },
            ["query"],
        ),
        search,
    ),
    Tool(
        "run_command",
        "Run a shell command in the workspace (asks the user for permission).",
        _schema(
            {
                "command": {"type": "string", "description": "the shell command line"},
                "timeout": {
                    "type": "number",
                    "description": "seconds before the command is killed (default 30)",
                },
            },
            ["command"],
        ),
        run_command,
        dangerous=True,
    ),
    Tool(
        "wait",
        "A long-running task that reports step progress (for demos and tests).",
        _schema(
            {
                "seconds": {"type": "number", "description": "how long the task runs"},
                "label": {"type": "string", "description": "what the task is called"},
            },
            [],
        ),
        wait,
    ),
    *EDIT_TOOLS,
)


def default_toolbox(cwd: str | Path, extra_roots: tuple[str, ...] = ()) -> Toolbox:
    return Toolbox(BUILTIN_TOOLS, cwd, extra_roots)
