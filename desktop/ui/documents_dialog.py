"""Documents: the collections a model can search (their folders and files, how far their
indexing is, the files that could not be read), and a search to try them. Not modal:
indexing goes on in the background while the person chats, and after the dialog closes."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import assert_never

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.core.documents.embedding_service import vectors_model
from desktop.core.documents.index import CollectionInfo, DocumentsError, Hit
from desktop.core.documents.indexer import IndexProgress, IndexReport
from desktop.core.documents.tool import NAME, where
from desktop.core.documents.vectors import EmbedProgress
from desktop.ui.accessible import describe
from desktop.ui.document_jobs import DocumentJobs
from desktop.ui.embeddings_chooser import EmbeddingsChooser

SEARCH_SHOWN = 8


class DocumentsDialog(QDialog):
    def __init__(self, jobs: DocumentJobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Documents")
        self.resize(900, 600)
        self.jobs = jobs
        self.index = jobs.index
        intro = QLabel(
            f"Collections of your files that a model can search with the {NAME} tool, and "
            "cite. Text, Markdown, code, HTML, PDF and Word files are read; everything stays "
            "on this computer."
        )
        intro.setWordWrap(True)

        self.collections = QListWidget()
        describe(self.collections, "Your document collections", "Collections")
        self.collections.currentTextChanged.connect(self._show)
        new = QPushButton("New collection…")
        new.clicked.connect(self._new_collection)
        self.remove_collection = QPushButton("Remove")
        describe(self.remove_collection, "Remove the collection and its index (not the files)")
        self.remove_collection.clicked.connect(self._remove_collection)
        left = QVBoxLayout()
        left.addWidget(self.collections)
        row = QHBoxLayout()
        row.addWidget(new)
        row.addWidget(self.remove_collection)
        left.addLayout(row)

        self.summary = QLabel()
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.sources = QListWidget()
        describe(self.sources, "The folders and files in this collection", "Sources")
        add_folder = QPushButton("Add folder…")
        add_folder.clicked.connect(self._add_folder)
        add_files = QPushButton("Add files…")
        add_files.clicked.connect(self._add_files)
        self.remove_source = QPushButton("Remove from collection")
        self.remove_source.clicked.connect(self._remove_source)
        self.update_button = QPushButton("Update now")
        describe(self.update_button, "Read new and changed files again, forget removed ones")
        self.update_button.clicked.connect(self._update_or_stop)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.problems = QTreeWidget()
        self.problems.setHeaderLabels(["File that could not be read", "Why"])
        self.problems.setRootIsDecorated(False)
        describe(self.problems, "Files left out of the index, each with its problem", "Problems")
        self.query = QLineEdit()
        self.query.setPlaceholderText("Try a search in this collection…")
        self.query.returnPressed.connect(self._search)
        self.results = QTreeWidget()
        self.results.setHeaderLabels(["Source", "Score", "Passage"])
        self.results.setRootIsDecorated(False)
        describe(self.results, "The passages a model would be given", "Search results")

        right = QVBoxLayout()
        right.addWidget(self.summary)
        right.addWidget(self.sources, 2)
        buttons = QHBoxLayout()
        for button in (add_folder, add_files, self.remove_source):
            buttons.addWidget(button)
        buttons.addStretch()
        right.addLayout(buttons)
        indexing = QHBoxLayout()
        indexing.addWidget(self.progress, 1)
        indexing.addWidget(self.update_button)
        right.addLayout(indexing)
        right.addWidget(self.status)
        right.addWidget(self.problems, 2)
        right.addWidget(self.query)
        right.addWidget(self.results, 3)

        splitter = QSplitter()
        for layout in (left, right):
            holder = QWidget()
            holder.setLayout(layout)
            splitter.addWidget(holder)
        splitter.setSizes([220, 680])
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        self.search_by = EmbeddingsChooser(jobs.session.settings)
        self.search_by.chosen.connect(self._search_by)
        search_by = QHBoxLayout()
        search_by.addWidget(QLabel("Search by:"))
        search_by.addWidget(self.search_by, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(search_by)
        layout.addWidget(splitter, 1)
        layout.addWidget(close)

        for button in self.findChildren(QPushButton):  # Return in the search box searches
            button.setAutoDefault(False)
        jobs.progress.connect(self._progressed)
        jobs.finished.connect(self._finished)
        jobs.changed.connect(self._refresh)
        self._refresh()

    # --- shown ---------------------------------------------------------------------

    @property
    def chosen(self) -> str | None:
        item = self.collections.currentItem()
        return item.text() if item is not None else None

    def _refresh(self) -> None:
        chosen = self.chosen
        names = self.index.names()
        self.collections.blockSignals(True)
        self.collections.clear()
        self.collections.addItems(names)
        self.collections.blockSignals(False)
        if names:
            at = names.index(chosen) if chosen in names else 0
            self.collections.setCurrentRow(at)
        self._show(self.chosen or "")

    def _show(self, name: str) -> None:
        has = bool(name)
        for widget in (self.remove_collection, self.remove_source, self.update_button,
                       self.query, self.sources):  # fmt: skip
            widget.setEnabled(has)
        self.sources.clear()
        self.problems.clear()
        if not has:
            self.summary.setText("<b>No collection yet.</b> Make one and add a folder to it.")
            self._show_progress(None)
            return
        running = self.jobs.running == name
        self._show_progress(self.jobs.last if running else None)
        # Counting a large collection's passages takes a while: not on the window's loop.
        self.jobs.tasks.start(self._load(name))

    async def _load(self, name: str) -> None:
        try:
            info = await asyncio.to_thread(self.index.info, name)
            uses = await asyncio.to_thread(self._searched_by, name)
        except DocumentsError:
            return  # removed meanwhile
        if shiboken6.isValid(self) and self.chosen == name:
            self.sources.clear()
            self.problems.clear()
            self._show_info(info, uses)

    def _searched_by(self, name: str) -> str:
        """What the search uses on the collection, as the person chose it (blocking)."""
        settings, library = self.jobs.session.settings, self.jobs.session.library
        model = vectors_model(settings.embeddings, settings.embedding_model)
        if library is None or not model:
            return "Searched by its words (BM25)."
        done, total = library.retriever.vectors.coverage(model, name)
        return (f"Searched by its words and by meaning: {done:,} of {total:,} passages have "
                f"vectors from {model}.")  # fmt: skip

    def _search_by(self, choice: str, model: str) -> None:
        session = self.jobs.session
        if (session.settings.embeddings, session.settings.embedding_model) == (choice, model):
            return
        session.apply_settings(replace(session.settings, embeddings=choice, embedding_model=model))
        self.jobs.update()  # every collection's passages given vectors by the new model
        self._show(self.chosen or "")

    def _show_info(self, info: CollectionInfo, uses: str) -> None:
        pages = f"{info.pages:,} pages, " if info.pages else ""
        self.summary.setText(
            f"<b>{_escaped(info.name)}</b> — {info.files:,} files, {pages}{info.chunks:,} "
            f"passages<br>{_escaped(uses)}"
        )
        self.sources.addItems(list(info.sources))
        for path, problem in info.problems:
            item = QTreeWidgetItem([path, problem])
            item.setToolTip(0, path)
            self.problems.addTopLevelItem(item)
        self.problems.resizeColumnToContents(0)

    def _show_progress(self, progress: IndexProgress | EmbedProgress | None) -> None:
        running = progress is not None and self.jobs.running == self.chosen
        self.update_button.setText("Stop" if running else "Update now")
        if progress is None or not running:
            self.progress.setRange(0, 1)
            self.progress.setValue(1 if self.chosen else 0)
            self.progress.setFormat("Up to date" if self.chosen else "")
            return
        match progress:
            case IndexProgress():
                self.progress.setRange(0, max(progress.files_total, 1))
                self.progress.setValue(progress.files_done)
                self.progress.setFormat(
                    f"{progress.files_done:,} of {progress.files_total:,} files"
                )
                left = progress.seconds_left
                eta = f", about {_duration(left)} left" if left is not None else ""
                self.status.setText(f"Indexing: {progress.pages:,} pages read{eta}.")
            case EmbedProgress():
                self.progress.setRange(0, max(progress.total, 1))
                self.progress.setValue(progress.done)
                self.progress.setFormat(f"{progress.done:,} of {progress.total:,} passages")
                self.status.setText("Giving the passages vectors, to search by meaning too.")
            case _:
                assert_never(progress)

    def _progressed(self, progress: IndexProgress | EmbedProgress) -> None:
        if progress.collection == self.chosen:
            self._show_progress(progress)

    def _finished(self, name: str, report: IndexReport | None, message: str) -> None:
        if name != self.chosen:
            return
        if report is None:
            self.status.setText(message)
        else:
            self.status.setText(
                f"Updated: {report.added} added, {report.updated} changed, {report.removed} "
                f"removed, {report.unchanged} unchanged, {len(report.problems)} could not be read."
                + (f" {message}" if message else "")
            )

    # --- actions -------------------------------------------------------------------

    def _new_collection(self) -> None:
        name, ok = QInputDialog.getText(self, "New collection", "Name:")
        name = name.strip()
        if not ok or not name:
            return
        folder = QFileDialog.getExistingDirectory(self, f"A folder for {name}", str(Path.home()))
        if folder:
            self.add_sources(name, [Path(folder)])

    def add_sources(self, name: str, paths: list[Path]) -> None:
        """Add folders or files to the collection (made if new) and index it."""
        try:
            self.index.add_sources(name, paths)
        except DocumentsError as exc:
            QMessageBox.warning(self, "Documents", str(exc))
            return
        self._refresh()
        items = self.collections.findItems(name, Qt.MatchFlag.MatchExactly)
        if items:
            self.collections.setCurrentItem(items[0])
        self.jobs.update(name)

    def _add_folder(self) -> None:
        if self.chosen and (folder := QFileDialog.getExistingDirectory(self, "Add a folder")):
            self.add_sources(self.chosen, [Path(folder)])

    def _add_files(self) -> None:
        if self.chosen:
            files, _ = QFileDialog.getOpenFileNames(self, "Add files", str(Path.home()))
            if files:
                self.add_sources(self.chosen, [Path(f) for f in files])

    def _remove_source(self) -> None:
        item = self.sources.currentItem()
        if self.chosen and item is not None:
            self.index.remove(self.chosen, [Path(item.text())])
            self.jobs.session.refresh_documents()
            self._refresh()

    def _remove_collection(self) -> None:
        name = self.chosen
        asked = QMessageBox.question(
            self, "Remove the collection",
            f"Remove {name!r} and its index? Your files are not touched.",
        )  # fmt: skip
        if name and asked == QMessageBox.StandardButton.Yes:
            self.jobs.remove(name)

    def _update_or_stop(self) -> None:
        if self.chosen and self.jobs.running == self.chosen:
            self.jobs.cancel()
        elif self.chosen:
            self.jobs.update(self.chosen)

    def _search(self) -> None:
        if self.chosen and self.query.text().strip():
            self.jobs.tasks.start(self._searched(self.query.text(), self.chosen))

    async def _searched(self, query: str, name: str) -> None:
        hits = await asyncio.to_thread(self.index.search, query, [name], SEARCH_SHOWN)
        self.show_hits(hits)

    def show_hits(self, hits: list[Hit]) -> None:
        self.results.clear()
        for number, hit in enumerate(hits, 1):
            text = " ".join(hit.text.split())
            item = QTreeWidgetItem([f"[{number}] {where(hit)}", f"{hit.score:.2f}", text])
            item.setToolTip(0, hit.path)
            item.setToolTip(2, hit.text[:2000])
            self.results.addTopLevelItem(item)
        self.results.resizeColumnToContents(0)
        if not hits:
            nothing = QTreeWidgetItem(["No passage matches.", "", ""])
            self.results.addTopLevelItem(nothing)
            nothing.setFirstColumnSpanned(True)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
