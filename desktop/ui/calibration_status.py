"""Calibration in the status bar: what it is doing, how far it is, and Cancel."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from desktop.core.calibration.card import Calibration
from desktop.ui.accessible import describe


class CalibrationStatus(QWidget):
    """Hidden until a calibration reports progress; hidden again when it ends."""

    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setToolTip(
            "Loomchat asks the model a few questions with the tools to set how sure it must "
            "be to make a call. Your chats go first: it pauses while the model answers you."
        )
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(120)
        self.bar.setTextVisible(False)
        self.bar.setAccessibleName("Calibration progress")
        self.cancel = QToolButton()
        self.cancel.setText("Cancel")
        describe(self.cancel, "Stop calibrating; it can be run again from Settings",
                 "Cancel the calibration")  # fmt: skip
        self.cancel.clicked.connect(self.cancel_requested)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.bar, self.cancel):
            row.addWidget(widget)
        self.setVisible(False)

    def progress(self, done: int, total: int) -> None:
        """`total` 0: the questions are not known yet (the bar only shows it is busy)."""
        self.setVisible(True)
        self.bar.setRange(0, total)
        self.bar.setValue(done)
        count = f" {done}/{total}" if total > 0 else ""
        self.label.setText(f"Learning how this model calls tools…{count}")

    @staticmethod
    def finished_message(calibration: Calibration) -> str:
        card = dict(calibration.card())
        # Short: the status bar's meters leave it about 70 characters at 1400 px.
        due = card["Calls right where one is due"]
        return f"Calibrated: {due} tool calls right (Settings → Reliability)"
