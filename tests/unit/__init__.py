"""Everything else: the agent's parts, in process."""
