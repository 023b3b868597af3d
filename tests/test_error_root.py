"""Every exception the package raises on purpose derives from ``AcpProgressError`` (issue 19), so
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
