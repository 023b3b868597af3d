"""Bridge instance config: closed schema, resolution order, update merging, atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acp_adapter.frontends.bridges.config import (
    DAEMON_DEFAULT,
    BridgeConfigError,
    BridgeStore,
    ProgressConfig,
    config_dir,
    merge_update,
    new_instance,
    resolve_progress,
)


def test_resolution_order_instance_block_replaces_platform_default_whole() -> None:
    tg = new_instance("tg", "telegram", chat_ids=[42])
    assert resolve_progress(tg) == ProgressConfig(
        tool_progress="new", grouping="accumulate", typing=True, reactions=True
    )
    # an explicit block replaces the whole default: unset fields take the daemon default, not Telegram's
    explicit = new_instance("tg2", "telegram", progress={"tool_progress": "all"})
    assert resolve_progress(explicit) == ProgressConfig(
        tool_progress="all", grouping="accumulate", typing=False, reactions=False
    )
    assert ProgressConfig(tool_progress="off", grouping="accumulate") == DAEMON_DEFAULT


@pytest.mark.parametrize(
    ("progress", "message"),
    [
        ({"typeing": True}, "delivery_defaults.progress.typeing: unknown key"),
        (
            {"typing": "yes"},
            "delivery_defaults.progress.typing: Input should be a valid boolean (got string)",
        ),
        ({"typing": 1}, "delivery_defaults.progress.typing: Input should be a valid boolean (got number)"),
        ({"tool_progress": "loud"}, "delivery_defaults.progress.tool_progress: Input should be"),
        ({"grouping": ["accumulate"]}, "delivery_defaults.progress.grouping: Input should be"),
        (
            {"reactions": None},
            "delivery_defaults.progress.reactions: Input should be a valid boolean (got null)",
        ),
    ],
)
def test_closed_progress_block_rejects_unknown_keys_and_wrong_types(
    progress: dict[str, object], message: str
) -> None:
    with pytest.raises(BridgeConfigError) as info:
        new_instance("tg", "telegram", progress=progress)
    assert message in str(info.value)
    with pytest.raises(BridgeConfigError) as info:
        merge_update(new_instance("tg", "telegram"), progress=progress)
    assert message in str(info.value)


def test_instance_fields_are_validated() -> None:
    with pytest.raises(BridgeConfigError, match="platform"):
        new_instance("x", "irc")
    with pytest.raises(BridgeConfigError, match="name"):
        new_instance("has space", "console")
    with pytest.raises(BridgeConfigError, match="cannot parse"):
        new_instance("x", "console", agent="python 'unbalanced")


def test_update_merges_and_never_clears_routing(tmp_path: Path) -> None:
    store = BridgeStore(tmp_path / "bridges.json")
    store.create(new_instance("tg", "telegram", chat_ids=[7, -1001], agent="my-agent --acp", cwd="/srv"))
    inst = store.get("tg")
    updated = merge_update(inst, progress={"tool_progress": "all"})
    store.replace(updated)
    again = store.get("tg")
    assert again.routing.chat_ids == (7, -1001)
    assert again.agent == ("my-agent", "--acp")
    assert again.cwd == "/srv"
    # merged over the effective (platform) config: typing and reactions stay on
    assert resolve_progress(again) == ProgressConfig(
        tool_progress="all", grouping="accumulate", typing=True, reactions=True
    )
    off = merge_update(again, progress={"typing": False, "grouping": "separate"})
    assert resolve_progress(off) == ProgressConfig(
        tool_progress="all", grouping="separate", typing=False, reactions=True
    )
    rerouted = merge_update(off, chat_ids=[9])
    assert rerouted.routing.chat_ids == (9,)
    assert resolve_progress(rerouted) == resolve_progress(off)


def test_store_roundtrip_duplicates_and_delete(tmp_path: Path) -> None:
    store = BridgeStore(tmp_path / "sub" / "bridges.json")
    assert store.load() == {}
    store.create(new_instance("a", "console"))
    with pytest.raises(BridgeConfigError, match="already exists"):
        store.create(new_instance("a", "console"))
    store.create(new_instance("b", "telegram", chat_ids=[1]))
    assert sorted(store.load()) == ["a", "b"]
    assert oct(os.stat(store.path).st_mode & 0o777) == "0o600"
    store.delete("a")
    assert sorted(store.load()) == ["b"]
    with pytest.raises(BridgeConfigError, match="no bridge named 'a'"):
        store.delete("a")
    assert "token" not in store.path.read_text().lower()


def test_file_on_disk_is_closed_too(tmp_path: Path) -> None:
    path = tmp_path / "bridges.json"
    store = BridgeStore(path)
    store.create(new_instance("tg", "telegram", chat_ids=[1]))
    doc = json.loads(path.read_text())
    doc["instances"]["tg"]["delivery_defaults"]["progress"] = {"tool_progress": "all", "typing": "true"}
    path.write_text(json.dumps(doc))
    with pytest.raises(BridgeConfigError) as info:
        store.load()
    assert "instances.tg.delivery_defaults.progress.typing" in str(info.value)
    assert str(path) in str(info.value)
    doc["instances"]["tg"]["delivery_defaults"]["progress"] = None
    doc["instances"]["tg"]["bot_token"] = "123:abc"
    path.write_text(json.dumps(doc))
    with pytest.raises(BridgeConfigError, match=r"instances\.tg\.bot_token: unknown key"):
        store.load()
    path.write_text("{not json")
    with pytest.raises(BridgeConfigError, match="not valid JSON"):
        store.load()


def test_atomic_write_keeps_the_old_file_when_the_write_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BridgeStore(tmp_path / "bridges.json")
    store.create(new_instance("keep", "console"))
    before = store.path.read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="No space"):
        store.create(new_instance("new", "console"))
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["bridges.json"]  # no temp file left behind
    assert sorted(store.load()) == ["keep"]


def test_config_dir_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "cfg"))
    assert config_dir() == tmp_path / "cfg"
    assert BridgeStore().path == tmp_path / "cfg" / "bridges.json"
    monkeypatch.delenv("ACP_PROGRESS_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_dir() == tmp_path / "xdg" / "acp-progress"
