"""The chat bridges (console, Telegram): delivery, queue, restart, projection."""
