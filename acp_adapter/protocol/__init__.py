"""The protocol layer: the typed ``_meta.acpProgress`` models (:mod:`.meta`), the one JSON-RPC line
reader with its limits (:mod:`.ndjson`), the stdio guard (:mod:`.stdio`), the one observer
interface for an update stream (:mod:`.observer`), the one card accumulator (:mod:`.cards`),
``$/cancel_request`` (:mod:`.cancel_request`) and the unread-output measure of a slow peer
(:mod:`.backlog`)."""

from acp_adapter.protocol.ndjson import (
    CHUNK_BYTES,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_LINE_BYTES,
    Accepted,
    JsonRpcStream,
    LineReader,
    MessageReader,
    NotStrictJson,
    Refused,
    StreamLimits,
    TooLong,
    classify_line,
    dumps_line,
    error_answer,
    loads_strict,
    nesting_exceeds,
    sniff_response_id,
    valid_id,
)

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_LINE_BYTES",
    "Accepted",
    "JsonRpcStream",
    "LineReader",
    "MessageReader",
    "NotStrictJson",
    "Refused",
    "StreamLimits",
    "TooLong",
    "classify_line",
    "dumps_line",
    "error_answer",
    "loads_strict",
    "nesting_exceeds",
    "sniff_response_id",
    "valid_id",
]
