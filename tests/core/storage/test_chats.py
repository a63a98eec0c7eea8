"""Conversations in SQLite: round trip, order, search, lazy loading, export, crash safety."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.core.messages import Image, Message, MessageMeta, ToolCall
from desktop.core.storage.chats import ChatStore

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 20


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChatStore]:
    store = ChatStore(tmp_path / "chats.db")
    yield store
    store.close()


def sample() -> list[Message]:
    return [
        Message.user("chart my sales"),
        Message.assistant("", [ToolCall("c1", "create_chart", {"type": "bar", "values": [1, 2]})]),
        Message.tool(
            "c1",
            "create_chart",
            "a bar chart",
            meta=MessageMeta(12.5, None, (Image.from_bytes(PNG),)),
        ),
        Message.user("[Images from the tool results: create_chart]", [Image.from_bytes(PNG)]),
        Message.assistant("Sales **rise**."),
    ]


def test_messages_round_trip_in_order(store: ChatStore) -> None:
    chat = store.create_conversation("Sales")
    seqs = [store.append(chat, m) for m in sample()]
    assert seqs == [0, 1, 2, 3, 4]
    loaded = [m for _, m in store.messages(chat)]
    assert loaded == sample()
    assert loaded[2].meta.duration_ms == 12.5 and loaded[3].images[0].data == PNG


def test_survives_reopening(tmp_path: Path) -> None:
    first = ChatStore(tmp_path / "chats.db")
    chat = first.create_conversation("Kept")
    first.append(chat, Message.user("hello"))
    first.close()
    again = ChatStore(tmp_path / "chats.db")
    assert [c.title for c in again.conversations()] == ["Kept"]
    assert [m.text for _, m in again.messages(chat)] == ["hello"]
    again.close()


def test_list_rename_delete_search(store: ChatStore) -> None:
    a = store.create_conversation("Weather")
    b = store.create_conversation("Taxes")
    store.append(a, Message.user("is it raining in Oslo?"))
    store.append(b, Message.user("deduct the laptop"))
    assert [c.title for c in store.conversations()] == ["Taxes", "Weather"]  # newest first
    assert [c.title for c in store.conversations("oslo")] == ["Weather"]  # by message text
    assert [c.title for c in store.conversations("TAX")] == ["Taxes"]  # by title, any case
    store.rename(a, "Oslo weather")
    store.delete(b)
    infos = store.conversations()
    assert [(c.title, c.message_count) for c in infos] == [("Oslo weather", 1)]
    assert store.messages(b) == []


def test_last_n_and_paging_back(store: ChatStore) -> None:
    chat = store.create_conversation()
    for i in range(10):
        store.append(chat, Message.user(f"m{i}"))
    newest = store.messages(chat, last=3)
    assert [(s, m.text) for s, m in newest] == [(7, "m7"), (8, "m8"), (9, "m9")]
    older = store.messages(chat, last=3, before_seq=newest[0][0])
    assert [m.text for _, m in older] == ["m4", "m5", "m6"]
    assert store.count(chat) == 10


def test_export_json_and_markdown(store: ChatStore) -> None:
    chat = store.create_conversation("Sales")
    for message in sample():
        store.append(chat, message)
    exported = store.export_json(chat)
    assert exported["title"] == "Sales"
    assert [Message.from_dict(m) for m in json.loads(json.dumps(exported))["messages"]] == sample()
    markdown = store.export_markdown(chat)
    assert markdown.startswith("# Sales\n")
    assert '**Tool call:** `create_chart({"type": "bar", "values": [1, 2]})`' in markdown
    assert "**Tool result: create_chart**" in markdown
    assert "**Assistant:**\n\nSales **rise**." in markdown
    assert f"*[image: image/png, {len(PNG)} bytes]*" in markdown


WRITER = """
import sys, time
from pathlib import Path
from desktop.core.messages import Message
from desktop.core.storage.chats import ChatStore
store = ChatStore(Path(sys.argv[1]))
chat = store.create_conversation("crash")
i = 0
while True:
    store.append(chat, Message.user(f"message {i}"))
    print(i, flush=True)
    i += 1
"""


def test_a_crash_mid_write_loses_nothing_committed(tmp_path: Path) -> None:
    """Kill -9 a process while it writes: every message it reported committed is there,
    and the database opens cleanly."""
    path = tmp_path / "chats.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    committed = -1
    deadline = time.monotonic() + 30
    while committed < 200 and time.monotonic() < deadline:
        committed = int(writer.stdout.readline())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    store = ChatStore(path)
    (chat,) = store.conversations()
    texts = [m.text for _, m in store.messages(chat.id)]
    assert len(texts) >= committed + 1
    assert texts[: committed + 1] == [f"message {i}" for i in range(committed + 1)]
    assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store.close()


def test_a_lone_surrogate_is_stored_as_a_replacement_character(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    conversation = store.create_conversation()
    store.append(conversation, Message.assistant("half \ud83d emoji"))
    [(_, message)] = store.messages(conversation)
    assert message.text == "half \ufffd emoji"
    assert store.conversations("\ufffd")[0].id == conversation
