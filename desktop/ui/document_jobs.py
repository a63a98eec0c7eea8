"""The document collections' indexing, in the background: one collection at a time, the
rest waiting their turn, among the controller's tasks (quitting stops it; the next start
goes on from the files already indexed). Whoever shows it listens to the signals."""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QObject, Signal

from desktop.core.documents.index import DocumentIndex, DocumentsError
from desktop.core.documents.indexer import IndexProgress, IndexReport, index_collection
from desktop.core.session import Session
from desktop.ui.tasks import Tasks

log = logging.getLogger(__name__)


class DocumentJobs(QObject):
    """`progress`: the running collection's IndexProgress; `finished`: a collection's name
    and its IndexReport (or None with a message, if it failed); `changed`: the collections
    or their passages changed (the tool offered follows)."""

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
        self.last: IndexProgress | None = None
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
                message = ""
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

    def _progressed(self, progress: IndexProgress) -> None:
        self.last = progress
        self.progress.emit(progress)
