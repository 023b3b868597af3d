"""Tests for the tool presentation registry (acp_adapter.tooling.presentation)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from acp_adapter.tooling.presentation import (
    EXTENSION_EMOJI,
    NATIVE_TOOLS,
    PREVIEW_CAP,
    UNKNOWN_EMOJI,
    VERB_MAX_RUNES,
    DescriptorError,
    PresentationRegistry,
    ToolPresentation,
    fallback_preview,
    is_sensitive_name,
    normalize_one_line,
    parse_extension_descriptor,
    parse_mcp_meta,
    render_label,
    render_line,
    render_title,
    select_preview,
    unknown_presentation,
    validate_friendly_verb,
    validate_preview_strategy,
)

ISSUE_ARGS = {"issueKey": "BUG-456"}


def _render(tool_id: str, args: Any, presentation: ToolPresentation, **kw: Any) -> tuple[str, str]:
    label, preview = render_label(tool_id, args, presentation, **kw)
    return render_title(label, preview), render_line(presentation, label, preview)


# ----------------------------------------------------------------- the spec's example


def test_constants() -> None:
    assert PREVIEW_CAP == 160
    assert VERB_MAX_RUNES == 80
    assert EXTENSION_EMOJI == "⚙️"
    assert UNKNOWN_EMOJI == "🧰"


def test_extension_manifest_example_renders_bug_456() -> None:
    entry = {"description": "Look up an issue", "friendly_verb": "Looking up", "preview": "arg:issueKey"}
    presentation = parse_extension_descriptor(entry)
    assert presentation == ToolPresentation("Looking up", "⚙️", "other", "arg:issueKey")
    assert _render("issue_lookup", ISSUE_ARGS, presentation) == ("Looking up BUG-456", "⚙️ Looking up BUG-456")


def test_mcp_meta_example_renders_bug_456() -> None:
    tool = {
        "name": "issue_lookup",
        "_meta": {"agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey"},
    }
    presentation = parse_mcp_meta(tool["_meta"])
    assert presentation == ToolPresentation("Looking up", "⚙️", "other", "arg:issueKey")
    assert _render("issue_lookup", ISSUE_ARGS, presentation) == ("Looking up BUG-456", "⚙️ Looking up BUG-456")


def test_both_descriptor_forms_are_equivalent() -> None:
    ext = parse_extension_descriptor({"friendly_verb": "Looking up", "preview": "arg:issueKey"})
    mcp = parse_mcp_meta({"agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey"})
    assert ext == mcp


# ------------------------------------------------------------------------ descriptors


def test_extension_descriptor_absent_keys_returns_none() -> None:
    assert parse_extension_descriptor({}) is None
    assert parse_extension_descriptor({"description": "x", "agh/preview": "path"}) is None


def test_extension_descriptor_uses_exact_keys_only() -> None:
    # MCP-style or differently cased keys are not manifest keys.
    assert parse_extension_descriptor({"Friendly_Verb": "X", "friendlyVerb": "Y", "PREVIEW": "path"}) is None


def test_extension_descriptor_ignores_other_keys() -> None:
    entry = {"friendly_verb": "Looking up", "command": ["bin/lookup"], "timeout": 3, "template": "{x}"}
    assert parse_extension_descriptor(entry) == ToolPresentation("Looking up", "⚙️", "other", "")


def test_extension_descriptor_preview_only_uses_tool_id_as_verb() -> None:
    presentation = parse_extension_descriptor({"preview": "arg:issueKey"})
    assert presentation == ToolPresentation("", "⚙️", "other", "arg:issueKey")
    assert _render("issue_lookup", ISSUE_ARGS, presentation) == (
        "issue_lookup BUG-456",
        "⚙️ issue_lookup BUG-456",
    )


def test_descriptor_verb_only_has_no_preview() -> None:
    presentation = parse_extension_descriptor({"friendly_verb": "Syncing"})
    assert _render("sync", {"target": "all"}, presentation) == ("Syncing", "⚙️ Syncing")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"friendly_verb": 3}, "friendly_verb: must be a string, got int"),
        ({"friendly_verb": True}, "friendly_verb: must be a string, got bool"),
        ({"friendly_verb": ["Looking"]}, "friendly_verb: must be a string, got list"),
        ({"preview": 1}, "preview: must be a string, got int"),
        ({"preview": {"arg": "x"}}, "preview: must be a string, got dict"),
        ({"friendly_verb": "Ok", "preview": None}, "preview: must be a string, got null"),
    ],
)
def test_extension_descriptor_rejects_non_strings(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(DescriptorError) as err:
        parse_extension_descriptor(entry)
    assert str(err.value) == message
    assert err.value.field == message.split(":")[0]


def test_extension_descriptor_rejects_non_table() -> None:
    with pytest.raises(DescriptorError, match=r"^entry: must be a table, got list$"):
        parse_extension_descriptor(["friendly_verb"])  # type: ignore[arg-type]


def test_extension_descriptor_invalid_values_name_manifest_field() -> None:
    with pytest.raises(DescriptorError) as err:
        parse_extension_descriptor({"friendly_verb": "Looking up", "preview": "template:{x}"})
    assert err.value.field == "preview"
    assert str(err.value) == (
        "preview: unknown strategy 'template:{x}'; expected arg:<field>, command, path, delegate or query"
    )


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"agh/friendly_verb": 1}, "agh/friendly_verb: must be a string, got int"),
        ({"agh/friendly_verb": None}, "agh/friendly_verb: must be a string, got null"),
        ({"agh/friendly_verb": {"en": "Looking up"}}, "agh/friendly_verb: must be a string, got dict"),
        ({"agh/preview": ["arg:x"]}, "agh/preview: must be a string, got list"),
        ({"agh/preview": False}, "agh/preview: must be a string, got bool"),
        ({"agh/preview": 2.5}, "agh/preview: must be a string, got float"),
    ],
)
def test_mcp_meta_rejects_non_string_values(meta: dict[str, Any], message: str) -> None:
    with pytest.raises(DescriptorError) as err:
        parse_mcp_meta(meta)
    assert str(err.value) == message
    assert err.value.field == message.split(": ")[0]


def test_mcp_meta_invalid_values_name_mcp_key() -> None:
    with pytest.raises(DescriptorError) as err:
        parse_mcp_meta({"agh/friendly_verb": "Looking\nup"})
    assert err.value.field == "agh/friendly_verb"
    assert str(err.value) == "agh/friendly_verb: must be one line (found a line break)"
    with pytest.raises(DescriptorError) as err:
        parse_mcp_meta({"agh/preview": "arg:api_key"})
    assert err.value.field == "agh/preview"
    assert str(err.value) == "agh/preview: field name 'api_key' is sensitive and cannot be previewed"


def test_mcp_meta_ignores_unrelated_keys() -> None:
    meta = {
        "agh/friendly_verb": "Looking up",
        "agh/preview": "arg:issueKey",
        "agh/template": "{{x}}",
        "vendor/ui": {"icon": 1},
        "friendly_verb": 5,
        "preview": 7,
    }
    assert parse_mcp_meta(meta) == ToolPresentation("Looking up", "⚙️", "other", "arg:issueKey")


def test_mcp_meta_without_our_keys_returns_none() -> None:
    assert parse_mcp_meta(None) is None
    assert parse_mcp_meta({}) is None
    assert parse_mcp_meta({"friendly_verb": "X", "preview": "path", "other": 1}) is None


def test_mcp_meta_rejects_non_object() -> None:
    with pytest.raises(DescriptorError, match=r"^_meta: must be an object, got str$"):
        parse_mcp_meta("agh/preview")  # type: ignore[arg-type]


def test_descriptor_error_is_value_error_with_field() -> None:
    err = DescriptorError("preview", "broken")
    assert isinstance(err, ValueError)
    assert err.field == "preview"
    assert str(err) == "preview: broken"


# ---------------------------------------------------------------------- friendly_verb


def test_verb_at_80_multibyte_runes_is_accepted() -> None:
    verb = "é" * 40 + "漢" * 40  # 80 runes, 200 UTF-8 bytes
    assert len(verb) == 80
    assert len(verb.encode()) > 80
    assert validate_friendly_verb(verb) == verb


def test_verb_with_emoji_counts_code_points() -> None:
    verb = "🔍" * 80  # 80 runes, 320 bytes
    assert validate_friendly_verb(verb) == verb


def test_verb_at_81_runes_is_rejected() -> None:
    with pytest.raises(DescriptorError) as err:
        validate_friendly_verb("漢" * 81)
    assert str(err.value) == "friendly_verb: must be at most 80 Unicode runes (found 81)"
    assert err.value.field == "friendly_verb"


@pytest.mark.parametrize(
    "verb", ["Looking\nup", "Looking\rup", "Looking\r\nup", "Looking\u2028up", "Looking\x85up"]
)
def test_verb_with_line_break_is_rejected(verb: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_friendly_verb(verb)
    assert str(err.value) == "friendly_verb: must be one line (found a line break)"


@pytest.mark.parametrize(
    ("verb", "codepoint"),
    [
        ("Looking\tup", "U+0009"),
        ("Looking\x1b[31mup", "U+001B"),
        ("Looking\x00up", "U+0000"),
        ("Looking\x7fup", "U+007F"),
        ("Looking \u202epu", "U+202E"),  # right-to-left override
        ("Look\u200bing", "U+200B"),  # zero-width space
        ("\ufeffLooking", "U+FEFF"),  # BOM / zero-width no-break space
    ],
)
def test_verb_with_control_or_format_char_is_rejected(verb: str, codepoint: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_friendly_verb(verb)
    assert str(err.value) == f"friendly_verb: must not contain control characters (found {codepoint})"


@pytest.mark.parametrize("verb", ["", " ", "   \u3000 "])
def test_empty_verb_is_rejected(verb: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_friendly_verb(verb)
    assert str(err.value) == "friendly_verb: must not be empty"


@pytest.mark.parametrize(("value", "type_name"), [(1, "int"), (None, "null"), (b"Looking", "bytes")])
def test_non_string_verb_is_rejected(value: Any, type_name: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_friendly_verb(value)
    assert str(err.value) == f"friendly_verb: must be a string, got {type_name}"


def test_verb_field_name_is_configurable_and_outer_space_stripped() -> None:
    assert validate_friendly_verb("  Looking up ", field="agh/friendly_verb") == "Looking up"
    with pytest.raises(DescriptorError, match=r"^agh/friendly_verb: must not be empty$"):
        validate_friendly_verb("", field="agh/friendly_verb")


# --------------------------------------------------------------------------- preview


@pytest.mark.parametrize("strategy", ["command", "path", "delegate", "query"])
def test_named_strategies_are_accepted(strategy: str) -> None:
    assert validate_preview_strategy(strategy) == strategy


@pytest.mark.parametrize(
    "strategy",
    ["arg:x", "arg:" + "a" * 64, "arg:issueKey", "arg:author", "arg:path.to.file", "arg:a-b_c.d9", "arg:Z"],
)
def test_arg_strategy_accepted(strategy: str) -> None:
    assert validate_preview_strategy(strategy) == strategy


def test_arg_field_of_65_chars_is_rejected() -> None:
    name = "a" * 65
    with pytest.raises(DescriptorError) as err:
        validate_preview_strategy("arg:" + name)
    assert str(err.value).startswith(f"preview: invalid field name '{name}'")
    assert "must start with an ASCII letter followed by up to 63 letters, digits, '_', '.' or '-'" in str(
        err.value
    )


@pytest.mark.parametrize(
    "name",
    ["1abc", "_abc", ".abc", "-abc", "issue key", "path/to", "a{x}", "{{x}}", "ké", "a:b", "a\nb", "a*"],
)
def test_arg_field_with_invalid_chars_is_rejected(name: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_preview_strategy("arg:" + name)
    assert err.value.field == "preview"
    assert str(err.value) == (
        f"preview: invalid field name {name!r} in {'arg:' + name!r}; it must start with an ASCII letter "
        "followed by up to 63 letters, digits, '_', '.' or '-'"
    )


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "secret",
        "password",
        "private-key",
        "private_key",
        "privateKey",
        "privatekey",
        "api-key",
        "api_key",
        "apiKey",
        "API_KEY",
        "apikey",
        "x-api-key",
        "accessToken",
        "db.password",
        "client_secret",
        "clientSecret",
        "tokens_used",
        "passwd",
        "pwd",
        "credentials",
        "auth",
        "x-auth",
        "Authorization",
        "oAuth",
        "cookie",
        "session_key",
        "sessionKey",
        "access-key",
        "AWS_ACCESS_KEY_ID",
        "GITHUB_TOKEN",
    ],
)
def test_sensitive_arg_field_is_rejected(name: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_preview_strategy("arg:" + name)
    assert str(err.value) == f"preview: field name {name!r} is sensitive and cannot be previewed"


@pytest.mark.parametrize(
    "name", ["author", "authorId", "issueKey", "path.to.file", "keyword", "session", "access_mode", "query"]
)
def test_non_sensitive_names(name: str) -> None:
    assert not is_sensitive_name(name)


@pytest.mark.parametrize(
    "strategy",
    [
        "template:{{x}}",
        "template:{x}",
        "expr:1+1",
        "ARG:x",
        "Arg:x",
        "line:⚙️ done",
        "Command",
        " path",
        "query ",
        "arg",
        "args:x",
        "{{issueKey}}",
        "lambda a: a",
    ],
)
def test_unknown_strategy_is_rejected(strategy: str) -> None:
    with pytest.raises(DescriptorError) as err:
        validate_preview_strategy(strategy)
    assert err.value.field == "preview"
    assert str(err.value) == (
        f"preview: unknown strategy {strategy!r}; expected arg:<field>, command, path, delegate or query"
    )


def test_empty_arg_field_is_rejected() -> None:
    with pytest.raises(DescriptorError) as err:
        validate_preview_strategy("arg:")
    assert str(err.value).startswith("preview: invalid field name '' in 'arg:'")


def test_empty_preview_is_rejected() -> None:
    with pytest.raises(DescriptorError, match=r"^preview: must not be empty; omit it for no preview$"):
        validate_preview_strategy("")


def test_non_string_preview_is_rejected() -> None:
    with pytest.raises(DescriptorError, match=r"^agh/preview: must be a string, got int$"):
        validate_preview_strategy(3, field="agh/preview")  # type: ignore[arg-type]


def test_long_unknown_strategy_is_truncated_in_message() -> None:
    with pytest.raises(DescriptorError) as err:
        validate_preview_strategy("x" * 500)
    assert len(str(err.value)) < 200
    assert "…" in str(err.value)


# --------------------------------------------------------------------- select_preview


@pytest.mark.parametrize(
    ("value", "expected"),
    [("BUG-456", "BUG-456"), (42, "42"), (-7, "-7"), (1.5, "1.5"), (0, "0")],
)
def test_arg_scalars_render(value: Any, expected: str) -> None:
    assert select_preview("arg:issueKey", {"issueKey": value}) == expected


@pytest.mark.parametrize("value", [{"id": "BUG-1"}, ["BUG-1"], ("BUG-1",), True, False, None, b"BUG"])
def test_arg_non_scalars_never_render(value: Any) -> None:
    assert select_preview("arg:issueKey", {"issueKey": value}) == ""


def test_arg_missing_field_and_non_mapping_args() -> None:
    assert select_preview("arg:issueKey", {"other": "x"}) == ""
    assert select_preview("arg:issueKey", ["BUG-456"]) == ""
    assert select_preview("arg:issueKey", None) == ""
    assert select_preview("arg:issueKey", "BUG-456") == ""


def test_arg_accepts_json_object_string() -> None:
    assert select_preview("arg:issueKey", '{"issueKey": "BUG-456"}') == "BUG-456"


def test_arg_dotted_name_is_literal_key_not_traversal() -> None:
    assert select_preview("arg:db.host", {"db.host": "localhost"}) == "localhost"
    assert select_preview("arg:db.host", {"db": {"host": "localhost"}}) == ""


def test_arg_huge_int_does_not_crash() -> None:
    assert select_preview("arg:n", {"n": 10**5000}) == ""


def test_empty_strategy_means_no_preview() -> None:
    assert select_preview("", {"path": "a.txt"}) == ""


@pytest.mark.parametrize("strategy", ["arg:api_key", "template:{x}", "ARG:x"])
def test_select_preview_refuses_invalid_strategy(strategy: str) -> None:
    with pytest.raises(DescriptorError):
        select_preview(strategy, {"api_key": "sk-123", "x": "y"})


def test_command_string() -> None:
    assert select_preview("command", {"command": "ls -la", "env": {"TOKEN": "s3cret"}}) == "ls -la"


def test_command_list_is_shell_joined_and_env_not_shown() -> None:
    args = {"command": ["git", "commit", "-m", "fix bug"], "env": {"API_KEY": "s3cret"}, "stdin": "data"}
    preview = select_preview("command", args)
    assert preview == "git commit -m 'fix bug'"
    assert "s3cret" not in preview
    assert "data" not in preview


def test_command_falls_back_to_cmd_and_ignores_non_renderable() -> None:
    assert select_preview("command", {"cmd": "make test"}) == "make test"
    assert select_preview("command", {"command": {"x": 1}, "cmd": ["echo", "hi"]}) == "echo hi"
    assert select_preview("command", {"command": ["echo", 1]}) == ""
    assert select_preview("command", {"command": []}) == ""
    assert select_preview("command", {"env": "X=1", "stdin": "y"}) == ""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "src/app.py"}, "src/app.py"),
        ({"file": "a.txt"}, "a.txt"),
        ({"file_path": "/tmp/b.txt"}, "/tmp/b.txt"),
        ({"filename": "c.md"}, "c.md"),
        ({"target": "dist/"}, "dist/"),
        ({"content": "secret stuff", "path": "d.txt"}, "d.txt"),
        ({"path": 3, "file": "e.txt"}, "e.txt"),
        ({"path": ["a", "b"]}, ""),
        ({"content": "x"}, ""),
    ],
)
def test_path_strategy(args: dict[str, Any], expected: str) -> None:
    assert select_preview("path", args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"query": "flaky tests"}, "flaky tests"),
        ({"q": "acp"}, "acp"),
        ({"pattern": "def \\w+"}, "def \\w+"),
        ({"search": "needle"}, "needle"),
        ({"query": {"bool": {}}, "q": "fallback"}, "fallback"),
        ({"limit": 10}, ""),
    ],
)
def test_query_strategy(args: dict[str, Any], expected: str) -> None:
    assert select_preview("query", args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"agent": "reviewer", "prompt": "long private brief"}, "reviewer"),
        ({"delegate": "planner"}, "planner"),
        ({"subagent": "coder"}, "coder"),
        ({"task": "summarise\nthen include the full secret brief"}, "summarise"),
        ({"agent": {"name": "x"}}, ""),
        ({"prompt": "do it"}, ""),
    ],
)
def test_delegate_strategy(args: dict[str, Any], expected: str) -> None:
    assert select_preview("delegate", args) == expected


# ------------------------------------------------------------------------ normalisation


def test_normalize_collapses_whitespace_and_strips() -> None:
    assert normalize_one_line("  git\tstatus\n\n--short \r\n now  ") == "git status --short now"
    assert normalize_one_line("a\u2028b\u2029c\x85d\u00a0e") == "a b c d e"


def test_normalize_shows_control_and_format_chars_never_drops_them() -> None:
    """Dropped, ``da\u200bta`` would read as ``data``: a title naming a file the tool does not
    touch. Shown, nothing acts and nothing hides."""
    assert normalize_one_line("\x1b[31mred\x1b[0m") == "␛[31mred␛[0m"
    assert normalize_one_line("evil\u202etxt.exe") == "evil\\u202etxt.exe"
    assert normalize_one_line("zero\u200bwidth\x00nul\x7f") == "zero\\u200bwidth␀nul\\u007f"


def test_normalize_exactly_cap_is_unchanged() -> None:
    text = "漢" * 160
    assert normalize_one_line(text) == text


def test_normalize_161_is_cut_to_160_with_ellipsis() -> None:
    result = normalize_one_line("漢" * 161)
    assert len(result) == 160
    assert result == "漢" * 159 + "…"


def test_normalize_cap_counts_after_collapsing() -> None:
    text = "a" + " \n " * 50 + "b" * 158  # 160 runes once collapsed
    assert normalize_one_line(text) == "a " + "b" * 158


def test_normalize_does_not_end_with_space_before_ellipsis() -> None:
    result = normalize_one_line("a" * 8 + " " + "b" * 10, cap=10)
    assert result == "a" * 8 + "…"
    assert len(result) <= 10


def test_normalize_verbose_is_uncapped_but_still_one_line() -> None:
    text = "line\n" * 100
    result = normalize_one_line(text, cap=None)
    assert result == " ".join(["line"] * 100)
    assert len(result) > PREVIEW_CAP


def test_normalize_rejects_nonpositive_cap() -> None:
    with pytest.raises(ValueError, match="cap"):
        normalize_one_line("x", cap=0)


def test_render_label_caps_preview_and_verbose_lifts_cap() -> None:
    presentation = parse_mcp_meta({"agh/friendly_verb": "Looking up", "agh/preview": "arg:body"})
    args = {"body": "x" * 500}
    _, preview = render_label("t", args, presentation)
    assert len(preview) == PREVIEW_CAP
    assert preview.endswith("…")
    _, verbose = render_label("t", args, presentation, cap=None)
    assert verbose == "x" * 500


def test_render_label_normalises_multiline_preview() -> None:
    label, preview = render_label("run_command", {"command": "echo a\necho b"}, NATIVE_TOOLS["run_command"])
    assert (label, preview) == ("Running", "echo a echo b")


def test_render_title_and_line_without_preview() -> None:
    presentation = NATIVE_TOOLS["read_file"]
    label, preview = render_label("read_file", {}, presentation)
    assert render_title(label, preview) == "Reading"
    assert render_line(presentation, label, preview) == "📖 Reading"


# --------------------------------------------------------------------- native tools


@pytest.mark.parametrize(
    ("tool_id", "args", "line"),
    [
        ("read_file", {"path": "src/main.py"}, "📖 Reading src/main.py"),
        ("list_dir", {"path": "src"}, "📂 Listing src"),
        ("search", {"query": "TODO"}, "🔎 Searching for TODO"),
        ("run_command", {"command": ["pytest", "-q"], "env": {"X": "1"}}, "💻 Running pytest -q"),
        ("wait", {"label": "build"}, "⏳ Working on build"),
        ("fetch_url", {"url": "https://example.com"}, "🌐 Fetching https://example.com"),
        ("edit_file", {"path": "a.py", "old_text": "x", "new_text": "y"}, "✏️ Editing a.py"),
        ("write_file", {"path": "b.md", "content": "z"}, "📝 Writing b.md"),
    ],
)
def test_native_tools(tool_id: str, args: dict[str, Any], line: str) -> None:
    presentation = PresentationRegistry().lookup(tool_id)
    assert presentation is NATIVE_TOOLS[tool_id]
    label, preview = render_label(tool_id, args, presentation)
    assert render_line(presentation, label, preview) == line


def test_native_kinds() -> None:
    assert {tool: p.kind for tool, p in NATIVE_TOOLS.items()} == {
        "read_file": "read",
        "list_dir": "read",
        "search": "search",
        "run_command": "execute",
        "edit_file": "edit",
        "write_file": "edit",
        "wait": "other",
        "fetch_url": "fetch",
    }


def test_native_presentations_are_valid_descriptors() -> None:
    for presentation in NATIVE_TOOLS.values():
        validate_friendly_verb(presentation.verb)
        validate_preview_strategy(presentation.preview)


def test_native_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        NATIVE_TOOLS["x"] = unknown_presentation("x")  # type: ignore[index]


def test_tool_presentation_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match=r"^kind: 'shell' is not an ACP ToolKind"):
        ToolPresentation("Running", "💻", "shell")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- unknown tools


def test_unknown_tool_uses_raw_id_and_scalar_preview() -> None:
    presentation = PresentationRegistry().lookup("jira.transition")
    assert presentation == unknown_presentation("jira.transition")
    assert presentation.emoji == "🧰"
    args = {"options": {"a": 1}, "force": True, "issue": "BUG-9", "state": "done"}
    assert _render("jira.transition", args, presentation) == (
        "jira.transition BUG-9",
        "🧰 jira.transition BUG-9",
    )


def test_unknown_tool_skips_sensitive_keys() -> None:
    presentation = unknown_presentation("deploy")
    args = {"api_key": "sk-live-123", "accessToken": "ghp_x", "password": "p", "env": "prod"}
    assert render_label("deploy", args, presentation) == ("deploy", "prod")


def test_unknown_tool_without_safe_scalar_has_no_preview() -> None:
    presentation = unknown_presentation("deploy")
    assert render_label("deploy", {"token": "abc", "cfg": {"x": 1}, "list": [1]}, presentation) == (
        "deploy",
        "",
    )
    assert render_label("deploy", None, presentation) == ("deploy", "")


def test_unknown_tool_id_is_normalised_to_one_line() -> None:
    label, _ = render_label("evil\n\x1b[2Jtool", {}, unknown_presentation("evil\n\x1b[2Jtool"))
    assert label == "evil ␛[2Jtool"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("plain text arg", "plain text arg"),
        ({"a": "", "b": "  ", "c": "value"}, "value"),
        ({"n": 3, "s": "later"}, "3"),
        ({"flag": False, "x": 2.5}, "2.5"),
        ({"secret": "s", "client_secret": "c", "name": "ok"}, "ok"),
        ({1: "non-string key", "k": "v"}, "v"),
        ('{"api_key": "sk-1", "name": "svc"}', "svc"),
        ('["a", "b"]', ""),
        ({"nested": {"path": "x"}}, ""),
        (["a", "b"], ""),
        (42, ""),
        (True, ""),
        (None, ""),
    ],
)
def test_fallback_preview(args: Any, expected: str) -> None:
    assert fallback_preview(args) == expected


def test_described_tool_without_preview_does_not_use_fallback() -> None:
    presentation = parse_mcp_meta({"agh/friendly_verb": "Syncing"})
    assert render_label("sync", {"what": "everything"}, presentation) == ("Syncing", "")


# ----------------------------------------------------------- registry and precedence


def _desc(verb: str, preview: str = "arg:issueKey") -> ToolPresentation:
    presentation = parse_mcp_meta({"agh/friendly_verb": verb, "agh/preview": preview})
    assert presentation is not None
    return presentation


def test_workspace_scoping_is_isolated() -> None:
    registry = PresentationRegistry()
    registry.register("issue_lookup", _desc("Looking up"), workspace_id="A")
    assert registry.lookup("issue_lookup", workspace_id="A").verb == "Looking up"
    assert registry.lookup("issue_lookup", workspace_id="B") == unknown_presentation("issue_lookup")
    assert registry.lookup("issue_lookup") == unknown_presentation("issue_lookup")


def test_precedence_event_meta_over_workspace_over_global_over_native() -> None:
    registry = PresentationRegistry()
    tool = "search"
    assert registry.lookup(tool, "A") is NATIVE_TOOLS[tool]

    registry.register(tool, _desc("Global"))
    assert registry.lookup(tool, "A").verb == "Global"
    assert registry.lookup(tool).verb == "Global"

    registry.register(tool, _desc("Workspace A"), workspace_id="A")
    assert registry.lookup(tool, "A").verb == "Workspace A"
    assert registry.lookup(tool, "B").verb == "Global"

    event_meta = {"agh/friendly_verb": "From event", "agh/preview": "query"}
    assert registry.lookup(tool, "A", event_meta=event_meta).verb == "From event"
    assert registry.lookup(tool, None, event_meta=event_meta).verb == "From event"

    assert registry.unregister(tool, "A") is True
    assert registry.unregister(tool, "A") is False
    assert registry.lookup(tool, "A").verb == "Global"
    assert registry.unregister(tool) is True
    assert registry.lookup(tool, "A") is NATIVE_TOOLS[tool]


def test_event_meta_without_our_keys_falls_through() -> None:
    registry = PresentationRegistry()
    registry.register("issue_lookup", _desc("Looking up"), workspace_id="A")
    presentation = registry.lookup("issue_lookup", "A", event_meta={"progressToken": 3})
    assert presentation.verb == "Looking up"


def test_invalid_event_meta_is_ignored_not_raised() -> None:
    registry = PresentationRegistry()
    registry.register("issue_lookup", _desc("Looking up"), workspace_id="A")
    for bad in ({"agh/preview": "template:{x}"}, {"agh/friendly_verb": 3}, {"agh/preview": "arg:password"}):
        assert registry.lookup("issue_lookup", "A", event_meta=bad).verb == "Looking up"


def test_event_meta_renders_bug_456_end_to_end() -> None:
    registry = PresentationRegistry()
    meta = {"agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey"}
    presentation = registry.lookup("issue_lookup", "A", event_meta=meta)
    assert _render("issue_lookup", ISSUE_ARGS, presentation) == ("Looking up BUG-456", "⚙️ Looking up BUG-456")


def test_register_revalidates_hand_built_presentations() -> None:
    registry = PresentationRegistry()
    with pytest.raises(DescriptorError, match=r"^preview: field name 'api_key' is sensitive"):
        registry.register("t", ToolPresentation("Doing", "⚙️", "other", "arg:api_key"))
    with pytest.raises(DescriptorError, match=r"^friendly_verb: must be one line"):
        registry.register("t", ToolPresentation("Do\ning", "⚙️", "other", ""))
    with pytest.raises(ValueError, match="tool_id"):
        registry.register("", _desc("Doing"))


def test_registry_with_custom_native_table() -> None:
    registry = PresentationRegistry(native={"x": ToolPresentation("Xing", "❌", "other")})
    assert registry.lookup("x").verb == "Xing"
    assert registry.lookup("read_file") == unknown_presentation("read_file")


def test_verb_is_shown_verbatim_never_interpolated() -> None:
    # A described tool can only ever produce "<verb> <selected scalar>"; nothing is interpolated.
    presentation = _desc("Looking up {issueKey}")
    title, _ = _render("t", {"issueKey": "BUG-1"}, presentation)
    assert title == "Looking up {issueKey} BUG-1"
    assert re.fullmatch(r"[^\n\r\t]*", title)


def test_one_symbol_per_tool_on_every_front_end() -> None:
    """Both front-ends ask :func:`card_emoji`, so ``wait`` is ⏳ and another agent's fetch card 🌐
    in watch and in a bridge alike (one home per name)."""
    from acp.helpers import start_tool_call

    from acp_adapter.frontends.bridges.config import ProgressConfig
    from acp_adapter.frontends.bridges.projection import TurnProjection
    from acp_adapter.frontends.watch.render import card_line
    from acp_adapter.protocol.cards import Card
    from acp_adapter.tooling.presentation import card_emoji

    assert card_emoji("other", "wait") == "⏳" and card_emoji("fetch") == "🌐" and card_emoji("other") == "🧰"
    assert card_emoji("other", "x", "🚀") == "🚀" and card_emoji("other", None, "\x1b[2J") == "🧰"
    watch = card_line(Card("c", "Fetch", "fetch", "completed"), now=0.0)
    (event,) = TurnProjection(ProgressConfig(tool_progress="all")).project(
        start_tool_call("c", "Fetch", kind="fetch", status="pending"), 0.0
    )
    assert watch.split()[1] == event.payload.emoji == "🌐"
