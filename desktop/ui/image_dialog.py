"""A tool's image at full size, with Save."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.core.messages import Image
from desktop.ui.accessible import describe


class ImageDialog(QDialog):
    def __init__(self, image: Image, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Image")
        self.image = image
        pixmap = QPixmap()
        pixmap.loadFromData(image.data)
        label = QLabel()
        label.setPixmap(pixmap)
        scroll = QScrollArea()
        scroll.setWidget(label)
        save = QPushButton("Save…")
        save.clicked.connect(self._save)
        describe(save, "Save the image as a file")
        layout = QVBoxLayout(self)
        layout.addWidget(scroll)
        layout.addWidget(save, alignment=Qt.AlignmentFlag.AlignRight)
        self.resize(min(pixmap.width() + 40, 1200), min(pixmap.height() + 80, 900))

    def _save(self) -> None:
        suffix = "png" if self.image.mime == "image/png" else "jpg"
        path, _ = QFileDialog.getSaveFileName(self, "Save image", f"image.{suffix}")
        if path:
            Path(path).write_bytes(self.image.data)
