"""Secrets stay with their owner: which environment variables a child process may see.

A front-end's secrets (the Telegram bot token, the AG-UI endpoint's token) are the front-end's:
the agent it starts — this project's or anyone's — never needs them, so it never gets them. The
package's secrets as a whole (those, the model keys, a database URL) are nobody's business of a
command a tool runs: ``run_command`` and the like get an environment without them, unless the
user names a variable as passed through (``ACP_PROGRESS_PASS_ENV=NAME,NAME``).
"""

from __future__ import annotations

from collections.abc import Mapping

#: The front-ends' own secrets: never handed to the agent they start.
FRONTEND_SECRETS = frozenset({"TELEGRAM_BOT_TOKEN", "ACP_PROGRESS_AGUI_TOKEN"})
#: Every secret the package reads from the environment: never handed to a command a tool runs.
PACKAGE_SECRETS = FRONTEND_SECRETS | frozenset(
    {"OPENAI_API_KEY", "ACP_PROGRESS_SUMMARY_OPENAI_API_KEY", "ACP_PROGRESS_DATABASE_URL"}
)
#: Names the user passes through anyway (comma-separated), e.g. a command that needs the model key.
PASS_ENV = "ACP_PROGRESS_PASS_ENV"


def passed_through(environ: Mapping[str, str]) -> frozenset[str]:
    """The variable names ``ACP_PROGRESS_PASS_ENV`` lists."""
    return frozenset(name.strip() for name in environ.get(PASS_ENV, "").split(",") if name.strip())


def agent_environment(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of an agent a front-end starts: ``base`` without the front-ends' secrets
    (unless passed through), with ``extra`` (what the front-end hands it on purpose) on top."""
    keep = passed_through(base)
    env = {k: v for k, v in base.items() if k not in FRONTEND_SECRETS or k in keep}
    env.update(extra)
    return env


def command_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a command a tool runs: ``base`` without any of the package's secrets
    (unless passed through)."""
    keep = passed_through(base)
    return {k: v for k, v in base.items() if k not in PACKAGE_SECRETS or k in keep}
