"""Models: the recommended ones (which fit this machine), a Hugging Face search, the files
on this computer; downloads with progress, Cancel and "Use this model". Online only when
the person searches or downloads."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.core.errors import LoomchatError
from desktop.core.models.catalogue import (
    CatalogueModel,
    Machine,
    choice_for,
    fit,
    load_catalogue,
    recommend,
)
from desktop.core.models.download import Progress, download_choice, size_text
from desktop.core.models.hub import GgufChoice, Hub, HubError
from desktop.core.models.library import delete_model, import_model, local_models
from desktop.ui.accessible import complete, describe
from desktop.ui.ollama_page import OllamaPage
from desktop.ui.tasks import Tasks

_MB = 1024 * 1024


def recommended_model(models_dir: Path) -> CatalogueModel | None:
    """What the first run offers to download: the most capable model that fits here."""
    try:
        return recommend(load_catalogue(), Machine.here(models_dir))
    except (LoomchatError, OSError):
        return None


def offer_text(model: CatalogueModel | None) -> str | None:
    """The first run's first button: "Download Qwen2.5 3B Instruct (2.1 GB)"."""
    return f"Download {model.name} ({size_text(model.size_bytes)})" if model else None


class DownloadRow(QWidget):
    """One download: what, how far (bytes, speed, time left), Cancel; then Use."""

    use_requested = Signal(object)  # Path: the person asked to use it
    finished_path = Signal(object)  # Path: it has arrived, checked

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(title)
        self.bar = QProgressBar()
        self.bar.setAccessibleName(f"Download of {title}")
        self.bar.setTextVisible(False)  # the line below says how far, in bytes and time
        self.detail = QLabel("Waiting…")
        self.cancel = QPushButton("Cancel")
        describe(self.cancel, "Stop the download; what has arrived is kept for next time",
                 f"Cancel the download of {title}")  # fmt: skip
        self.use = QPushButton("Use this model")
        describe(self.use, "Run this model in the built-in runtime now")
        self.use.hide()
        self.path: Path | None = None
        self.use.clicked.connect(lambda: self.use_requested.emit(self.path))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        column = QVBoxLayout()
        column.addWidget(self.title)
        column.addWidget(self.bar)
        column.addWidget(self.detail)
        row.addLayout(column, 1)
        row.addWidget(self.cancel)
        row.addWidget(self.use)

    def progress(self, step: Progress) -> None:
        self.bar.setRange(0, 1000)
        self.bar.setValue(int(1000 * step.done / step.total) if step.total else 0)
        left = step.seconds_left
        eta = f", {left / 60:.0f} min left" if left and left > 90 else (
            f", {left:.0f} s left" if left else "")  # fmt: skip
        self.detail.setText(
            f"{size_text(step.done)} of {size_text(step.total)}, "
            f"{step.bytes_per_s / _MB:.1f} MB/s{eta}"
        )

    def finished(self, path: Path) -> None:
        self.path = path
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.detail.setText(f"Downloaded and checked: {path.name}")
        self.cancel.hide()
        self.use.show()
        self.finished_path.emit(path)

    def stopped(self, message: str) -> None:
        self.detail.setText(message)
        self.cancel.hide()


class ModelsDialog(QDialog):
    """Signals: use_model(Path): run this file in the built-in runtime, now;
    use_ollama_model(str): talk to this model of the Ollama at `ollama_url`."""

    use_model = Signal(object)
    use_ollama_model = Signal(str)

    def __init__(
        self,
        models_dir: Path,
        catalogue: list[CatalogueModel],
        *,
        hub: Hub | None = None,
        machine: Machine | None = None,
        ollama_url: str | None = None,
        parent: QWidget | None = None,
        tasks: Tasks | None = None,
    ) -> None:
        """`ollama_url`: the Ollama the app talks to, whose models get a page of their own.
        `tasks`: the window's jobs, which this dialog's downloads join."""
        super().__init__(parent)
        self.setWindowTitle("Models")
        self.resize(760, 560)
        self.models_dir = models_dir
        self.catalogue = catalogue
        self.hub = hub or Hub()
        self.machine = machine or Machine.here(models_dir)
        self.recommended = recommend(catalogue, self.machine)
        self._queue = asyncio.Lock()  # one download at a time; the others wait their turn
        self._tasks = Tasks(tasks)
        self.rows: list[DownloadRow] = []
        tabs = QTabWidget()
        self.ollama: OllamaPage | None = None
        if ollama_url:
            self.ollama = OllamaPage(ollama_url, tasks=self._tasks)
            self.ollama.use_model.connect(self.use_ollama_model)
            tabs.addTab(self.ollama, "Ollama")
        tabs.addTab(self._catalogue_tab(), "Recommended")
        tabs.addTab(self._search_tab(), "Search Hugging Face")
        tabs.addTab(self._local_tab(), "On this computer")
        self.downloads = QVBoxLayout()
        self.message = QLabel()
        self.message.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs, 1)
        layout.addWidget(self.message)
        layout.addLayout(self.downloads)
        complete(self)
        self._spawn(self.refresh_local())

    # --- the tabs -------------------------------------------------------------------------

    def _catalogue_tab(self) -> QWidget:
        page = QWidget()
        self.catalogue_table = QTableWidget(len(self.catalogue), 5)
        self.catalogue_table.setHorizontalHeaderLabels(
            ["Model", "Size", "RAM", "Licence", "On this machine"]
        )
        self.catalogue_table.verticalHeader().hide()
        self.catalogue_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        describe(self.catalogue_table, "Models chosen for calling tools at small sizes, and "
                 "whether each fits this computer", "Recommended models")  # fmt: skip
        for row, model in enumerate(self.catalogue):
            fits = fit(model, self.machine)
            name = model.name + (" (recommended)" if model == self.recommended else "")
            cells = [name, size_text(model.size_bytes), f"{model.ram_gb:g} GB", model.licence,
                     fits.text()]  # fmt: skip
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                self.catalogue_table.setItem(row, column, item)
        self.catalogue_table.resizeColumnsToContents()
        if self.recommended is not None:
            self.catalogue_table.selectRow(self.catalogue.index(self.recommended))
        download = QPushButton("Download")
        describe(download, "Download the chosen recommended model",
                 "Download the recommended model")  # fmt: skip
        download.clicked.connect(self._download_selected_catalogue)
        layout = QVBoxLayout(page)
        layout.addWidget(self.catalogue_table)
        layout.addWidget(download, alignment=Qt.AlignmentFlag.AlignRight)
        return page

    def _search_tab(self) -> QWidget:
        page = QWidget()
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search GGUF models on Hugging Face (e.g. qwen 3b)")
        describe(self.query, "Words to search for on Hugging Face; Enter searches",
                 "Search Hugging Face")  # fmt: skip
        self.query.returnPressed.connect(lambda: self._spawn(self.search(self.query.text())))
        self.results = QListWidget()
        describe(self.results, "Repos found, with downloads and likes; choose one to see "
                 "its files", "Search results")  # fmt: skip
        self.results.currentItemChanged.connect(self._on_repo_chosen)
        self.files = QListWidget()
        describe(self.files, "The chosen repo's model files with quantisation and size",
                 "GGUF files of the chosen repo")  # fmt: skip
        self.card = QLabel()
        self.card.setWordWrap(True)
        self.card.setTextFormat(Qt.TextFormat.PlainText)  # the card is the Hub's text
        self.card.setAccessibleName("About the chosen model")
        download = QPushButton("Download")
        describe(download, "Download the chosen file", "Download the chosen file")
        download.clicked.connect(self._download_selected_file)
        lists = QHBoxLayout()
        lists.addWidget(self.results, 1)
        lists.addWidget(self.files, 1)
        layout = QVBoxLayout(page)
        layout.addWidget(self.query)
        layout.addLayout(lists, 1)
        layout.addWidget(self.card)
        layout.addWidget(download, alignment=Qt.AlignmentFlag.AlignRight)
        return page

    def _local_tab(self) -> QWidget:
        page = QWidget()
        self.local_table = QTableWidget(0, 6)
        self.local_table.setHorizontalHeaderLabels(
            ["File", "Size", "Quantisation", "Context", "Chat template", "Last used"]
        )
        describe(self.local_table, "The model files Loomchat keeps, with size, quantisation "
                 "and context", "Models on this computer")  # fmt: skip
        self.local_table.verticalHeader().hide()
        self.local_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        buttons = QHBoxLayout()
        for text, slot, description in (
            ("Use", self._use_selected_local, "Run the chosen model now"),
            ("Delete…", self._delete_selected_local, "Delete the chosen model (after asking)"),
            ("Show in folder", self._show_folder, "Open the models folder"),
            ("Import a file…", self._import, "Copy a GGUF file into the models folder"),
        ):
            button = QPushButton(text)
            describe(button, description)
            button.clicked.connect(slot)
            buttons.addWidget(button)
        layout = QVBoxLayout(page)
        layout.addWidget(self.local_table, 1)
        layout.addLayout(buttons)
        return page

    # --- actions --------------------------------------------------------------------------

    async def search(self, query: str) -> None:
        self.results.clear()
        self.files.clear()
        try:
            found = await self.hub.search(query.strip())
        except LoomchatError as exc:
            self.message.setText(str(exc))
            return
        self.message.setText("" if found else f"No GGUF models found for {query!r}.")
        for repo in found:
            item = QListWidgetItem(f"{repo.repo_id}   ↓{repo.downloads}  ♥{repo.likes}")
            item.setData(Qt.ItemDataRole.UserRole, repo.repo_id)
            self.results.addItem(item)

    def _on_repo_chosen(self, item: QListWidgetItem | None, _previous: object = None) -> None:
        if item is not None:
            repo_id = str(item.data(Qt.ItemDataRole.UserRole))
            self._spawn(self.list_files(repo_id))
            self._spawn(self.show_card(repo_id))

    async def show_card(self, repo_id: str) -> None:
        self.card.clear()
        try:
            card = await self.hub.card(repo_id)
        except LoomchatError:
            return  # the file list says what went wrong
        facts = [f"Licence: {card.licence}" if card.licence else "",
                 f"Made from {card.base_model}" if card.base_model else ""]  # fmt: skip
        lines = [" · ".join(f for f in facts if f), card.summary]
        self.card.setText("\n".join(line for line in lines if line) or "No model card.")

    async def list_files(self, repo_id: str) -> None:
        self.files.clear()
        try:
            choices = await self.hub.choices(repo_id)
        except LoomchatError as exc:
            self.message.setText(str(exc))
            return
        for choice in choices:
            parts = f", {len(choice.files)} parts" if len(choice.files) > 1 else ""
            vision = ", sees images" if choice.projector else ""
            item = QListWidgetItem(
                f"{choice.name}   {choice.quant or '?'}, {size_text(choice.size)}{parts}{vision}"
            )
            item.setData(Qt.ItemDataRole.UserRole, (repo_id, choice))
            self.files.addItem(item)

    def _download_selected_catalogue(self) -> None:
        row = self.catalogue_table.currentRow()
        if 0 <= row < len(self.catalogue):
            self.download_catalogue(self.catalogue[row])

    def _download_selected_file(self) -> None:
        item = self.files.currentItem()
        if item is not None:
            repo_id, choice = item.data(Qt.ItemDataRole.UserRole)
            self.start_download(repo_id, choice)

    def download_catalogue(self, model: CatalogueModel) -> DownloadRow:
        row = self._new_row(model.name)

        async def run() -> None:
            try:
                choice = choice_for(model, await self.hub.files(model.repo))
            except HubError as exc:
                row.stopped(str(exc))
                return
            if choice is None:
                row.stopped(f"{model.repo} no longer has {model.file}.")
                return
            await self._download(row, model.repo, choice)

        self._spawn(run(), row)
        return row

    def start_download(self, repo_id: str, choice: GgufChoice) -> DownloadRow:
        row = self._new_row(f"{repo_id}: {choice.name}")
        self._spawn(self._download(row, repo_id, choice), row)
        return row

    def _new_row(self, title: str) -> DownloadRow:
        row = DownloadRow(title)
        row.use_requested.connect(self.use_model)
        self.rows.append(row)
        self.downloads.addWidget(row)
        return row

    async def _download(self, row: DownloadRow, repo_id: str, choice: GgufChoice) -> None:
        try:
            async with self._queue:
                path = await download_choice(
                    repo_id, choice, self.models_dir, endpoint=self.hub.endpoint,
                    on_progress=row.progress,
                )  # fmt: skip
        except LoomchatError as exc:
            row.stopped(str(exc))
            return
        except asyncio.CancelledError:  # waiting its turn, or under way
            row.stopped("Cancelled. What has arrived is kept: the download goes on from there.")
            raise
        row.finished(path)
        await self.refresh_local()

    async def refresh_local(self) -> None:
        models = await local_models(self.models_dir)
        self.local_table.setRowCount(len(models))
        for row, model in enumerate(models):
            header = model.header
            context = f"{header.context_length:,}" if header.context_length else "?"
            template = "yes" if header.has_chat_template else "none (a generic one is used)"
            if header.problem:
                template = f"unreadable: {header.problem}"
            used = (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(model.last_used))
                if model.last_used else "never"
            )  # fmt: skip
            vision = " (sees images)" if model.sees_images else ""
            cells = [model.name + vision, size_text(model.size), header.quant or "?", context,
                     template, used]  # fmt: skip
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                item.setData(Qt.ItemDataRole.UserRole, str(model.path))
                self.local_table.setItem(row, column, item)
        self.local_table.resizeColumnsToContents()

    def _selected_local(self) -> Path | None:
        item = self.local_table.item(self.local_table.currentRow(), 0)
        return Path(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def _use_selected_local(self) -> None:
        if (path := self._selected_local()) is not None:
            self.use_model.emit(path)

    def _delete_selected_local(self) -> None:
        path = self._selected_local()
        if path is None:
            return
        answer = QMessageBox.question(self, "Delete model", f"Delete {path.name} from disk?")
        if answer == QMessageBox.StandardButton.Yes:
            try:
                delete_model(self.models_dir, path.name)
            except LoomchatError as exc:
                self.message.setText(str(exc))
            self._spawn(self.refresh_local())

    def _show_folder(self) -> None:
        self.models_dir.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.models_dir)))

    def _import(self) -> None:
        chosen, _ = QFileDialog.getOpenFileName(self, "Import a model", "", "GGUF (*.gguf)")
        if chosen:
            self._spawn(self._import_file(Path(chosen)))

    async def _import_file(self, source: Path) -> None:
        try:
            await import_model(self.models_dir, source)
        except LoomchatError as exc:
            self.message.setText(str(exc))
        await self.refresh_local()

    def _spawn(self, work: Coroutine[Any, Any, None], row: DownloadRow | None = None) -> None:
        task = self._tasks.start(work)
        if row is not None:
            row.cancel.clicked.connect(task.cancel)

    def done(self, result: int) -> None:
        """Closing the dialog stops its downloads (their bytes are kept for next time)."""
        self._tasks.cancel()
        if self.ollama is not None:
            self.ollama.stop()
        super().done(result)


def show_models(
    parent: QWidget,
    models_dir: Path,
    download: CatalogueModel | None = None,
    use_when_done: bool = False,
    ollama_url: str | None = None,
    tasks: Tasks | None = None,
) -> ModelsDialog:
    """Open the dialog (not modal: a download may run while the person chats)."""
    dialog = ModelsDialog(
        models_dir, load_catalogue(), ollama_url=ollama_url, parent=parent, tasks=tasks
    )
    dialog.use_model.connect(lambda _path: dialog.accept())
    dialog.use_ollama_model.connect(lambda _name: dialog.accept())
    if download is not None:
        row = dialog.download_catalogue(download)
        if use_when_done:
            row.finished_path.connect(dialog.use_model)
    dialog.show()
    return dialog
