"""GUI tests: a qasync loop that Qt drives while pytest-qt waits, and a window over a
temporary data folder talking to the scripted provider."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("QT_API", "pyside6")

import pytest
import qasync
from PySide6.QtWidgets import QApplication

from desktop.core.providers.base import Capabilities
from desktop.ui.app import build
from desktop.ui.main_window import MainWindow
from tests.support.fakes import Script, ScriptedProvider


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    """An asyncio loop that runs inside Qt's: tasks advance whenever Qt processes events
    (qtbot.waitUntil does). Never stopped or closed here: that would quit Qt for the
    tests that follow."""
    loop = qasync.QEventLoop(qapp, already_running=True)
    executor = qasync.QThreadExecutor(2)  # ours, so that teardown can join its threads
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)
    previous_hooks = sys.get_asyncgen_hooks()  # as desktop.ui.app.run_on_qt does
    sys.set_asyncgen_hooks(
        firstiter=loop._asyncgen_firstiter_hook, finalizer=loop._asyncgen_finalizer_hook
    )
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    for task in asyncio.all_tasks(loop):
        task.cancel()
    for _ in range(5):
        qapp.processEvents()
    executor.shutdown(wait=True)
    sys.set_asyncgen_hooks(*previous_hooks)
    asyncio.events._set_running_loop(None)
    asyncio.set_event_loop(None)
    assert not errors, errors


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
