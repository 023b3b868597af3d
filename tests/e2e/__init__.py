"""End-to-end tests: the agent spawned over stdio, driven by the SDK's client side."""
