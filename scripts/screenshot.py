"""Screenshots of the real app: a real window (run it under Xvfb), the real llama-server
with the bundled model, and a prompt that makes the model draw a chart.

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python -m scripts.screenshot [--out DIR]

Saves `chat.png` (the window after the answer) and `inspector.png` (with the inspector open).
With `--look`, the look in both themes: a conversation whose last answer was regenerated
(its "< 2/2 >" switcher) in the light theme (`light.png`), an image attached in the composer
(`attachment.png`), and a chart in the dark theme (`dark.png`).
With `--data-folder`, starts the real app over a damaged and over a read-only data folder
instead and saves the screen as the person sees it: `data-folder-damaged.png`,
`data-folder-read-only.png`.
With `--models`, the first run with no model server (`first-run.png`) and the Models
dialog during a download from a local stand-in for the Hub (`models-download.png`).
With `--calibration`, the app with 40 more tools (from the BFCL set, so that the tool
selection picks): the model calibrating (`calibrating.png`), its reliability card in
Settings (`reliability-card.png`) and a turn's offered tools in the inspector
(`tool-selection.png`).
With `--second-look`, the model calibrated on the app's own tools, then three questions in
one chat (the calculator, a joke, the time in Tokyo): the inspector on the last turn, at
the call gate's second look if it took one (`second-look.png`).
With `--documents`, a collection of Loomchat's own guide indexed in the background: the
Documents dialog with a search tried (`documents.png`), then a question about it answered
with the passages cited (`documents-answer.png`, the inspector on the search).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_API", "pyside6")

PROMPT = "Make a bar chart of our sales: Jan 10, Feb 14, Mar 9, Apr 17."


async def wait_for(condition: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def real_app(**settings: object) -> AsyncIterator[tuple[Any, Any, Any]]:
    """The real window over a fresh data folder, talking to the bundled model on a real
    llama-server; everything stopped after."""
    from PySide6.QtWidgets import QApplication

    from desktop.core.runtime import LlamaServer, ensure_bundled_model
    from desktop.ui.app import build

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    server = LlamaServer(model=ensure_bundled_model(), threads=2)
    await server.start()
    folder = Path(tempfile.mkdtemp(prefix="loomchat-shot-"))
    chosen = {"backend": "llamacpp", "url": server.base_url, "temperature": 0, **settings}
    (folder / "settings.json").write_text(json.dumps(chosen))
    window, controller, session, _ = build(folder)
    try:
        yield window, controller, session
    finally:
        await controller.shutdown()
        await session.close()
        server.stop()
        window.close()


async def shoot(out: Path) -> None:
    async with real_app() as (window, controller, session):
        window.resize(1280, 820)
        window.show()
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        window.pane.composer.setPlainText(PROMPT)
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        await asyncio.sleep(0.5)
        out.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(out / "chat.png"))
        window.inspector_dock.show()
        window.resize(1400, 820)
        await asyncio.sleep(0.5)
        tree = window.inspector.tree
        if tree.topLevelItemCount():
            first = tree.topLevelItem(0)
            for index in range(first.childCount()):
                if first.child(index).text(0) == "← raw output":
                    tree.setCurrentItem(first.child(index))
        await asyncio.sleep(0.3)
        window.grab().save(str(out / "inspector.png"))
        print(f"saved {out / 'chat.png'} and {out / 'inspector.png'}")


async def shoot_look(out: Path) -> None:
    from PySide6.QtWidgets import QMessageBox

    from desktop.core.tools.builtin.charts import render_chart

    out.mkdir(parents=True, exist_ok=True)
    async with real_app() as (window, controller, session):
        window.resize(1280, 820)
        window.show()
        window.set_theme("light")
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        controller.calibrate_on_first_use = False  # it would slow the answers shown here
        window.pane.composer.setPlainText("What is 1234 * 5678?")
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        last = [b for b in window.pane.chat.bubbles() if b.role == "assistant"][-1]
        assert last.seq is not None
        window.pane.regenerate(last.seq)  # a second version of the answer: "< 2/2 >"
        await wait_for(lambda: controller.busy, 10, "the regeneration to start")
        await wait_for(lambda: not controller.busy, 300, "the regeneration")
        await asyncio.sleep(0.5)
        window.grab().save(str(out / "light.png"))
        # An image attached: the chip in the composer, then the notice (this model cannot
        # see images) and the message with its picture.
        window.new_conversation()
        picture = Path(tempfile.mkdtemp()) / "sales.png"
        chart = {"type": "line", "title": "Sales", "labels": ["Q1", "Q2"], "values": [3, 5]}
        picture.write_bytes(render_chart(chart))
        window.pane.attacher.attach_files([picture])
        await wait_for(lambda: bool(window.pane.composer_bar.attachments), 30, "the attachment")
        window.pane.composer.setPlainText("What does this chart show?")
        await asyncio.sleep(0.3)
        window.grab().save(str(out / "attachment.png"))
        QMessageBox.question = lambda *_: QMessageBox.StandardButton.Yes  # type: ignore[method-assign]
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        window.set_theme("dark")
        window.new_conversation()
        window.pane.composer.setPlainText(PROMPT)
        window.pane.send()  # a chart drawn for the dark window
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        await asyncio.sleep(0.5)
        window.grab().save(str(out / "dark.png"))
        window.set_theme("system")
        print(f"saved light.png, attachment.png and dark.png in {out}")


async def shoot_calibration(out: Path) -> None:
    from PySide6.QtWidgets import QTabWidget

    from bench.accuracy import DEFAULT_CASES, tools_of
    from desktop.ui.settings_dialog import SettingsDialog

    cases = [json.loads(line) for line in DEFAULT_CASES.read_text().splitlines()[:60]]
    extra = {t.name: t for case in cases for t in tools_of(case)[0]}
    out.mkdir(parents=True, exist_ok=True)
    async with real_app(show_inspector=True) as (window, controller, session):
        session.tools.extra = list(extra.values())[:40]
        session.apply_settings(session.settings)
        window.resize(1400, 820)
        window.show()
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        controller.calibrate()
        await wait_for(lambda: window.calibration_status.bar.value() >= 6, 300, "some progress")
        window.grab().save(str(out / "calibrating.png"))
        await wait_for(lambda: not controller.calibrating, 600, "the calibration")
        dialog = SettingsDialog(session.settings, session.tools.all, session.secrets, window,
                                calibration=session.calibration)  # fmt: skip
        tabs = dialog.findChild(QTabWidget)
        assert tabs is not None
        tabs.setCurrentIndex(tabs.count() - 1)
        dialog.resize(640, 480)
        dialog.show()
        await asyncio.sleep(0.5)
        dialog.grab().save(str(out / "reliability-card.png"))
        dialog.close()
        window.pane.composer.setPlainText("What time is it in Tokyo right now?")
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        await asyncio.sleep(0.5)
        tree = window.inspector.tree
        if tree.topLevelItemCount():
            tree.setCurrentItem(tree.topLevelItem(0))
        await asyncio.sleep(0.3)
        window.grab().save(str(out / "tool-selection.png"))
        print(f"saved calibrating.png, reliability-card.png, tool-selection.png in {out}")


SECOND_LOOK = "→ odds of a call, the turn alone (second look)"


def inspector_rows(tree: Any) -> list[Any]:
    """Every step's rows in the inspector's tree, in order."""
    return [
        tree.topLevelItem(i).child(j)
        for i in range(tree.topLevelItemCount())
        for j in range(tree.topLevelItem(i).childCount())
    ]


async def shoot_second_look(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    async with real_app(show_inspector=True) as (window, controller, session):
        window.resize(1400, 860)
        window.show()
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        controller.calibrate()
        await wait_for(lambda: controller.calibrating, 10, "the calibration to start")
        await wait_for(lambda: not controller.calibrating, 900, "the calibration")
        card = session.calibration
        assert card is not None
        print(f"calibrated in {card.seconds:.0f} s: bars {card.bar} / {card.later_bar}")
        for question in (
            "What is 1234 * 5678?",
            "Tell me a short joke.",
            "What time is it in Tokyo right now?",
        ):
            window.pane.composer.setPlainText(question)
            window.pane.send()
            await wait_for(lambda: controller.busy, 10, "the turn to start")
            await wait_for(lambda: not controller.busy, 300, "the answer")
        await asyncio.sleep(0.5)
        tree = window.inspector.tree
        rows = inspector_rows(tree)
        looked = [row for row in rows if row.text(0) == SECOND_LOOK]
        gates = [row for row in rows if row.text(0).startswith("call gate")]
        if gates:
            tree.setCurrentItem(gates[-1])
        if looked:
            tree.scrollToItem(looked[0])
        print("the last turn's gate:", [row.text(0) for row in gates] or "none")
        await asyncio.sleep(0.3)
        window.grab().save(str(out / "second-look.png"))
        print(f"saved {out / 'second-look.png'}")


DOCUMENTS_QUESTION = "Where does Loomchat keep the index of my documents?"


async def shoot_documents(out: Path) -> None:
    from desktop.ui.documents_dialog import DocumentsDialog

    out.mkdir(parents=True, exist_ok=True)
    guide = Path(__file__).resolve().parent.parent / "docs"
    async with real_app(show_inspector=False) as (window, controller, session):
        window.resize(1280, 820)
        window.show()
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        window.open_documents()
        dialog = window.findChild(DocumentsDialog)
        dialog.resize(1100, 700)
        dialog.add_sources("Loomchat guide", [guide / "guide", guide / "cli.md"])
        jobs = window.documents
        await wait_for(lambda: jobs.running is None and not jobs.waiting, 300, "the indexing")
        await wait_for(lambda: "passages" in dialog.summary.text(), 30, "the summary")
        dialog.query.setText("passages quoted material")
        dialog._search()
        await wait_for(lambda: dialog.results.topLevelItemCount() > 0, 30, "the search")
        await asyncio.sleep(0.5)
        dialog.grab().save(str(out / "documents.png"))
        dialog.close()
        controller.calibrate_on_first_use = False  # the answer's shot, not a calibration's
        window.pane.composer.setPlainText(DOCUMENTS_QUESTION)
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        window.inspector_dock.show()
        window.resize(1400, 860)
        await asyncio.sleep(0.5)
        tree = window.inspector.tree
        rows = inspector_rows(tree)
        searched = [row for row in rows if row.text(0).startswith("retrieval:")]
        results = [row for row in rows if "search_documents" in row.text(0)]
        if searched or results:  # the search's query and scores, else its result
            tree.setCurrentItem((searched or results)[-1])
        await asyncio.sleep(0.3)
        window.grab().save(str(out / "documents-answer.png"))
        print("rows:", [row.text(0) for row in rows])
        print(f"saved {out / 'documents.png'} and {out / 'documents-answer.png'}")


def shoot_data_folder(out: Path) -> None:
    """The app started over a damaged, then a read-only, data folder: the screen a few
    seconds later (the dialog it shows), grabbed from the X display by another process."""
    import subprocess

    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication(sys.argv[:1])
    work = Path(tempfile.mkdtemp(prefix="loomchat-shot-"))
    damaged = work / "damaged"
    damaged.mkdir()
    (damaged / "chats.db").write_bytes(os.urandom(8192))
    # Root may write anywhere the permissions forbid; /proc refuses even root.
    read_only = Path("/proc/self/fdinfo") if os.geteuid() == 0 else work / "read-only"
    if read_only.parent == work:
        read_only.mkdir(mode=0o500)
    out.mkdir(parents=True, exist_ok=True)
    for name, folder in (("damaged", damaged), ("read-only", read_only)):
        env = {**os.environ, "LOOMCHAT_DATA_DIR": str(folder), "TMPDIR": str(work)}
        process = subprocess.Popen([sys.executable, "-m", "desktop"], env=env)
        time.sleep(4)
        screen = app.primaryScreen().grabWindow(0)
        process.kill()
        process.wait()
        target = out / f"data-folder-{name}.png"
        screen.copy(screen.rect().adjusted(0, 0, 0, 0)).save(str(target))
        print(f"saved {target}")


async def shoot_models(out: Path) -> None:
    """The first run with no model server (`first-run.png`), and the Models dialog during
    a real download from a local stand-in for the Hub, stalled part-way (`models-download.png`)."""
    from PySide6.QtWidgets import QApplication

    from desktop.core.models.catalogue import load_catalogue
    from desktop.core.models.hub import Hub
    from desktop.ui.app import build
    from desktop.ui.models_dialog import ModelsDialog
    from tests.support.hub_server import FakeHub, HubFileData, HubRepoData

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    folder = Path(tempfile.mkdtemp(prefix="loomchat-shot-"))
    (folder / "settings.json").write_text(
        json.dumps({"backend": "llamacpp", "url": "http://127.0.0.1:9"})
    )
    window, controller, session, _ = build(folder)
    window.resize(1180, 760)
    window.show()
    controller.reconnect()
    await wait_for(
        lambda: window.pane.pages.currentWidget() is window.first_run, 30, "the first run"
    )
    await asyncio.sleep(0.5)
    out.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(out / "first-run.png"))
    model = window.recommended
    assert model is not None
    big = os.urandom(60 * 1024 * 1024)
    hub = FakeHub({model.repo: HubRepoData({model.file: HubFileData(big, stall_after=35 * 2**20)})})
    async with hub:
        catalogue = load_catalogue()
        dialog = ModelsDialog(window.models_dir, catalogue, hub=Hub(hub.url), parent=window)
        dialog.show()
        row = dialog.download_catalogue(model)
        await wait_for(lambda: row.bar.value() >= 400, 60, "part of the download")
        await asyncio.sleep(0.3)
        dialog.grab().save(str(out / "models-download.png"))
        dialog.reject()  # cancels the download: let the child be stopped and reaped
        await wait_for(lambda: not dialog._tasks, 10, "the download to stop")
    await controller.shutdown()
    await session.close()
    window.close()
    print(f"saved first-run.png, models-download.png in {out}")


def take_on_qt(shots: Coroutine[Any, Any, None]) -> int:
    """Take the shots on Qt's loop, then leave at once: Qt objects finalised during
    interpreter shutdown may crash PySide6, and all is saved."""
    from PySide6.QtWidgets import QApplication

    from desktop.ui.app import run_on_qt

    run_on_qt(QApplication(sys.argv[:1]), shots)
    sys.stdout.flush()
    os._exit(0)


def shots_main(doc: str, shoot: Callable[[Path], Coroutine[Any, Any, None]]) -> int:
    """A screenshot script's `main`: `--out DIR`, then `shoot` into it."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("resources/screenshots"))
    return take_on_qt(shoot(parser.parse_args().out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("resources/screenshots"))
    parser.add_argument("--data-folder", action="store_true",
                        help="the dialogs for a damaged and a read-only data folder")  # fmt: skip
    parser.add_argument("--calibration", action="store_true",
                        help="calibration, its card, the tool selection")  # fmt: skip
    parser.add_argument("--models", action="store_true",
                        help="the first run and the Models dialog mid-download")  # fmt: skip
    parser.add_argument("--look", action="store_true",
                        help="a branched conversation in the light and the dark theme")  # fmt: skip
    parser.add_argument("--second-look", action="store_true",
                        help="the call gate's second look deep in a chat")  # fmt: skip
    parser.add_argument("--documents", action="store_true",
                        help="a collection indexed, searched, and cited in an answer")  # fmt: skip
    args = parser.parse_args()
    if args.data_folder:
        shoot_data_folder(args.out)
        return 0
    shots = (
        shoot_calibration(args.out) if args.calibration
        else shoot_models(args.out) if args.models
        else shoot_look(args.out) if args.look
        else shoot_second_look(args.out) if args.second_look
        else shoot_documents(args.out) if args.documents
        else shoot(args.out)
    )  # fmt: skip
    return take_on_qt(shots)


if __name__ == "__main__":
    sys.exit(main())
