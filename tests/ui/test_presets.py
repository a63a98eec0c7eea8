"""The chat header's preset and system prompt, and the presets dialog, in the window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QDialog

from desktop.core.storage.presets import PresetBook
from desktop.ui.chat_header import SystemPromptDialog
from desktop.ui.presets_dialog import PresetsDialog
from tests.ui.conftest import WindowFactory
from tests.ui.test_branches import idle
from tests.ui.test_main_window import type_and_send


def test_choosing_a_preset_in_the_header_sets_the_system_prompt(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window(["Short."])
    combo = window.pane.header.preset
    names = [combo.itemText(i) for i in range(combo.count())]
    assert names == ["No preset", "Assistant", "Concise", "Chat without tools"]
    assert combo.currentText() == "Assistant"  # the default, for a new conversation
    combo.setCurrentIndex(names.index("Concise"))
    combo.activated.emit(names.index("Concise"))
    type_and_send(qtbot, window, "Why is the sky blue?")
    idle(qtbot, window)
    (request,) = provider.requests
    assert request.messages[0].role == "system"
    assert request.messages[0].text.startswith("Answer briefly")
    assert request.options.temperature == 0.3
    assert window.pane.header.title.text() == "Why is the sky blue?"


def test_the_system_prompt_dialog_changes_the_next_request(
    qtbot: Any, make_window: WindowFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, provider = make_window(["Oui."])
    monkeypatch.setattr(SystemPromptDialog, "exec", lambda self: QDialog.DialogCode.Accepted)
    monkeypatch.setattr(SystemPromptDialog, "text", lambda self: "Answer in French.")
    window.pane.header.system_button.click()
    type_and_send(qtbot, window, "Hello")
    idle(qtbot, window)
    assert provider.requests[0].messages[0].text.startswith("Answer in French.")
    assert window.conversation_id is not None
    assert window.store.system_prompt(window.conversation_id) == ("Answer in French.", "Assistant")


def test_the_presets_dialog_makes_renames_defaults_and_exports(qtbot: Any, tmp_path: Path) -> None:
    book = PresetBook.load(tmp_path / "presets.json")
    dialog = PresetsDialog(book.copy())
    qtbot.addWidget(dialog)
    dialog.new_preset()
    dialog.name.setText("Pirate")
    dialog.system_prompt.setPlainText("Talk like a pirate.")
    dialog.own_temperature.setChecked(True)
    dialog.temperature.setValue(1.2)
    dialog.tools.setChecked(False)
    dialog.make_default()
    dialog.names.setCurrentRow(0)  # moving away keeps the form
    assert dialog.book.get("Pirate") is not None and book.get("Pirate") is None  # a copy
    dialog.names.setCurrentRow([p.name for p in dialog.book.presets].index("Pirate"))
    dialog.book.export("Pirate", tmp_path / "pirate.json")
    dialog.accept()
    saved = PresetBook.load(tmp_path / "presets.json")
    pirate = saved.get("Pirate")
    assert pirate is not None and saved.default == "Pirate"
    assert (pirate.system_prompt, pirate.temperature, pirate.tools) == (
        "Talk like a pirate.",
        1.2,
        False,
    )
    assert json.loads((tmp_path / "pirate.json").read_text())["name"] == "Pirate"


def test_a_bad_import_and_an_empty_name_are_said(qtbot: Any, tmp_path: Path) -> None:
    dialog = PresetsDialog(PresetBook())
    qtbot.addWidget(dialog)
    (tmp_path / "junk.json").write_text("[]")
    dialog.import_from(tmp_path / "junk.json")
    assert "junk.json is not a preset" in dialog.message.text()
    dialog.name.setText("  ")
    dialog.accept()
    assert dialog.message.text() == "A preset needs a name." and dialog.result() == 0


def test_a_preset_searches_the_collections_ticked(qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    book = PresetBook.load(tmp_path / "presets.json")
    dialog = PresetsDialog(book.copy(), None, ["Contracts", "Manuals"])
    qtbot.addWidget(dialog)
    dialog.new_preset()
    dialog.name.setText("Work")
    assert dialog.every_collection.isChecked() and not dialog.collections.isEnabled()
    dialog.every_collection.setChecked(False)
    manuals = dialog.collections.item(1)
    assert manuals is not None and manuals.text() == "Manuals"
    manuals.setCheckState(Qt.CheckState.Checked)
    dialog.accept()
    work = PresetBook.load(tmp_path / "presets.json").get("Work")
    assert work is not None and work.collections == ("Manuals",)


def test_the_header_chooses_a_conversations_collections(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    from desktop.core.storage.presets import Preset

    window, _ = make_window([])
    session, pane = window.session, window.pane
    assert session.library is not None
    session.library.searchable = ["Home", "Manuals", "Work"]  # as indexing leaves it
    session.presets.put(Preset("Job", collections=("Work",)))
    window.new_conversation()
    conversation = pane.state.conversation_id
    assert conversation is not None
    pane.choose_preset("Job")
    header = pane.header
    assert not header.documents.isHidden() and header.documents.text() == "Documents: 1 of 3"
    actions = {a.text(): a for a in header.documents.menu().actions() if a.text()}
    assert actions["As the preset says"].isChecked() and actions["Work"].isChecked()
    actions["Home"].trigger()  # the preset's Work, and Home too, for this conversation
    assert window.store.collections(conversation) == ("Home", "Work")
    assert header.documents.text() == "Documents: 2 of 3"
    actions = {a.text(): a for a in header.documents.menu().actions() if a.text()}
    actions["As the preset says"].trigger()
    assert window.store.collections(conversation) is None
