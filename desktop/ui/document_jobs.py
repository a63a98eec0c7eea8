"""The document collections' indexing, in the background: one collection at a time, the
rest waiting their turn, among the controller's tasks (quitting stops it; the next start
goes on from the files already indexed). Whoever shows it listens to the signals."""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QObject, Signal

from desktop.core.documents.embeddings import EmbeddingError
from desktop.core.documents.index import DocumentIndex, DocumentsError
from desktop.core.documents.indexer import IndexProgress, IndexReport, index_collection
from desktop.core.documents.vectors import EmbedProgress, embed_collection
from desktop.core.session import Session
from desktop.ui.tasks import Tasks

log = logging.getLogger(__name__)


class DocumentJobs(QObject):
    """`progress`: the running collection's IndexProgress, then its EmbedProgress while its
    passages are given vectors (when the settings choose an embedding model); `finished`: a
    collection's name, its IndexReport (or None if it failed) and a message (why it failed,
    or what became of the vectors); `changed`: the collections or their passages changed
    (the tool offered follows)."""

    progress = Signal(object)
    finished = Signal(str, object, str)
    changed = Signal()

    def __init__(self, session: Session, index: DocumentIndex, tasks: Tasks) -> None:
        super().__init__()
        self.session = session
        self.index = index
        self.tasks = tasks
        self.waiting: list[str] = []
        self.running: str | None = None
        self.last: IndexProgress | EmbedProgress | None = None
        self._task: asyncio.Task[None] | None = None

    def update(self, *names: str) -> None:
        """Index these collections (all, if none named) once the running one is done."""
        for name in names or tuple(self.index.names()):
            if name != self.running and name not in self.waiting:
                self.waiting.append(name)
        if self._task is None or self._task.done():
            self._task = self.tasks.start(self._run())

    def cancel(self) -> None:
        """Stop the running indexing and drop the waiting ones (what is done is kept)."""
        self.waiting.clear()
        if self._task is not None:
            self._task.cancel()

    def remove(self, name: str) -> None:
        """The collection out of the queue (cancelled if running), then out of the index."""
        if name in self.waiting:
            self.waiting.remove(name)
        if self.running == name:
            self.cancel()
        self.index.remove(name)
        self.session.refresh_documents()
        self.changed.emit()

    async def _run(self) -> None:
        while self.waiting:
            name = self.running = self.waiting.pop(0)
            try:
                report: IndexReport | None = await index_collection(
                    self.index, name, self._progressed
                )
                message = await self._embed(name)
            except DocumentsError as exc:  # removed meanwhile
                report, message = None, str(exc)
            except asyncio.CancelledError:
                self.running = None
                self.finished.emit(name, None, "Stopped; the files indexed so far are kept.")
                self.changed.emit()
                raise
            except Exception as exc:  # the index's disk, say: shown, the app goes on
                log.exception("indexing %s failed", name)
                report, message = None, f"Indexing stopped: {exc}"
            self.running = None
            self.session.refresh_documents()
            self.finished.emit(name, report, message)
            self.changed.emit()

    async def _embed(self, name: str) -> str:
        """Vectors for the collection's passages that have none, when the settings choose an
        embedding model: what became of them, in words for the status line."""
        library, settings = self.session.library, self.session.settings
        if library is None or settings.embeddings == "none":
            return ""
        connection = self.session.connection
        try:
            embedder = await library.prepare_embeddings(
                settings, connection.backend, connection.url
            )
            if embedder is None:
                return ""
            made = await embed_collection(
                library.retriever.vectors, embedder, name, self._progressed
            )
        except EmbeddingError as exc:
            return f"No vectors: {exc} The search goes on by words alone."
        model = embedder.source.model
        return f"{made:,} passages given vectors by {model}." if made else ""

    def _progressed(self, progress: IndexProgress | EmbedProgress) -> None:
        self.last = progress
        self.progress.emit(progress)
