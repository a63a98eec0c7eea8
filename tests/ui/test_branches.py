"""Versions of a message in the window: regenerate, edit, the "< 2/3 >" switcher, delete,
copy; what the next request sends follows the branch on screen."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from desktop.core.tracks.prompt import EARLIER_HEAD, TOOL_PROMPT_HEAD
from desktop.ui.bubbles import MessageBubble
from tests.support.fakes import Step
from tests.ui.conftest import WindowFactory
from tests.ui.test_main_window import type_and_send


def bubbles(window: Any) -> list[tuple[str, str]]:
    return [(b.role, b.body.text) for b in window.pane.chat.bubbles()]


def said(request: Any) -> list[str]:
    """What a request told the model the conversation said: the earlier turns (on the
    emulated track a transcript before the tool prompt), then the messages."""
    system = next((m.text for m in request.messages if m.role == "system"), "")
    transcript = system.partition(EARLIER_HEAD)[2].partition(TOOL_PROMPT_HEAD)[0]
    earlier = transcript.strip().splitlines()
    return [line.split(": ", 1)[1] for line in earlier] + [
        m.text for m in request.messages if m.role != "system"
    ]


def idle(qtbot: Any, window: Any) -> None:
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    qtbot.waitUntil(
        lambda: all(b.seq is not None for b in window.pane.chat.bubbles()), timeout=5000
    )


def last(window: Any, role: str) -> MessageBubble:
    found: list[MessageBubble] = [b for b in window.pane.chat.bubbles() if b.role == role]
    return found[-1]


def test_regenerate_then_switch_back_and_go_on_from_there(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window(["A1", "A2", "after A1"])
    type_and_send(qtbot, window, "Q")
    idle(qtbot, window)
    answer = last(window, "assistant")
    assert answer.regenerate_button is not None and answer.edit_button is None
    qtbot.mouseClick(answer.regenerate_button, Qt.MouseButton.LeftButton)
    idle(qtbot, window)
    assert bubbles(window) == [("user", "Q"), ("assistant", "A2")]
    assert said(provider.requests[1]) == ["Q"]
    (switcher,) = window.pane.chat.switchers()
    assert switcher.label.text() == "2/2" and not switcher.next.isEnabled()
    qtbot.mouseClick(switcher.previous, Qt.MouseButton.LeftButton)
    assert bubbles(window) == [("user", "Q"), ("assistant", "A1")]
    assert window.pane.chat.switchers()[0].label.text() == "1/2"
    type_and_send(qtbot, window, "Go on")
    idle(qtbot, window)
    assert said(provider.requests[2]) == ["Q", "A1", "Go on"]
    assert bubbles(window)[-2:] == [("user", "Go on"), ("assistant", "after A1")]


def test_edit_a_question_makes_a_new_version_and_keeps_the_old(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window(["A1", "A2", "A2b"])
    type_and_send(qtbot, window, "Q1")
    idle(qtbot, window)
    type_and_send(qtbot, window, "Q2")
    idle(qtbot, window)
    question = last(window, "user")
    assert question.edit_button is not None
    qtbot.mouseClick(question.edit_button, Qt.MouseButton.LeftButton)
    assert window.pane.composer.toPlainText() == "Q2"
    assert window.pane.composer_bar.editing_row.isVisibleTo(window)
    window.pane.composer.setPlainText("Q2, better")
    qtbot.keyClick(window.pane.composer, Qt.Key.Key_Return)
    idle(qtbot, window)
    assert said(provider.requests[2]) == ["Q1", "A1", "Q2, better"]
    assert bubbles(window) == [
        ("user", "Q1"), ("assistant", "A1"), ("user", "Q2, better"), ("assistant", "A2b")
    ]  # fmt: skip
    (switcher,) = window.pane.chat.switchers()
    assert switcher.label.text() == "2/2"
    assert not window.pane.composer_bar.editing_row.isVisibleTo(window)
    qtbot.mouseClick(switcher.previous, Qt.MouseButton.LeftButton)
    assert bubbles(window)[2:] == [("user", "Q2"), ("assistant", "A2")]


def test_editing_can_be_cancelled(qtbot: Any, make_window: WindowFactory) -> None:
    window, provider = make_window(["A1", "A2"])
    type_and_send(qtbot, window, "Q1")
    idle(qtbot, window)
    qtbot.mouseClick(last(window, "user").edit_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(window.pane.composer_bar.cancel_edit, Qt.MouseButton.LeftButton)
    assert window.pane.state.editing is None and window.pane.composer.toPlainText() == ""
    type_and_send(qtbot, window, "Q2")  # a new message, not an edit
    idle(qtbot, window)
    assert said(provider.requests[1]) == ["Q1", "A1", "Q2"]


def test_delete_a_message_and_what_follows_after_asking(
    qtbot: Any, make_window: WindowFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, provider = make_window(["A1", "A2", "A3"])
    for question in ("Q1", "Q2"):
        type_and_send(qtbot, window, question)
        idle(qtbot, window)
    monkeypatch.setattr(QMessageBox, "question", lambda *_: QMessageBox.StandardButton.Yes)
    second = [b for b in window.pane.chat.bubbles() if b.role == "user"][1]
    qtbot.mouseClick(second.delete_button, Qt.MouseButton.LeftButton)
    assert bubbles(window) == [("user", "Q1"), ("assistant", "A1")]
    type_and_send(qtbot, window, "Q3")
    idle(qtbot, window)
    assert said(provider.requests[2]) == ["Q1", "A1", "Q3"]


def test_copy_a_message(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window(["The **answer**."])
    type_and_send(qtbot, window, "Q")
    idle(qtbot, window)
    qtbot.mouseClick(last(window, "assistant").copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "The **answer**."


def test_a_stopped_answer_is_kept_and_can_be_regenerated(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, _ = make_window([Step(chunks=["Half an answer"], hang=True), "Whole."])
    type_and_send(qtbot, window, "Q")
    qtbot.waitUntil(lambda: bool(window.pane.chat.bubbles()[1:]), timeout=5000)
    qtbot.mouseClick(window.pane.composer_bar.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    assert bubbles(window) == [("user", "Q"), ("assistant", "Half an answer")]
    assert window.pane.chat.bubbles()[0].seq is not None  # the question can be edited at once
    conversation = window.conversation_id
    assert conversation is not None
    stored = [m for _, m in window.store.messages(conversation)]
    assert stored[-1].text == "Half an answer" and stored[-1].meta.to_dict() == {"stopped": True}
    window.pane.open(None)
    window.open_conversation(conversation)  # opened again: still there, with its actions
    answer = last(window, "assistant")
    assert answer.body.text == "Half an answer" and answer.regenerate_button is not None
    qtbot.mouseClick(answer.regenerate_button, Qt.MouseButton.LeftButton)
    idle(qtbot, window)
    assert bubbles(window) == [("user", "Q"), ("assistant", "Whole.")]
