"""Settings → Built-in model: the GGUF file Loomchat runs itself, and whether it runs."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from desktop.core.runtime import LlamaServer
from desktop.ui.accessible import describe


class RuntimeTab(QWidget):
    """Signals: use_requested(): switch to the built-in model now; stopped(): the user
    stopped the running server (the backend should no longer be the built-in one)."""

    use_requested = Signal()
    stopped = Signal()

    def __init__(
        self, model_file: str, runtime: LlamaServer | None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._runtime = runtime
        form = QFormLayout(self)
        self.runtime_model = QLineEdit(model_file)
        self.runtime_model.setPlaceholderText("empty: the bundled Qwen2.5-Coder 0.5B")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._choose_model)
        describe(browse, "Choose a GGUF model file", "Choose a model file")
        describe(self.runtime_model, "The GGUF file the built-in runtime runs", "Model file")
        row = QHBoxLayout()
        row.addWidget(self.runtime_model, 1)
        row.addWidget(browse)
        form.addRow("GGUF model file", row)
        note = QLabel(
            "Loomchat runs this model here with llama.cpp: it starts the server, restarts it "
            "if it crashes, and stops it when you quit."
        )
        note.setWordWrap(True)
        form.addRow(note)
        self.runtime_status = QLabel()
        self.start_runtime = QPushButton("Use it now")
        self.start_runtime.setToolTip("Switch the backend to the built-in model and start it")
        self.start_runtime.clicked.connect(self.use_requested)
        self.stop_runtime = QPushButton("Stop it")
        self.stop_runtime.clicked.connect(self._stop)
        describe(self.stop_runtime, "Stop the built-in model's server")
        buttons = QHBoxLayout()
        buttons.addWidget(self.runtime_status, 1)
        buttons.addWidget(self.start_runtime)
        buttons.addWidget(self.stop_runtime)
        form.addRow(buttons)
        self._show()

    def _show(self) -> None:
        running = self._runtime is not None and self._runtime.running
        url = self._runtime.base_url if self._runtime is not None else ""
        self.runtime_status.setText(f"Running at {url}" if running else "Not running")
        self.stop_runtime.setEnabled(running)

    def _stop(self) -> None:
        if self._runtime is not None:
            self._runtime.stop()
        self.stopped.emit()
        self._show()

    def _choose_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose a GGUF model", "", "GGUF models (*.gguf)"
        )
        if path:
            self.runtime_model.setText(path)
