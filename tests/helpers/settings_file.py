"""The user's settings file as a test writes it: ``config.toml`` in the configuration directory,
private to its owner (as the product requires of a file that may name secrets)."""

from __future__ import annotations

from pathlib import Path


def write_settings(config_dir: Path, text: str) -> Path:
    """Write ``text`` as the settings file of ``config_dir`` (made if missing); its path."""
    config_dir.mkdir(mode=0o700, exist_ok=True)
    path = config_dir / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path
