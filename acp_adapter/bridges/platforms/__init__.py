"""Chat platforms: each provides a :class:`~acp_adapter.bridges.delivery.ChatSink` and an input loop."""
