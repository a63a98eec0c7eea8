"""The session's connection messages, as a person reads them on the start screen."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop.core.providers.http import HttpProvider
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings


@pytest.mark.parametrize(
    ("bundled", "advice"),
    [(True, "or use the built-in model."), (False, "or choose a model file.")],
)
async def test_with_no_server_the_advice_fits_what_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bundled: bool, advice: str
) -> None:
    """The packaged app has no bundled model: it must not point the user to it."""

    async def nothing_running(*_: Any, **__: Any) -> list[Any]:
        return []

    store = ChatStore(tmp_path / "chats.db")
    session = Session(
        Settings(backend="auto"),
        store,
        SecretStore(),
        tools=[],
        discover=nothing_running,
        has_bundled_model=lambda: bundled,
    )
    connection = await session.connect()
    store.close()
    assert not connection.ok
    assert connection.message.startswith("No model server is running.")
    assert connection.message.endswith(advice)


async def test_close_closes_the_client_and_is_safe_twice(tmp_path: Path) -> None:
    from tests.support.replay_server import Canned, ReplayServer
    from tests.test_cli import PATH, content

    async with ReplayServer() as server:
        server.route("GET", "/v1/models", Canned.json({"object": "list",
                                                       "data": [{"id": "m", "object": "model"}]}))  # fmt: skip
        server.route("POST", PATH, Canned(pieces=content("Hi.")))
        store = ChatStore(tmp_path / "chats.db")
        settings = Settings(backend="llamacpp", url=server.url)
        session = Session(settings, store, SecretStore(), tools=[])
        assert (await session.connect()).ok
        provider = session.backend.provider
        assert isinstance(provider, HttpProvider) and not provider.client.is_closed
        await session.close()
        await session.close()
        assert provider.client.is_closed
        store.close()


# --- calibration ---------------------------------------------------------------------------


async def test_a_calibrated_bar_judges_the_next_turn_and_is_kept(tmp_path: Path) -> None:
    from desktop.core.calibration.store import CalibrationStore
    from desktop.core.tracks.constrained import ConstrainedTools
    from tests.core.calibration.samples import TOOLS, sure_model

    store = ChatStore(tmp_path / "chats.db")
    kept = CalibrationStore(tmp_path / "calibrations.json")
    session = Session(Settings(), store, SecretStore(), tools=TOOLS, calibrations=kept)
    session.use_provider(sure_model(), "llamacpp")
    assert session.needs_calibration() and session.calibration is None
    assert (
        isinstance(session.backend.active, ConstrainedTools)
        and session.backend.active.bars.first == 0
    )
    calibration = await session.calibrate()
    assert not session.needs_calibration() and session.calibration == calibration
    assert isinstance(session.backend.active, ConstrainedTools)
    assert session.backend.active.bars.first == calibration.bar > 0.6
    assert CalibrationStore(tmp_path / "calibrations.json").get(session.model_key) == calibration
    # The next turn's trace names the bar that judged it.
    conversation = store.create_conversation("chat")
    events = [e async for e in session.send(conversation, "Tell me a short joke.")]
    assert events[-1].kind == "turn_finished"
    trace = session.traces[conversation][-1]
    assert trace.gate == {"bar": calibration.bar, "source": calibration.source}
    # The next request follows an earlier turn: the bar for such requests judges it.
    events = [e async for e in session.send(conversation, "What's the weather in Paris?")]
    assert events[-1].kind == "turn_finished"
    later = {"bar": calibration.bars.later, "source": f"{calibration.source}, after earlier turns",
             "alone_bar": calibration.bar, "alone_source": f"{calibration.source}, the turn alone"}  # fmt: skip
    # This model's calls were all sure: no arguments' bar, so none is traced for the turn
    # alone either (with one, the trace names it: the turn alone's arguments are weighed).
    assert calibration.arguments_bar is None
    assert session.traces[conversation][-1].gate == later
    assert calibration.later_bar is not None
    store.close()


async def test_a_card_measured_the_earlier_way_serves_until_it_is_measured_again(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from desktop.core.calibration.card import METHOD
    from desktop.core.calibration.store import CalibrationStore
    from desktop.core.tracks.constrained import ConstrainedTools
    from tests.core.calibration.samples import TOOLS, sure_model

    store = ChatStore(tmp_path / "chats.db")
    kept = CalibrationStore(tmp_path / "calibrations.json")
    session = Session(Settings(), store, SecretStore(), tools=TOOLS, calibrations=kept)
    session.use_provider(sure_model(), "llamacpp")
    fresh = await session.calibrate()
    assert fresh.method == METHOD and not session.needs_calibration()
    kept.put(replace(fresh, method=1, bar=0.5, arguments_bar=None))
    session.use_provider(sure_model(), "llamacpp")
    assert (
        isinstance(session.backend.active, ConstrainedTools)
        and session.backend.active.bars.first == 0.5
    )
    assert session.needs_calibration()
    store.close()


async def test_a_chat_pauses_the_calibration(tmp_path: Path) -> None:
    """While a turn runs, no calibration question reaches the model."""
    from tests.core.calibration.samples import TOOLS, sure_model

    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=TOOLS)
    model = sure_model()
    session.use_provider(model, "llamacpp")
    calibrating = asyncio.ensure_future(session.calibrate())
    for _ in range(20):
        await asyncio.sleep(0)
    conversation = store.create_conversation("chat")
    first = len(model.requests)
    async for _event in session.send(conversation, "Hello from the chat"):
        await asyncio.sleep(0)  # give a calibration question every chance to slip in
    during = model.requests[first:]
    assert during and all(any("from the chat" in m.text for m in r.messages) for r in during)
    calibration = await calibrating
    assert len(model.requests) > len(during) + first and calibration.cases > 0
    store.close()


def test_apply_settings_saves_them_and_says_which_changes_reconnect(tmp_path: Path) -> None:
    from dataclasses import replace

    from desktop.core.storage.settings import load_settings

    path = tmp_path / "settings.json"
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=[], settings_path=path)
    assert session.apply_settings(replace(session.settings, max_tool_calls=3)) is False
    assert load_settings(path).max_tool_calls == 3  # the session keeps its settings file
    change: dict[str, Any]
    for change in ({"model": "qwen"}, {"track": "native"}, {"context_size": 4096},
                   {"runtime_model": "/m.gguf"}, {"mcp_config": "/mcp.json"},
                   {"backend": "ollama"}, {"url": "http://127.0.0.1:1"}):  # fmt: skip
        assert session.apply_settings(replace(session.settings, **change)) is True, change
    for change in ({"temperature": 0.2}, {"cooldown_enabled": False}, {"show_inspector": True}):
        assert session.apply_settings(replace(session.settings, **change)) is False, change
    unsaved = Session(Settings(), store, SecretStore(), tools=[])
    unsaved.apply_settings(Settings(model="x"))  # no path: nothing written anywhere
    store.close()
    assert load_settings(path).show_inspector is True
