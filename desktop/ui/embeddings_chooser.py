"""How the documents are searched: by their words alone (BM25), or by meaning too, with an
embedding model Loomchat runs (a GGUF file) or one on the connected server. Shown in the
Documents dialog, with what the search uses now."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from desktop.core.storage.settings import Settings
from desktop.ui.accessible import describe

CHOICES = (
    ("none", "Words (BM25)"),
    ("runtime", "Words and meaning: an embedding model Loomchat runs"),
    ("server", "Words and meaning: the server's embedding model"),
)
PLACEHOLDERS = {
    "none": "",
    "runtime": "an embedding model file (.gguf), e.g. nomic-embed-text or all-MiniLM",
    "server": "the model's name on the server, e.g. nomic-embed-text",
}


class EmbeddingsChooser(QWidget):
    """`chosen(choice, model)`: the person settled on a way to search (the combo changed,
    or the model was typed or picked)."""

    chosen = Signal(str, str)

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.choice = QComboBox()
        for value, label in CHOICES:
            self.choice.addItem(label, value)
        self.choice.setCurrentIndex(max(0, self.choice.findData(settings.embeddings)))
        describe(self.choice, "Search the documents by their words, or by meaning too with an "
                 "embedding model", "Search by")  # fmt: skip
        self.model = QLineEdit(settings.embedding_model)
        describe(self.model, "Which embedding model makes the vectors", "Embedding model")
        self.pick = QPushButton("Choose…")
        describe(self.pick, "Choose an embedding model file")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.choice)
        row.addWidget(self.model, 1)
        row.addWidget(self.pick)
        row.addStretch()  # the choice keeps its width when no model field is shown
        self._shown()
        self.choice.currentIndexChanged.connect(self._changed)
        self.model.editingFinished.connect(self._settled)
        self.pick.clicked.connect(self._pick)

    @property
    def value(self) -> tuple[str, str]:
        return str(self.choice.currentData()), self.model.text().strip()

    def _shown(self) -> None:
        choice = self.choice.currentData()
        self.model.setVisible(choice != "none")
        self.pick.setVisible(choice == "runtime")
        self.model.setPlaceholderText(PLACEHOLDERS[choice])

    def _changed(self) -> None:
        self._shown()
        if self.value[0] == "none" or self.value[1]:
            self.chosen.emit(*self.value)

    def _settled(self) -> None:
        if self.value[1]:
            self.chosen.emit(*self.value)

    def _pick(self) -> None:
        start = self.model.text() or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose an embedding model", start, "GGUF models (*.gguf)"
        )
        if path:
            self.model.setText(path)
            self._settled()
