"""Start the desktop app: Qt and asyncio on one loop (qasync), the core session, the window."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

# qasync picks the first Qt binding it finds unless told: this app is PySide6.
os.environ.setdefault("QT_API", "pyside6")

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from desktop.core.calibration.store import CALIBRATIONS_FILE, CalibrationStore
from desktop.core.documents.index import INDEX_FILE, DocumentIndex, DocumentsError
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore, set_aside
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.logs import log_handler
from desktop.core.storage.paths import DataFolderError, check_writable, data_dir, remember_data_dir
from desktop.core.storage.presets import PRESETS_FILE, PresetBook
from desktop.core.storage.settings import SETTINGS_FILE, Settings, SettingsError, load_settings
from desktop.core.tools.isolation import workers_ready
from desktop.ui.controller import ChatController
from desktop.ui.data_folder_dialog import WayOn, ask_way_on
from desktop.ui.diagnostics import report_startup, self_check
from desktop.ui.main_window import MainWindow
from desktop.ui.resources import resource

T = TypeVar("T")
log = logging.getLogger("loomchat")


def build(folder: Path) -> tuple[MainWindow, ChatController, Session, str | None]:
    """The window with everything behind it, over the data in `folder`.

    Returns a problem to tell the user, if the settings file could not be read (the
    defaults are used then, and the file is left alone until the user saves). Raises
    `DataFolderError` if the folder cannot be used at all (damaged chats, no write rights).
    """
    check_writable(folder)
    settings_path = folder / SETTINGS_FILE
    problem = None
    try:
        settings = load_settings(settings_path)
    except SettingsError as exc:
        settings, problem = (
            Settings(),
            f"Your settings could not be read, so defaults are used.\n\n{exc}",
        )
    secrets = SecretStore.of_folder(folder, settings.secrets_in_file)
    store = ChatStore(folder / "chats.db")
    calibrations = CalibrationStore(folder / CALIBRATIONS_FILE)
    presets = PresetBook.load(folder / PRESETS_FILE)
    if presets.problem:  # the built-in presets meanwhile; the file is kept for repair
        log.warning("%s", presets.problem)
    if calibrations.problem:  # not worth a dialog: the models calibrate again
        log.warning("%s", calibrations.problem)
    documents: DocumentIndex | None = None
    try:
        documents = DocumentIndex(folder / INDEX_FILE)
    except DocumentsError as exc:  # a newer version's: left alone, no documents this run
        log.warning("%s", exc)
    if documents is not None and documents.notice:
        log.warning("%s", documents.notice)
    session = Session(
        settings,
        store,
        secrets,
        runtime_log=folder / "logs" / "llama-server.log",
        calibrations=calibrations,
        presets=presets,
        documents=documents,
        # Settings that could not be read are not overwritten with the defaults.
        settings_path=settings_path if problem is None else None,
    )
    controller = ChatController(session)
    window = MainWindow(controller)
    return window, controller, session, problem


Built = tuple[MainWindow, ChatController, Session, str | None]


def open_data(folder: Path, ask: Callable[[DataFolderError], WayOn]) -> tuple[Built, Path] | None:
    """`build` over `folder`; while the folder cannot be used, ask the user for a way on
    (start fresh, another folder, try again) and take it. None: the user quit."""
    while True:
        try:
            return build(folder), folder
        except DataFolderError as problem:
            log.error("data folder %s cannot be used: %s", folder, problem)
            way = ask(problem)
            if way.kind == "quit":
                return None
            if way.kind == "folder" and way.folder is not None:
                folder = way.folder
                if not remember_data_dir(folder):
                    log.warning("%s is used for this run only: it could not be remembered", folder)
            elif way.kind == "fresh" and problem.damaged is not None:
                try:
                    kept = set_aside(problem.damaged)
                    log.warning("damaged %s set aside as %s", problem.damaged, kept)
                except OSError as exc:
                    log.error("could not set %s aside: %s", problem.damaged, exc)


def run_on_qt(app: QApplication, main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on a qasync loop inside Qt's event loop, and return its result.

    qasync does not install asyncio's async-generator hooks (the standard loop does, in
    `run_forever`); without them an abandoned generator, deep inside httpx's streams, is
    finalised outside any task and fails. So they are installed here, and the generators
    are shut down before the loop closes.
    """
    import qasync

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    previous_hooks = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(
        firstiter=loop._asyncgen_firstiter_hook,
        finalizer=loop._asyncgen_finalizer_hook,
    )
    try:
        result: T = loop.run_until_complete(main)
        loop.run_until_complete(loop.shutdown_asyncgens())
        return result
    finally:
        sys.set_asyncgen_hooks(*previous_hooks)
        loop.close()
        asyncio.set_event_loop(None)


def _logging(folder: Path) -> Path | None:
    """Log to the data folder's logs/ or a private fallback (`log_handler`); returns the
    file, or None where only stderr is left."""
    found = log_handler(folder)
    if found is None:
        logging.basicConfig(level=logging.INFO)  # stderr, the last resort
        return None
    handler, file = found
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    return file


def main(argv: list[str] | None = None) -> int:
    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    assert isinstance(app, QApplication)
    app.setApplicationName("Loomchat")
    # No organisation name: data goes to ~/.local/share/Loomchat, %APPDATA%\Loomchat,
    # ~/Library/Application Support/Loomchat rather than Loomchat/Loomchat.
    app.setDesktopFileName("loomchat")  # matches packaging/linux/loomchat.desktop (Wayland)
    app.setWindowIcon(QIcon(str(resource("icons", "loomchat.svg"))))
    log_file = _logging(data_dir())
    opened = open_data(data_dir(), lambda problem: ask_way_on(problem, log_file))
    if opened is None:
        log.info("quit: the data folder could not be used")
        return 1
    (window, controller, session, problem), _folder = opened
    window.show()
    if problem:
        QMessageBox.warning(window, "Settings", problem)

    async def run_until_quit() -> int:
        quitting = asyncio.Event()
        app.aboutToQuit.connect(quitting.set)
        controller.reconnect()  # needs the running loop: the first thing it does
        # The tools' worker server, started now rather than in the first tool call.
        workers = asyncio.ensure_future(workers_ready())
        if window.documents:  # picks up what changed while the app was closed
            window.documents.update()
        if os.environ.get("LOOMCHAT_BENCH_STARTUP"):
            await report_startup(app)
        if question := os.environ.get("LOOMCHAT_SELF_CHECK"):
            code = await self_check(window, session, question)
            await controller.shutdown()
            return code
        await quitting.wait()
        workers.cancel()
        return 0

    async def run_then_close() -> int:
        try:
            return await run_until_quit()
        finally:
            # The window closed only once its tasks had ended: now everything behind it.
            await session.close()
            log.info("closed")

    return run_on_qt(app, run_then_close())
