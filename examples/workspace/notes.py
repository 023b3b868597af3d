# TODO: fix login
"""Notes on the login flow (the README's examples search and read this file)."""


def login(user: str, password: str) -> bool:
    """Accept any non-empty user name and password."""
    return bool(user and password)
