"""``session/close`` and ``session/delete`` from the SDK's client side: the SDK 0.12's
``ClientSideConnection`` has no method for either, so each request goes through its connection with
the SDK's own request and response models and serialisation (no hand-built JSON)."""

from __future__ import annotations

from typing import Any


async def close_session(conn: Any, session_id: str) -> Any:
    """``session/close`` through the SDK's client connection and models (no hand-built JSON)."""
    from acp.meta import AGENT_METHODS
    from acp.schema import CloseSessionRequest, CloseSessionResponse
    from acp.utils import request_model_from_dict

    return await request_model_from_dict(
        conn._conn,
        AGENT_METHODS["session_close"],
        CloseSessionRequest(session_id=session_id),
        CloseSessionResponse,
    )


async def delete_session(conn: Any, session_id: str) -> Any:
    """``session/delete`` through the SDK's client connection and models (no hand-built JSON)."""
    from acp.meta import AGENT_METHODS
    from acp.schema import DeleteSessionRequest, DeleteSessionResponse
    from acp.utils import request_model_from_dict

    return await request_model_from_dict(
        conn._conn,
        AGENT_METHODS["session_delete"],
        DeleteSessionRequest(session_id=session_id),
        DeleteSessionResponse,
    )
