"""Settings → Backend's *Local API*: whether programs on this computer may use the model
through an OpenAI-compatible API while the window is open, on which port, and the token
they need (copied from here; made on first use, kept in the keychain)."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QSpinBox

from desktop.api.token import api_token
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from desktop.ui.accessible import describe


class ApiSettings(QGroupBox):
    def __init__(self, settings: Settings, secrets: SecretStore) -> None:
        super().__init__("Local API: programs on this computer use the model (OpenAI-compatible)")
        self.secrets = secrets
        self.setCheckable(True)
        self.setChecked(settings.api_enabled)
        form = QFormLayout(self)
        self.port = QSpinBox()
        self.port.setRange(1024, 65535)
        self.port.setValue(settings.api_port or 8642)
        describe(self.port, "The port the API listens on, on this computer only", "Port")
        self.address = QLabel()
        self.port.valueChanged.connect(self._show_address)
        form.addRow("Port", self.port)
        form.addRow("Address", self.address)
        copy = QPushButton("Copy the token")
        describe(copy, "Copy the bearer token programs must send (Authorization: Bearer ...)")
        copy.clicked.connect(self.copy_token)
        row = QHBoxLayout()
        row.addWidget(copy)
        row.addWidget(QLabel("Requests: View → Local API requests"))
        row.addStretch()
        form.addRow("", row)
        self._show_address()

    def _show_address(self) -> None:
        self.address.setText(f"http://127.0.0.1:{self.port.value()}/v1")

    def copy_token(self) -> None:
        QGuiApplication.clipboard().setText(api_token(self.secrets))

    def values(self) -> dict[str, Any]:
        return {"api_enabled": self.isChecked(), "api_port": self.port.value()}
