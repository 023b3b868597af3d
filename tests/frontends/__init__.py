"""The terminal front-ends and clients: watch, chat, relay, run, the CLI."""
