"""Settings → Reliability: the connected model's card (how it calls tools, measured) and
Calibrate now."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFormLayout, QLabel, QPushButton, QWidget

from desktop.core.calibration.card import Calibration
from desktop.ui.accessible import describe


class ReliabilityTab(QWidget):
    calibrate_requested = Signal()

    def __init__(
        self, calibration: Calibration | None, calibrating: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        if calibration is None:
            intro = QLabel(
                "This model has not been calibrated yet. Until it is, every tool call it "
                "opens is made. Calibration asks it a few dozen short questions with your "
                "tools (a few minutes, in the background; your chats go first) and sets how "
                "sure it must be to call a tool, and which way of calling suits it best."
            )
        else:
            intro = QLabel(f"How {calibration.model_name} calls tools, measured on your tools:")
        intro.setWordWrap(True)
        form.addRow(intro)
        self.card_rows: dict[str, QLabel] = {}
        for label, value in calibration.card() if calibration else []:
            shown = QLabel(value)
            shown.setWordWrap(True)
            shown.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            shown.setAccessibleName(label)
            self.card_rows[label] = shown
            form.addRow(label, shown)
        # A model that often calls where no tool fits: what might suit tools better.
        self.suggestion = QLabel((calibration.suggestion() or "") if calibration else "")
        self.suggestion.setWordWrap(True)
        self.suggestion.setObjectName("warningNote")
        self.suggestion.setVisible(bool(self.suggestion.text()))
        form.addRow(self.suggestion)
        self.calibrate_button = QPushButton("Calibrating…" if calibrating else "Calibrate now")
        self.calibrate_button.setEnabled(not calibrating)
        describe(self.calibrate_button, "Measure again, in the background")
        self.calibrate_button.clicked.connect(self._calibrate)
        form.addRow("", self.calibrate_button)

    def _calibrate(self) -> None:
        self.calibrate_requested.emit()
        self.calibrate_button.setText("Calibrating…")
        self.calibrate_button.setEnabled(False)
