"""A Ctrl-C some library wrapped in its own error is still a Ctrl-C: ``main`` exits 130.

A press while pydantic builds a schema at import can surface as ``pydantic_core.SchemaError``, not
only as a wrapping RuntimeError; recognising only the latter would end in a traceback and exit 1
(about once in ~100 trials of ``acp-progress agui`` with SIGINT between 0.1 s and 3 s).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest
from pydantic_core import SchemaError

from acp_adapter.cli import descriptor, main


def _wrapped(make: Callable[[], BaseException]) -> Callable[..., int]:
    def run(args: argparse.Namespace, settings: object = None) -> int:
        raise make()

    return run


def _schema_error_from_ctrl_c() -> BaseException:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as press:
            raise SchemaError("Error building schema: KeyboardInterrupt()") from press
    except SchemaError as exc:
        return exc


def _two_levels_deep() -> BaseException:
    try:
        raise _schema_error_from_ctrl_c()
    except SchemaError:
        try:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance")  # context: the SchemaError
        except RuntimeError as exc:
            return exc


def _in_a_group() -> BaseException:
    return ExceptionGroup("unhandled errors in a TaskGroup", [ValueError("x"), _schema_error_from_ctrl_c()])


@pytest.mark.parametrize(
    "make",
    [_schema_error_from_ctrl_c, _two_levels_deep, _in_a_group],
    ids=["cause", "context-chain", "group"],
)
def test_an_error_caused_by_ctrl_c_exits_130(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], BaseException]
) -> None:
    monkeypatch.setattr(descriptor, "run", _wrapped(make))
    assert main(["descriptor", "x.json"]) == 130


def test_an_error_without_ctrl_c_in_its_chain_still_propagates(monkeypatch: pytest.MonkeyPatch) -> None:
    def make() -> BaseException:
        try:
            raise OSError("disk full")
        except OSError as cause:
            try:
                raise SchemaError("broken schema") from cause
            except SchemaError as exc:
                return exc

    monkeypatch.setattr(descriptor, "run", _wrapped(make))
    with pytest.raises(SchemaError, match="broken schema"):
        main(["descriptor", "x.json"])
