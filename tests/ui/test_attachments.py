"""Attachments in the window: a text file goes as text with its name, an image to a model
that sees it, a notice first where the model cannot; pasted and dropped files; a file too
large says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QUrl
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMessageBox, QToolButton

from desktop.ui.composer import AttachmentChip
from desktop.ui.tool_card import ImageThumb
from tests.support.images import PNG
from tests.ui.conftest import WindowFactory
from tests.ui.test_branches import idle


def chips(window: Any) -> list[AttachmentChip]:
    found: list[AttachmentChip] = window.pane.composer_bar.attachment_row.findChildren(
        AttachmentChip
    )
    return found


def attach(qtbot: Any, window: Any, *paths: Path) -> None:
    before = len(window.pane.composer_bar.attachments)
    window.pane.attacher.attach_files(list(paths))
    qtbot.waitUntil(
        lambda: len(window.pane.composer_bar.attachments) == before + len(paths), timeout=10000
    )


def test_a_text_file_goes_with_the_message_under_its_name(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window, provider = make_window(["Two items."])
    notes = tmp_path / "list.csv"
    notes.write_text("item,price\nmilk,1\n")
    attach(qtbot, window, notes)
    assert window.pane.composer_bar.attachment_row.isVisibleTo(window)
    window.pane.composer.setPlainText("How many items?")
    window.pane.send()
    idle(qtbot, window)
    sent = provider.requests[0].messages[-1].text
    assert sent == "[Attached file: list.csv]\n```\nitem,price\nmilk,1\n\n```\n\nHow many items?"
    assert window.pane.composer_bar.attachments == [] and not chips(window)


def test_an_image_to_a_model_that_cannot_see_asks_first(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, provider = make_window(["I cannot see it."], vision=False)
    (tmp_path / "cat.png").write_bytes(PNG)
    attach(qtbot, window, tmp_path / "cat.png")
    asked: list[str] = []
    answers = [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes]

    def question(_parent: Any, title: str, text: str) -> QMessageBox.StandardButton:
        asked.append(f"{title}: {text}")
        return answers.pop(0)

    monkeypatch.setattr(QMessageBox, "question", question)
    window.pane.composer.setPlainText("What is this?")
    window.pane.send()  # "No": nothing is sent, the image and the words wait
    assert provider.requests == [] and len(window.pane.composer_bar.attachments) == 1
    assert window.pane.composer.toPlainText() == "What is this?"
    assert "cannot see images: the image stays here" in asked[0]
    window.pane.send()
    idle(qtbot, window)
    (request,) = provider.requests
    assert request.messages[-1].images == [] and request.messages[-1].text == "What is this?"
    assert window.pane.chat.bubbles()[0].findChildren(ImageThumb)  # shown in the chat
    assert window.conversation_id is not None
    stored = window.store.messages(window.conversation_id)[0][1]
    assert len(stored.images) == 1  # kept with the message, shown in the chat


def test_an_image_goes_to_a_model_that_sees(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, provider = make_window(["A small teal square."], vision=True)
    monkeypatch.setattr(QMessageBox, "question", lambda *_: pytest.fail("no question"))
    (tmp_path / "cat.png").write_bytes(PNG)
    attach(qtbot, window, tmp_path / "cat.png")
    window.pane.send()  # an image alone is a message
    idle(qtbot, window)
    assert len(provider.requests[0].messages[-1].images) == 1


def test_pasted_images_and_dropped_files_become_attachments(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window, _ = make_window([])
    pasted = QMimeData()
    image = QImage()
    assert image.loadFromData(PNG)
    pasted.setImageData(image)
    window.pane.composer.insertFromMimeData(pasted)
    (tmp_path / "a.txt").write_text("hello")
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(tmp_path / "a.txt"))])
    window.pane.composer.insertFromMimeData(dropped)
    qtbot.waitUntil(lambda: len(window.pane.composer_bar.attachments) == 2, timeout=10000)
    names = [a.name for a in window.pane.composer_bar.attachments]
    assert names == ["pasted image.png", "a.txt"] and window.pane.composer.toPlainText() == ""
    remove = chips(window)[0].findChild(QToolButton)  # its ×
    assert remove is not None
    remove.click()
    qtbot.waitUntil(lambda: len(window.pane.composer_bar.attachments) == 1, timeout=2000)
    assert window.pane.composer_bar.attachments[0].name == "a.txt"


def test_a_file_too_large_for_the_context_is_refused_in_words(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window, _ = make_window([])
    big = tmp_path / "big.log"
    big.write_text("x" * 100_000)  # 25,000 tokens; the context is 8,192
    window.pane.attacher.attach_files([big])
    qtbot.waitUntil(
        lambda: any("big.log is about" in w.text() for w in notes(window)), timeout=10000
    )
    assert window.pane.composer_bar.attachments == []


def notes(window: Any) -> list[Any]:
    from PySide6.QtWidgets import QLabel

    return [w for w in window.pane.chat.shown() if isinstance(w, QLabel)]
