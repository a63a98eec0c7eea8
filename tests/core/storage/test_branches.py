"""Conversations as trees: an edit or a regeneration is a sibling of what it replaces, the
shown branch is what is loaded, exported and continued; a chats.db made by the code before
branches (data/chats-v0.db, see data/make_chats_v0.py) opens with nothing lost."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from desktop.core.messages import Image, Message, ToolCall
from desktop.core.storage.chat_schema import SCHEMA_VERSION
from desktop.core.storage.chats import ChatStore

DATA = Path(__file__).parent / "data"


@pytest.fixture
def store(tmp_path: Path) -> ChatStore:
    return ChatStore(tmp_path / "chats.db")


def texts(store: ChatStore, conversation: int) -> list[str]:
    return [m.text for _, m in store.messages(conversation)]


def test_an_old_chats_db_opens_unchanged_and_takes_new_messages(tmp_path: Path) -> None:
    db = tmp_path / "chats.db"
    shutil.copy(DATA / "chats-v0.db", db)
    with sqlite3.connect(DATA / "chats-v0.db") as old:
        before = old.execute(
            "SELECT conversation_id, seq, role, text, body FROM messages ORDER BY 1, 2"
        ).fetchall()
    store = ChatStore(db)
    infos = {info.title: info for info in store.conversations()}
    assert {t: i.message_count for t, i in infos.items()} == {
        "Arithmetic": 48, "A picture": 2, "Empty": 0
    }  # fmt: skip
    loaded = [
        (info.id, seq, m.role, m.text)
        for info in infos.values()
        for seq, m in store.messages(info.id)
    ]
    assert sorted(loaded) == [(c, s, r, t) for c, s, r, t, _ in before]  # every message, in order
    arithmetic = [m for _, m in store.messages(infos["Arithmetic"].id)]
    assert arithmetic[1].tool_calls == [ToolCall("c0", "calculator", {"expression": "0*3"})]
    assert arithmetic[-1].text == "11 times 3 is 33."
    (picture, _answer) = [m for _, m in store.messages(infos["A picture"].id)]
    image = picture.parts[-1]
    assert isinstance(image, Image) and image.data.startswith(b"\x89PNG")
    assert store.messages(infos["Empty"].id) == [] and store.head(infos["Empty"].id) is None
    # No branches were made up, and the old line goes on where it ended.
    seqs = [seq for seq, _ in store.messages(infos["Arithmetic"].id)]
    assert store.branches(infos["Arithmetic"].id, seqs) == {}
    assert store.system_prompt(infos["Arithmetic"].id) == ("", "")
    new = store.append(infos["Arithmetic"].id, Message.user("And 12?"))
    assert store.parent(infos["Arithmetic"].id, new) == seqs[-1]
    store.close()
    with sqlite3.connect(db) as migrated:
        assert migrated.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    again = ChatStore(db)  # opened again: not migrated twice
    assert len(again.messages(infos["Arithmetic"].id)) == 49
    again.close()


def test_the_chats_db_of_before_the_layout_change_opens_too(tmp_path: Path) -> None:
    db = tmp_path / "chats.db"
    shutil.copy(DATA / "chats-before-layout.db", db)
    store = ChatStore(db)
    (info,) = store.conversations()
    assert len(store.messages(info.id)) == 6
    store.close()


def test_a_regenerated_answer_is_a_sibling_and_both_stay(store: ChatStore) -> None:
    c = store.create_conversation()
    question = store.append(c, Message.user("Q"))
    first = store.append(c, Message.assistant("A1"))
    store.rewind(c, question)  # regenerate: the next answer follows the question again
    second = store.append(c, Message.assistant("A2"))
    assert texts(store, c) == ["Q", "A2"]
    branches = store.branches(c, [question, second])
    assert list(branches) == [second]
    assert (branches[second].index, branches[second].count) == (1, 2)
    assert branches[second].siblings == (first, second)
    store.show_branch(c, first)
    assert texts(store, c) == ["Q", "A1"]
    exported = store.export_json(c)["messages"]
    assert Message.from_dict(exported[-1]).text == "A1"  # exports follow it


def test_an_edited_question_branches_and_the_old_turns_are_kept(store: ChatStore) -> None:
    c = store.create_conversation()
    store.append(c, Message.user("Q1"))
    a1 = store.append(c, Message.assistant("A1"))
    q2 = store.append(c, Message.user("Q2"))
    store.append(c, Message.assistant("A2"))
    store.append(c, Message.user("Q3"))
    store.rewind(c, store.parent(c, q2))  # edit Q2: the new one follows A1
    q2b = store.append(c, Message.user("Q2, better"))
    store.append(c, Message.assistant("A2b"))
    assert texts(store, c) == ["Q1", "A1", "Q2, better", "A2b"]
    assert store.branches(c, [q2b])[q2b].siblings == (q2, q2b)
    store.show_branch(c, q2)  # back to the old version: down to its newest message
    assert texts(store, c) == ["Q1", "A1", "Q2", "A2", "Q3"]
    assert "A2b" not in store.export_markdown(c)
    assert store.parent(c, q2b) == a1


def test_paging_back_follows_the_shown_branch(store: ChatStore) -> None:
    c = store.create_conversation()
    for n in range(10):
        store.append(c, Message.user(f"q{n}"))
    fork = store.messages(c)[4][0]
    store.rewind(c, fork)
    for n in range(3):
        store.append(c, Message.user(f"b{n}"))
    newest = store.messages(c, last=4)
    assert [m.text for _, m in newest] == ["q4", "b0", "b1", "b2"]
    older = store.messages(c, last=3, before_seq=newest[0][0])
    assert [m.text for _, m in older] == ["q1", "q2", "q3"]


def test_deleting_a_message_takes_what_followed_and_shows_what_is_left(
    store: ChatStore,
) -> None:
    c = store.create_conversation()
    q = store.append(c, Message.user("Q"))
    store.append(c, Message.assistant("A1"))
    store.append(c, Message.user("more"))
    store.rewind(c, q)
    a2 = store.append(c, Message.assistant("A2"))
    store.append(c, Message.user("after A2"))
    store.delete_from(c, a2)  # this branch goes; the other one is shown
    assert texts(store, c) == ["Q", "A1", "more"]
    assert store.count(c) == 3
    store.delete_from(c, q)  # the first message: the conversation is empty
    assert store.messages(c) == [] and store.head(c) is None and store.count(c) == 0
    store.append(c, Message.user("again"))
    assert texts(store, c) == ["again"]


def test_the_system_prompt_is_the_conversations_own(store: ChatStore) -> None:
    c, other = store.create_conversation(), store.create_conversation()
    store.set_system_prompt(c, "Answer in French.", preset="French tutor")
    assert store.system_prompt(c) == ("Answer in French.", "French tutor")
    assert store.system_prompt(other) == ("", "")
    with pytest.raises(KeyError):
        store.system_prompt(999)


def test_the_shown_branchs_characters_are_counted_in_the_database(store: ChatStore) -> None:
    c = store.create_conversation()
    assert store.shown_chars(c) == 0
    q = store.append(c, Message.user("12345"))
    store.append(c, Message.assistant("1234567890"))
    store.rewind(c, q)
    store.append(c, Message.assistant("123"))
    assert store.shown_chars(c) == 5 + 3


def test_a_version_1_chats_db_gains_the_conversations_own_collections(tmp_path: Path) -> None:
    """chats-v1.db was written by Loomchat at f7c3c95 (a conversation with a preset and a
    system prompt, before conversations had collections of their own)."""
    db = tmp_path / "chats.db"
    shutil.copy(DATA / "chats-v1.db", db)
    store = ChatStore(db)
    (info,) = store.conversations()
    assert store.system_prompt(info.id) == ("Answer briefly.", "Work")
    assert store.collections(info.id) is None  # as its preset says
    assert [m.text for _, m in store.messages(info.id)][-1] == "In the blue shed [1]."
    store.set_collections(info.id, ["Manuals"])
    store.close()
    again = ChatStore(db)
    assert again.collections(info.id) == ("Manuals",)
    again.set_collections(info.id, None)
    assert again.collections(info.id) is None
    again.close()
    with sqlite3.connect(db) as migrated:
        assert migrated.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        migrated.execute("UPDATE conversations SET collections = '{not json'")
    broken = ChatStore(db)
    assert broken.collections(info.id) is None  # another program's text: ignored
    broken.close()
