"""Chat platforms: each provides a :class:`~acp_adapter.frontends.bridges.delivery.ChatSink` and an
input loop."""
