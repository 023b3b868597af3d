"""``acp-progress ARGS`` run inside the test process, with its stdin, stdout and stderr on files,
and this project's agent served in the same process (see
:func:`tests.helpers.shared_servers.in_process_link_class`).

For front-end tests on pipes whose point is what ``watch`` and ``chat`` print and the status they
end with (JSON lines, replays, failed turns, whole lines): a command line and an agent process add
two interpreter starts and two imports of the ACP SDK (about two seconds of CPU) and prove nothing
there. The command's code is the production code from :func:`acp_adapter.cli.main` on — the
parser, the settings from the environment, the logging, the front-end and its driver; the test
process's working directory, environment, streams, logging and SIGINT handler are put back after.

What needs a process of its own — a terminal, Ctrl-C, a reader that goes away, the agent's crash —
runs ``python -m acp_adapter.cli`` (or :mod:`tests.helpers.cli_agent_inside`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.helpers.acp_agent import TEMP_ROOT
from tests.helpers.cli_agent_inside import agent_inside

__all__ = ["run_cli_inside"]


@contextlib.contextmanager
def _environment(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> Iterator[None]:
    """``env`` as the whole of ``os.environ`` and ``cwd`` as the working directory, both put back."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_cli_inside(
    args: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``acp-progress ARGS`` with ``stdin`` as its input, in ``cwd`` with ``env`` as its whole
    environment: its exit status and what it wrote, as :func:`subprocess.run` would give them."""
    from tests.helpers.shared_servers import cli_in_process

    with tempfile.TemporaryDirectory(dir=TEMP_ROOT) as tmp:
        files = Path(tmp)
        (files / "stdin").write_text(stdin, encoding="utf-8")
        saved_stdin = sys.stdin
        sigint = signal.getsignal(signal.SIGINT)
        with (
            open(files / "stdin", encoding="utf-8") as fake_in,
            open(files / "stdout", "w", encoding="utf-8") as fake_out,
            open(files / "stderr", "w", encoding="utf-8") as fake_err,
        ):
            code: Any
            try:
                with _environment(env, cwd), agent_inside(), cli_in_process() as main:
                    sys.stdin, sys.stdout, sys.stderr = fake_in, fake_out, fake_err
                    try:
                        code = main(list(args), own_process=False)
                    except SystemExit as exc:  # argparse: a usage error, --help
                        code = exc.code if isinstance(exc.code, int) else 1
                    sys.stdout.flush()
                    sys.stderr.flush()
            finally:
                sys.stdin = saved_stdin
                signal.signal(signal.SIGINT, sigint)
        return subprocess.CompletedProcess(
            list(args),
            int(code),
            (files / "stdout").read_text(encoding="utf-8"),
            (files / "stderr").read_text(encoding="utf-8"),
        )
