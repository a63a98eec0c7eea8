"""One download in the Models dialog: what, how far (bytes, speed, time left), Cancel;
then "Use this model"."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from desktop.core.models.download import Progress, size_text
from desktop.ui.accessible import describe

_MB = 1024 * 1024


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
