"""What an "always" answer about a command covers: the program the person saw, found as the shell
will find it, never merely a name.

"Always allow ``ls``" must not let ``./ls``, ``bin/ls -la`` or ``/abs/path/ls`` — a script from
the repository the agent works in — run unasked. So an "always allow" rule is keyed on the
*resolved* program: a bare command name is looked up in ``PATH`` the way ``sh`` looks it up (a
relative or empty ``PATH`` entry is the workspace, the command's working directory), and the rule
is offered only when the program found lies outside the workspace (following symlinks, and also
the directory it was found in). The rule covers that program named bare, with plain arguments:

* a program named by a path (``./ls``, ``bin/ls``, ``/usr/bin/ls``) never matches it, and is never
  offered "always allow" (a path names a file the model or the repository can change);
* a program inside the workspace (a ``PATH`` entry there, or a symlink into it) is never offered it;
* it is looked up again at every call: after ``bin/`` is prepended to ``PATH`` or a ``ls`` appears
  in a workspace ``PATH`` entry, the same words no longer match;
* a program whose job is to run another program or a script (a shell, ``env``, ``sudo``,
  ``xargs``, an interpreter) is never offered it: its arguments, not its name, decide what runs.

"Always reject" stays keyed on the base name: refusing every program called ``ls`` is wider than
what the person saw, and that is the safe direction.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from acp_adapter.safety.secret_env import command_environment

__all__ = ["CommandRule", "command_rule", "pinned_command", "resolve_program", "split_command"]

#: characters that make a command line more than one simple command (or change what it runs)
SHELL_OPERATORS = frozenset(";&|`$<>(){}\n\r\\*?[]~!#")

#: The prefix of an "always allow" key of a command: ``execute:program:/usr/bin/ls``. A base name
#: never contains ``/``, so it cannot collide with an "always reject" key (``execute:ls``).
PROGRAM_KEY = "program:"

#: Programs that run what their arguments name: "always allow" of them would allow anything.
_LAUNCHERS = frozenset(
    {
        "env", "sudo", "doas", "su", "runuser", "pkexec", "xargs", "nohup", "timeout", "nice", "ionice",
        "stdbuf", "setsid", "time", "watch", "chroot", "unshare", "nsenter", "flock", "busybox", "exec",
        "eval", "command", "builtin", "source", ".", "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish",
        "csh", "tcsh", "npx", "uvx", "pipx", "deno", "bun", "node", "nodejs", "perl", "ruby",
        "php", "lua", "tclsh", "awk", "gawk", "mawk", "find", "ssh", "docker", "podman",
    }
)  # fmt: skip
#: Interpreters with a version in their name: ``python3``, ``python3.12``, ``pypy3``, ``lua5.4``.
_VERSIONED = re.compile(r"^(?:python|pypy|perl|ruby|php|lua|node)[0-9.]*$")


def runs_other_programs(name: str) -> bool:
    """True for a program whose arguments choose what runs (see :data:`_LAUNCHERS`)."""
    return name in _LAUNCHERS or bool(_VERSIONED.match(name))


def split_command(command: str) -> tuple[str, bool]:
    """The first word of a command line and whether the line is a *simple* command: one program
    and its plain arguments, nothing a shell would treat specially (no operators, no assignment)."""
    simple = not any(ch in SHELL_OPERATORS for ch in command)
    try:
        words = shlex.split(command)
    except ValueError:
        words, simple = command.split(), False
    if not words:
        return "", False
    first = words[0]
    if "=" in first:  # FOO=bar prog: an assignment changes what prog does
        simple = False
    return first, simple


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_program(name: str, workspace: str, path_env: str | None) -> tuple[str | None, str]:
    """The absolute, symlink-free path ``sh`` would run for the bare ``name`` (working directory
    ``workspace``), or None, with the reason it gets no "always allow" ('' when it may)."""
    root = os.path.realpath(workspace)
    entries = (path_env if path_env is not None else os.defpath).split(os.pathsep)
    for entry in entries:
        folder = os.path.realpath(os.path.join(root, entry))  # '' and relative: the workspace
        candidate = os.path.join(folder, name)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        program = os.path.realpath(candidate)
        if _inside(folder, root) or _inside(program, root):
            return None, f"`{name}` is a program inside the workspace ({program})"
        return program, ""
    return None, f"`{name}` is not a program found on PATH"


@dataclass(frozen=True)
class CommandRule:
    """The "always" keys of one command line, and the words that tell the person what they cover."""

    #: the base name of the program (what "always reject" covers), '' for an empty line
    name: str
    #: ``KIND:NAME``: an "always reject" of any program with this base name
    reject_key: str
    #: ``KIND:program:/abs/path``: an "always allow" of this program named bare; None: not offered
    allow_key: str | None
    #: what an "always allow" covers, in words (empty when it is not offered)
    allow_covers: str
    #: why "always allow" is not offered ('' when it is)
    why_not: str

    @property
    def reject_covers(self) -> str:
        return f"every command that runs a program named `{self.name}` (any path)"


def command_rule(
    kind: str, command: str, workspace: str | None, environ: Mapping[str, str] | None = None
) -> CommandRule:
    """The rule of a command line run in ``workspace`` with the environment commands get
    (``environ`` defaults to this process's, without the package's secrets, as ``run_command``)."""
    first, simple = split_command(command.strip())
    name = os.path.basename(first) or first
    reject_key = f"{kind}:{name}"

    def refused(why: str) -> CommandRule:
        return CommandRule(name, reject_key, None, "", why)

    if not name:
        return refused("the command is empty")
    if not simple:
        return refused("the command is more than one program with plain arguments")
    if "/" in first:
        return refused(f"`{first}` names a program by its path")
    if runs_other_programs(name):
        return refused(f"`{name}` runs whatever its arguments name")
    env = command_environment(os.environ if environ is None else environ)
    program, why = resolve_program(name, workspace or os.getcwd(), env.get("PATH"))
    if program is None:
        return refused(why)
    covers = f"`{name}` run as `{name}` ({program}), with any plain arguments; not ./{name} or other paths"
    return CommandRule(name, reject_key, f"{kind}:{PROGRAM_KEY}{program}", covers, "")


def pinned_command(command: str, allow_key: str) -> str | None:
    """``command`` with its program replaced by the absolute path an "always allow" rule names
    (``ls -la`` -> ``/usr/bin/ls -la``): what runs is the program that was approved, whoever's
    ``PATH`` the shell that runs it has (an editor's terminal too), even if a file appeared on
    the way since the rule was checked. None when the line is not a simple command of that rule."""
    _, _, program = allow_key.partition(PROGRAM_KEY)
    first, simple = split_command(command.strip())
    if not program or not simple or "/" in first:
        return None
    words = shlex.split(command.strip())
    return shlex.join([program, *words[1:]])
