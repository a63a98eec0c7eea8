"""Data files written by something else: chats.db with a loop of parents, a row that is not
JSON, a time stored as text, a negative version, another program's tables; presets,
calibrations and the models' index nested past the recursion limit, with a byte order
mark, NaN, wrong types; a preset to import that is a FIFO or /dev/zero. Each opens with
what can be read and says what could not, or is refused with a reason: none hangs,
raises, or is written over."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop.core.calibration.store import CalibrationStore
from desktop.core.messages import Message
from desktop.core.models.library import local_models
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.paths import DataFolderError
from desktop.core.storage.presets import BUILT_IN, Preset, PresetBook, PresetError
from desktop.core.storage.settings import SettingsError, load_settings

DEEP = "[" * 100_000 + "]" * 100_000


def finishes(work: Callable[[], Any], within_s: float = 10.0) -> Any:
    """`work()`'s value; fails if it has not returned within `within_s` (a hang)."""
    found: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            found.append(work())
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within_s)
    assert not thread.is_alive(), f"still running after {within_s} s"
    if failed:
        raise failed[0]
    return found[0]


def chats_with_three_messages(tmp_path: Path) -> tuple[ChatStore, int]:
    store = ChatStore(tmp_path / "chats.db")
    conversation = store.create_conversation("t")
    for text in ("one", "two", "three"):
        store.append(conversation, Message.user(text))
    return store, conversation


def test_a_loop_of_parents_is_reported_as_damage_and_never_hangs(tmp_path: Path) -> None:
    store, conversation = chats_with_three_messages(tmp_path)
    with sqlite3.connect(tmp_path / "chats.db") as other:  # another program's write
        other.execute("UPDATE messages SET parent = 2 WHERE seq = 0")
    shown = finishes(lambda: store.messages(conversation))
    assert [m.text for _, m in shown] == ["one", "two", "three"]
    assert "loop" in (store.damage_of(conversation) or "")
    assert finishes(lambda: store.messages(conversation, last=2))
    assert finishes(lambda: store.shown_chars(conversation)) == len("onetwothree")
    finishes(lambda: store.show_branch(conversation, 1))
    finishes(lambda: store.delete_from(conversation, 1))
    assert store.count(conversation) == 0  # 1 and what loops below it: 2, then 0
    store.append(conversation, Message.user("four"))  # the write lock was let go
    store.close()


def test_rows_another_program_wrote_are_skipped_and_counted(tmp_path: Path) -> None:
    store, conversation = chats_with_three_messages(tmp_path)
    with sqlite3.connect(tmp_path / "chats.db") as other:
        other.execute("UPDATE messages SET body = 'not json {' WHERE seq = 1")
        other.execute("UPDATE conversations SET updated = 'yesterday'")
    assert [m.text for _, m in store.messages(conversation)] == ["one", "three"]
    assert store.damage_of(conversation) == ("1 of its messages could not be read and are left out")
    (listed,) = store.conversations()
    assert listed.id == conversation and listed.updated == 0.0
    store.close()


@pytest.mark.parametrize(
    "sql, why",
    [
        ("PRAGMA user_version = -3", "version -3"),
        (
            "DROP TABLE messages; CREATE TABLE messages (id INTEGER PRIMARY KEY, "
            "conversation_id INTEGER, seq INTEGER, role TEXT, content TEXT)",
            "has no",
        ),
    ],
    ids=["negative version", "another program's tables"],
)
def test_a_file_of_another_kind_is_a_data_folder_error(tmp_path: Path, sql: str, why: str) -> None:
    ChatStore(tmp_path / "chats.db").close()
    with sqlite3.connect(tmp_path / "chats.db") as other:
        other.executescript(sql)
    with pytest.raises(DataFolderError, match=why) as raised:
        ChatStore(tmp_path / "chats.db")
    assert raised.value.damaged == tmp_path / "chats.db"  # the dialog offers to set it aside


def test_presets_are_read_one_by_one_and_a_bad_file_is_never_saved_over(tmp_path: Path) -> None:
    path = tmp_path / "presets.json"
    good = {"name": "Mine", "system_prompt": "Be brief."}
    too_long = {"name": "x" * 81}
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"presets": [good, too_long]}).encode())
    book = PresetBook.load(path)
    assert [p.name for p in book.presets] == ["Mine"]  # read despite the BOM and the bad one
    assert book.problem is not None and "1 of the presets" in book.problem
    (kept,) = tmp_path.glob("presets.json.unreadable-*")
    assert json.loads(kept.read_bytes().decode("utf-8-sig"))["presets"][1] == too_long
    book.save()
    assert PresetBook.load(path).problem is None and kept.exists()


@pytest.mark.parametrize(
    "preset",
    [Preset("n" * 81), Preset("Long prompt", "x" * 100_001), Preset("Hot", temperature=3.0)],
    ids=["name over 80", "prompt over 100,000", "temperature over 2"],
)
def test_the_dialog_cannot_keep_a_preset_the_file_would_refuse(
    tmp_path: Path, preset: Preset
) -> None:
    book = PresetBook.load(tmp_path / "presets.json")
    with pytest.raises(PresetError, match="cannot be kept"):
        book.put(preset)
    book.presets.append(preset)  # even if it got in, saving refuses it: nothing written
    with pytest.raises(PresetError):
        book.save()
    assert not (tmp_path / "presets.json").exists()
    assert PresetBook.load(tmp_path / "presets.json").presets == list(BUILT_IN)


@pytest.mark.parametrize(
    "content",
    [DEEP, '{"presets": ' + DEEP + "}", '{"presets": [{"name": "a", "temperature": NaN}]}'],
    ids=["nested", "nested list", "NaN"],
)
def test_a_damaged_presets_file_opens_with_the_built_in_ones(tmp_path: Path, content: str) -> None:
    (tmp_path / "presets.json").write_text(content)
    book = PresetBook.load(tmp_path / "presets.json")
    assert book.presets == list(BUILT_IN) and book.problem is not None


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "dev zero"])
def test_importing_a_fifo_or_dev_zero_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        source = tmp_path / "preset.json"
        os.mkfifo(source)
    else:
        source = Path("/dev/zero")
    book = PresetBook()
    started = time.monotonic()
    with pytest.raises(PresetError, match="not a regular file"):
        finishes(lambda: book.import_file(source), within_s=5)
    assert time.monotonic() - started < 5


def calibration_entry() -> dict[str, Any]:
    data = json.loads((Path(__file__).parents[1] / "core" / "calibration" / "data" /
                       "calibrations-two-bars.json").read_text())  # fmt: skip
    key, entry = next(iter(data["models"].items()))
    return {"key": key, "entry": entry}


@pytest.mark.parametrize(
    "damage",
    ["nested", "NaN bar", "bar as text", "scores as a number"],
)
def test_a_damaged_calibration_is_dropped_not_used(tmp_path: Path, damage: str) -> None:
    found = calibration_entry()
    entry = found["entry"]
    path = tmp_path / "calibrations.json"
    if damage == "nested":
        path.write_text(DEEP)
    else:
        if damage == "NaN bar":
            text = json.dumps({"version": 1, "models": {found["key"]: {**entry, "bar": 0.5}}})
            path.write_text(text.replace('"bar": 0.5', '"bar": NaN'))
        else:
            wrongs: dict[str, dict[str, Any]] = {
                "bar as text": {"bar": "0.9"},
                "scores as a number": {"scores": 5},
            }
            wrong = wrongs[damage]
            path.write_text(
                json.dumps({"version": 1, "models": {found["key"]: {**entry, **wrong}}})
            )
    store = CalibrationStore(path)
    assert store.get(found["key"]) is None and store.problem is not None


async def test_a_damaged_models_index_is_read_again(tmp_path: Path) -> None:
    from tests.core.models.test_library import tiny_gguf

    folder = tmp_path / "models"
    folder.mkdir()
    model = tiny_gguf(folder / "m.gguf")
    stat = model.stat()
    key = f"m.gguf:{stat.st_size}:{int(stat.st_mtime)}"
    for index in (
        DEEP,
        json.dumps({key: {"header": {"context_length": "big", "name": 5}}}),
        json.dumps({key: {"header": {"has_chat_template": "yes"}, "last_used": "x"}}),
    ):
        (folder / "index.json").write_text(index)
        (found,) = await local_models(folder)
        assert found.header.name == "Tiny Test" and found.last_used is None


def test_settings_nested_past_the_recursion_limit_are_refused_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(DEEP)
    with pytest.raises(SettingsError, match="nested too deeply"):
        load_settings(tmp_path / "settings.json")
