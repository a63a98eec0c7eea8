"""A damaged or read-only data folder at start: a dialog with ways on, never a silent exit."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from desktop.core.storage.paths import DataFolderError
from desktop.ui.app import open_data
from desktop.ui.data_folder_dialog import WayOn, ask_way_on, problem_box
from tests.core.storage.test_paths import unwritable


def damaged_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "damaged"
    folder.mkdir()
    (folder / "chats.db").write_bytes(os.urandom(8192))
    return folder


def buttons(box: QMessageBox) -> list[str]:
    return [b.objectName() for b in box.buttons() if b.objectName()]  # not "Show Details…"


def test_the_dialog_offers_ways_on_for_each_problem(qapp: QApplication, tmp_path: Path) -> None:
    damaged = problem_box(DataFolderError("x is damaged", damaged=tmp_path / "chats.db"), None)
    assert sorted(buttons(damaged)) == ["folder", "fresh", "quit"]
    assert "damaged" in damaged.text()
    unwritable_box = problem_box(DataFolderError("cannot write"), tmp_path / "loomchat.log")
    assert sorted(buttons(unwritable_box)) == ["folder", "quit", "retry"]
    assert str(tmp_path / "loomchat.log") in unwritable_box.detailedText()


def click_when_shown(name: str) -> None:
    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        next(b for b in box.buttons() if b.objectName() == name).click()

    QTimer.singleShot(20, click)


def test_a_cancelled_folder_choice_asks_again(qapp: QApplication, tmp_path: Path) -> None:
    choices = iter([None, tmp_path / "new"])
    click_when_shown("folder")  # cancelled in the file dialog
    QTimer.singleShot(300, lambda: click_when_shown("folder"))
    way = ask_way_on(DataFolderError("cannot write"), None, lambda: next(choices))
    assert way == WayOn("folder", tmp_path / "new")


def test_start_fresh_keeps_the_damaged_file_and_opens_a_new_history(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    folder = damaged_folder(tmp_path)
    damaged_bytes = (folder / "chats.db").read_bytes()
    asked: list[DataFolderError] = []

    def ask(problem: DataFolderError) -> WayOn:
        asked.append(problem)
        return WayOn("fresh")

    opened = open_data(folder, ask)
    assert opened is not None
    (window, _controller, session, _problem), used = opened
    qtbot.addWidget(window)
    assert used == folder and len(asked) == 1 and asked[0].damaged == folder / "chats.db"
    [kept] = folder.glob("chats.db.damaged-*")
    assert kept.read_bytes() == damaged_bytes
    assert [c.message_count for c in session.store.conversations()] in ([], [0])  # new window
    session.store.close()


def test_another_folder_is_used_and_remembered(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LOOMCHAT_DATA_DIR", raising=False)
    chosen = tmp_path / "chosen"
    opened = open_data(unwritable(tmp_path), lambda _: WayOn("folder", chosen))
    assert opened is not None
    (window, _c, session, _p), used = opened
    qtbot.addWidget(window)
    assert used == chosen and (chosen / "chats.db").is_file()
    from desktop.core.storage.paths import data_dir

    assert data_dir() == chosen  # the next start uses it too
    session.store.close()


def test_quit_opens_nothing(qapp: QApplication, tmp_path: Path) -> None:
    assert open_data(unwritable(tmp_path), lambda _: WayOn("quit")) is None


@pytest.mark.parametrize("kind", ["damaged", "read-only"])
def test_the_real_app_waits_on_the_dialog_and_logs_why(tmp_path: Path, kind: str) -> None:
    """It exited 1 with a traceback on stderr, no window and nothing logged."""
    import subprocess

    folder = damaged_folder(tmp_path) if kind == "damaged" else unwritable(tmp_path)
    env = {**os.environ, "LOOMCHAT_DATA_DIR": str(folder), "QT_QPA_PLATFORM": "offscreen",
           "TMPDIR": str(tmp_path)}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "desktop"], env=env, stderr=subprocess.PIPE, text=True
    )
    fallback = tmp_path / f"loomchat-logs-{os.getuid()}"  # the user's own folder
    log = (folder if kind == "damaged" else fallback) / (
        "logs/loomchat.log" if kind == "damaged" else "loomchat.log"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        log.exists() and "cannot be used" in log.read_text()
    ):
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.1)
    time.sleep(1)
    still_running = process.poll() is None  # waiting on the dialog, not gone
    process.kill()
    _, err = process.communicate()
    assert still_running and "Traceback" not in err
    assert "cannot be used" in log.read_text()
