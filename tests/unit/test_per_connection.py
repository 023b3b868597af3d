"""PerConnection: a value per connection object, forgotten when the connection is collected.

The weakref callback that forgets a collected connection can run at any allocation, including
inside ``make()`` while :meth:`PerConnection.get` is creating another connection's value. It
must never wait for a lock the same thread holds (a GC at that moment would deadlock).
"""

from __future__ import annotations

import gc
import threading

from acp_adapter.agent.outbox import PerConnection


class _Conn:
    """A connection stand-in that can be weakly referenced."""


def _in_thread(fn: object, seconds: float = 5.0) -> bool:
    """Run ``fn`` in a daemon thread; True when it returned within ``seconds``."""
    done = threading.Event()

    def run() -> None:
        fn()  # type: ignore[operator]
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(seconds)


def test_a_connection_collected_inside_make_does_not_deadlock() -> None:
    values: PerConnection[int] = PerConnection()
    doomed: list[_Conn] = [_Conn()]
    values.get(doomed[0], lambda: 1)

    def make_and_drop_the_other() -> int:
        doomed.clear()  # the last reference: its weakref callback runs right here, inside make()
        gc.collect()
        return 2

    other = _Conn()
    assert _in_thread(lambda: values.get(other, make_and_drop_the_other)), "get() deadlocked"
    assert values.get(other, lambda: 3) == 2
    assert len(values) == 1  # the collected connection was forgotten


def test_values_are_per_connection_and_forgotten_when_collected() -> None:
    values: PerConnection[list[int]] = PerConnection()
    a, b = _Conn(), _Conn()
    assert values.get(a, list) is values.get(a, list)
    assert values.get(a, list) is not values.get(b, list)
    del a
    gc.collect()
    assert len(values) == 1


def test_a_connection_that_cannot_be_weakly_referenced_is_kept_with_its_value() -> None:
    values: PerConnection[str] = PerConnection()
    conn = object()  # plain objects take no weak references
    assert values.get(conn, lambda: "x") == "x"
    assert values.get(conn, lambda: "y") == "x"
