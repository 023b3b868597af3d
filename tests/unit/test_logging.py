"""Log lines are redacted and go to stderr."""

from __future__ import annotations

import logging

from acp_adapter.safety.logging import configure_logging


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


def _configured(capsys, body) -> str:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("INFO")
        body()
        return capsys.readouterr().err
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.captureWarnings(False)


def test_control_characters_from_outside_cannot_forge_a_line_or_repaint_the_terminal(capsys):
    """A runId with a newline cannot forge a CRITICAL line, nor ESC[2J clear the terminal."""
    forged = "r1\n2099-01-01 00:00:00,000 CRITICAL acp_progress: forged\x1b[2J\r\x07\u2028"

    def body() -> None:
        logging.getLogger("acp_progress.test").info("run %s started", forged)

    err = _configured(capsys, body)
    assert err.count("\n") == 1  # one record, one line
    assert (
        "run r1\\n2099-01-01 00:00:00,000 CRITICAL acp_progress: forged\\x1b[2J\\r\\x07\\u2028 started" in err
    )
    assert "\x1b" not in err and "\r" not in err


def test_a_traceback_keeps_its_lines_but_none_of_them_passes_for_a_record(capsys):
    def body() -> None:
        try:
            raise ValueError("bad id\n2099-01-01 00:00:00,000 CRITICAL forged\x1b[2J")
        except ValueError:
            logging.getLogger("acp_progress.test").exception("run failed")

    err = _configured(capsys, body)
    lines = err.rstrip("\n").split("\n")
    assert lines[0].endswith("ERROR acp_progress.test: run failed")
    assert all(line.startswith("    | ") for line in lines[1:])  # continuation lines, indented
    assert "    | Traceback (most recent call last):" in err and "ValueError: bad id" in err
    assert "\x1b" not in err and "forged\\x1b[2J" in err


def test_accept_failures_at_the_fd_limit_are_one_line_not_a_traceback_each(capsys):
    """A failure that repeats (such as 'Too many open files', which could log 315,354 tracebacks
    in 40 s) is one line per interval."""

    def body() -> None:
        asyncio_log = logging.getLogger("asyncio")
        for _ in range(1000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                asyncio_log.error("socket.accept() out of system resource\nsocket: <socket>", exc_info=True)

    err = _configured(capsys, body)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "accept() failed: [Errno 24] Too many open files" in lines[0]
    assert "Traceback" not in err


def test_uvicorn_loggers_go_through_the_package_handler(capsys):
    logging.getLogger("uvicorn.access").addHandler(logging.StreamHandler())  # as a dictConfig would

    def body() -> None:
        logging.getLogger("uvicorn.access").info('127.0.0.1:1 - "GET /\x1b[2J HTTP/1.1" 200')

    err = _configured(capsys, body)
    assert err.count("uvicorn.access") == 1 and "INFO uvicorn.access: " in err and "\\x1b[2J" in err
