"""Tool presentation registry: turn a tool call into a short, safe, one-line label.

ACP tool cards and chat-bridge progress lines both want something like
``⚙️ Looking up BUG-456`` instead of a raw tool id and a JSON blob.  This module decides
*what* that line says, and deliberately keeps the decision in the daemon's hands:

* Native tools (the agent's own) use the built-in table :data:`NATIVE_TOOLS`.
* Extension and MCP tools may *describe* themselves with a ``friendly_verb`` and a
  declarative ``preview`` strategy (manifest keys ``friendly_verb``/``preview``, MCP
  ``_meta`` keys ``agh/friendly_verb``/``agh/preview``).  They never supply a template,
  an expression or a pre-rendered line, because a third party that could render the line
  could also smuggle arbitrary argument data (or terminal control sequences) into it.
* Unknown tools fall back to their raw tool id and a *safe scalar* preview.

The daemon keeps ownership of argument selection (:func:`select_preview`), one-line
normalisation and the 160-rune cap (:func:`normalize_one_line`).  Verbose mode passes
``cap=None`` to lift the cap.

Redaction is intentionally **not** done here: the caller runs the canonical redactor over
the final ``label``/``preview``/line strings.  Keeping a single redactor avoids two
slightly different notions of "secret" drifting apart.  What this module does do is
*minimise exposure before redaction*: sensitive field names cannot be selected, and the
specialised strategies show less than the raw field would.

Everything here is a pure function (or a plain in-memory registry); there is no I/O.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal, get_args

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety import redact
from acp_adapter.safety.terminal_text import is_shown_as_is, visible_text
from acp_adapter.text import ellipsize

PREVIEW_CAP: Final = 160
"""Maximum preview length in Unicode runes (code points) for the ``new`` and ``all`` modes."""

VERB_MAX_RUNES: Final = 80
"""Maximum ``friendly_verb`` length in Unicode runes; a verb is a label, not a sentence."""

EXTENSION_EMOJI: Final = "\u2699\ufe0f"  # ⚙️
"""Emoji for extension and MCP tools that describe themselves."""

UNKNOWN_EMOJI: Final = "\U0001f9f0"  # 🧰
"""Emoji for tools nobody described; distinct so users can tell a guess from a descriptor."""

MCP_VERB_KEY: Final = "agh/friendly_verb"
MCP_PREVIEW_KEY: Final = "agh/preview"

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
"""The ACP ``ToolKind`` values; clients pick icons from these, so we never invent new ones."""

TOOL_KINDS: Final[frozenset[str]] = frozenset(get_args(ToolKind))

PREVIEW_STRATEGIES: Final[tuple[str, ...]] = ("command", "path", "delegate", "query")
"""The named (non-``arg:``) preview strategies, in the order used in error messages."""

_ARG_PREFIX: Final = "arg:"
_ARG_FIELD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")

# Characters ``str.splitlines`` treats as line boundaries.  A verb containing any of them
# would break the "one line" promise in clients that honour Unicode line separators.
_LINE_BREAKS: Final = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


_ERROR_VALUE_MAX: Final = 80


class DescriptorError(AcpProgressError, ValueError):
    """A tool descriptor broke a presentation rule.

    Subclasses :class:`ValueError` so generic validation handlers still catch it, and
    carries ``field`` (e.g. ``"friendly_verb"`` or ``"agh/preview"``) so the caller can
    point the extension/MCP author at the exact key to fix.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class ToolPresentation:
    """How one tool is presented.

    ``verb`` is the label (``""`` means "use the raw tool id", which is what a descriptor
    that declares only a preview gets).  ``preview`` is a declarative strategy string as
    accepted by :func:`validate_preview_strategy`, or ``""`` for no preview.  Frozen so a
    presentation shared between workspaces can never be mutated under another's feet.
    """

    verb: str
    emoji: str
    kind: ToolKind
    preview: str = ""

    def __post_init__(self) -> None:
        # Checked eagerly: an invalid kind would only surface later as a client-side
        # schema error on an ACP tool_call update, far from the code that caused it.
        if self.kind not in TOOL_KINDS:
            raise ValueError(
                f"kind: {self.kind!r} is not an ACP ToolKind; expected one of {sorted(TOOL_KINDS)}"
            )


NATIVE_TOOLS: Final[Mapping[str, ToolPresentation]] = MappingProxyType(
    {
        "read_file": ToolPresentation("Reading", "\U0001f4d6", "read", "path"),  # 📖
        "list_dir": ToolPresentation("Listing", "\U0001f4c2", "read", "path"),  # 📂
        "search": ToolPresentation("Searching for", "\U0001f50e", "search", "query"),  # 🔎
        "run_command": ToolPresentation("Running", "\U0001f4bb", "execute", "command"),  # 💻
        "wait": ToolPresentation("Working on", "\u23f3", "other", "arg:label"),  # ⏳
        "edit_file": ToolPresentation("Editing", "\u270f\ufe0f", "edit", "path"),  # ✏️
        "write_file": ToolPresentation("Writing", "\U0001f4dd", "edit", "path"),  # 📝
        "fetch_url": ToolPresentation("Fetching", "\U0001f310", "fetch", "arg:url"),  # 🌐
    }
)
"""Presentations for the agent's own tools (read-only; use a registry to override)."""

#: The symbol of each ACP tool kind, for a card whose tool is not known by name (another agent's).
KIND_EMOJI: Final[Mapping[str, str]] = MappingProxyType(
    {
        "think": "\U0001f4ad",  # 💭
        "read": "\U0001f4d6",  # 📖
        "search": "\U0001f50e",  # 🔎
        "execute": "\U0001f4bb",  # 💻
        "edit": "\u270f\ufe0f",  # ✏️
        "fetch": "\U0001f310",  # 🌐
        "delete": "\U0001f5d1",  # 🗑
        "move": "\U0001f4e6",  # 📦
    }
)


def card_emoji(kind: str | None, tool_id: str | None = None, sent: str | None = None) -> str:
    """The one symbol of a tool card on every front-end (watch, chat, the bridges): the emoji its
    agent sent in ``_meta.acpProgress.emoji`` (a few visible characters at most), else the symbol of
    a tool of this package known by name (``wait`` is ⏳ everywhere), else its kind's, else 🧰."""
    if sent and len(sent) <= 8 and sent.isprintable() and not sent.isascii():
        return sent
    native = NATIVE_TOOLS.get(tool_id or "")
    if native is not None:
        return native.emoji
    return KIND_EMOJI.get(kind or "", UNKNOWN_EMOJI)


def unknown_presentation(tool_id: str) -> ToolPresentation:
    """Presentation for a tool nobody described: the raw tool id and the 🧰 emoji.

    :func:`render_label` recognises this exact value and only then uses
    :func:`fallback_preview`; described tools without a preview get no preview at all,
    because their author chose not to show one.
    """
    return ToolPresentation(verb=tool_id, emoji=UNKNOWN_EMOJI, kind="other", preview="")


# --------------------------------------------------------------------------- validation


def _type_name(value: object) -> str:
    """JSON-ish type name for error messages (``null`` reads better than ``NoneType``)."""
    return "null" if value is None else type(value).__name__


def _quote(value: str) -> str:
    """``repr`` of a (possibly truncated) value: escapes control characters in messages."""
    return repr(ellipsize(value, _ERROR_VALUE_MAX))


def _require_str(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise DescriptorError(field, f"must be a string, got {_type_name(value)}")
    return value


def validate_friendly_verb(value: str, field: str = "friendly_verb") -> str:
    """Validate a descriptor's ``friendly_verb`` and return it with outer whitespace stripped.

    Rules: a string; one line; no control (Cc), format (Cf, e.g. zero-width or bidi
    override characters) or surrogate characters; not empty or whitespace-only; at most
    :data:`VERB_MAX_RUNES` Unicode code points.  Format characters are rejected, not just
    controls, because they are invisible yet can reorder or hide text in the rendered
    line, and a verb is shown verbatim next to a trusted emoji.
    """
    value = _require_str(value, field)
    if any(ch in _LINE_BREAKS for ch in value):
        raise DescriptorError(field, "must be one line (found a line break)")
    for ch in value:
        if ch == "\t" or not is_shown_as_is(ch):
            raise DescriptorError(field, f"must not contain control characters (found U+{ord(ch):04X})")
    if not value.strip():
        raise DescriptorError(field, "must not be empty")
    if len(value) > VERB_MAX_RUNES:
        raise DescriptorError(field, f"must be at most {VERB_MAX_RUNES} Unicode runes (found {len(value)})")
    return value.strip()


def is_sensitive_name(name: str) -> bool:
    """True if a field name looks like it holds a credential and must never be previewed.

    The vocabulary is the redactor's (:func:`acp_adapter.safety.redact.is_sensitive_name`): one list of
    secret names for previews, ``rawInput`` redaction and free-text ``key=value`` forms, so a
    descriptor cannot select a field (``arg:signing_key``) whose value the card's raw input hides.
    """
    return redact.is_sensitive_name(name)


def validate_preview_strategy(value: str, field: str = "preview") -> str:
    """Validate a declarative preview strategy and return it unchanged.

    Accepted: ``command``, ``path``, ``delegate``, ``query`` and ``arg:<field>`` where
    ``<field>`` is an ASCII letter followed by up to 63 letters, digits, ``_``, ``.`` or
    ``-`` and is not a sensitive name (see :func:`is_sensitive_name`).  Matching is exact
    and case-sensitive: anything else -- templates, expressions, pre-rendered lines -- is
    refused, which is the whole point of a *declarative* preview.  The empty string is
    refused too; omit the key to get no preview.
    """
    value = _require_str(value, field)
    if value in PREVIEW_STRATEGIES:
        return value
    if value.startswith(_ARG_PREFIX):
        name = value[len(_ARG_PREFIX) :]
        if not _ARG_FIELD_RE.fullmatch(name):
            raise DescriptorError(
                field,
                f"invalid field name {_quote(name)} in {_quote(value)}; it must start with an ASCII letter "
                "followed by up to 63 letters, digits, '_', '.' or '-'",
            )
        if is_sensitive_name(name):
            raise DescriptorError(field, f"field name {_quote(name)} is sensitive and cannot be previewed")
        return value
    if not value:
        raise DescriptorError(field, "must not be empty; omit it for no preview")
    raise DescriptorError(
        field, f"unknown strategy {_quote(value)}; expected arg:<field>, command, path, delegate or query"
    )


# ------------------------------------------------------------------------------ parsing


_MISSING: Final = object()
"""Sentinel for "key absent", distinct from a present key whose value is ``None``/null."""


def _build(verb: object, preview: object, verb_field: str, preview_field: str) -> ToolPresentation:
    """Validate the two descriptor values (either may be absent) into an extension presentation."""
    checked_verb = (
        "" if verb is _MISSING else validate_friendly_verb(_require_str(verb, verb_field), verb_field)
    )
    checked_preview = (
        ""
        if preview is _MISSING
        else validate_preview_strategy(_require_str(preview, preview_field), preview_field)
    )
    return ToolPresentation(verb=checked_verb, emoji=EXTENSION_EMOJI, kind="other", preview=checked_preview)


def parse_extension_descriptor(entry: Mapping[str, Any]) -> ToolPresentation | None:
    """Read ``friendly_verb`` and ``preview`` from an extension manifest tool entry.

    Only those two keys are ours; every other key in the entry belongs to the extension
    and is ignored.  Present keys with a non-string value are rejected rather than
    coerced, so a typo like ``preview = 1`` is reported instead of silently dropped.
    Returns ``None`` when the entry declares neither key (the tool is then "unknown" for
    presentation purposes and gets the raw-id fallback).
    """
    if not isinstance(entry, Mapping):
        raise DescriptorError("entry", f"must be a table, got {_type_name(entry)}")
    verb = entry.get("friendly_verb", _MISSING)
    preview = entry.get("preview", _MISSING)
    if verb is _MISSING and preview is _MISSING:
        return None
    return _build(verb, preview, "friendly_verb", "preview")


def parse_mcp_meta(meta: Mapping[str, Any] | None) -> ToolPresentation | None:
    """Read ``agh/friendly_verb`` and ``agh/preview`` from an MCP tool's ``_meta`` object.

    The keys are namespaced so they cannot collide with other ``_meta`` conventions; all
    other keys are ignored.  Values must be strings (JSON ``null``, numbers, objects are
    rejected and the error names the offending key).  Returns ``None`` when ``meta`` is
    ``None`` or declares neither key.
    """
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise DescriptorError("_meta", f"must be an object, got {_type_name(meta)}")
    verb = meta.get(MCP_VERB_KEY, _MISSING)
    preview = meta.get(MCP_PREVIEW_KEY, _MISSING)
    if verb is _MISSING and preview is _MISSING:
        return None
    return _build(verb, preview, MCP_VERB_KEY, MCP_PREVIEW_KEY)


# ----------------------------------------------------------------------------- registry


class PresentationRegistry:
    """Native presentations plus descriptors registered globally or per workspace.

    Workspace scoping exists because extensions and MCP servers are installed per
    workspace: a descriptor registered for workspace A must never label a same-named tool
    in workspace B, which may be a completely different server.
    """

    def __init__(self, native: Mapping[str, ToolPresentation] = NATIVE_TOOLS) -> None:
        self._native: Mapping[str, ToolPresentation] = MappingProxyType(dict(native))
        # Keyed by workspace id; ``None`` holds the global entries.
        self._scoped: dict[str | None, dict[str, ToolPresentation]] = {}

    def register(self, tool_id: str, presentation: ToolPresentation, workspace_id: str | None = None) -> None:
        """Register (or replace) a presentation for ``tool_id``; ``workspace_id=None`` is global.

        The verb and preview are re-validated here so a hand-built presentation cannot
        bypass the rules that parsed descriptors already follow.
        """
        if not isinstance(tool_id, str) or not tool_id:
            raise ValueError("tool_id must be a non-empty string")
        if presentation.verb:
            validate_friendly_verb(presentation.verb)
        if presentation.preview:
            validate_preview_strategy(presentation.preview)
        self._scoped.setdefault(workspace_id, {})[tool_id] = presentation

    def unregister(self, tool_id: str, workspace_id: str | None = None) -> bool:
        """Remove a registration (e.g. when an extension is unloaded); True if one existed."""
        entries = self._scoped.get(workspace_id)
        if entries is None or tool_id not in entries:
            return False
        del entries[tool_id]
        return True

    def lookup(
        self,
        tool_id: str,
        workspace_id: str | None = None,
        event_meta: Mapping[str, Any] | None = None,
    ) -> ToolPresentation:
        """Resolve the presentation for one tool call.

        Precedence: ``event_meta`` on the source tool event (parsed like MCP ``_meta``) >
        the entry for ``workspace_id`` > the global entry > native > unknown fallback.
        Event metadata is the freshest statement from the tool's owner, hence first.
        Invalid event metadata is ignored (falling through to the next level) rather than
        raised: a lookup runs mid-turn, and one badly described event must not break the
        progress stream -- registration-time parsing is where authors get the error.
        """
        try:
            from_event = parse_mcp_meta(event_meta)
        except DescriptorError:
            from_event = None
        if from_event is not None:
            return from_event
        if workspace_id is not None:
            scoped = self._scoped.get(workspace_id, {}).get(tool_id)
            if scoped is not None:
                return scoped
        global_entry = self._scoped.get(None, {}).get(tool_id)
        if global_entry is not None:
            return global_entry
        native = self._native.get(tool_id)
        if native is not None:
            return native
        return unknown_presentation(tool_id)


# ------------------------------------------------------------------------------ preview


def _as_mapping(args: Any) -> Mapping[str, Any] | None:
    """Return ``args`` as a mapping, decoding a JSON-object string (raw LLM tool arguments)."""
    if isinstance(args, Mapping):
        return args
    if isinstance(args, str):
        decoded = _decode_json_container(args)
        if isinstance(decoded, Mapping):
            return decoded
    return None


def _decode_json_container(text: str) -> Any:
    """Decode ``text`` if it is a JSON object or array, else return ``None``."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return None


def _scalar_text(value: Any) -> str:
    """Render a str/int/float; everything else (bool, None, objects, arrays) renders as ``""``.

    Booleans are excluded explicitly because ``bool`` subclasses ``int`` and a bare
    ``True`` says nothing useful about what a tool is doing.
    """
    if isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        try:
            return str(value)
        except ValueError:  # int too large for str() (Python's int max str digits limit)
            return ""
    return ""


def _first_str(args: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _command_text(args: Mapping[str, Any]) -> str:
    """The command line only: ``command``/``cmd`` as a string or an argv list.

    Sibling keys such as ``env``, ``stdin`` or ``cwd`` are never consulted, which is what
    makes this strategy expose less than ``arg:command`` on a tool with richer input.
    """
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list | tuple) and value and all(isinstance(part, str) for part in value):
            return shlex.join(value)
    return ""


def _delegate_text(args: Mapping[str, Any]) -> str:
    """A delegate's short name: the first non-blank line of ``agent``/``delegate``/``subagent``/``task``.

    Only the first line is kept so a multi-line task brief does not leak into the label.
    """
    text = _first_str(args, ("agent", "delegate", "subagent", "task"))
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def select_preview(strategy: str, args: Mapping[str, Any] | Any) -> str:
    """Select the raw (not yet normalised) preview text for ``strategy`` from ``args``.

    ``args`` is normally the tool's JSON-object input; a string holding a JSON object is
    decoded first, and any other shape yields ``""``.  ``arg:<field>`` looks the field up
    literally (``"db.host"`` is one key, never a path) and renders only str/int/float.
    ``""`` means no preview.  An invalid strategy raises :class:`DescriptorError` instead
    of guessing: a hand-built presentation must not be able to select e.g. ``arg:api_key``.
    """
    if strategy == "":
        return ""
    validate_preview_strategy(strategy)
    mapping = _as_mapping(args)
    if mapping is None:
        return ""
    if strategy.startswith(_ARG_PREFIX):
        return _scalar_text(mapping.get(strategy[len(_ARG_PREFIX) :]))
    if strategy == "command":
        return _command_text(mapping)
    if strategy == "path":
        return _first_str(mapping, ("path", "file", "file_path", "filename", "target"))
    if strategy == "query":
        return _first_str(mapping, ("query", "q", "pattern", "search"))
    return _delegate_text(mapping)  # "delegate", the only strategy left after validation


def fallback_preview(args: Any) -> str:
    """Safe scalar preview for unknown tools.

    A plain string is used as-is; a dict (or a string holding a JSON object) yields its
    first non-blank str/int/float value, in insertion order, whose key is a string and
    not sensitive.  Anything else -- arrays, booleans, nested objects -- yields ``""``.
    """
    if isinstance(args, str) and _decode_json_container(args) is None:
        return args
    mapping = _as_mapping(args)
    if mapping is None:
        return ""
    for key, value in mapping.items():
        if not isinstance(key, str) or is_sensitive_name(key):
            continue
        text = _scalar_text(value)
        if text.strip():
            return text
    return ""


def normalize_one_line(text: str, cap: int | None = PREVIEW_CAP) -> str:
    """Collapse ``text`` to one trimmed line of at most ``cap`` runes.

    Every whitespace run (newlines, tabs, Unicode separators) becomes one space; control,
    format, invisible and surrogate characters are shown as escapes (``\\u202e``, by
    :func:`~acp_adapter.safety.terminal_text.visible_text`), never dropped: a title that dropped
    the zero-width space of ``da\u200bta`` would name a file the tool does not touch. If the
    result is longer than ``cap`` code points
    it is cut so that the text *plus* a trailing ``…`` is exactly ``cap`` runes or fewer.
    ``cap=None`` (verbose mode) disables only the cap, never the cleaning.
    """
    if cap is not None and cap < 1:
        raise ValueError("cap must be a positive number of runes or None")
    kept = "".join(" " if ch.isspace() else ch for ch in text)
    line = " ".join(visible_text(kept).split())
    return line if cap is None else ellipsize(line, cap)


def render_label(
    tool_id: str,
    args: Any,
    presentation: ToolPresentation,
    *,
    cap: int | None = PREVIEW_CAP,
) -> tuple[str, str]:
    """Return ``(label, preview)`` for one tool call, both one-line and capped.

    The label is the presentation's verb (or the raw tool id when the verb is empty).
    The preview comes from the declared strategy; only the unknown-tool presentation
    (:func:`unknown_presentation`) falls back to :func:`fallback_preview`.  Redaction is
    the caller's job and must run on the returned strings.
    """
    label = normalize_one_line(presentation.verb or tool_id, cap=cap)
    if presentation.preview:
        raw = select_preview(presentation.preview, args)
    elif presentation == unknown_presentation(tool_id):
        raw = fallback_preview(args)
    else:
        raw = ""
    return label, normalize_one_line(raw, cap=cap)


def render_title(label: str, preview: str) -> str:
    """ACP tool-card title: ``"Looking up BUG-456"``, or just the label without a preview."""
    return f"{label} {preview}" if preview else label


def render_line(presentation: ToolPresentation, label: str, preview: str) -> str:
    """Chat-bridge progress line: the emoji then the title, e.g. ``"⚙️ Looking up BUG-456"``."""
    return f"{presentation.emoji} {render_title(label, preview)}"
