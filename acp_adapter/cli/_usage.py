"""Usage errors that help: the subcommand's own usage, and a "did you mean" for a near miss.

argparse hands an unknown flag of a subcommand (``watch --yess hi``) up to the top-level parser,
which then prints the top-level usage — nothing about ``watch`` and no hint that ``--yes`` was
meant. :class:`UsageParser` is the parser class of the command line and of every subcommand
(argparse's subparsers take their parent's class): a subcommand's parser reports its own unknown
arguments with its own usage and the closest flags (:mod:`difflib`), and a mistyped subcommand
name gets the closest command names.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from typing import NoReturn

__all__ = ["UsageParser", "suggest"]

_INVALID_CHOICE = re.compile(r"argument (?P<what>[^:]+): invalid choice: '(?P<given>[^']*)'")


def suggest(given: str, candidates: Iterable[str]) -> list[str]:
    """The candidates close to ``given`` (at most three, closest first)."""
    import difflib  # only on an error: start-up stays light

    return difflib.get_close_matches(given, list(candidates), n=3, cutoff=0.6)


def _did_you_mean(options: Sequence[str]) -> str:
    if not options:
        return ""
    return " (did you mean " + " or ".join(options) + "?)"


class UsageParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors name the subcommand and suggest the nearest spelling."""

    def _is_subcommand(self) -> bool:
        return " " in self.prog  # "acp-progress watch": made by add_subparsers().add_parser

    def _option_strings(self) -> list[str]:
        return [option for action in self._actions for option in action.option_strings]

    def _subcommand_names(self) -> list[str]:
        names: list[str] = []
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                names.extend(action.choices)
        return names

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._is_subcommand():
            # A subcommand's leftovers are always mistakes (no command here takes unknown
            # arguments): report them here, where this parser's usage and flags are known.
            self.error(self.unrecognized(extras))
        return parsed, extras

    def unrecognized(self, extras: Sequence[str]) -> str:
        """``unrecognized arguments: --yess (did you mean --yes?)``."""
        parts = []
        for extra in extras:
            if extra.startswith("-"):
                flag = extra.split("=", 1)[0]
                parts.append(extra + _did_you_mean(suggest(flag, self._option_strings())))
            else:
                parts.append(extra)
        return "unrecognized arguments: " + " ".join(parts)

    def error(self, message: str) -> NoReturn:
        """The usage of this (sub)command, the message, and the nearest spelling of a mistyped
        command or choice; exit status 2, as argparse's own."""
        found = _INVALID_CHOICE.search(message)
        if found is not None:
            given = found.group("given")
            choices: list[str] = []
            for action in self._actions:
                if action.choices is not None and (
                    found.group("what") in (action.metavar, action.dest, *action.option_strings)
                    or "/".join(action.option_strings) == found.group("what")
                ):
                    choices.extend(str(choice) for choice in action.choices)
            choices = choices or self._subcommand_names()
            message += _did_you_mean(suggest(given, choices))
        self.print_usage(sys.stderr)
        hint = f"run {self.prog} --help for every option"
        self.exit(2, f"{self.prog}: error: {message}\n{hint}\n")
