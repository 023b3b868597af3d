"""Moved to :mod:`acp_adapter.protocol.stdio` (the protocol layer); kept so old imports work."""

from .protocol.stdio import (
    STREAM_LIMIT,
    ProtocolFds,
    open_protocol_streams,
    protect_stdio,
    protocol_attached,
)

__all__ = ["STREAM_LIMIT", "ProtocolFds", "open_protocol_streams", "protect_stdio", "protocol_attached"]
