"""Servers saved by name: kept in the settings, chosen per conversation or preset, and the
files the code before them wrote still read."""

import json
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from desktop.core.storage.chat_schema import SCHEMA_VERSION
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.presets import Preset
from desktop.core.storage.servers import (
    MAX_SERVERS,
    ServerError,
    connection_of,
    in_use,
    key_name,
    on_server,
    removed,
    saved_as,
    settings_for,
)
from desktop.core.storage.settings import (
    CONNECTION_FIELDS,
    Settings,
    SettingsError,
    load_settings,
    save_settings,
)

DATA = Path(__file__).parent / "data"
LAPTOP = Settings(backend="builtin", runtime_model="/models/qwen-0.5b.gguf", context_size=4096)


def gpu_box() -> Settings:
    return Settings(
        backend="vllm", url="https://gpu.example:8000", model="Qwen/Qwen2.5-7B-Instruct",
        headers={"X-Team": "ml"}, ca_file="/etc/ssl/team-ca.pem", track="native",
    )  # fmt: skip


GPU = gpu_box()


def two_servers() -> Settings:
    """The laptop's built-in server and a GPU box, both saved; the GPU box in use."""
    settings = saved_as(LAPTOP, "Laptop")
    gpu = replace(gpu_box(), servers=settings.servers)
    return saved_as(gpu, "GPU box")


def test_a_saved_server_keeps_the_whole_connection_and_nothing_else() -> None:
    settings = two_servers()
    assert set(settings.servers) == {"Laptop", "GPU box"} and in_use(settings) == "GPU box"
    assert set(settings.servers["GPU box"]) == set(CONNECTION_FIELDS)
    assert settings.servers["GPU box"]["headers"] == {"X-Team": "ml"}
    laptop = on_server(replace(settings, temperature=0.3, max_tool_calls=4), "Laptop")
    assert (laptop.backend, laptop.url, laptop.headers, laptop.ca_file) == ("builtin", "", {}, "")
    assert laptop.runtime_model == "/models/qwen-0.5b.gguf" and laptop.track == "emulated"
    assert (laptop.temperature, laptop.max_tool_calls) == (0.3, 4)  # not the server's
    assert in_use(laptop) == "Laptop" and laptop.needs_reconnect(settings)


def test_a_connection_changed_after_saving_is_no_longer_the_saved_server() -> None:
    settings = two_servers()
    changed = replace(settings, url="https://other.example:8000")
    assert in_use(changed) == "" and changed.server == "GPU box"
    assert settings_for(changed, "GPU box") is not None  # choosing it again restores it
    assert settings_for(settings, "GPU box") is None  # already in use: nothing to do
    assert settings_for(settings, "Gone") is None and settings_for(settings, "") is None


def test_the_saved_fields_are_copies() -> None:
    settings = two_servers()
    settings.headers["X-Team"] = "changed"
    assert settings.servers["GPU box"]["headers"] == {"X-Team": "ml"}
    assert connection_of(settings)["headers"] is not settings.headers


def test_names_and_counts_are_bounded_and_removal_forgets_only_the_name() -> None:
    with pytest.raises(ServerError):
        saved_as(GPU, "  ")
    with pytest.raises(ServerError):
        saved_as(GPU, "x" * 81)
    with pytest.raises(ServerError, match="no saved server"):
        on_server(GPU, "Nowhere")
    full = replace(GPU, servers={f"s{n}": connection_of(GPU) for n in range(MAX_SERVERS)})
    with pytest.raises(ServerError, match="at most"):
        saved_as(full, "one more")
    assert saved_as(full, "s3").server == "s3"  # saving over one is always possible
    settings = removed(two_servers(), "GPU box")
    assert set(settings.servers) == {"Laptop"} and settings.server == ""
    assert settings.url == GPU.url  # still connected as it was
    assert key_name("GPU box") == "server:GPU box"


def test_saved_servers_survive_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    save_settings(two_servers(), path)
    again = load_settings(path)
    assert again == two_servers() and in_use(again) == "GPU box"
    raw = json.loads(path.read_text())
    raw["servers"]["Laptop"]["track"] = "telepathy"
    path.write_text(json.dumps(raw))
    with pytest.raises(SettingsError, match=r"servers\.Laptop\.track"):
        load_settings(path)


def test_a_settings_file_from_before_saved_servers_reads_as_one_unsaved_connection() -> None:
    """settings-before-servers.json was written by Loomchat at ee9b501."""
    settings = load_settings(DATA / "settings-before-servers.json")
    assert (settings.backend, settings.url, settings.headers) == ("vllm", GPU.url, GPU.headers)
    assert settings.servers == {} and settings.server == "" and in_use(settings) == ""
    assert saved_as(settings, "GPU box").servers["GPU box"]["url"] == GPU.url


def test_a_version_2_chats_db_gains_each_conversations_server(tmp_path: Path) -> None:
    """chats-v2.db was written by Loomchat at ee9b501 (a conversation with a preset, a
    system prompt and its own collections, before conversations had a server)."""
    db = tmp_path / "chats.db"
    shutil.copy(DATA / "chats-v2.db", db)
    store = ChatStore(db)
    (info,) = store.conversations()
    assert store.server(info.id) == ""  # whichever is in use, or its preset's
    assert store.collections(info.id) == ("Manuals",)
    assert store.system_prompt(info.id) == ("Answer briefly.", "Work")
    assert [m.text for _, m in store.messages(info.id)][-1] == "Port 8000 [1]."
    store.set_server(info.id, "GPU box")
    store.close()
    again = ChatStore(db)
    assert again.server(info.id) == "GPU box"
    again.close()
    with sqlite3.connect(db) as migrated:
        assert migrated.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3


def test_a_preset_names_its_server_and_old_presets_name_none() -> None:
    assert Preset.from_dict({"name": "Old", "system_prompt": "Hi"}).server == ""
    work = Preset("Work", server="GPU box")
    assert Preset.from_dict(work.to_dict()) == work
