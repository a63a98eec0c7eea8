"""A settings file and a chats.db written by the code before the layout change (commit
095889e, made with tests/core/storage/data/*) open unchanged, nothing lost."""

import shutil
from pathlib import Path

from desktop.core.messages import Image
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.settings import Settings, load_settings

DATA = Path(__file__).parent / "data"


def test_an_old_settings_file_reads_back_every_value() -> None:
    settings = load_settings(DATA / "settings-before-layout.json")
    assert settings == Settings(
        backend="ollama", url="http://127.0.0.1:11434", model="qwen3:4b", track="auto",
        max_tool_calls=7, cooldown_enabled=False, cooldown_overrides={"current_time": True},
        tools_enabled={"create_chart": False}, context_size=4096,
        runtime_model="/models/x.gguf", temperature=0.3, show_inspector=True,
        workspace="/home/me/notes", mcp_config="/home/me/mcp.json",
        trusted_tools={"write_file": True}, tool_selection="off",
        pinned_tools={"calculator": True},
    )  # fmt: skip


def test_an_old_chats_db_opens_with_its_conversation(tmp_path: Path) -> None:
    db = tmp_path / "chats.db"
    shutil.copy(DATA / "chats-before-layout.db", db)
    store = ChatStore(db)
    try:
        (info,) = store.conversations()
        assert info.title == "Weather in Oslo" and info.message_count == 6
        messages = [m for _, m in store.messages(info.id)]
        assert [m.role for m in messages] == [
            "system", "user", "assistant", "tool", "user", "assistant"
        ]  # fmt: skip
        assert messages[2].tool_calls[0].arguments == {"city": "Oslo"}
        assert messages[3].text == "Cold, 2°C" and messages[3].name == "get_weather"
        image = messages[4].parts[-1]
        assert isinstance(image, Image) and image.data.startswith(b"\x89PNG")
        assert messages[5].text == "It is cold in Oslo: 2 °C."
        store.append(info.id, messages[1])  # and it takes new messages
        assert len(store.messages(info.id)) == 7
    finally:
        store.close()
