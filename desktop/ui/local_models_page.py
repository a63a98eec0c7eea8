"""The Models dialog's "On this computer" page: the model files Loomchat keeps, read from
their headers (size, quantisation, context, chat template), to use, delete or import."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.core.errors import LoomchatError
from desktop.core.models.download import size_text
from desktop.core.models.library import delete_model, import_model, local_models
from desktop.ui.accessible import describe
from desktop.ui.tasks import Tasks


class LocalModelsPage(QWidget):
    """Signals: use_model(Path): run this file now; problem(str): what went wrong."""

    use_model = Signal(object)
    problem = Signal(str)

    def __init__(self, models_dir: Path, tasks: Tasks, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.models_dir = models_dir
        self._tasks = tasks
        self.table = QTableWidget(0, 6)
        self.table.setHorizontalHeaderLabels(
            ["File", "Size", "Quantisation", "Context", "Chat template", "Last used"]
        )
        describe(self.table, "The model files Loomchat keeps, with size, quantisation "
                 "and context", "Models on this computer")  # fmt: skip
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        buttons = QHBoxLayout()
        for text, slot, description in (
            ("Use", self._use_selected, "Run the chosen model now"),
            ("Delete…", self._delete_selected, "Delete the chosen model (after asking)"),
            ("Show in folder", self._show_folder, "Open the models folder"),
            ("Import a file…", self._import, "Copy a GGUF file into the models folder"),
        ):
            button = QPushButton(text)
            describe(button, description)
            button.clicked.connect(slot)
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self._tasks.start(self.refresh())

    async def refresh(self) -> None:
        models = await local_models(self.models_dir)
        self.table.setRowCount(len(models))
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
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()

    def _selected(self) -> Path | None:
        item = self.table.item(self.table.currentRow(), 0)
        return Path(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def _use_selected(self) -> None:
        if (path := self._selected()) is not None:
            self.use_model.emit(path)

    def _delete_selected(self) -> None:
        path = self._selected()
        if path is None:
            return
        answer = QMessageBox.question(self, "Delete model", f"Delete {path.name} from disk?")
        if answer == QMessageBox.StandardButton.Yes:
            try:
                delete_model(self.models_dir, path.name)
            except LoomchatError as exc:
                self.problem.emit(str(exc))
            self._tasks.start(self.refresh())

    def _show_folder(self) -> None:
        self.models_dir.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.models_dir)))

    def _import(self) -> None:
        chosen, _ = QFileDialog.getOpenFileName(self, "Import a model", "", "GGUF (*.gguf)")
        if chosen:
            self._tasks.start(self._import_file(Path(chosen)))

    async def _import_file(self, source: Path) -> None:
        try:
            await import_model(self.models_dir, source)
        except LoomchatError as exc:
            self.problem.emit(str(exc))
        await self.refresh()
