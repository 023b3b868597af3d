"""Where a test's agents keep their sessions, SQLite or PostgreSQL, for tests whose assertions must
hold for both stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.acp_agent import agent_env, fast_settings


class Backend:
    """Where a test's agents keep their sessions: the SQLite file in ``tmp_path/state`` or a
    fresh PostgreSQL database (the same assertions hold for both)."""

    def __init__(self, kind: str, tmp_path: Path, url: str | None) -> None:
        self.kind = kind
        self.state = tmp_path / "state"
        self.url = url

    def env(self, **more: str) -> dict[str, str]:
        extra = {"ACP_PROGRESS_DATABASE_URL": self.url} if self.url else {}
        return agent_env(ACP_PROGRESS_STATE_DIR=str(self.state), **extra, **more)

    def settings(self, **more: Any) -> Any:
        if self.url:
            more["store"] = {"url": self.url}
        return fast_settings(state_dir=str(self.state), **more)

    def open(self) -> Any:
        from acp_adapter.store import open_store

        return open_store(self.state, retention_days=0, url=self.url)
