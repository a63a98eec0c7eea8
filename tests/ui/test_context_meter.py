"""The context meter: the server's count after a turn, an estimate before, a warning as the
conversation nears the model's context, and a note before a message that will not fit."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel

from desktop.core.providers.base import Capabilities
from tests.support.fakes import ScriptedProvider, Step
from tests.ui.conftest import WindowFactory
from tests.ui.test_branches import idle
from tests.ui.test_main_window import type_and_send


def test_the_servers_count_after_a_turn_and_a_warning_near_the_end(
    qtbot: Any, make_window: WindowFactory
) -> None:
    provider = ScriptedProvider(
        [Step(chunks=["Hi."], usage=(120, 8)), Step(chunks=["More."], usage=(1700, 40))],
        capabilities=Capabilities(context_size=2048),
    )
    window, _ = make_window(provider)
    meter = window.context_meter
    assert meter.label.text().startswith("~") and meter.label.text().endswith("/ 2,048 tokens")
    type_and_send(qtbot, window, "Hello")
    idle(qtbot, window)
    assert meter.label.text() == "128 / 2,048 tokens" and not meter.warning
    type_and_send(qtbot, window, "Tell me more")
    idle(qtbot, window)
    assert meter.label.text() == "1,740 / 2,048 tokens" and meter.warning
    assert "nearly fills the model's context" in meter.toolTip()
    assert meter.label.objectName() == "contextWarning"


def test_a_message_that_will_not_fit_is_said_before_it_goes(
    qtbot: Any, make_window: WindowFactory
) -> None:
    provider = ScriptedProvider(["Ok."], capabilities=Capabilities(context_size=1024))
    window, _ = make_window(provider)
    type_and_send(qtbot, window, "word " * 1200)  # ~1,500 tokens
    idle(qtbot, window)
    notes = [w.text() for w in window.pane.chat.shown() if isinstance(w, QLabel)]
    assert any(n.startswith("This message may not fit in the model's context") for n in notes)
    assert provider.requests  # it was sent all the same: the person was told
