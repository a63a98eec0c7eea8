"""Settings → Backend's options for a server elsewhere: the certificate authority to trust
(one's own, else the system's), a client certificate and key, headers a gateway needs, and
a proxy only when chosen. Folded away until opened: most servers are on this computer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from desktop.core.providers.transport import Transport, TransportError
from desktop.core.storage.settings import Settings
from desktop.ui.accessible import describe

PROXIES = (("", "No proxy"), ("system", "The system's proxy"))
OPTIONS = ("ca_file", "client_cert", "client_key", "headers", "proxy")  # the settings shown


class ConnectionOptions(QGroupBox):
    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__("Server elsewhere: certificates, headers, proxy", parent)
        self.setCheckable(True)
        # as tall as its rows: the tab's spare height stays below the form, not in here
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.form = QFormLayout(self)
        self.ca_file = self._file_row(
            "Certificate authority",
            "A PEM file of the authority that signed the server's certificate; empty: the system's",
        )
        self.client_cert = self._file_row(
            "Client certificate", "A PEM certificate, where asked for one"
        )
        self.client_key = self._file_row(
            "Client key", "Its private key, if not in the certificate's file"
        )
        self.headers = QPlainTextEdit()
        self.headers.setPlaceholderText("One per line, like  X-Api-Gateway: team-blue")
        self.headers.setFixedHeight(60)
        describe(self.headers, "Headers sent with every request to the server", "Headers")
        self.form.addRow("Headers", self.headers)
        self.proxy = QComboBox()
        self.proxy.setEditable(True)
        for value, text in PROXIES:
            self.proxy.addItem(text, value)
        describe(self.proxy, "None, the system's, or a proxy's address (http://host:port)",
                 "Proxy")  # fmt: skip
        self.form.addRow("Proxy", self.proxy)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.form.addRow("", self.problem)
        self.show_values({k: getattr(settings, k) for k in OPTIONS})
        self.toggled.connect(self._fold)
        self._fold(self.isChecked())

    def _fold(self, open_: bool) -> None:
        for child in self.findChildren(QWidget):
            child.setVisible(open_)

    def _file_row(self, label: str, what: str) -> QLineEdit:
        field = QLineEdit()
        field.setPlaceholderText("none")
        describe(field, what, label)
        choose = QPushButton("Choose…")
        describe(choose, f"Choose the {label.lower()} file")
        choose.clicked.connect(lambda: self._choose(field, label))
        row = QHBoxLayout()
        row.addWidget(field, 1)
        row.addWidget(choose)
        self.form.addRow(label, row)
        return field

    def _choose(self, field: QLineEdit, label: str) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, f"Choose the {label.lower()}", str(Path.home()),
            "Certificates (*.pem *.crt *.cer *.key);;All files (*)",
        )  # fmt: skip
        if path:
            field.setText(path)

    def show_values(self, values: dict[str, Any]) -> None:
        """Show a saved server's options (opened where it has any)."""
        headers = values.get("headers") or {}
        self.ca_file.setText(str(values.get("ca_file", "")))
        self.client_cert.setText(str(values.get("client_cert", "")))
        self.client_key.setText(str(values.get("client_key", "")))
        self.headers.setPlainText("\n".join(f"{k}: {v}" for k, v in dict(headers).items()))
        proxy = str(values.get("proxy", ""))
        index = self.proxy.findData(proxy)
        if index >= 0:
            self.proxy.setCurrentIndex(index)
        else:
            self.proxy.setEditText(proxy)
        self.setChecked(any(values.get(k) for k in ("ca_file", "client_cert", "headers", "proxy")))

    def values(self) -> dict[str, Any]:
        """The settings these fields say (all empty when the group is folded away)."""
        if not self.isChecked():
            return {"ca_file": "", "client_cert": "", "client_key": "", "headers": {}, "proxy": ""}
        headers = {}
        for line in self.headers.toPlainText().splitlines():
            name, colon, value = line.partition(":")
            if colon and name.strip():
                headers[name.strip()] = value.strip()
        typed = self.proxy.currentText().strip()
        named = {text: value for value, text in PROXIES}
        return {
            "ca_file": self.ca_file.text().strip(),
            "client_cert": self.client_cert.text().strip(),
            "client_key": self.client_key.text().strip(),
            "headers": headers,
            "proxy": named.get(typed, typed),
        }

    def check(self) -> str:
        """What cannot be used, in a sentence (shown, and the dialog kept open); or ""."""
        chosen = self.values()
        transport = Transport.of(**chosen)
        try:
            transport.checked_headers()
            transport.proxy_url()
            if chosen["ca_file"] or chosen["client_cert"]:
                transport.tls()
        except TransportError as exc:
            self.problem.setText(str(exc))
            return str(exc)
        self.problem.clear()
        return ""
