"""Models: the recommended ones (which fit this machine), a Hugging Face search, the files
on this computer; downloads with progress, Cancel and "Use this model". Online only when
the person searches or downloads."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
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
from desktop.core.models.download import download_choice, size_text
from desktop.core.models.hub import GgufChoice, Hub, HubError
from desktop.ui.accessible import complete, describe
from desktop.ui.download_row import DownloadRow
from desktop.ui.local_models_page import LocalModelsPage
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
        self.message = QLabel()
        self.message.setWordWrap(True)
        tabs = QTabWidget()
        self.ollama: OllamaPage | None = None
        if ollama_url:
            self.ollama = OllamaPage(ollama_url, tasks=self._tasks)
            self.ollama.use_model.connect(self.use_ollama_model)
            tabs.addTab(self.ollama, "Ollama")
        tabs.addTab(self._catalogue_tab(), "Recommended")
        tabs.addTab(self._search_tab(), "Search Hugging Face")
        self.local = LocalModelsPage(models_dir, self._tasks)
        self.local.use_model.connect(self.use_model)
        self.local.problem.connect(self.message.setText)
        tabs.addTab(self.local, "On this computer")
        self.downloads = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.addWidget(tabs, 1)
        layout.addWidget(self.message)
        layout.addLayout(self.downloads)
        complete(self)

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
        await self.local.refresh()

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
