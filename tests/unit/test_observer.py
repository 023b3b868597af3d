"""The one update observer interface: order, containment, and changes while delivering."""

from __future__ import annotations

import logging
from typing import Any

from acp_adapter.protocol.observer import Observers


class Recorder:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def observe(self, update: Any) -> None:
        self.log.append(f"{self.name}:{update}")


class Failing:
    def observe(self, update: Any) -> None:
        raise RuntimeError("boom with ghp_abcdefghijklmnopqrstuvwxyz0123456789")


def test_observers_are_called_in_order_and_a_failing_one_is_logged_redacted_and_skipped(caplog):
    log: list[str] = []
    observers = Observers([Recorder(log, "a")], name="test observer")
    observers.add(Failing())
    observers.add(Recorder(log, "b"))
    with caplog.at_level(logging.WARNING, logger="acp_progress.observers"):
        observers.observe(1)
        observers.observe(2)
    assert log == ["a:1", "b:1", "a:2", "b:2"]
    assert len(caplog.records) == 2 and "test observer Failing failed" in caplog.text
    assert "ghp_abcdefghij" not in caplog.text


def test_an_observer_added_or_removed_while_delivering_takes_effect_from_the_next_update():
    log: list[str] = []
    observers = Observers(name="test")
    late = Recorder(log, "late")

    class AddsAnother:
        def observe(self, update: Any) -> None:
            log.append(f"adder:{update}")
            observers.add(late)
            observers.discard(self)

    observers.add(AddsAnother())
    observers.observe(1)
    observers.observe(2)
    assert log == ["adder:1", "late:2"]
    observers.discard(late)
    observers.discard(late)  # a second discard is no error
    assert len(observers) == 0


def test_observers_nest_as_one_observer():
    log: list[str] = []
    inner = Observers([Recorder(log, "x")])
    Observers([inner, Recorder(log, "y")]).observe("u")
    assert log == ["x:u", "y:u"]
