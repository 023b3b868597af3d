"""Every exception the package raises on purpose derives from ``AcpProgressError``, so
``except AcpProgressError`` catches all of them and nothing else."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import acp_adapter
from acp_adapter.errors import AcpProgressError


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(acp_adapter.__path__, "acp_adapter."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found


def test_every_exception_class_of_the_package_has_the_one_root():
    classes = _exception_classes()
    assert len(classes) > 20  # the walk saw the package's errors, not an empty list
    strays = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, AcpProgressError)
    )
    assert not strays, "derive these from AcpProgressError: " + ", ".join(strays)


@pytest.mark.parametrize(
    ("dotted", "also"),
    [
        ("acp_adapter.config.ConfigError", ValueError),
        ("acp_adapter.protocol.ndjson.NotStrictJson", ValueError),
        ("acp_adapter.frontends.bridges.config.BridgeConfigError", ValueError),
        ("acp_adapter.frontends.agui.request.BadRunInput", ValueError),
    ],
)
def test_the_root_adds_a_way_to_catch_and_keeps_the_standard_one(dotted, also):
    module, name = dotted.rsplit(".", 1)
    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, AcpProgressError) and issubclass(error, also)


def test_exception_chain_walks_causes_contexts_and_groups_once_each():
    from acp_adapter.errors import exception_chain

    inner = ConnectionRefusedError("refused")
    group = ExceptionGroup("all attempts failed", [inner, ValueError("other")])
    try:
        try:
            raise group
        except ExceptionGroup as exc:
            raise OSError("All connection attempts failed") from exc
    except OSError as outer:
        chain = list(exception_chain(outer))
    assert chain[0].args == ("All connection attempts failed",) and chain[1] is group
    assert inner in chain and sum(1 for e in chain if e is inner) == 1
    loop = RuntimeError("a")
    loop.__context__ = RuntimeError("b")
    loop.__context__.__context__ = loop  # a cycle ends, it does not spin
    assert len(list(exception_chain(loop))) == 2
    deep = RuntimeError("0")
    current = deep
    for i in range(1, 200):
        current.__cause__ = RuntimeError(str(i))
        current = current.__cause__
    assert len(list(exception_chain(deep))) == 50  # bounded
