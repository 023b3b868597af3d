"""The guard on the mcp SDK's log records: scrubbed of known secrets, no traceback, rate-limited."""

from __future__ import annotations

import logging

from acp_adapter.mcp.logs import McpLogGuard


def _record(name: str, msg: str, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, (), info)


def test_records_of_the_mcp_loggers_are_scrubbed_cut_and_rate_limited() -> None:
    now = [0.0]
    guard = McpLogGuard(burst=3, interval=10.0, clock=lambda: now[0])
    guard.add_secrets(["tok-123456"])
    other = _record("acp_progress.mcp", "tok-123456 untouched")
    assert guard.filter(other) and other.msg == "tok-123456 untouched"
    first = _record("mcp.client.stdio", "bad line tok-123456", ValueError("input_value='tok-123456'"))
    assert guard.filter(first)
    assert first.getMessage() == "bad line [REDACTED] (ValueError)" and first.exc_info is None
    assert all(guard.filter(_record("mcp.client.stdio", "x")) for _ in range(2))
    assert not any(guard.filter(_record("mcp", "x")) for _ in range(100))
    now[0] = 10.0
    later = _record("mcp.shared", "again")
    assert guard.filter(later) and later.getMessage() == "(100 more MCP SDK records suppressed) again"
    guard.remove_secrets(["tok-123456"])
    now[0] = 20.0
    free = _record("mcp", "tok-123456")
    assert guard.filter(free) and free.getMessage() == "tok-123456"  # no live server has it now
