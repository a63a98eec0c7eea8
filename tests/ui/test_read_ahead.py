"""The window reads a chat's prompt ahead where nothing has: once connected, and when a
chat is opened, so the person's first message there waits for its own words alone."""

from __future__ import annotations

from typing import Any

from tests.support.fakes import ScriptedProvider, Step
from tests.ui.conftest import WindowFactory


def test_the_shown_chat_and_each_chat_opened_are_read_ahead(
    qtbot: Any, make_window: WindowFactory
) -> None:
    provider = ScriptedProvider(["x", "x", Step(hang=True)], caches_prompt=True)
    window, _ = make_window(provider)
    qtbot.waitUntil(lambda: len(provider.requests) == 1, timeout=5000)  # connected
    assert provider.requests[0].options.warm_up
    assert provider.requests[0].messages[-1].text == ""
    window.new_conversation()
    qtbot.waitUntil(lambda: len(provider.requests) == 2, timeout=5000)
    assert provider.requests[1].options.warm_up
    # A turn has the server while it runs (a chat opened meanwhile is not read ahead),
    # and a stopped one reads nothing ahead after it.
    assert window.conversation_id is not None
    window.controller.send(window.conversation_id, "Hello")
    qtbot.waitUntil(lambda: len(provider.requests) == 3, timeout=5000)
    assert not provider.requests[2].options.warm_up
    window.new_conversation()  # stops the turn, which has not ended yet
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=5000)
    qtbot.wait(200)
    assert len(provider.requests) == 3


def test_after_a_calibration_the_shown_chat_is_read_again(
    qtbot: Any, make_window: WindowFactory
) -> None:
    """The calibration's questions took the server's cache: the chat's prompt is read once
    more while the person types, not when the next message comes."""
    from desktop.core.tools.builtin import builtin_tools
    from tests.core.calibration.samples import sure_model

    model = sure_model(tools=builtin_tools(None))
    model.caches_prompt = True
    window, _ = make_window(model, calibrate=True)
    assert window.conversation_id is not None
    window.controller.send(window.conversation_id, "Hello from the chat")
    qtbot.waitUntil(lambda: window.session.calibration is not None, timeout=20000)
    qtbot.waitUntil(lambda: model.requests[-1].options.warm_up, timeout=5000)
    last = model.requests[-1]
    assert last.messages[-1].text == "" and last.options.max_tokens == 1
    assert any("Hello from the chat" in m.text for m in last.messages)  # the chat, ended turn
