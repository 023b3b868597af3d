"""What one AG-UI endpoint is configured with: :class:`AguiOptions`, built once and passed down.

A host (or ``acp-progress agui``, from the settings and its flags) fills one frozen
:class:`AguiOptions`; :func:`~.app.create_app` takes it and hands it to
:class:`~.service.AguiService`, which resolves it (the agent's command line parsed, the redaction
policy loaded, the workspace checked, the summary set up). So a new option is one field here, not a
keyword threaded through every layer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from acp_adapter.client.driver import PermissionPolicy, deny_all
from acp_adapter.config import Settings
from acp_adapter.frontends.agui.admission import Admission
from acp_adapter.frontends.agui.interrupts import DEFAULT_PERMISSION_TIMEOUT
from acp_adapter.frontends.agui.limits import EndpointLimits
from acp_adapter.frontends.agui.observers import RunObserverFactory
from acp_adapter.frontends.agui.policy import RedactPolicy
from acp_adapter.frontends.agui.summaries import SummarySetup
from acp_adapter.mcp.config import McpServerSpec
from acp_adapter.store import KeyValueStore
from acp_adapter.summary import SummaryFactory

#: Seconds a new run waits for its thread's cancelled (disconnected) run to end before a 409.
CANCEL_GRACE: Final = 10.0
#: The agent's own summary would only decorate think cards, which AG-UI drops: the endpoint
#: writes the run's summary itself, so the agent is asked not to pay for a second one.
AGENT_SUMMARY_ENV: Final = "ACP_PROGRESS_SUMMARY"


@dataclass(frozen=True, slots=True, kw_only=True)
class AguiOptions:
    """Everything one AG-UI endpoint serves with; every field has a working default.

    ``agent_command`` is the agent's command line (a string is split like a shell would; default:
    this project's agent). ``policy`` is ``"default"``, ``"none"``, ``"module:function"`` or a
    callable ``redact(kind, payload)``. ``tool_progress`` is the global TOOL_PROGRESS switch
    (``None``: the settings model's default, off — the app reads no environment; ``acp-progress
    agui`` passes its settings' value); a run overrides it with
    ``forwardedProps.emitToolProgress``. ``cwd`` is the agent's directory and every session's
    workspace (default: the current directory). ``agent_env`` is merged over this process's
    environment for the agent. ``run_observers`` are factories called once per run with its
    :class:`~acp_adapter.frontends.agui.observers.RunContext`. ``summary`` turns on progress
    summaries: a :class:`~acp_adapter.summary.SummaryFactory` (used as given), or
    :class:`~acp_adapter.config.Settings` (``ACP_PROGRESS_SUMMARY``, ``auto`` meaning embedded —
    what ``acp-progress agui`` passes); ``None`` keeps them off unless a run asks with
    ``forwardedProps.emitProgressSummary: true``.

    ``admission`` says whom the endpoint admits (:class:`~.admission.Admission`; default: the
    loopback names, no token; a host that mounts the app under another name adds it to
    ``allowed_hosts``) and ``limits`` how much it takes (:class:`~.limits.EndpointLimits`).
    ``thread_store`` (a session store's key-value side, e.g. :func:`~acp_adapter.store.open_store`)
    remembers each thread's session across restarts (namespace ``agui:threads``; entries unused for
    ``thread_retention_days`` are dropped at startup); without one threads last as long as the
    process. The caller keeps ownership of the store (the app does not close it). ``thread_scope``
    names this endpoint's thread map in the store (:func:`~.thread_store.endpoint_scope`: another
    endpoint on the same store never sees its threads). ``permission_policy`` answers the agent's
    permission requests (default :func:`~acp_adapter.client.driver.deny_all`);
    ``permission_interrupts`` makes every run ask its client instead (an AG-UI interrupt; a run sets
    ``forwardedProps.permissionInterrupts`` for itself), and ``permission_timeout`` bounds how long
    a paused run waits for its resume before ``permission_policy`` answers (:mod:`.interrupts`).
    ``mcp_servers`` are sent in every thread's ``session/new`` (``--mcp-config``, the settings
    file's ``[mcp_servers]``), so the agent behind the endpoint offers their tools.
    ``init_timeout`` bounds the agent's start, ``agent_log`` receives its stderr, and
    ``cancel_grace`` is how long a new run waits for its thread's cancelled run to end.
    """

    agent_command: str | Sequence[str] | None = None
    policy: str | RedactPolicy | None = None
    tool_progress: bool | None = None
    cwd: str | os.PathLike[str] | None = None
    permission_policy: PermissionPolicy = deny_all
    agent_env: Mapping[str, str] = field(default_factory=dict)
    run_observers: Sequence[RunObserverFactory] = ()
    init_timeout: float = 30.0
    agent_log: str | os.PathLike[str] | None = None
    cancel_grace: float = CANCEL_GRACE
    summary: SummaryFactory | Settings | SummarySetup | None = None
    admission: Admission = field(default_factory=Admission)
    limits: EndpointLimits = field(default_factory=EndpointLimits)
    thread_store: KeyValueStore | None = None
    thread_retention_days: float = 30.0
    mcp_servers: Sequence[McpServerSpec] = ()
    thread_scope: str = ""
    permission_interrupts: bool = False
    permission_timeout: float = DEFAULT_PERMISSION_TIMEOUT

    def workspace(self) -> str:
        """The agent's directory as an absolute path; a ``ValueError`` when it is not a directory."""
        path = os.path.abspath(os.fspath(self.cwd) if self.cwd is not None else os.getcwd())
        if not os.path.isdir(path):
            raise ValueError(f"cwd {path!r} is not a directory")
        return path
