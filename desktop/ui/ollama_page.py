"""The Models dialog's Ollama page, when the backend is Ollama: its installed models, pull
one by name with per-layer progress and Cancel, delete one (after asking), use one."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.core.errors import LoomchatError
from desktop.core.models.download import size_text
from desktop.core.providers.ollama import OllamaProvider
from desktop.core.providers.ollama_models import PullProgress, delete, installed, pull
from desktop.ui.accessible import describe
from desktop.ui.tasks import Tasks


class OllamaPage(QWidget):
    """Signals: use_model(str): talk to this Ollama model now."""

    use_model = Signal(str)

    def __init__(
        self, base_url: str, parent: QWidget | None = None, tasks: Tasks | None = None
    ) -> None:
        super().__init__(parent)
        # Its own client: the session's closes whenever the app reconnects.
        self.provider = OllamaProvider(base_url)
        self._tasks = Tasks(tasks)
        self._pulling: asyncio.Task[Any] | None = None
        self.names: list[str] = []

        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(
            ["Model", "Size", "Family", "Parameters", "Quantisation"]
        )
        describe(self.table, "The models Ollama has, with size, family, parameters and "
                 "quantisation", "Ollama's models")  # fmt: skip
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.use_button = QPushButton("Use")
        self.use_button.clicked.connect(self._use_selected)
        describe(self.use_button, "Talk to the chosen model", "Use the chosen Ollama model")
        self.delete_button = QPushButton("Delete…")
        self.delete_button.clicked.connect(self._delete_selected)
        describe(self.delete_button, "Delete the chosen model from Ollama (after asking)")
        actions = QHBoxLayout()
        actions.addStretch()
        actions.addWidget(self.use_button)
        actions.addWidget(self.delete_button)

        self.name = QLineEdit()
        self.name.setPlaceholderText("A model to pull from ollama.com (e.g. qwen3:4b)")
        describe(self.name, "The name of a model on ollama.com; Enter pulls it",
                 "Ollama model to pull")  # fmt: skip
        self.name.returnPressed.connect(self.start_pull)
        self.pull_button = QPushButton("Pull")
        self.pull_button.clicked.connect(self.start_pull)
        describe(self.pull_button, "Download the named model into Ollama")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.hide()
        self.cancel_button.clicked.connect(self.cancel_pull)
        describe(self.cancel_button, "Stop pulling; Ollama keeps the layers it has",
                 "Cancel the pull")  # fmt: skip
        self.bar = QProgressBar()
        self.bar.setAccessibleName("Pull progress")
        self.bar.setTextVisible(False)  # the status line says how far
        self.bar.hide()
        self.status = QLabel()
        self.status.setWordWrap(True)
        pulling = QHBoxLayout()
        pulling.addWidget(self.name, 1)
        pulling.addWidget(self.pull_button)
        pulling.addWidget(self.cancel_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(actions)
        layout.addLayout(pulling)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        self._spawn(self.refresh())

    async def refresh(self) -> None:
        try:
            models = await installed(self.provider)
        except LoomchatError as exc:
            self.status.setText(str(exc))
            return
        self.names = [m.name for m in models]
        self.table.setRowCount(len(models))
        for row, model in enumerate(models):
            cells = [model.name, size_text(model.size), model.family, model.parameters,
                     model.quantisation]  # fmt: skip
            for column, text in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()

    # --- pull -----------------------------------------------------------------------------

    def start_pull(self) -> None:
        name = self.name.text().strip()
        if not name or self._pulling is not None:
            return
        self._pulling = self._spawn(self.pull(name))

    async def pull(self, name: str) -> None:
        self.pull_button.setEnabled(False)
        self.cancel_button.show()
        self.bar.show()
        self.bar.setRange(0, 0)  # until the first layer says its size
        self.status.setText(f"Pulling {name}…")
        try:
            await pull(self.provider, name, lambda progress: self._show(name, progress))
        except LoomchatError as exc:
            self.status.setText(str(exc))
        except asyncio.CancelledError:
            self.status.setText(f"Stopped pulling {name}. Ollama keeps the layers it has.")
            raise
        else:
            self.status.setText(f"{name} is ready.")
            self.name.clear()
            await self.refresh()
        finally:
            self._pulling = None
            self.pull_button.setEnabled(True)
            self.cancel_button.hide()
            self.bar.hide()

    def _show(self, name: str, progress: PullProgress) -> None:
        if progress.total:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(1000 * progress.completed / progress.total))
            amount = f"{size_text(progress.completed)} of {size_text(progress.total)}"
            self.status.setText(f"{name}: {progress.status}, {amount}")
        else:
            self.status.setText(f"{name}: {progress.status}")

    def cancel_pull(self) -> None:
        if self._pulling is not None:
            self._pulling.cancel()

    # --- the installed ones ---------------------------------------------------------------

    def selected(self) -> str | None:
        row = self.table.currentRow()
        return self.names[row] if 0 <= row < len(self.names) else None

    def _use_selected(self) -> None:
        if (name := self.selected()) is not None:
            self.use_model.emit(name)

    def _delete_selected(self) -> None:
        name = self.selected()
        if name is None:
            return
        answer = QMessageBox.question(
            self, "Delete model", f"Delete {name} from Ollama? It would have to be pulled again."
        )
        if answer == QMessageBox.StandardButton.Yes:
            self._spawn(self.delete(name))

    async def delete(self, name: str) -> None:
        try:
            await delete(self.provider, name)
        except LoomchatError as exc:
            self.status.setText(str(exc))
        else:
            self.status.setText(f"Deleted {name}.")
        await self.refresh()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._tasks.start(work)

    def stop(self) -> asyncio.Task[None]:
        """The dialog closes: its pull stops (Ollama keeps the layers) and its client goes
        (the task returned closes it)."""
        self._tasks.cancel()
        return self._spawn(self.provider.aclose())
