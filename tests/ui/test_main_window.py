"""The desktop window, driven as a person would, against the scripted provider."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import keyring
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from desktop.core.events import BrokenCall
from desktop.core.messages import ToolCall
from desktop.core.storage.keychain import SERVICE
from desktop.ui.bubbles import MessageBubble
from desktop.ui.settings_dialog import SettingsDialog
from desktop.ui.tool_card import ImageThumb, ToolCard
from tests.core.storage.test_settings import MemoryKeyring
from tests.support.fakes import Step
from tests.ui.conftest import WindowFactory

CHART_CALL = ToolCall(
    "chart1",
    "create_chart",
    {"type": "bar", "title": "Sales", "labels": ["Jan", "Feb"], "values": [3, 5]},
)


def type_and_send(qtbot: Any, window: Any, text: str) -> None:
    window.pane.composer.setPlainText(text)
    qtbot.keyClick(window.pane.composer, Qt.Key.Key_Return)


def answer_bubbles(window: Any) -> list[MessageBubble]:
    return [b for b in window.pane.chat.bubbles() if b.role == "assistant"]


def test_a_streamed_answer_appears_as_markdown(qtbot: Any, make_window: WindowFactory) -> None:
    window, provider = make_window(
        [Step(chunks=["Hello ", "**world**", "\n\n```python\nprint(1)\n```"])]
    )
    type_and_send(qtbot, window, "Say hello")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=5000
    )
    bubble = answer_bubbles(window)[-1]
    assert bubble.body.text == "Hello **world**\n\n```python\nprint(1)\n```"
    (code,) = bubble.body.code_blocks()
    assert code.language == "python" and code.code.text() == "print(1)"
    qtbot.mouseClick(code.copy_button, Qt.MouseButton.LeftButton)
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == "print(1)"
    assert provider.requests[0].messages[-1].text == "Say hello"
    assert window.pane.composer.toPlainText() == ""
    assert window.conversation_id is not None
    stored = [m for _, m in window.store.messages(window.conversation_id)]
    assert [m.role for m in stored] == ["user", "assistant"]


def test_shift_enter_is_a_new_line(qtbot: Any, make_window: WindowFactory) -> None:
    window, provider = make_window([])
    window.pane.composer.setPlainText("first")
    window.pane.composer.moveCursor(window.pane.composer.textCursor().MoveOperation.End)
    qtbot.keyClick(window.pane.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert window.pane.composer.toPlainText() == "first\n" and provider.requests == []


def test_a_tool_card_shows_arguments_result_and_the_image(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window([Step(tool_calls=[CHART_CALL]), "Sales went up."], vision=True)
    type_and_send(qtbot, window, "Chart my sales")
    qtbot.waitUntil(
        lambda: not window.controller.busy and "chart1" in window.pane.chat.cards, timeout=10000
    )
    card: ToolCard = window.pane.chat.cards["chart1"]
    qtbot.waitUntil(lambda: card.state == "done", timeout=10000)
    assert card.name == "create_chart"
    assert (
        card.arguments_label.text()
        == 'type: "bar"\ntitle: "Sales"\nlabels: ["Jan", "Feb"]\nvalues: [3, 5]'
    )
    assert "Created a bar chart titled 'Sales'" in card.result_label.text()
    thumbs = card.findChildren(ImageThumb)
    assert len(thumbs) == 1 and not thumbs[0].pixmap().isNull()
    assert card.images_note.text() == "The image went to the model with the result."
    assert provider.requests[1].messages[-1].images[0].mime == "image/png"
    assert answer_bubbles(window)[-1].body.text == "Sales went up."


def test_without_vision_the_card_says_the_image_was_withheld(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window([Step(tool_calls=[CHART_CALL]), "Done."], vision=False)
    type_and_send(qtbot, window, "Chart my sales")
    qtbot.waitUntil(
        lambda: not window.controller.busy and "chart1" in window.pane.chat.cards, timeout=10000
    )
    card = window.pane.chat.cards["chart1"]
    assert card.images_note.text() == "The image stayed here: this model cannot see images."
    assert provider.requests[1].messages[-1].images == []
    # Opened again from the store, the card says the same.
    assert window.conversation_id is not None
    window.pane.chat.show_messages(window.store.messages(window.conversation_id), more_before=False)
    reopened = window.pane.chat.cards["chart1"]
    assert reopened is not card
    assert reopened.images_note.text() == "The image stayed here: this model cannot see images."


def test_stop_cancels_the_answer(qtbot: Any, make_window: WindowFactory) -> None:
    window, provider = make_window([Step(chunks=["Thinking about it"], hang=True)])
    type_and_send(qtbot, window, "Long question")
    qtbot.waitUntil(
        lambda: window.pane.composer_bar.stop_button.isVisible() and bool(answer_bubbles(window)),
        timeout=5000,
    )
    qtbot.mouseClick(window.pane.composer_bar.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    assert provider.cancelled
    assert (
        window.pane.composer_bar.send_button.isVisible()
        and not window.pane.composer_bar.stop_button.isVisible()
    )
    assert answer_bubbles(window)[-1].body.text == "Thinking about it"  # what was shown stays
    notes = [
        w.text()
        for w in window.pane.chat.content.findChildren(type(window.status.backend_label))
        if w.objectName() == "noteNote"
    ]
    assert notes == ["Stopped."]


def test_the_cooldown_toggle_changes_what_the_loop_rejects(
    qtbot: Any, make_window: WindowFactory
) -> None:
    from desktop.core.tools.toolbox import Tool

    calls: list[dict[str, Any]] = []

    async def create_ticket(arguments: dict[str, Any]) -> str:
        calls.append(arguments)
        return "created"

    def two_tickets() -> Step:
        return Step(tool_calls=[ToolCall(f"t{len(calls)}a", "create_ticket", {"title": "one"}),
                                ToolCall(f"t{len(calls)}b", "create_ticket", {"title": "two"})])  # fmt: skip

    window, provider = make_window([two_tickets(), "ok"])
    tickets = Tool(
        "create_ticket",
        "Create a ticket",
        {"type": "object", "properties": {"title": {"type": "string"}}},
        create_ticket,
        cooldown_s=30,
    )
    window.session.tools.extra.append(tickets)
    window.session.apply_settings(window.session.settings)
    type_and_send(qtbot, window, "Create two tickets")
    qtbot.waitUntil(
        lambda: not window.controller.busy and len(window.pane.chat.cards) == 2, timeout=5000
    )
    assert [c.state for c in window.pane.chat.cards.values()] == ["done", "rejected"]
    assert "cooldown" in window.pane.chat.cards["t0b"].reason_label.text()
    assert len(calls) == 1

    dialog = SettingsDialog(
        window.session.settings, window.session.tools.all, window.session.secrets
    )
    qtbot.addWidget(dialog)
    dialog.cooldown_enabled.setChecked(False)
    row = [t.name for t in window.session.tools.all].index("create_ticket")
    cell = dialog.tool_table.item(row, 2)
    assert cell is not None
    cell.setCheckState(Qt.CheckState.Unchecked)
    window.apply_settings(dialog.settings())
    window.session.dedupe = type(window.session.dedupe)(cooldown_enabled=False)  # a fresh minute
    window.session.apply_settings(window.session.settings)
    provider.script[:] = [two_tickets(), "ok"]
    type_and_send(qtbot, window, "Create two more")
    qtbot.waitUntil(
        lambda: not window.controller.busy and len(window.pane.chat.cards) == 4, timeout=5000
    )
    assert [c.state for c in list(window.pane.chat.cards.values())[2:]] == ["done", "done"]
    assert len(calls) == 3


def test_settings_round_trip_with_the_key_in_the_keychain(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    previous = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    try:
        window, _ = make_window([], folder=tmp_path / "data")
        dialog = SettingsDialog(
            window.session.settings, window.session.tools.all, window.session.secrets
        )
        qtbot.addWidget(dialog)
        dialog.backend.setCurrentIndex(dialog.backend.findData("lmstudio"))
        dialog.url.setText("http://127.0.0.1:1234")
        dialog.model.setCurrentText("qwen/qwen3-8b")
        dialog.track.setCurrentIndex(dialog.track.findData("auto"))
        dialog.max_tool_calls.setValue(4)
        dialog.document_search.setCurrentIndex(dialog.document_search.findData("tool"))
        dialog.api_key.setText("lm-secret-token")
        window.controller.reconnect = lambda: None  # type: ignore[method-assign]  # no server to connect to here
        window.apply_settings(dialog.settings(), dialog.save_key())
        saved = (tmp_path / "data" / "settings.json").read_text()
        assert "lm-secret-token" not in saved
        assert (
            json.loads(saved)["backend"] == "lmstudio" and json.loads(saved)["max_tool_calls"] == 4
        )
        assert memory.store[(SERVICE, "lmstudio")] == "lm-secret-token"

        again = SettingsDialog(
            window.session.settings, window.session.tools.all, window.session.secrets
        )
        qtbot.addWidget(again)
        assert again.backend.currentData() == "lmstudio"
        assert again.model.currentText() == "qwen/qwen3-8b"
        assert again.track.currentData() == "auto" and again.max_tool_calls.value() == 4
        assert again.document_search.currentData() == "tool"
        assert again.api_key.text() == "lm-secret-token"
    finally:
        keyring.set_keyring(previous)


def answered_and_reopened(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, script: list[Step | str], **kw: Any
) -> Any:
    """ "Chart my sales" answered by `script`, then the app closed and opened again."""
    folder = tmp_path / "kept"
    window, _ = make_window(script, folder=folder, **kw)
    type_and_send(qtbot, window, "Chart my sales")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=10000
    )
    window.close()
    window.store.close()
    reopened, _ = make_window([], folder=folder)
    return reopened


def test_a_conversation_survives_a_restart(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    script: list[Step | str] = [Step(tool_calls=[CHART_CALL]), "Up and to the right."]
    reopened = answered_and_reopened(qtbot, make_window, tmp_path, script, vision=True)
    assert reopened.sidebar.list.item(0).text() == "Chart my sales"
    texts = [b.body.text for b in reopened.pane.chat.bubbles()]
    assert texts == ["Chart my sales", "Up and to the right."]
    card = reopened.pane.chat.cards["chart1"]
    assert card.state == "done" and len(card.findChildren(ImageThumb)) == 1
    assert card.images_note.text() == "The image went to the model with the result."


def test_a_call_that_could_not_be_read_is_a_note_not_the_persons_message(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    """The loop tells the model why a call was not run in a user-role message; reopened,
    the chat shows it as a note, and regenerating answers the person's question."""
    broken = BrokenCall("create_chart", None, "Its arguments must be a JSON object, not null.")
    script: list[Step | str] = [Step(broken_calls=[broken]), "Sorry, no chart."]
    reopened = answered_and_reopened(qtbot, make_window, tmp_path, script)
    assert [b.body.text for b in reopened.pane.chat.bubbles()] == [
        "Chart my sales",
        "Sorry, no chart.",
    ]
    shown = reopened.pane.chat.shown()
    notes = [w.text() for w in shown if isinstance(w, QLabel) and w.objectName() == "noteNote"]
    assert notes == ["Your call to create_chart was not run: " + broken.reason]
    conversation = reopened.session.store.conversations()[0].id
    answer = answer_bubbles(reopened)[0].seq
    assert answer is not None
    assert reopened.session.question_of(conversation, answer) == reopened.pane.chat.bubbles()[0].seq


def test_closing_with_a_turn_running_leaves_no_pending_task(
    qtbot: Any, make_window: WindowFactory, qloop: asyncio.AbstractEventLoop
) -> None:
    window, provider = make_window([Step(chunks=["Working"], hang=True)])
    type_and_send(qtbot, window, "Long job")
    qtbot.waitUntil(lambda: window.controller.busy and bool(answer_bubbles(window)), timeout=5000)
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=5000)
    assert provider.cancelled
    assert not window.controller.pending
    leftover = [
        t for t in asyncio.all_tasks(qloop) if not t.done() and t is not asyncio.current_task(qloop)
    ]
    assert leftover == []


def test_conversations_new_rename_search_delete(
    qtbot: Any, make_window: WindowFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, _ = make_window(["first answer", "second answer"])
    type_and_send(qtbot, window, "About tides")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=5000
    )
    window.new_conversation()
    type_and_send(qtbot, window, "About volcanoes")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=5000
    )
    titles = [window.sidebar.list.item(i).text() for i in range(window.sidebar.list.count())]
    assert titles == ["About volcanoes", "About tides"]
    from PySide6.QtWidgets import QInputDialog

    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Lava", True))
    window.rename_conversation()
    assert window.sidebar.list.item(0).text() == "Lava"
    window.sidebar.search.setText("tides")
    assert window.sidebar.list.count() == 1
    window.sidebar.search.clear()
    window.delete_conversation()
    assert [window.sidebar.list.item(i).text() for i in range(window.sidebar.list.count())] == [
        "About tides"
    ]


def test_export_markdown_and_json(qtbot: Any, make_window: WindowFactory, tmp_path: Path) -> None:
    window, _ = make_window(["A **bold** reply."])
    type_and_send(qtbot, window, "Hi")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=5000
    )
    window.export("md", tmp_path / "chat.md")
    window.export("json", tmp_path / "chat.json")
    assert "**Assistant:**\n\nA **bold** reply." in (tmp_path / "chat.md").read_text()
    assert (
        json.loads((tmp_path / "chat.json").read_text())["messages"][1]["parts"][0]["text"]
        == "A **bold** reply."
    )


def test_the_inspector_shows_each_step(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window([Step(tool_calls=[CHART_CALL], chunks=[]), "Done."], vision=True)
    window.inspector_dock.show()
    type_and_send(qtbot, window, "Chart")
    qtbot.waitUntil(
        lambda: not window.controller.busy and "chart1" in window.pane.chat.cards, timeout=10000
    )
    qtbot.waitUntil(lambda: window.inspector.tree.topLevelItemCount() == 3, timeout=5000)
    step0 = window.inspector.tree.topLevelItem(0)
    assert step0 is not None
    titles = [step0.child(i).text(0) for i in range(step0.childCount())]  # type: ignore[union-attr]
    # the emulated track: the tools are in the system prompt, none go natively
    assert titles[:2] == ["→ system", "→ user"] and "→ tools (native)" not in titles
    assert "← raw output" in titles
    assert "parsed call: create_chart" in titles
    assert "verdict: create_chart valid, not a repeat: run" in titles
    assert any(t.startswith("result: create_chart") for t in titles)
    parsed = step0.child(titles.index("parsed call: create_chart"))
    assert parsed is not None
    window.inspector.tree.setCurrentItem(parsed)
    assert json.loads(window.inspector.detail.toPlainText())["type"] == "bar"


def test_a_long_conversation_opens_with_the_newest_and_loads_the_rest(
    qtbot: Any, make_window: WindowFactory
) -> None:
    from desktop.core.messages import Message

    window, _ = make_window([])
    store = window.store
    chat = store.create_conversation("Long")
    for i in range(100):
        store.append(
            chat, Message.user(f"question {i}") if i % 2 == 0 else Message.assistant(f"answer {i}")
        )
    window.refresh_conversations()
    window.open_conversation(chat)
    assert len(window.pane.chat.bubbles()) == 40
    assert window.pane.chat.earlier_button.isVisible()
    window.pane.load_earlier()
    assert len(window.pane.chat.bubbles()) == 80
    window.pane.load_earlier()
    assert (
        len(window.pane.chat.bubbles()) == 100 and not window.pane.chat.earlier_button.isVisible()
    )
    first = window.pane.chat.column.itemAt(1).widget()  # type: ignore[union-attr]
    assert isinstance(first, MessageBubble) and first.body.text == "question 0"


def test_first_run_screen_when_no_server(qtbot: Any, make_window: WindowFactory) -> None:
    from desktop.core.connection import Connection

    window, _ = make_window([])
    window.controller.connection_changed.emit(Connection(False, "No model server is running."))
    assert window.pane.pages.currentWidget() is window.first_run
    assert window.first_run.reason.text() == "No model server is running."
    assert window.status.backend_label.text() == "○ No model server is running."


def test_first_run_offers_a_model_file_for_the_built_in_runtime(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    from PySide6.QtWidgets import QPushButton

    window, _ = make_window([])
    buttons = [b.text() for b in window.first_run.findChildren(QPushButton)]
    assert "Choose a model file…" in buttons and "Settings…" in buttons
    model = tmp_path / "my-model.gguf"
    model.write_bytes(b"GGUF")
    window.use_model_file(model)
    assert window.session.settings.backend == "builtin"
    assert window.session.settings.runtime_model == str(model)

    # An embedding model (downloaded from the catalogue, say) is for the documents.
    from tests.core.models.test_library import tiny_gguf

    encoder = tiny_gguf(tmp_path / "all-MiniLM-L6-v2.gguf", "bert", pooling=True)
    window.use_model_file(encoder)
    settings = window.session.settings
    assert (settings.embeddings, settings.embedding_model) == ("runtime", str(encoder))
    assert settings.runtime_model == str(model)  # the chat model stays


def test_without_the_bundled_model_the_start_screen_offers_only_a_model_file(qtbot: Any) -> None:
    from PySide6.QtWidgets import QPushButton

    from desktop.ui.first_run import FirstRunPanel

    panel = FirstRunPanel(offer_bundled_model=False)
    qtbot.addWidget(panel)
    buttons = [b.text() for b in panel.findChildren(QPushButton)]
    assert buttons == ["Choose a model file…", "Try again", "Settings…"]


def test_the_inspector_catches_up_when_opened_after_the_turn(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, _ = make_window([Step(tool_calls=[CHART_CALL]), "Done."], vision=True)
    window.inspector_dock.hide()
    type_and_send(qtbot, window, "Chart")
    qtbot.waitUntil(
        lambda: not window.controller.busy and bool(answer_bubbles(window)), timeout=10000
    )
    window.inspector_dock.show()
    qtbot.waitUntil(lambda: window.inspector.tree.topLevelItemCount() == 3, timeout=5000)
    assert window.inspector.turn_picker.currentText() == "Turn 1 · emulated · 2 step(s)"


def test_settings_offer_the_built_in_model(qtbot: Any, make_window: WindowFactory) -> None:
    from PySide6.QtWidgets import QDialog

    window, _ = make_window([])
    dialog = SettingsDialog(
        window.session.settings, window.session.tools.all, window.session.secrets
    )
    qtbot.addWidget(dialog)
    assert dialog.runtime_status.text() == "Not running" and not dialog.stop_runtime.isEnabled()
    qtbot.mouseClick(dialog.start_runtime, Qt.MouseButton.LeftButton)
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert dialog.settings().backend == "builtin"


def test_write_file_asks_in_the_chat_and_always_remembers(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    from PySide6.QtWidgets import QPushButton

    work = tmp_path / "work"
    work.mkdir()
    write = ToolCall("w1", "write_file", {"path": "a.txt", "content": "one"})
    again = ToolCall("w2", "write_file", {"path": "b.txt", "content": "two"})
    denied = ToolCall("w3", "write_file", {"path": "c.txt", "content": "three"})
    window, provider = make_window(
        [Step(tool_calls=[write]), "Saved.", Step(tool_calls=[again]), "Saved again."]
    )
    window.controller.reconnect = lambda: None  # type: ignore[method-assign]
    window.apply_settings(replace(window.session.settings, workspace=str(work)))
    type_and_send(qtbot, window, "Save one")
    qtbot.waitUntil(
        lambda: (
            "w1" in window.pane.chat.cards and window.pane.chat.cards["w1"].approval is not None
        ),
        timeout=5000,
    )
    card = window.pane.chat.cards["w1"]
    assert card.state_label.text() == "waiting for you"
    assert not (work / "a.txt").exists()
    always = card.findChild(QPushButton, "approve_always")
    qtbot.mouseClick(always, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    assert (work / "a.txt").read_text() == "one" and card.state == "done"
    assert window.session.settings.trusted_tools == {"write_file": True}

    type_and_send(qtbot, window, "Save two")  # trusted now: no question
    qtbot.waitUntil(
        lambda: not window.controller.busy and "w2" in window.pane.chat.cards, timeout=5000
    )
    assert (work / "b.txt").read_text() == "two" and window.pane.chat.cards["w2"].approval is None

    assert window.session.settings.tool_permissions == {"write_file": "allow"}
    settings = replace(window.session.settings, trusted_tools={}, tool_permissions={})
    window.apply_settings(settings)
    provider.script[:] = [Step(tool_calls=[denied]), "Not saved."]
    type_and_send(qtbot, window, "Save three")
    qtbot.waitUntil(
        lambda: (
            "w3" in window.pane.chat.cards and window.pane.chat.cards["w3"].approval is not None
        ),
        timeout=5000,
    )
    qtbot.mouseClick(
        window.pane.chat.cards["w3"].findChild(QPushButton, "approve_deny"),
        Qt.MouseButton.LeftButton,
    )
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    assert not (work / "c.txt").exists()
    assert window.pane.chat.cards["w3"].state == "rejected"
    assert "declined" in window.pane.chat.cards["w3"].reason_label.text()
    assert "The user declined this call to write_file." in provider.requests[-1].messages[-1].text

    never = ToolCall("w4", "write_file", {"path": "d.txt", "content": "four"})
    provider.script[:] = [Step(tool_calls=[never]), "Not saved."]
    type_and_send(qtbot, window, "Save four")
    qtbot.waitUntil(lambda: "w4" in window.pane.chat.cards
                    and window.pane.chat.cards["w4"].approval is not None, timeout=5000)  # fmt: skip
    qtbot.mouseClick(
        window.pane.chat.cards["w4"].findChild(QPushButton, "approve_never"),
        Qt.MouseButton.LeftButton,
    )
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    assert not (work / "d.txt").exists()
    assert window.session.settings.tool_permissions == {"write_file": "never"}
    assert "write_file" not in window.session.toolbox().names  # never offered again


def test_stopping_during_the_question_ends_it(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    window, _ = make_window(
        [Step(tool_calls=[ToolCall("w1", "write_file", {"path": "a.txt", "content": "x"})])]
    )
    window.controller.reconnect = lambda: None  # type: ignore[method-assign]
    window.apply_settings(replace(window.session.settings, workspace=str(work)))
    type_and_send(qtbot, window, "Save")
    qtbot.waitUntil(
        lambda: (
            "w1" in window.pane.chat.cards and window.pane.chat.cards["w1"].approval is not None
        ),
        timeout=5000,
    )
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    assert window.pane.chat.cards["w1"].state_label.text() == "stopped"
    assert not (work / "a.txt").exists()


def test_tool_settings_trust_workspace_and_mcp(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    window, _ = make_window([])
    window.controller.reconnect = lambda: None  # type: ignore[method-assign]
    window.apply_settings(replace(window.session.settings, workspace=str(work)))
    names = [t.name for t in window.session.tools.all]
    assert {"list_files", "read_file", "write_file", "show_file", "view_image"} <= set(names)
    dialog = SettingsDialog(
        window.session.settings, window.session.tools.all, window.session.secrets
    )
    qtbot.addWidget(dialog)
    from PySide6.QtWidgets import QComboBox

    runs = {name: dialog.tool_table.cellWidget(row, 3) for row, name in enumerate(names)}
    write, show = runs["write_file"], runs["show_file"]
    calculator_on = dialog.tool_table.item(names.index("calculator"), 1)
    assert isinstance(write, QComboBox) and isinstance(show, QComboBox)
    assert calculator_on is not None
    assert (write.currentData(), show.currentData()) == ("ask", "allow")  # as they change things
    write.setCurrentIndex(write.findData("allow"))
    show.setCurrentIndex(show.findData("never"))
    calculator_on.setCheckState(Qt.CheckState.Unchecked)
    dialog.mcp_config.setText(str(tmp_path / "mcp.json"))
    chosen = dialog.settings()
    assert chosen.trusted_tools == {"write_file": True}
    assert chosen.tool_permissions == {"write_file": "allow", "show_file": "never"}
    assert chosen.tools_enabled == {"calculator": False}
    assert chosen.workspace == str(work) and chosen.mcp_config == str(tmp_path / "mcp.json")
    window.apply_settings(chosen)
    offered = [t.name for t in window.session.toolbox()]
    assert "calculator" not in offered and "show_file" not in offered  # never: not offered


def test_a_model_is_calibrated_after_its_first_answer_and_its_card_shown(
    qtbot: Any, make_window: WindowFactory
) -> None:
    from desktop.core.tools.builtin import builtin_tools
    from tests.core.calibration.samples import sure_model

    model = sure_model(tools=builtin_tools(None))
    window, _ = make_window(model, calibrate=True)
    assert "not calibrated yet" in window.status.track_label.text()
    type_and_send(qtbot, window, "Hello from the chat")
    qtbot.waitUntil(lambda: window.calibration_status.bar.isVisible(), timeout=5000)
    assert "Learning how this model calls tools" in window.calibration_status.label.text()
    # Its count once the questions are known, never a made-up one before.
    qtbot.waitUntil(lambda: window.calibration_status.label.text().endswith(tuple("0123456789")))
    done, total = window.calibration_status.label.text().rsplit(" ", 1)[1].split("/")
    assert int(total) == window.calibration_status.bar.maximum() > 1 and int(done) <= int(total)
    qtbot.waitUntil(lambda: window.session.calibration is not None, timeout=20000)
    qtbot.waitUntil(lambda: not window.calibration_status.bar.isVisible(), timeout=5000)
    calibration = window.session.calibration
    assert calibration is not None and calibration.bar > 0.5
    message = window.statusBar().currentMessage()
    assert message.startswith("Calibrated: ") and len(message) <= 75
    assert f"bar {calibration.bar:.2f}" in window.status.track_label.text()
    dialog = SettingsDialog(
        window.session.settings, [], window.session.secrets, window, calibration=calibration
    )
    qtbot.addWidget(dialog)
    rows = {label: shown.text() for label, shown in dialog.card_rows.items()}
    assert rows == dict(calibration.card())
    with qtbot.waitSignal(dialog.calibrate_requested):
        qtbot.mouseClick(dialog.calibrate_button, Qt.MouseButton.LeftButton)
    assert not dialog.calibrate_button.isEnabled()


def test_a_model_that_calls_where_none_fits_is_told_in_the_chat_and_on_its_card(
    qtbot: Any, make_window: WindowFactory
) -> None:
    from tests.core.calibration.test_card import calibrated

    window, _ = make_window([])
    window.show()
    quiet = calibrated("constrained", 9, 10)
    window._on_calibrated(quiet)
    notes = [label.text() for label in window.pane.chat.findChildren(QLabel, "warningNote")]
    assert not any("where none fits" in note for note in notes)
    noisy = calibrated("constrained", 4, 10)
    window._on_calibrated(noisy)
    notes = [label.text() for label in window.pane.chat.findChildren(QLabel, "warningNote")]
    assert noisy.suggestion() in notes
    dialog = SettingsDialog(
        window.session.settings, [], window.session.secrets, window, calibration=noisy
    )
    qtbot.addWidget(dialog)
    assert dialog.reliability.suggestion.text() == noisy.suggestion()


def test_calibration_can_be_cancelled(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window([Step(hang=True)] * 5)
    window.controller.calibrate()
    qtbot.waitUntil(lambda: window.calibration_status.cancel.isVisible(), timeout=5000)
    qtbot.mouseClick(window.calibration_status.cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.calibration_status.bar.isVisible(), timeout=5000)
    assert window.statusBar().currentMessage() == "Calibration cancelled."
    assert window.session.calibration is None and not window.controller.calibrating


def test_the_status_bar_names_the_bar_after_earlier_turns_where_it_differs() -> None:
    from desktop.core.calibration.card import Calibration
    from desktop.ui.connection_status import _bars

    one = Calibration("m", "2026-12-01", "constrained", 0.9, (), 0, 0.0)
    assert _bars(one) == "0.90"
    two = Calibration("m", "2026-12-01", "constrained", 0.9, (), 0, 0.0, later_bar=0.54)
    assert _bars(two) == "0.90 (0.54 after earlier turns)"
