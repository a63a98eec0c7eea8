"""Start the desktop app: Qt and asyncio on one loop (qasync), the core session, the window."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Coroutine
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, TypeVar

# qasync picks the first Qt binding it finds unless told: this app is PySide6.
os.environ.setdefault("QT_API", "pyside6")

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from desktop.core.calibration.store import CALIBRATIONS_FILE, CalibrationStore
from desktop.core.connection import Connection
from desktop.core.events import Event, TurnFailed, TurnFinished
from desktop.core.messages import ToolCall
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore, set_aside
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.paths import DataFolderError, check_writable, data_dir, remember_data_dir
from desktop.core.storage.settings import Settings, SettingsError, load_settings
from desktop.ui.controller import ChatController
from desktop.ui.data_folder_dialog import WayOn, ask_way_on
from desktop.ui.main_window import MainWindow

T = TypeVar("T")
RESOURCES = Path(__file__).resolve().parent.parent.parent / "resources"
log = logging.getLogger("loomchat")


def resource(*parts: str) -> Path:
    bundled = Path(getattr(sys, "_MEIPASS", "")) / "resources"  # inside a PyInstaller bundle
    base = bundled if bundled.is_dir() else RESOURCES
    return base.joinpath(*parts)


def build(folder: Path) -> tuple[MainWindow, ChatController, Session, str | None]:
    """The window with everything behind it, over the data in `folder`.

    Returns a problem to tell the user, if the settings file could not be read (the
    defaults are used then, and the file is left alone until the user saves). Raises
    `DataFolderError` if the folder cannot be used at all (damaged chats, no write rights).
    """
    check_writable(folder)
    settings_path = folder / "settings.json"
    problem = None
    try:
        settings = load_settings(settings_path)
    except SettingsError as exc:
        settings, problem = (
            Settings(),
            f"Your settings could not be read, so defaults are used.\n\n{exc}",
        )
    secrets = SecretStore(file=folder / "secrets.json" if settings.secrets_in_file else None)
    store = ChatStore(folder / "chats.db")
    calibrations = CalibrationStore(folder / CALIBRATIONS_FILE)
    if calibrations.problem:  # not worth a dialog: the models calibrate again
        log.warning("%s", calibrations.problem)
    session = Session(
        settings,
        store,
        secrets,
        runtime_log=folder / "logs" / "llama-server.log",
        calibrations=calibrations,
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
    """Log to the data folder's logs/, or to the temporary folder where that cannot be
    written (a read-only data folder is exactly when a log is needed). Returns the file."""
    for logs in (folder / "logs", Path(tempfile.gettempdir()) / "loomchat-logs"):
        try:
            logs.mkdir(parents=True, exist_ok=True)
            handler = RotatingFileHandler(logs / "loomchat.log", maxBytes=1_000_000, backupCount=3)
        except OSError:
            continue
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.INFO, handlers=[handler])
        return logs / "loomchat.log"
    logging.basicConfig(level=logging.INFO)  # stderr, the last resort
    return None


async def _report_startup(app: QApplication) -> None:
    """For bench/gui.py: how long from launch to the window shown, and memory once idle."""
    import json
    import resource as rusage
    import time

    await asyncio.sleep(0)  # let the first paint happen
    shown_ms = (time.time_ns() - int(os.environ["LOOMCHAT_BENCH_STARTUP"])) / 1e6
    await asyncio.sleep(3)  # settle: connection attempt done, nothing running
    rss_kb = int(
        next(
            line.split()[1]
            for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith("VmRSS:")
        )
    )
    peak_kb = rusage.getrusage(rusage.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"shown_ms": shown_ms, "idle_rss_mb": rss_kb / 1024, "peak_rss_mb": peak_kb / 1024}
        )
    )
    app.quit()


async def _self_check(window: MainWindow, session: Session, question: str) -> int:
    """For the installer test (packaging/test-package.sh): with the window shown, run each
    tool on its example, and once a backend answers ask `question` through the window;
    print what happened as one JSON line, and say whether all went well (0) or not (1)."""
    import json

    report: dict[str, Any] = {"window_shown": window.isVisible()}
    settled: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

    def on_connection(connection: Connection) -> None:
        if connection.message != "Connecting…" and not settled.done():
            settled.set_result(connection)

    window.controller.connection_changed.connect(on_connection)
    # Each tool on its own first example, with no model in the way: a bundle that lost a
    # library (numpy for charts, say) fails here, not in a user's chat.
    tools: dict[str, str] = {}
    toolbox = session.toolbox()
    for tool in toolbox:
        if tool.examples and not tool.needs_approval:
            call = ToolCall(f"check-{tool.name}", tool.name, tool.examples[0].arguments)
            outcome = await toolbox.run(call)
            tools[tool.name] = f"error: {outcome.error}" if outcome.error else "ok"
    report["tools"] = tools
    # Tool selection's libraries load only when many tools are offered: load them here.
    from desktop.core.tools.selection import ToolSelector

    try:
        picked = ToolSelector(list(toolbox)).select("What is 23 times 19?").tools
        report["tool_selection"] = "ok" if picked else "error: nothing selected"
    except Exception as exc:
        report["tool_selection"] = f"error: {exc!r}"
    # The built-in runtime may take a while to load its model.
    connection = await asyncio.wait_for(settled, 600)
    report |= {"connected": connection.ok, "status": connection.message,
               "backend": connection.backend, "model": connection.model}  # fmt: skip
    report["offered"] = [tool.name for tool in session.toolbox()]
    if session.runtime is not None:  # which llama-server the built-in runtime started
        report["runtime"] = session.runtime.command()[0]
    if connection.ok:
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def settle(text: str) -> None:
            if not answer.done():
                answer.set_result(text)

        def settle_on_end(event: Event) -> None:
            if isinstance(event, TurnFinished):
                settle(event.text)
            elif isinstance(event, TurnFailed):
                settle(f"failed: {event.message}")

        window.controller.event_received.connect(settle_on_end)
        window.composer.setPlainText(question)
        window.send()
        try:
            report["answer"] = await asyncio.wait_for(answer, 300)
        except TimeoutError:
            report["answer"] = "failed: no answer within 300 s"
    if target := os.environ.get("LOOMCHAT_SELF_CHECK_REPORT"):  # a window app on Windows
        Path(target).write_text(json.dumps(report), encoding="utf-8")  # has no stdout
    else:
        print(json.dumps(report), flush=True)
    answered = bool(report.get("answer")) and not report["answer"].startswith("failed")
    tools_ok = all(result == "ok" for result in tools.values())
    tools_ok = tools_ok and report["tool_selection"] == "ok"
    return 0 if report["window_shown"] and answered and tools_ok else 1


def main(argv: list[str] | None = None) -> int:
    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    assert isinstance(app, QApplication)
    app.setApplicationName("Loomchat")
    # No organisation name: data goes to ~/.local/share/Loomchat, %APPDATA%\Loomchat,
    # ~/Library/Application Support/Loomchat rather than Loomchat/Loomchat.
    app.setDesktopFileName("loomchat")  # matches packaging/linux/loomchat.desktop (Wayland)
    app.setWindowIcon(QIcon(str(resource("icons", "loomchat.svg"))))
    style = resource("styles", "app.qss")
    if style.is_file():
        app.setStyleSheet(style.read_text(encoding="utf-8"))
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
        if os.environ.get("LOOMCHAT_BENCH_STARTUP"):
            await _report_startup(app)
        if question := os.environ.get("LOOMCHAT_SELF_CHECK"):
            code = await _self_check(window, session, question)
            await controller.shutdown()
            return code
        await quitting.wait()
        return 0

    async def run_then_close() -> int:
        try:
            return await run_until_quit()
        finally:
            # The window closed only once its tasks had ended: now the MCP servers, the
            # HTTP client and the built-in server.
            await session.close()

    try:
        return run_on_qt(app, run_then_close())
    finally:
        if session.runtime is not None:
            session.runtime.stop()
        session.store.close()
        log.info("closed")
