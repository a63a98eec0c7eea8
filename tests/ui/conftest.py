"""GUI tests: a window over a temporary data folder talking to the scripted provider (the
qasync loop, `qloop`, is in the root conftest: the real-server GUI tests use it too)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_API", "pyside6")

import pytest

from desktop.core.providers.base import Capabilities
from desktop.ui.app import build
from desktop.ui.main_window import MainWindow
from tests.support.fakes import Script, ScriptedProvider

WindowFactory = Callable[..., tuple[MainWindow, ScriptedProvider]]


@pytest.fixture
def make_window(qtbot, qloop, tmp_path: Path) -> WindowFactory:  # type: ignore[no-untyped-def]
    def make(
        script: list[Script] | ScriptedProvider,
        *,
        vision: bool = False,
        folder: Path | None = None,
        calibrate: bool = False,
    ) -> tuple[MainWindow, ScriptedProvider]:
        window, controller, session, problem = build(folder or tmp_path / "data")
        assert problem is None
        # Off unless asked: calibrating after the first turn would take the script's steps.
        controller.calibrate_on_first_use = calibrate
        provider = (
            script
            if isinstance(script, ScriptedProvider)
            else ScriptedProvider(script, capabilities=Capabilities(vision=vision))
        )
        session.use_provider(provider)
        controller.connection_changed.emit(session.connection)
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        return window, provider

    return make
