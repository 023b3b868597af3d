"""Log lines are redacted and go to stderr."""

from __future__ import annotations

import logging

from acp_adapter.logsetup import configure_logging


def test_log_records_and_tracebacks_are_redacted(capsys):
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        _check(capsys)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.captureWarnings(False)


def _check(capsys) -> None:
    configure_logging("INFO")
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    log = logging.getLogger("acp_progress.test")
    log.info("calling the API with key %s", secret)
    try:
        raise RuntimeError(f"401 Unauthorized for Authorization: Bearer {secret}")
    except RuntimeError:
        log.exception("request failed")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert secret not in captured.err
    assert "calling the API with key [REDACTED]" in captured.err
    assert "RuntimeError" in captured.err and "Traceback" in captured.err
