"""Bridge instances, their closed ``delivery_defaults.progress`` block, and the file they live in.

A bridge instance is a name, a platform, routing (which chats it serves), the agent command
and workspace, and delivery defaults. The schema is *closed* (``extra="forbid"``, strict
types): a typo such as ``"typeing": true`` or ``"typing": "yes"`` is an error when the
instance is created, updated or loaded, never a silently ignored key (bad input loses nothing).

Progress resolution: the instance's block replaces the platform default
*whole*; without a block the platform default applies; a platform without one gets the
daemon default (``off`` with ``accumulate``). Fields missing from an explicit block take the
daemon default, never the platform's, so "replaces whole" stays true.

``delivery_defaults.summary`` (``off``/``embedded``/``openai``; absent = unset) chooses the
instance's progress-summary placeholder. Resolution: ``bridge run --summary`` > the instance's
value > ``ACP_PROGRESS_SUMMARY`` > on (``embedded``), chats being a surface where a status line
helps; interval and length always come from the settings (``ACP_PROGRESS_SUMMARY_INTERVAL`` …).

Instances live in one JSON file under the user's config directory, written atomically
(temporary file in the same directory, fsync, ``os.replace``) so a crash mid-write leaves the
previous file intact. Secrets (bot tokens) are never stored: they come from the environment.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import is_sensitive_name, redact_text

if TYPE_CHECKING:
    from acp_adapter.config import Settings
    from acp_adapter.summary import SummaryMode


log = logging.getLogger("acp_progress.bridges.config")

CONFIG_DIR_ENV: Final = "ACP_PROGRESS_CONFIG_DIR"
FILE_NAME: Final = "bridges.json"
FILE_VERSION: Final = 1

Platform = Literal["telegram", "console"]
ToolProgressMode = Literal["off", "new", "all", "verbose"]
Grouping = Literal["accumulate", "separate"]
SummarySetting = Literal["off", "embedded", "openai"]
#: On the command line, ``auto`` clears the instance's summary (the settings decide again).
SUMMARY_CHOICES: Final = ("auto", "off", "embedded", "openai")

_CLOSED = ConfigDict(extra="forbid", strict=True, frozen=True)


class BridgeConfigError(AcpProgressError, ValueError):
    """A bridge instance or the instance file is invalid; the message names the field."""


class ProgressConfig(BaseModel):
    """The typed ``delivery_defaults.progress`` block (closed; defaults are the daemon default)."""

    model_config = _CLOSED

    tool_progress: ToolProgressMode = "off"
    grouping: Grouping = "accumulate"
    typing: bool = False
    reactions: bool = False
    thoughts: bool = False
    """Post the agent's thoughts (``💭 …``) to the chat; off: they are not for chats."""

    @model_serializer(mode="wrap")
    def _omit_default_thoughts(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``thoughts: false`` is not written: files and ``bridge show`` stay as they were without it."""
        data = handler(self)
        if isinstance(data, dict) and data.get("thoughts") is False:
            data.pop("thoughts", None)
        return data


DAEMON_DEFAULT: Final = ProgressConfig()
"""``off`` with ``accumulate`` grouping, no typing, no reactions."""

PLATFORM_DEFAULTS: Final[Mapping[str, ProgressConfig]] = {
    "telegram": ProgressConfig(tool_progress="new", grouping="accumulate", typing=True, reactions=True),
    # The console mirrors what a chat would show, so it defaults like the chat platform does.
    "console": ProgressConfig(tool_progress="new", grouping="accumulate", typing=True, reactions=True),
}


class DeliveryDefaults(BaseModel):
    """Per-instance delivery defaults: the progress block and the summary placeholder mode."""

    model_config = _CLOSED

    progress: ProgressConfig | None = None
    summary: SummarySetting | None = None
    """Progress-summary placeholder: ``off``, ``embedded`` or ``openai``; None: the settings decide."""

    @model_serializer(mode="wrap")
    def _omit_unset_summary(self, handler: SerializerFunctionWrapHandler) -> Any:
        """An unset summary is not written: files and ``bridge show`` stay as they were without it."""
        data = handler(self)
        if isinstance(data, dict) and data.get("summary") is None:
            data.pop("summary", None)
        return data


class Routing(BaseModel):
    """Which chats an instance serves and who in them may do what.

    ``chat_ids``: the allowlist of chats (Telegram chat ids). ``user_ids``: when not empty, only
    these people may prompt (in an allowlisted group, not every member drives the agent).
    ``approvers``: people who may answer *anyone's* permission question; the person who sent a
    prompt may always answer its own questions, nobody else may unless listed here.
    """

    model_config = _CLOSED

    chat_ids: tuple[int, ...] = ()
    user_ids: tuple[int, ...] = ()
    approvers: tuple[int, ...] = ()

    @model_serializer(mode="wrap")
    def _omit_empty_people(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Empty ``user_ids``/``approvers`` are not written: older files and output stay as they were."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("user_ids", "approvers"):
                if not data.get(key):
                    data.pop(key, None)
        return data


class BridgeInstance(BaseModel):
    """One configured bridge: a chat surface wired to one ACP agent command."""

    model_config = _CLOSED

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    platform: Platform
    routing: Routing = Routing()
    agent: tuple[str, ...] | None = None
    """Agent argv; ``None`` is this project's agent (``python -m acp_adapter``)."""
    cwd: str
    """Absolute workspace directory of the agent's sessions."""
    delivery_defaults: DeliveryDefaults = DeliveryDefaults()


class _InstanceFile(BaseModel):
    model_config = _CLOSED

    version: Literal[1] = FILE_VERSION
    instances: dict[str, BridgeInstance] = {}


# ------------------------------------------------------------------------------ errors


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _describe(exc: ValidationError, where: str) -> str:
    """One line per problem, each naming the dotted field path and what was wrong."""
    problems: list[str] = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(root)"
        if err["type"] == "extra_forbidden":
            problems.append(f"{path}: unknown key")
        elif err["type"] == "missing":
            problems.append(f"{path}: required")
        else:
            got = _json_type(err.get("input"))
            problems.append(f"{path}: {err['msg']} (got {got})")
    return f"{where}: " + "; ".join(problems)


def _validate_instance(data: Mapping[str, Any]) -> BridgeInstance:
    name = data.get("name", "?")
    try:
        # Through JSON on purpose: the rules are those of the JSON file ("wrong JSON type").
        return BridgeInstance.model_validate_json(json.dumps(dict(data)))
    except ValidationError as exc:
        raise BridgeConfigError(_describe(exc, f"bridge {name!s}")) from None


# -------------------------------------------------------------------------- resolution


def resolve_progress(instance: BridgeInstance) -> ProgressConfig:
    """Instance block (whole) > platform default > daemon default."""
    block = instance.delivery_defaults.progress
    if block is not None:
        return block
    return PLATFORM_DEFAULTS.get(instance.platform, DAEMON_DEFAULT)


def resolve_summary_mode(
    instance: BridgeInstance, settings: Settings, override: str | None = None
) -> SummaryMode:
    """Flag (``bridge run --summary``; ``auto`` = none) > instance > settings > ``embedded``."""
    from acp_adapter.summary import resolve_mode

    if override in ("off", "embedded", "openai"):
        return cast("SummaryMode", override)
    configured = instance.delivery_defaults.summary
    if configured is not None:
        return configured
    return resolve_mode(settings, "embedded")


def _summary_value(summary: str | None) -> str | None:
    """A ``--summary`` value as stored: ``auto`` (and None) is unset."""
    return None if summary in (None, "auto") else summary


_FLAG_WITH_VALUE: Final = re.compile(r"^--?([A-Za-z][A-Za-z0-9_.-]*)=(.*)$", re.DOTALL)
_FLAG: Final = re.compile(r"^--?([A-Za-z][A-Za-z0-9_.-]*)$")
_SMALL_NUMBER: Final = re.compile(r"^\d{1,6}$")  # --max-tokens 100 is a limit, not a credential


def secret_argument(argv: tuple[str, ...] | list[str]) -> int | None:
    """The index of the first argument of ``argv`` that looks like a secret, or None.

    An argument is a secret when the canonical redactor would change it (a key shape, ``KEY=…``)
    or when it is the value of a flag whose name says secret (``--token=…``, ``--api-key …``,
    ``--password …``). The whole command line is checked too, so a value split from its flag
    is still found.
    """
    for i, arg in enumerate(argv):
        if redact_text(arg) != arg:
            return i
        m = _FLAG_WITH_VALUE.match(arg)
        if m and is_sensitive_name(m.group(1)) and m.group(2) and not _SMALL_NUMBER.match(m.group(2)):
            return i
        m = _FLAG.match(arg)
        if m and is_sensitive_name(m.group(1)) and i + 1 < len(argv):
            value = argv[i + 1]
            if value and not value.startswith("-") and not _SMALL_NUMBER.match(value):
                return i + 1
    joined = shlex.join(argv)
    if redact_text(joined) != joined:
        return len(argv) - 1
    return None


def _agent_argv(agent: str | None) -> tuple[str, ...] | None:
    if agent is None:
        return None
    try:
        argv = shlex.split(agent)
    except ValueError as exc:
        raise BridgeConfigError(f"--agent: cannot parse {redact_text(agent)!r}: {exc}") from None
    if not argv:
        raise BridgeConfigError("--agent: empty command")
    at = secret_argument(argv)
    if at is not None:
        raise BridgeConfigError(
            f"--agent: argument {at + 1} looks like a secret ({redact_text(shlex.join(argv[: at + 1]))} …); "
            "it would be stored in bridges.json and shown by bridge show. Put it in an environment "
            "variable instead (the agent inherits the environment of bridge run, e.g. "
            "OPENAI_API_KEY=… acp-progress bridge run NAME) and leave it off --agent"
        )
    return tuple(argv)


def _people(ids: list[int] | None, what: str) -> tuple[int, ...]:
    out = tuple(dict.fromkeys(ids or ()))  # de-duplicated, order kept
    if any(i <= 0 for i in out):
        raise BridgeConfigError(f"{what}: a Telegram user id is a positive number")
    return out


def new_instance(
    name: str,
    platform: str,
    *,
    chat_ids: list[int] | None = None,
    agent: str | None = None,
    cwd: str | None = None,
    progress: Mapping[str, Any] | None = None,
    summary: str | None = None,
    user_ids: list[int] | None = None,
    approvers: list[int] | None = None,
) -> BridgeInstance:
    """Build and validate a new instance (the workspace defaults to the current directory)."""
    defaults: dict[str, Any] = {"progress": dict(progress) if progress else None}
    if _summary_value(summary) is not None:
        defaults["summary"] = summary
    data: dict[str, Any] = {
        "name": name,
        "platform": platform,
        "routing": {
            "chat_ids": tuple(chat_ids or ()),
            "user_ids": _people(user_ids, "--user-id"),
            "approvers": _people(approvers, "--approver"),
        },
        "agent": _agent_argv(agent),
        "cwd": os.path.abspath(cwd or os.getcwd()),
        "delivery_defaults": defaults,
    }
    return _validate_instance(data)


def merge_update(
    instance: BridgeInstance,
    *,
    progress: Mapping[str, Any] | None = None,
    chat_ids: list[int] | None = None,
    agent: str | None = None,
    cwd: str | None = None,
    summary: str | None = None,
    user_ids: list[int] | None = None,
    approvers: list[int] | None = None,
) -> BridgeInstance:
    """Merge changes into ``instance``; fields not mentioned keep their values.

    ``summary`` sets the instance's summary mode; ``"auto"`` clears it (the settings decide).

    Changing progress never clears routing. When the instance has no explicit progress
    block yet, the merge starts from the *effective* config (the platform default), so
    ``--delivery-progress all`` on Telegram keeps typing and reactions on; the result is
    written as an explicit block, which from then on replaces the platform default whole.
    """
    data = instance.model_dump()
    if progress:
        base = resolve_progress(instance).model_dump()
        base.update(progress)
        data["delivery_defaults"] = {**data["delivery_defaults"], "progress": base}
    if summary is not None:
        defaults = {**data["delivery_defaults"]}
        value = _summary_value(summary)
        if value is None:
            defaults.pop("summary", None)
        else:
            defaults["summary"] = value
        data["delivery_defaults"] = defaults
    if chat_ids is not None:
        data["routing"] = {**data["routing"], "chat_ids": tuple(chat_ids)}
    if user_ids is not None:
        data["routing"] = {**data["routing"], "user_ids": _people(user_ids, "--user-id")}
    if approvers is not None:
        data["routing"] = {**data["routing"], "approvers": _people(approvers, "--approver")}
    if agent is not None:
        data["agent"] = _agent_argv(agent)
    if cwd is not None:
        data["cwd"] = os.path.abspath(cwd)
    return _validate_instance(data)


# ------------------------------------------------------------------------------- store


def config_dir() -> Path:
    """``$ACP_PROGRESS_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/acp-progress``, else ``~/.config/…``."""
    explicit = os.environ.get(CONFIG_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "acp-progress"


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so a crash leaves either the old or the new file, never half of one.

    Temporary file in the same directory (same file system, so the rename is atomic), fsync,
    ``os.replace``, then fsync of the directory so the rename itself survives a power cut.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class BridgeStore:
    """The instance file: load, validate, and replace atomically."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / FILE_NAME

    def load(self) -> dict[str, BridgeInstance]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise BridgeConfigError(f"{self.path}: cannot read: {exc.strerror}") from None
        try:
            json.loads(raw)
        except ValueError as exc:
            raise BridgeConfigError(f"{self.path}: not valid JSON: {exc}") from None
        try:
            parsed = _InstanceFile.model_validate_json(raw)
        except ValidationError as exc:
            raise BridgeConfigError(_describe(exc, str(self.path))) from None
        for key, inst in parsed.instances.items():
            if key != inst.name:
                raise BridgeConfigError(f"{self.path}: instances.{key}: name is {inst.name!r}")
        return dict(parsed.instances)

    def get(self, name: str) -> BridgeInstance:
        instances = self.load()
        if name not in instances:
            raise BridgeConfigError(f"no bridge named {name!r} (see: acp-progress bridge list)")
        return instances[name]

    def save(self, instances: Mapping[str, BridgeInstance]) -> None:
        doc = _InstanceFile(instances=dict(instances))
        text = json.dumps(doc.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(self.path, text)
        log.info("saved %d bridge instance(s) to %s", len(instances), self.path)

    def create(self, instance: BridgeInstance) -> None:
        instances = self.load()
        if instance.name in instances:
            raise BridgeConfigError(f"a bridge named {instance.name!r} already exists (use bridge update)")
        instances[instance.name] = instance
        self.save(instances)

    def replace(self, instance: BridgeInstance) -> None:
        instances = self.load()
        if instance.name not in instances:
            raise BridgeConfigError(f"no bridge named {instance.name!r}")
        instances[instance.name] = instance
        self.save(instances)

    def delete(self, name: str) -> None:
        instances = self.load()
        if instances.pop(name, None) is None:
            raise BridgeConfigError(f"no bridge named {name!r}")
        self.save(instances)
