"""The session's connection messages, as a person reads them on the start screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.core import session as session_module
from desktop.core.secrets import SecretStore
from desktop.core.session import Session
from desktop.core.settings import Settings
from desktop.core.store import ChatStore


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

    monkeypatch.setattr(session_module, "discover", nothing_running)
    monkeypatch.setattr(session_module, "bundled_model_available", lambda: bundled)
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(backend="auto"), store, SecretStore(), tools=[])
    connection = await session.connect()
    store.close()
    assert not connection.ok
    assert connection.message.startswith("No model server is running.")
    assert connection.message.endswith(advice)
