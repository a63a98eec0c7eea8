"""The status bar's account of the connection: who answers with which model, the tool
track and its bar, the last answer's speed."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QLabel, QStatusBar

from desktop.core.calibration.card import Calibration
from desktop.core.connection import Connection


class ConnectionStatus:
    def __init__(self, bar: QStatusBar) -> None:
        self.backend_label = QLabel()
        self.speed_label = QLabel()
        self.track_label = QLabel()
        self.bar = bar

    def place(self) -> None:
        """Add the labels (after the calibration's widgets, which come first)."""
        for label in (self.track_label, self.speed_label):
            self.bar.addPermanentWidget(label)
        self.bar.addWidget(self.backend_label, 1)

    def show_speed(self, tokens_per_s: float) -> None:
        self.speed_label.setText(f"{tokens_per_s:.1f} tokens/s")

    def show(self, connection: Connection, calibration: Calibration | None) -> None:
        if not connection.ok:
            self.backend_label.setText(f"○ {connection.message}")
            self.track_label.setText("")
            return
        where = connection.message.removeprefix("Connected to ").split(". (")[0].rstrip(".")
        where = where.split(" at http")[0]  # the address is in the tooltip: room for the rest
        model = f" · {Path(connection.model).name}" if connection.model else ""
        vision = " · sees images" if connection.capabilities.vision else ""
        saved = f"{connection.server} · " if connection.server else ""
        self.backend_label.setText(f"● {saved}{where}{model}{vision}")
        self.backend_label.setToolTip(connection.message)
        gate = (
            f", bar {_bars(calibration)}" if calibration and connection.track == "emulated"
            else "" if calibration else ", not calibrated yet"
        )  # fmt: skip
        self.track_label.setText(f"tools: {connection.track}{gate}")


def _bars(calibration: Calibration) -> str:
    """The gate's bar, and the one after earlier turns where that differs."""
    bars = calibration.bars
    later = f" ({bars.later:.2f} after earlier turns)" if bars.later != bars.first else ""
    return f"{bars.first:.2f}{later}"
