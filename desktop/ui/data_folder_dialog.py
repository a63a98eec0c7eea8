"""What the user is asked when the data folder cannot be used at start: a damaged chat
history, or a folder Loomchat may not write to. Never a silent exit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from desktop.core.storage.paths import DataFolderError


@dataclass(frozen=True)
class WayOn:
    """The user's answer: start fresh (the damaged file kept aside), use another folder,
    try again, or quit."""

    kind: Literal["fresh", "folder", "retry", "quit"]
    folder: Path | None = None


def pick_folder(parent: QWidget | None = None) -> Path | None:
    chosen = QFileDialog.getExistingDirectory(parent, "Choose a folder for Loomchat's data")
    return Path(chosen) if chosen else None


def problem_box(problem: DataFolderError, log_file: Path | None) -> QMessageBox:
    """The question, with a button per way on; each button's role tells which it is."""
    box = QMessageBox()
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle("Loomchat cannot open its data")
    box.setAccessibleName("Loomchat cannot open its data")
    if problem.damaged is not None:
        box.setText("Your chat history cannot be read: the file is damaged.")
        box.setInformativeText(
            "Loomchat can put the damaged file aside (it is kept, renamed, for recovery) and "
            "start a fresh history, or use another folder."
        )
        fresh = box.addButton("Start fresh", QMessageBox.ButtonRole.AcceptRole)
        fresh.setObjectName("fresh")
    else:
        box.setText("Loomchat cannot save anything in its data folder.")
        box.setInformativeText(
            "Give Loomchat the right to write there (then try again), or choose another "
            "folder for its chats, settings and models."
        )
        retry = box.addButton("Try again", QMessageBox.ButtonRole.AcceptRole)
        retry.setObjectName("retry")
    folder = box.addButton("Choose another folder…", QMessageBox.ButtonRole.ActionRole)
    folder.setObjectName("folder")
    quit_button = box.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
    quit_button.setObjectName("quit")
    details = str(problem)
    if log_file is not None:
        details += f"\n\nThis is also written in the log: {log_file}"
    box.setDetailedText(details)
    box.setEscapeButton(quit_button)
    return box


def ask_way_on(
    problem: DataFolderError,
    log_file: Path | None,
    choose: Callable[[], Path | None] = pick_folder,
) -> WayOn:
    """Ask until the user picks a way on (a cancelled folder choice asks again)."""
    while True:
        box = problem_box(problem, log_file)
        box.exec()
        clicked = box.clickedButton()
        name = clicked.objectName() if clicked is not None else "quit"
        if name == "folder":
            folder = choose()
            if folder is None:
                continue
            return WayOn("folder", folder)
        if name == "fresh":
            return WayOn("fresh")
        if name == "retry":
            return WayOn("retry")
        return WayOn("quit")
