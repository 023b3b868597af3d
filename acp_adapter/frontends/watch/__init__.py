"""The terminal client: ``watch`` (one prompt) and ``chat`` (a conversation), their rich view,
``--json`` lines, stdin prompts and stored sessions."""

__all__: list[str] = []
