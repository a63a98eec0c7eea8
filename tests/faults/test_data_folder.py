"""Damaged and read-only data folders at the app's start: each opens (telling what was set
aside or defaulted) or asks the user for a way on with a plain reason; none raises."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from desktop.core.storage.paths import DataFolderError
from desktop.ui.app import open_data
from desktop.ui.data_folder_dialog import WayOn
from tests.core.storage.test_paths import unwritable


def valid_db(folder: Path) -> Path:
    path = folder / "chats.db"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE filler (x); INSERT INTO filler VALUES (zeroblob(200000));")
    return path


def truncate_half(folder: Path) -> None:
    path = valid_db(folder)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


DAMAGE: dict[str, Callable[[Path], object]] = {
    "chats.db random bytes": lambda f: (f / "chats.db").write_bytes(os.urandom(10_000)),
    "chats.db zeros": lambda f: (f / "chats.db").write_bytes(bytes(8192)),
    "chats.db empty": lambda f: (f / "chats.db").write_bytes(b""),
    "chats.db cut in half": truncate_half,
    "chats.db a folder": lambda f: (f / "chats.db").mkdir(),
    "chats.db-wal garbage": lambda f: (valid_db(f), (f / "chats.db-wal").write_bytes(os.urandom(5000))),
    "settings.json random bytes": lambda f: (f / "settings.json").write_bytes(os.urandom(3000)),
    "settings.json nested 100,000 deep": lambda f: (f / "settings.json").write_text("[" * 100_000),
    "settings.json wrong types": lambda f: (f / "settings.json").write_text('{"max_tool_calls": "x"}'),
    "settings.json a folder": lambda f: (f / "settings.json").mkdir(),
    "secrets.json garbage": lambda f: (f / "secrets.json").write_bytes(os.urandom(100)),
    "logs a file": lambda f: (f / "logs").write_text("not a folder"),
    "models a file": lambda f: (f / "models").write_text("not a folder"),
}  # fmt: skip
# What must happen: "opens" (perhaps with a settings note), or "asks" (with a reason).
OUTCOME = {name: "opens" for name in DAMAGE} | {
    "chats.db random bytes": "asks", "chats.db zeros": "asks", "chats.db cut in half": "asks",
    "chats.db a folder": "asks",
}  # fmt: skip


@pytest.mark.parametrize("damage", DAMAGE, ids=DAMAGE.keys())
def test_a_damaged_data_folder(qtbot, qloop, tmp_path: Path, damage: str) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "data"
    folder.mkdir()
    DAMAGE[damage](folder)
    asked: list[DataFolderError] = []

    def ask(problem: DataFolderError) -> WayOn:
        asked.append(problem)
        return WayOn("fresh") if problem.damaged else WayOn("folder", tmp_path / "other")

    opened = open_data(folder, ask)
    assert opened is not None
    (window, _controller, session, problem), _used = opened
    qtbot.addWidget(window)
    assert ("asks" if asked else "opens") == OUTCOME[damage], asked
    for question in asked:
        assert str(question).startswith("The chat history") and "Traceback" not in str(question)
    if damage.startswith("settings.json") and "folder" not in damage:
        assert problem is not None and "defaults are used" in problem
    session.store.close()


@pytest.mark.parametrize("kind", ["read-only folder", "folder is a file"])
def test_a_folder_that_cannot_be_written(qtbot, qloop, tmp_path: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    if kind == "read-only folder":
        folder = unwritable(tmp_path)
    else:
        folder = tmp_path / "file"
        folder.write_text("x")
    asked: list[DataFolderError] = []

    def ask(problem: DataFolderError) -> WayOn:
        asked.append(problem)
        return WayOn("quit")

    assert open_data(folder, ask) is None
    assert len(asked) == 1 and asked[0].damaged is None
    assert "cannot write to its data folder" in str(asked[0])
